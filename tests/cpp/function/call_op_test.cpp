// Function calls as graph ops: StatefulPartitionedCall nodes while tracing,
// the inline pass, the call kernel, name scopes, and gradients through calls
// (backward functions cached per ConcreteFunction) and through If.
#include "kiln/control_flow.h"
#include "kiln/function.h"
#include "kiln/gradient_tape.h"
#include "kiln/trace.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::count_nodes;
using testing::expect_error;
using testing::expect_tensor_near;

Function unary(std::function<Tensor(const Tensor&)> fn, std::string name, int* traces = nullptr,
               std::set<std::string> disabled = {}) {
  FunctionOptions o;
  o.name = std::move(name);
  o.arg_names = {"x"};
  o.disabled_passes = std::move(disabled);
  return Function(
      [fn, traces](const std::vector<Value>& a) {
        if (traces) ++*traces;
        return Value(fn(a[0].tensor()));
      },
      o);
}

TEST(CallOp, ANestedCallIsOneNodeInlinedByTheOptimizer) {
  Function inner = unary([](const Tensor& x) { return x * x + 1.f; }, "inner");
  Function outer = unary([&](const Tensor& x) { return inner({x}).tensor() * 2.f; }, "outer");
  expect_tensor_near<float>(outer({Tensor({1.f, 2.f})}).tensor(), {2}, {4, 10});
  auto cf = outer.get_concrete_function({ArgSpec{DType::kFloat32, Shape{2}, ""}});
  EXPECT_EQ(cf->graph().listing(),
            "[] -> x\n['x'] -> StatefulPartitionedCall\n[] -> Const\n"
            "['StatefulPartitionedCall', 'Const'] -> mul\n['mul'] -> Identity\n");
  EXPECT_EQ(count_nodes(cf->optimized_graph(), OpId::StatefulPartitionedCall), 0);
  const PassResult& inl = cf->optimize_report().passes.at(0);
  EXPECT_EQ(inl.pass, "inline");
  EXPECT_EQ(inl.removed,
            (std::vector<NodeRef>{{"StatefulPartitionedCall", "StatefulPartitionedCall"}}));
}

TEST(CallOp, WithoutInliningTheCallKernelRunsTheFunction) {
  Function inner = unary([](const Tensor& x) { return tanh(x) * 3.f; }, "inner");
  Function outer =
      unary([&](const Tensor& x) { return inner({x}).tensor() + x; }, "outer", nullptr, {"inline"});
  Tensor x({0.5f, -1.f, 2.f});
  auto r = outer({x}).tensor();
  expect_tensor_near<float>(
      r, {3}, {std::tanh(0.5f) * 3 + 0.5f, std::tanh(-1.f) * 3 - 1, std::tanh(2.f) * 3 + 2});
  auto cf = outer.get_concrete_function({ArgSpec{DType::kFloat32, Shape{3}, ""}});
  EXPECT_EQ(count_nodes(cf->optimized_graph(), OpId::StatefulPartitionedCall), 1);
}

TEST(CallOp, CallsNestThreeDeep) {
  Function a = unary([](const Tensor& x) { return x + 1.f; }, "a");
  Function b = unary([&](const Tensor& x) { return a({x}).tensor() * 2.f; }, "b");
  Function c = unary([&](const Tensor& x) { return b({a({x}).tensor()}).tensor(); }, "c");
  expect_tensor_near<float>(c({Tensor(1.f)}).tensor(), {}, {6});  // ((1+1)+1)*2
  auto cf = c.get_concrete_function({ArgSpec{DType::kFloat32, Shape{}, ""}});
  EXPECT_EQ(count_nodes(cf->graph(), OpId::StatefulPartitionedCall), 2);
  EXPECT_EQ(count_nodes(cf->optimized_graph(), OpId::StatefulPartitionedCall), 0);
  cf->optimized_graph().verify();
}

TEST(CallOp, StatefulCallsKeepProgramOrder) {
  Variable v(Tensor(1.f), "v");
  Function bump = unary(
      [&](const Tensor& x) {
        v.assign_add(x);
        return v.read_value() * 10.f;
      },
      "bump");
  FunctionOptions o;
  o.name = "outer";
  Function outer(
      [&](const std::vector<Value>& a) {
        const Tensor& x = a[0].tensor();
        Tensor before = v.read_value();
        Tensor r1 = bump({x}).tensor();
        Tensor r2 = bump({x}).tensor();
        Tensor after = v.read_value();
        return Value::list({before, r1, r2, after});
      },
      o);
  for (int round = 0; round < 2; ++round) {
    v.assign(Tensor(1.f));
    Value r = outer({Tensor(2.f)});
    expect_tensor_near<float>(r.items()[0].tensor(), {}, {1});
    expect_tensor_near<float>(r.items()[1].tensor(), {}, {30});
    expect_tensor_near<float>(r.items()[2].tensor(), {}, {50});
    expect_tensor_near<float>(r.items()[3].tensor(), {}, {5});
  }
}

TEST(CallOp, AFunctionReturningItsInputInlines) {
  Function id = unary([](const Tensor& x) { return x; }, "id");
  Function outer = unary([&](const Tensor& x) { return id({x}).tensor() + 1.f; }, "outer");
  expect_tensor_near<float>(outer({Tensor(2.f)}).tensor(), {}, {3});
}

TEST(CallOp, NameScopesPrefixNodeNames) {
  Function inner = unary([](const Tensor& x) { return x * 2.f; }, "inner");
  FunctionOptions o;
  o.name = "outer";
  o.arg_names = {"x"};
  Function outer(
      [&](const std::vector<Value>& a) {
        Tensor y;
        {
          NameScope s("CharUnpack");
          EXPECT_EQ(s.scope(), "CharUnpack/");
          y = inner({a[0].tensor()}).tensor();
        }
        {
          NameScope s("CharUnpack");  // a second scope of the same name
          EXPECT_EQ(s.scope(), "CharUnpack_1/");
          NameScope t("dense");
          EXPECT_EQ(t.scope(), "CharUnpack_1/dense/");
          y = y + 1.f;
        }
        return Value(y);
      },
      o);
  auto cf = outer.get_concrete_function({ArgSpec{DType::kFloat32, Shape{}, ""}});
  EXPECT_NE(cf->graph().find("CharUnpack/StatefulPartitionedCall"), nullptr);
  EXPECT_NE(cf->graph().find("CharUnpack_1/dense/add"), nullptr);
  NameScope eager("x");
  EXPECT_EQ(eager.scope(), "");
}

TEST(CallOp, InlinedNodesTakeTheCallersMoreSpecificShapes) {
  FunctionOptions io;
  io.name = "inner";
  io.arg_names = {"x"};
  io.input_signature = std::vector<ArgSpec>{{DType::kFloat32, Shape{Shape::kUnknownDim}, "x"}};
  Function inner([](const std::vector<Value>& a) { return Value(tanh(a[0].tensor()) * 2.f); }, io);
  Function outer =
      unary([&](const Tensor& x) { return inner({x}).tensor() + 1.f; }, "outer", nullptr, {"fuse"});
  auto cf = outer.get_concrete_function({ArgSpec{DType::kFloat32, Shape{3}, ""}});
  // The call's own output is [None] (the callee's signature) ...
  for (const auto& n : cf->graph().nodes()) {
    if (n->op().id == OpId::StatefulPartitionedCall) {
      EXPECT_EQ(n->outputs()[0].shape, Shape{Shape::kUnknownDim});
    }
  }
  // ... but once inlined, every node knows it is [3].
  int checked = 0;
  for (const auto& n : cf->optimized_graph().nodes()) {
    const OpId id = n->op().id;
    if (id != OpId::Tanh && id != OpId::Mul && id != OpId::Add) continue;
    EXPECT_EQ(n->outputs()[0].shape, Shape{3}) << n->name();
    ++checked;
  }
  EXPECT_EQ(checked, 3);
  expect_tensor_near<float>(outer({Tensor({0.f, 1.f, -1.f})}).tensor(), {3},
                            {1.f, 2 * std::tanh(1.f) + 1, 2 * std::tanh(-1.f) + 1});
}

// ---- gradients through calls ----

TEST(CallGrad, EagerTapeRecordsOneCallAndDifferentiatesIt) {
  int traces = 0;
  Function f = unary([](const Tensor& x) { return x * x * 3.0; }, "f", &traces);
  Tensor x(2.0);
  for (int i = 0; i < 3; ++i) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = f({x}).tensor();
    EXPECT_DOUBLE_EQ(y.item<double>(), 12.0);
    EXPECT_DOUBLE_EQ(tape.gradient(y, x).item<double>(), 12.0);  // 6 x
  }
  EXPECT_EQ(traces, 1);
}

TEST(CallGrad, CapturedVariablesGetGradients) {
  Variable w(Tensor({1.f, 2.f}), "w");
  Variable frozen(Tensor({5.f, 5.f}), "frozen", /*trainable=*/false);
  Function f =
      unary([&](const Tensor& x) { return reduce_sum(w.read_value() * w.read_value() * x); }, "f");
  GradientTape tape;
  Tensor y = f({Tensor({3.f, 4.f})}).tensor();
  std::vector<Tensor> g = tape.gradient(y, {w, frozen});
  expect_tensor_near<float>(g[0], {2}, {6, 16});  // 2 w x
  EXPECT_FALSE(g[1].defined());
}

TEST(CallGrad, InsideATraceTheBackwardIsInlinedAndDeduplicated) {
  Function inner = unary([](const Tensor& x) { return tanh(x) * x; }, "inner");
  FunctionOptions o;
  o.name = "step";
  o.disabled_passes = {"fuse"};
  Function step(
      [&](const std::vector<Value>& a) {
        Tensor x = a[0].tensor();
        GradientTape tape;
        tape.watch(x);
        Tensor y = reduce_sum(inner({x}).tensor());
        return Value(tape.gradient(y, x));
      },
      o);
  const std::vector<float> xs{0.5f, -1.f};
  Tensor g = step({Tensor({xs[0], xs[1]})}).tensor();
  std::vector<float> want;
  for (float v : xs) want.push_back(std::tanh(v) + v * (1 - std::tanh(v) * std::tanh(v)));
  expect_tensor_near<float>(g, {2}, want);
  auto cf = step.get_concrete_function({ArgSpec{DType::kFloat32, Shape{2}, ""}});
  EXPECT_EQ(count_nodes(cf->graph(), OpId::StatefulPartitionedCall), 1);  // forward
  EXPECT_EQ(count_nodes(cf->graph(), OpId::PartitionedCall), 1);          // backward
  const Graph& opt = cf->optimized_graph();
  EXPECT_EQ(
      count_nodes(opt, OpId::StatefulPartitionedCall) + count_nodes(opt, OpId::PartitionedCall), 0);
  EXPECT_EQ(count_nodes(opt, OpId::Tanh), 1);  // the recomputed forward merged by CSE
}

TEST(CallGrad, SecondOrderThroughACall) {
  Function cube = unary([](const Tensor& x) { return x * x * x; }, "cube");
  Tensor x(2.0);
  GradientTape outer;
  outer.watch(x);
  GradientTape inner;
  inner.watch(x);
  Tensor y = cube({x}).tensor();
  Tensor d1 = inner.gradient(y, x);
  EXPECT_DOUBLE_EQ(d1.item<double>(), 12.0);
  EXPECT_DOUBLE_EQ(outer.gradient(d1, x).item<double>(), 12.0);  // 6 x
}

TEST(CallGrad, IntegerOutputsAndInputsAreSkipped) {
  FunctionOptions o;
  o.name = "mixed";
  Function f(
      [](const std::vector<Value>& a) {
        const Tensor& x = a[0].tensor();
        const Tensor& n = a[1].tensor();
        return Value::list({x * cast(n, DType::kFloat32), n + 1});
      },
      o);
  Tensor x(3.f), n(4);
  GradientTape tape;
  tape.watch(x);
  Value r = f({x, n});
  EXPECT_FLOAT_EQ(tape.gradient(r.items()[0].tensor(), x).item<float>(), 4.f);
}

TEST(CallGrad, ATracedCallKeepsWhatItsBackwardReads) {
  // Inside a trace too, the call node returns the values its backward reads
  // (here a random draw), so the gradient uses the same numbers.
  Function noisy = unary([](const Tensor& x) { return x * random_uniform(x.shape()); }, "noisy");
  FunctionOptions o;
  o.name = "step";
  Function step(
      [&](const std::vector<Value>& a) {
        Tensor x = a[0].tensor();
        GradientTape tape;
        tape.watch(x);
        Tensor y = noisy({x}).tensor();
        return Value::list({y, tape.gradient(reduce_sum(y), x)});
      },
      o);
  Tensor x({1.f, 2.f, 4.f});
  Value r = step({x});
  expect_tensor_near<float>(r.items()[1].tensor(), {3},
                            (r.items()[0].tensor() / x).to_vector<float>(), 1e-6);
  auto cf = step.get_concrete_function({ArgSpec{DType::kFloat32, Shape{3}, ""}});
  EXPECT_EQ(count_nodes(cf->optimized_graph(), OpId::RandomUniform), 1);
}

TEST(CallGrad, RandomOpsUnderAHigherOrderGradientAreAClearError) {
  // A gradient another tape records recomputes the forward from the call's
  // inputs, which would draw again.
  Function noisy =
      unary([](const Tensor& x) { return x * x * random_uniform(x.shape()); }, "noisy");
  Tensor x({1.f, 2.f});
  GradientTape outer;
  outer.watch(x);
  GradientTape inner;
  inner.watch(x);
  Tensor y = noisy({x}).tensor();
  expect_error([&] { inner.gradient(y, x); }, Code::kUnimplemented,
               {"gradient of 'noisy'", "RandomUniform", "draw"});
}

// ---- gradients through If ----

TEST(CondGrad, BothBranchesDifferentiateInsideATrace) {
  Variable v(Tensor(3.f), "v");
  FunctionOptions o;
  o.name = "step";
  Function step(
      [&](const std::vector<Value>& a) {
        Tensor x = a[0].tensor();
        Tensor p = a[1].tensor();
        GradientTape tape;
        tape.watch(x);
        Tensor y = cond(
            p, [&] { return std::vector<Tensor>{x * v.read_value()}; },
            [&] { return std::vector<Tensor>{x * x}; })[0];
        std::vector<Tensor> g =
            tape.gradient(y, {GradSource(x), GradSource(v)}, Tensor(), UnconnectedGradients::kZero);
        return Value::list({y, g[0], g[1]});
      },
      o);
  Value t = step({Tensor(2.f), Tensor(true)});
  expect_tensor_near<float>(t.items()[0].tensor(), {}, {6});
  expect_tensor_near<float>(t.items()[1].tensor(), {}, {3});  // d(xv)/dx = v
  expect_tensor_near<float>(t.items()[2].tensor(), {}, {2});  // d(xv)/dv = x
  Value f = step({Tensor(2.f), Tensor(false)});
  expect_tensor_near<float>(f.items()[0].tensor(), {}, {4});
  expect_tensor_near<float>(f.items()[1].tensor(), {}, {4});  // 2x
  expect_tensor_near<float>(f.items()[2].tensor(), {}, {0});  // v unused
}

}  // namespace
}  // namespace kiln
