// GradientTape API: persistence, watching, unconnected sources,
// stop_recording, reset, nested tapes, variables, functions, errors.
#include "kiln/gradient_tape.h"

#include "kiln/function.h"
#include "test_util.h"

namespace kiln {
namespace {

using testing::expect_error;
using testing::expect_tensor_near;

TEST(GradientTape, SimpleGradient) {
  Tensor x(3.f);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  expect_tensor_near<float>(tape.gradient(y, x), {}, {6});
}

TEST(GradientTape, NonPersistentTapeAllowsOneGradient) {
  Tensor x(2.0);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x * x;
  expect_tensor_near<double>(tape.gradient(y, x), {}, {12});
  EXPECT_FALSE(tape.recording());  // stopped by gradient(), as TensorFlow's
  expect_error([&] { tape.gradient(y, x); }, Code::kFailedPrecondition,
               {"non-persistent", "persistent=true"});
}

TEST(GradientTape, PersistentTapeAllowsSeveral) {
  Tensor x(2.0);
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor y = x * x;
  Tensor z = y * y;  // x^4
  expect_tensor_near<double>(tape.gradient(y, x), {}, {4});
  expect_tensor_near<double>(tape.gradient(z, x), {}, {32});
  expect_tensor_near<double>(tape.gradient(z, y), {}, {8});
  EXPECT_TRUE(tape.recording());
}

// Ops on unwatched values only are not recorded, so sources reached only
// through them are unconnected. (As in TensorFlow, an unwatched tensor that
// is a direct input of a recorded op still gets its gradient.)
TEST(GradientTape, UnwatchedTensorsAreNotTraced) {
  Tensor x(2.0), c(5.0);
  GradientTape tape(true);
  tape.watch(x);
  Tensor d = c * 2.0;  // not recorded
  Tensor y = x * d;
  EXPECT_FALSE(tape.gradient(y, c).defined());
  expect_tensor_near<double>(tape.gradient(y, c, Tensor(), UnconnectedGradients::kZero), {}, {0});
  expect_tensor_near<double>(tape.gradient(y, x), {}, {10});
  expect_tensor_near<double>(tape.gradient(y, d), {}, {2});
}

TEST(GradientTape, UnconnectedNoneVersusZero) {
  Tensor x({1.0, 2.0}), u({{1.0, 2.0}, {3.0, 4.0}});
  GradientTape tape(true);
  tape.watch(x);
  tape.watch(u);
  Tensor y = reduce_sum(x * 2.0);
  std::vector<Tensor> g = tape.gradient(y, {x, u});
  expect_tensor_near<double>(g[0], {2}, {2, 2});
  EXPECT_FALSE(g[1].defined());
  g = tape.gradient(y, {x, u}, Tensor(), UnconnectedGradients::kZero);
  expect_tensor_near<double>(g[1], {2, 2}, {0, 0, 0, 0});
}

TEST(GradientTape, OutputGradientsWeightTheTarget) {
  Tensor x({1.0, 2.0, 3.0});
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = x * x;
  expect_tensor_near<double>(tape.gradient(y, x, Tensor({1.0, 0.0, -1.0})), {3}, {2, 0, -6});
  // Several targets: gradients add up.
  Tensor z = x * 3.0;
  std::vector<Tensor> g = tape.gradient(std::vector<Tensor>{y, z}, {x});
  expect_tensor_near<double>(g[0], {3}, {5, 7, 9});
}

TEST(GradientTape, GradientOfASourceIsOnes) {
  Tensor x({1.0, 2.0});
  GradientTape tape;
  tape.watch(x);
  expect_tensor_near<double>(tape.gradient(x, x), {2}, {1, 1});
}

TEST(GradientTape, ValuesUsedTwiceAccumulate) {
  Tensor x(3.0);
  GradientTape tape;
  tape.watch(x);
  Tensor a = x * 2.0;
  Tensor y = a * a + a + sin(x);  // 4x^2 + 2x + sin x
  expect_tensor_near<double>(tape.gradient(y, x), {}, {8 * 3 + 2 + std::cos(3.0)});
}

TEST(GradientTape, StopRecording) {
  Tensor x(2.0);
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = x * x;
  Tensor z;
  {
    auto pause = tape.stop_recording();
    EXPECT_FALSE(tape.recording());
    z = y * x;  // not recorded
  }
  EXPECT_TRUE(tape.recording());
  EXPECT_FALSE(tape.gradient(z, x).defined());
  Tensor w = y * x;
  expect_tensor_near<double>(tape.gradient(w, x), {}, {12});
}

TEST(GradientTape, ResetForgetsTheRecord) {
  Tensor x(2.0);
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = x * x;
  tape.reset();
  EXPECT_FALSE(tape.gradient(y, x).defined());
  tape.watch(x);
  Tensor z = x * x * x;
  expect_tensor_near<double>(tape.gradient(z, x), {}, {12});
}

TEST(GradientTape, StopEndsRecording) {
  Tensor x(2.0);
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  tape.stop();
  Tensor z = y * 10.0;  // after the "with" block
  EXPECT_FALSE(tape.recording());
  expect_tensor_near<double>(tape.gradient(y, x), {}, {4});
  (void)z;
}

// d2/dx2 of x^3 = 6x through nested tapes.
TEST(GradientTape, SecondOrder) {
  Tensor x(2.0);
  GradientTape outer;
  outer.watch(x);
  Tensor dy;
  {
    GradientTape inner;
    inner.watch(x);
    Tensor y = x * x * x;
    dy = inner.gradient(y, x);  // recorded by outer
  }
  expect_tensor_near<double>(dy, {}, {12});
  expect_tensor_near<double>(outer.gradient(dy, x), {}, {12});
}

TEST(GradientTape, ThirdOrderOfTanh) {
  Tensor x(0.3);
  GradientTape t1;
  t1.watch(x);
  GradientTape t2;
  t2.watch(x);
  GradientTape t3;
  t3.watch(x);
  Tensor y = tanh(x);
  Tensor d1 = t3.gradient(y, x);
  Tensor d2 = t2.gradient(d1, x);
  Tensor d3 = t1.gradient(d2, x);
  const double t = std::tanh(0.3), s = 1 - t * t;
  expect_tensor_near<double>(d1, {}, {s});
  expect_tensor_near<double>(d2, {}, {-2 * t * s});
  expect_tensor_near<double>(d3, {}, {-2 * s * s + 4 * t * t * s});
}

TEST(GradientTape, TrainableVariablesAreWatchedAutomatically) {
  Variable v(Tensor({1.f, 2.f}), "v");
  Variable frozen(Tensor({3.f, 4.f}), "frozen", /*trainable=*/false);
  GradientTape tape(true);
  Tensor y = reduce_sum(v.read_value() * frozen.read_value() * v.read_value());
  std::vector<Tensor> g = tape.gradient(y, {v, frozen});
  expect_tensor_near<float>(g[0], {2}, {6, 16});  // 2 v f
  EXPECT_FALSE(g[1].defined());
}

TEST(GradientTape, WatchAccessedVariablesFalse) {
  Variable v(Tensor({1.0, 2.0}), "v");
  Variable w(Tensor({3.0, 4.0}), "w");
  GradientTape tape(true, /*watch_accessed_variables=*/false);
  tape.watch(w);
  Tensor y = reduce_sum(v.read_value() * w.read_value());
  std::vector<Tensor> g = tape.gradient(y, {v, w});
  EXPECT_FALSE(g[0].defined());
  expect_tensor_near<double>(g[1], {2}, {1, 2});
  g = tape.gradient(y, {v, w}, Tensor(), UnconnectedGradients::kZero);
  expect_tensor_near<double>(g[0], {2}, {0, 0});
}

TEST(GradientTape, VariableAssignedBetweenReads) {
  Variable v(Tensor(2.0), "v");
  GradientTape tape;
  Tensor a = v.read_value();
  v.assign(Tensor(3.0));
  Tensor b = v.read_value();
  Tensor y = a * b;  // d/dv = b + a = 5 (both reads are of v)
  expect_tensor_near<double>(tape.gradient(y, v), {}, {5});
}

TEST(GradientTape, IntegerValuesAreNotTraced) {
  Tensor i({1, 2, 3});
  Tensor x({1.0, 2.0, 3.0});
  GradientTape tape(true);
  tape.watch(i);  // ignored: integers carry no gradient
  tape.watch(x);
  Tensor y = x * cast(i * 2, DType::kFloat64);
  EXPECT_FALSE(tape.gradient(y, i).defined());
  expect_tensor_near<double>(tape.gradient(y, x), {3}, {2, 4, 6});
}

TEST(GradientTape, Errors) {
  Tensor x({1.0, 2.0});
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = x * x;
  Tensor yi = cast(y, DType::kInt32);
  expect_error([&] { tape.gradient(yi, x); }, Code::kInvalidArgument,
               {"target 0 has dtype int32", "float"});
  expect_error([&] { tape.gradient(Tensor(), x); }, Code::kInvalidArgument, {"undefined"});
  expect_error([&] { tape.gradient(y, Tensor()); }, Code::kInvalidArgument,
               {"source 0 is undefined"});
  expect_error(
      [&] {
        tape.gradient(y, x, Tensor({1.0, 2.0, 3.0}));
      },
      Code::kInvalidArgument, {"output_gradients[0] has shape [3]", "target has shape [2]"});
  expect_error(
      [&] {
        tape.gradient(y, x, Tensor({1.f, 2.f}));
      },
      Code::kInvalidArgument, {"output_gradients[0] has dtype float32"});
  expect_error(
      [&] {
        tape.gradient(std::vector<Tensor>{y, y}, {x}, std::vector<Tensor>{Tensor(1.0)});
      },
      Code::kInvalidArgument, {"1 output_gradients for 2 targets"});
  expect_error([&] { tape.watch(Tensor()); }, Code::kInvalidArgument, {"undefined"});
  // An op without a gradient rule on the path is a clear error: see
  // GradCoverage.FusedOpsOnATapeNameTheOp. The tape still works after errors.
  expect_tensor_near<double>(tape.gradient(y, x), {2}, {2, 4});
}

TEST(GradientTape, JacobianIsOneVjpPerTargetElement) {
  const Tensor x = Tensor({1.0f, 2.0f, 3.0f});
  const Tensor z = Tensor({5.0f});
  GradientTape tape;
  tape.watch(x);
  tape.watch(z);
  const Tensor y = multiply(x, x);
  const std::vector<Tensor> j = tape.jacobian(y, {x, z});
  testing::expect_tensor<float>(j[0], {3, 3}, {2, 0, 0, 0, 4, 0, 0, 0, 6});
  EXPECT_FALSE(j[1].defined());  // unconnected
  testing::expect_error([&] { tape.jacobian(y, {x}); }, Code::kFailedPrecondition,
                        {"GradientTape.jacobian", "persistent"});
}

TEST(GradientTape, NoTapeNoRecording) {
  EXPECT_EQ(op_observer(), nullptr);
  {
    GradientTape tape;
    EXPECT_NE(op_observer(), nullptr);
  }
  EXPECT_EQ(op_observer(), nullptr);
}

// Inside a function the tape records the traced ops and the gradient ops
// join the same graph: one concrete function computes value and gradient.
TEST(GradientTape, InsideAFunction) {
  Variable w(Tensor({{1.f, 2.f}, {3.f, 4.f}}), "w");
  Function step([&](const std::vector<Value>& args) {
    Tensor x = args[0].tensor();
    GradientTape tape;
    Tensor loss = reduce_sum(square(matmul(x, w.read_value())));
    Tensor g = tape.gradient(loss, w);
    return Value::list({loss, g});
  });
  Tensor x({{1.f, 0.f}, {0.f, 1.f}});
  Value r = step({x});
  // loss = sum(w^2) = 30, d/dw = 2 w
  expect_tensor_near<float>(r.items()[0].tensor(), {}, {30});
  expect_tensor_near<float>(r.items()[1].tensor(), {2, 2}, {2, 4, 6, 8});
  // The backward ops are graph nodes: the concrete function has a MatMul
  // for the forward and more for the gradient.
  auto cf = step.get_concrete_function({ArgSpec{DType::kFloat32, Shape{2, 2}, ""}});
  int matmuls = 0;
  for (const auto& n : cf->graph().nodes()) matmuls += n->op().id == OpId::MatMul;
  EXPECT_GE(matmuls, 2);
  // Runs again from the cache with new values.
  Tensor x2({{2.f, 0.f}, {0.f, 2.f}});
  r = step({x2});
  expect_tensor_near<float>(r.items()[0].tensor(), {}, {120});
  expect_tensor_near<float>(r.items()[1].tensor(), {2, 2}, {8, 16, 24, 32});
}

TEST(GradientTape, ThroughANestedFunctionInsideATrace) {
  // An inner Function called while the outer one is traced is inlined; the
  // tape must see its ops to differentiate through it.
  Function cube([](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value(x * x * x);
  });
  Function outer([&](const std::vector<Value>& a) {
    Tensor x = a[0].tensor();
    GradientTape tape;
    tape.watch(x);
    Tensor y = cube({x}).tensor();
    return Value(tape.gradient(y, x));
  });
  expect_tensor_near<float>(outer({Tensor({2.f, 3.f})}).tensor(), {2}, {12.f, 27.f});
}

TEST(GradientTape, SecondOrderInsideAFunction) {
  Function f([](const std::vector<Value>& args) {
    Tensor x = args[0].tensor();
    GradientTape outer;
    outer.watch(x);
    GradientTape inner;
    inner.watch(x);
    Tensor y = x * x * x;
    Tensor d1 = inner.gradient(y, x);
    Tensor d2 = outer.gradient(d1, x);
    return Value::list({d1, d2});
  });
  Value r = f({Tensor({1.0, 2.0})});
  expect_tensor_near<double>(r.items()[0].tensor(), {2}, {3, 12});
  expect_tensor_near<double>(r.items()[1].tensor(), {2}, {6, 12});
}

// An eager tape does not record the ops of a function traced while it is
// active (a Function call is not yet differentiable as one op).
TEST(GradientTape, EagerTapeDifferentiatesThroughAFunction) {
  // Under an eager tape a Function call replays its traced graph eagerly, so
  // the tape records real ops (and none of the symbolic ops of the trace).
  Tensor x(2.0);
  int traces = 0;
  Function f([&](const std::vector<Value>& args) {
    ++traces;
    return Value(args[0].tensor() * args[0].tensor() * 3.0);
  });
  GradientTape tape;
  tape.watch(x);
  Tensor y = f({x}).tensor();
  EXPECT_DOUBLE_EQ(y.item<double>(), 12.0);
  EXPECT_DOUBLE_EQ(tape.gradient(y, x).item<double>(), 12.0);  // 6 x
  EXPECT_EQ(traces, 1);
}

}  // namespace
}  // namespace kiln
