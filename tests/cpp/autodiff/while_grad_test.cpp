// Gradients through while_loop (the While op's rule, src/autodiff/while_grad.cpp)
// and through TensorArrays (list-valued gradients of the TensorList ops),
// inside traced Functions, checked against analytic and numeric gradients.
#include "autodiff/grad_check.h"
#include "kiln/control_flow.h"
#include "kiln/function.h"
#include "kiln/gradient_tape.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::count_nodes;
using testing::expect_all_close;
using testing::expect_error;
using testing::expect_tensor_near;
using testing::FnUnderTest;
using testing::random_f64;

// A Function computing loss = f(xs) and d loss / d x for every float input
// under a tape inside the trace; returns [loss, grads...].
Function grad_function(FnUnderTest f, size_t n_in, int* traces, std::string name = "step") {
  FunctionOptions o;
  o.name = std::move(name);
  return Function(
      [f, n_in, traces](const std::vector<Value>& a) {
        ++*traces;
        std::vector<Tensor> xs;
        for (size_t i = 0; i < n_in; ++i) xs.push_back(a[i].tensor());
        GradientTape tape;
        std::vector<GradSource> srcs;
        for (const Tensor& x : xs)
          if (is_floating(x.dtype())) {
            tape.watch(x);
            srcs.push_back(x);
          }
        Tensor loss = f(xs);
        std::vector<Tensor> g = tape.gradient(loss, srcs, Tensor(), UnconnectedGradients::kZero);
        std::vector<Value> out{Value(loss)};
        for (const Tensor& t : g) out.push_back(Value(t));
        return Value::list(out);
      },
      o);
}

std::vector<Tensor> call(Function& fn, const std::vector<Tensor>& xs) {
  std::vector<Value> args(xs.begin(), xs.end());
  std::vector<Tensor> out;
  const Value r = fn(args);  // (items() of a temporary would dangle)
  for (const Value& v : r.items()) out.push_back(v.tensor());
  return out;
}

// Checks the traced gradients of the scalar `f` at `xs` against central
// differences of f run eagerly (float64 inputs).
void check_traced(Function& fn, const FnUnderTest& f, const std::vector<Tensor>& xs,
                  double tol = 1e-6) {
  const std::vector<Tensor> r = call(fn, xs);
  const std::vector<Tensor> numeric = testing::numeric_gradients(f, xs, Tensor(1.0), 1e-6);
  expect_all_close(r[0], f(xs), 1e-12, "loss");
  size_t k = 1;
  for (size_t i = 0; i < xs.size(); ++i)
    if (is_floating(xs[i].dtype()))
      expect_all_close(r[k++], numeric[i], tol, "input " + std::to_string(i));
}

// y = x^n by n multiplications in a loop with a counter.
Tensor power(const Tensor& x, const Tensor& n, WhileOptions o = {}) {
  return while_loop([&](const std::vector<Tensor>& v) { return v[0] < n; },
                    [&](const std::vector<Tensor>& v) {
                      return std::vector<Tensor>{v[0] + 1, v[1] * x};
                    },
                    {Tensor(0), ones_like(x)}, o)[1];
}

TEST(WhileGrad, PowerMatchesTheAnalyticGradient) {
  int traces = 0;
  FnUnderTest f = [](const std::vector<Tensor>& a) { return power(a[0], a[1]); };
  Function fn = grad_function(f, 2, &traces);
  for (int n : {3, 5, 0}) {
    SCOPED_TRACE(n);
    const double x = 1.3;
    std::vector<Tensor> r = call(fn, {Tensor(x), Tensor(n)});
    expect_tensor_near<double>(r[0], {}, {std::pow(x, n)});
    expect_tensor_near<double>(r[1], {}, {n * std::pow(x, n - 1)}, 1e-12);
  }
  EXPECT_EQ(traces, 1);  // the trace is reused for every count
  auto cf = fn.get_concrete_function(
      {ArgSpec{DType::kFloat64, Shape{}, ""}, ArgSpec{DType::kInt32, Shape{}, ""}});
  // The forward loop, its re-run with accumulators, and the backward loop.
  EXPECT_EQ(count_nodes(cf->graph(), OpId::While), 3);
  // Only y is accumulated (the backward of y * x reads y, not the counter):
  // the re-run carries the iteration count, (i, y) and one list.
  for (const auto& n : cf->graph().nodes()) {
    if (n->op().id == OpId::While &&
        std::get<Ref<Subgraph>>(n->attrs()[1])->name() == "while_acc_body") {
      EXPECT_EQ(n->outputs().size(), 4u);
    }
  }
}

TEST(WhileGrad, VectorLoopMatchesNumeric) {
  int traces = 0;
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    const Tensor& x = a[0];
    Tensor y = while_loop([](const std::vector<Tensor>& v) { return v[0] < 4; },
                          [&](const std::vector<Tensor>& v) {
                            return std::vector<Tensor>{v[0] + 1, tanh(v[1] * x + 0.5)};
                          },
                          {Tensor(0), x})[1];
    return reduce_sum(y * y);
  };
  Function fn = grad_function(f, 1, &traces);
  check_traced(fn, f, {random_f64({3}, 1)});
  check_traced(fn, f, {random_f64({3}, 2)});
  EXPECT_EQ(traces, 1);
}

// y_{k+1} = y_k * v + c: the gradients of the captured tensor c and of the
// variable v add up over the iterations.
Tensor affine_loop(const Tensor& x, const Tensor& c, const std::function<Tensor()>& v,
                   const Tensor& n) {
  return while_loop([&](const std::vector<Tensor>& s) { return s[0] < n; },
                    [&](const std::vector<Tensor>& s) {
                      return std::vector<Tensor>{s[0] + 1, s[1] * v() + c};
                    },
                    {Tensor(0), x})[1];
}

TEST(WhileGrad, CapturedTensorAndVariableGradientsSumOverIterations) {
  Variable v(Tensor({0.9, -0.4}), "v");
  int traces = 0;
  FunctionOptions o;
  o.name = "step";
  Function fn(
      [&](const std::vector<Value>& a) {
        ++traces;
        const Tensor x = a[0].tensor(), c = a[1].tensor(), n = a[2].tensor();
        GradientTape tape;
        tape.watch(x);
        tape.watch(c);
        Tensor y = affine_loop(
            x, c, [&] { return v.read_value(); }, n);
        Tensor loss = reduce_sum(y * y);
        std::vector<Tensor> g =
            tape.gradient(loss, {x, c, v}, Tensor(), UnconnectedGradients::kZero);
        return Value::list({loss, g[0], g[1], g[2]});
      },
      o);
  // The same loss with v as an input, for central differences.
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    Tensor y = affine_loop(
        a[0], a[1], [&] { return a[2]; }, a[3]);
    return reduce_sum(y * y);
  };
  for (int n : {3, 1, 0}) {
    SCOPED_TRACE(n);
    const Tensor x = random_f64({2}, 3), c = random_f64({2}, 4);
    const Value r = fn({x, c, Tensor(n)});
    const std::vector<Tensor> xs{x, c, v.read_value(), Tensor(n)};
    const std::vector<Tensor> num = testing::numeric_gradients(f, xs, Tensor(1.0), 1e-6);
    expect_all_close(r.items()[0].tensor(), f(xs), 1e-12, "loss");
    expect_all_close(r.items()[1].tensor(), num[0], 1e-6, "d/dx");
    expect_all_close(r.items()[2].tensor(), num[1], 1e-6, "d/dc");
    expect_all_close(r.items()[3].tensor(), num[2], 1e-6, "d/dv");
  }
  EXPECT_EQ(traces, 1);
}

TEST(WhileGrad, MaximumIterationsBoundsTheBackwardLoopToo) {
  int traces = 0;
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    WhileOptions o;
    o.maximum_iterations = 3;
    return power(a[0], a[1], o);
  };
  Function fn = grad_function(f, 2, &traces);
  const double x = 0.7;
  std::vector<Tensor> r = call(fn, {Tensor(x), Tensor(100)});  // stopped by the limit
  expect_tensor_near<double>(r[0], {}, {x * x * x});
  expect_tensor_near<double>(r[1], {}, {3 * x * x});
  r = call(fn, {Tensor(x), Tensor(2)});  // stopped by cond
  expect_tensor_near<double>(r[1], {}, {2 * x});
  EXPECT_EQ(traces, 1);
}

TEST(WhileGrad, NestedLoops) {
  int traces = 0;
  // Two outer iterations of three inner multiplications by x (captured from
  // two levels up): y = x^7 from y0 = x, plus a tanh to mix the values.
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    const Tensor& x = a[0];
    Tensor y = while_loop([](const std::vector<Tensor>& s) { return s[0] < 2; },
                          [&](const std::vector<Tensor>& s) {
                            Tensor inner =
                                while_loop([](const std::vector<Tensor>& t) { return t[0] < 3; },
                                           [&](const std::vector<Tensor>& t) {
                                             return std::vector<Tensor>{t[0] + 1, t[1] * x};
                                           },
                                           {Tensor(0), s[1]})[1];
                            return std::vector<Tensor>{s[0] + 1, inner};
                          },
                          {Tensor(0), x})[1];
    return reduce_sum(tanh(y));
  };
  Function fn = grad_function(f, 1, &traces);
  const std::vector<double> xs{0.8, -0.9};
  std::vector<Tensor> r = call(fn, {Tensor::from_vector(xs, Shape{2})});
  std::vector<double> want;
  for (double x : xs) {
    const double t = std::tanh(std::pow(x, 7));
    want.push_back((1 - t * t) * 7 * std::pow(x, 6));
  }
  expect_tensor_near<double>(r[1], {2}, want, 1e-12);
  check_traced(fn, f, {random_f64({2}, 5)});
  EXPECT_EQ(traces, 1);
}

TEST(WhileGrad, LoopInsideCond) {
  int traces = 0;
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    const Tensor& x = a[0];
    return cond(
        a[1], [&] { return std::vector<Tensor>{power(x, Tensor(3))}; },
        [&] { return std::vector<Tensor>{x * 2.0}; })[0];
  };
  Function fn = grad_function(f, 2, &traces);
  const double x = 1.5;
  std::vector<Tensor> r = call(fn, {Tensor(x), Tensor(true)});
  expect_tensor_near<double>(r[0], {}, {x * x * x});
  expect_tensor_near<double>(r[1], {}, {3 * x * x});
  r = call(fn, {Tensor(x), Tensor(false)});
  expect_tensor_near<double>(r[1], {}, {2.0});
  EXPECT_EQ(traces, 1);
}

TEST(WhileGrad, LoopInsideACalledFunction) {
  FunctionOptions io;
  io.name = "inner";
  Function inner(
      [](const std::vector<Value>& a) { return Value(power(a[0].tensor(), a[1].tensor())); }, io);
  int traces = 0;
  FnUnderTest f = [&](const std::vector<Tensor>& a) { return inner({a[0], a[1]}).tensor(); };
  Function fn = grad_function(f, 2, &traces);
  std::vector<Tensor> r = call(fn, {Tensor(2.0), Tensor(4)});
  expect_tensor_near<double>(r[0], {}, {16});
  expect_tensor_near<double>(r[1], {}, {32});  // 4 x^3
  // Eagerly under a tape, the call is one recorded op (its backward function
  // holds the While's gradient).
  Tensor x(2.0);
  GradientTape tape;
  tape.watch(x);
  Tensor y = inner({x, Tensor(4)}).tensor();
  expect_tensor_near<double>(tape.gradient(y, x), {}, {32});
}

TEST(WhileGrad, CapturedVariableInsideACalledFunction) {
  // Inside the call's backward the variable is a handle placeholder: the
  // loop's gradient still treats it as a variable (a tensor of its shape
  // summed over iterations), eagerly under a tape and inside a trace.
  Variable v(Tensor({0.9, -0.4}), "v");
  FunctionOptions io;
  io.name = "inner";
  Function inner(
      [&](const std::vector<Value>& a) {
        return Value(affine_loop(
            a[0].tensor(), a[1].tensor(), [&] { return v.read_value(); }, Tensor(3)));
      },
      io);
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    Tensor y = affine_loop(
        a[0], a[1], [&] { return a[2]; }, Tensor(3));
    return reduce_sum(y * y);
  };
  const Tensor x = random_f64({2}, 5), c = random_f64({2}, 6);
  const std::vector<Tensor> num =
      testing::numeric_gradients(f, {x, c, v.read_value()}, Tensor(1.0), 1e-6);
  FunctionOptions o;
  o.name = "step";
  Function traced(
      [&](const std::vector<Value>& a) {
        GradientTape tape;
        tape.watch(a[0].tensor());
        Tensor y = inner({a[0].tensor(), a[1].tensor()}).tensor();
        Tensor loss = reduce_sum(y * y);
        std::vector<Tensor> g = tape.gradient(loss, {a[0].tensor(), v});
        return Value::list({g[0], g[1]});
      },
      o);
  const Value r = traced({x, c});
  expect_all_close(r.items()[0].tensor(), num[0], 1e-6, "traced d/dx");
  expect_all_close(r.items()[1].tensor(), num[2], 1e-6, "traced d/dv");
  GradientTape tape;
  tape.watch(x);
  Tensor y = inner({x, c}).tensor();
  Tensor loss = reduce_sum(y * y);
  std::vector<Tensor> g = tape.gradient(loss, {x, v});
  expect_all_close(g[0], num[0], 1e-6, "eager d/dx");
  expect_all_close(g[1], num[2], 1e-6, "eager d/dv");
}

TEST(WhileGrad, ShapeVaryingLoopVariable) {
  int traces = 0;
  // y doubles in length each iteration: [y, y * x] interleaved by stack
  // (concat_grad_test.cpp grows one by concat); sum(y) = x (1 + x)^n.
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    const Tensor& x = a[0];
    WhileOptions o;
    o.shape_invariants = {std::nullopt, Shape{-1}};
    Tensor y = while_loop([&](const std::vector<Tensor>& s) { return s[0] < a[1]; },
                          [&](const std::vector<Tensor>& s) {
                            Tensor both = stack({s[1], s[1] * x}, 1);
                            return std::vector<Tensor>{s[0] + 1, reshape(both, {-1})};
                          },
                          {Tensor(0), reshape(x, {1})}, o)[1];
    return reduce_sum(y);
  };
  Function fn = grad_function(f, 2, &traces);
  for (int n : {3, 4}) {
    const double x = 0.6;
    std::vector<Tensor> r = call(fn, {Tensor(x), Tensor(n)});
    expect_tensor_near<double>(r[0], {}, {x * std::pow(1 + x, n)}, 1e-12);
    expect_tensor_near<double>(r[1], {}, {std::pow(1 + x, n) + x * n * std::pow(1 + x, n - 1)},
                               1e-12);
  }
  EXPECT_EQ(traces, 1);
}

// ---- TensorArrays ----

// A dynamic_rnn: h_{t+1} = tanh(h_t W + x_t U) over x [T, B, F], every h
// written to a TensorArray and stacked ([T, B, H]). `read_x` selects how
// x_t is read: gather from the captured x, or from a TensorArray unstacked
// from x (a captured list). With `dynamic`, the output array grows.
Tensor rnn(const std::vector<Tensor>& a, bool from_array, bool dynamic) {
  const Tensor &x = a[0], &h0 = a[1], &w = a[2], &u = a[3];
  const int64_t steps = x.shape()[0];
  TensorArray xs = TensorArray(x.dtype(), steps).unstack(x);
  // The element shape given: the array returned by the loop is rewrapped
  // from this one, which never saw a write.
  TensorArray hs(x.dtype(), dynamic ? 0 : steps, dynamic, h0.shape());
  std::vector<Tensor> r = while_loop(
      [&](const std::vector<Tensor>& s) { return s[0] < static_cast<int32_t>(steps); },
      [&](const std::vector<Tensor>& s) {
        const Tensor xt = from_array ? xs.read(s[0]) : gather(x, s[0]);
        Tensor h = tanh(matmul(s[1], w) + matmul(xt, u));
        return std::vector<Tensor>{s[0] + 1, h, hs.with_handle(s[2]).write(s[0], h).handle()};
      },
      {Tensor(0), h0, hs.handle()});
  return hs.with_handle(r[2]).stack();
}

std::vector<Tensor> rnn_inputs(uint32_t seed) {
  return {random_f64({4, 2, 3}, seed), random_f64({2, 5}, seed + 1),
          random_f64({5, 5}, seed + 2, -0.6, 0.6), random_f64({3, 5}, seed + 3, -0.6, 0.6)};
}

TEST(TensorArrayGrad, DynamicRnnMatchesNumeric) {
  for (bool from_array : {false, true})
    for (bool dynamic : {false, true}) {
      SCOPED_TRACE(str_cat("from_array=", from_array, " dynamic=", dynamic));
      int traces = 0;
      const Tensor weights = random_f64({4, 2, 5}, 99, 0.5, 1.5);
      FnUnderTest f = [=](const std::vector<Tensor>& a) {
        return reduce_sum(rnn(a, from_array, dynamic) * cast(weights, a[0].dtype()));
      };
      Function fn = grad_function(f, 4, &traces);
      check_traced(fn, f, rnn_inputs(10));
      check_traced(fn, f, rnn_inputs(20));
      EXPECT_EQ(traces, 1);
    }
}

// The same through the shared harness: eager tape (the loop runs in C++,
// the tape records each TensorList op) vs numeric, traced vs eager, float32.
TEST(TensorArrayGrad, DynamicRnnEagerAndTraced) {
  testing::check_gradients(
      "rnn", [](const std::vector<Tensor>& a) { return rnn(a, true, false); }, rnn_inputs(30));
  testing::check_gradients(
      "rnn dynamic", [](const std::vector<Tensor>& a) { return rnn(a, false, true); },
      rnn_inputs(40));
}

TEST(TensorArrayGrad, WritesInsideACondInsideTheLoop) {
  // AutoGraph's `if i % 2 == 0: ta = ta.write(i, h)`: the If returns the
  // handle and carries its list gradient.
  int traces = 0;
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    const Tensor& x = a[0];
    TensorArray ta(DType::kFloat64, 4, false, x.shape());
    std::vector<Tensor> r = while_loop(
        [](const std::vector<Tensor>& s) { return s[0] < 4; },
        [&](const std::vector<Tensor>& s) {
          Tensor h = sin(s[1]) * x;
          TensorArray cur = ta.with_handle(s[2]);
          Tensor out = cond(
              s[0] % 2 == 0, [&] { return std::vector<Tensor>{cur.write(s[0], h * h).handle()}; },
              [&] { return std::vector<Tensor>{cur.handle()}; })[0];
          return std::vector<Tensor>{s[0] + 1, h, out};
        },
        {Tensor(0), x, ta.handle()});
    return reduce_sum(ta.with_handle(r[2]).stack() * x) + reduce_sum(r[1]);
  };
  Function fn = grad_function(f, 1, &traces);
  check_traced(fn, f, {random_f64({3}, 60)});
  check_traced(fn, f, {random_f64({3}, 61)});
  EXPECT_EQ(traces, 1);
}

// Lists of non-float items carry no gradient, whichever op made them (the
// tape reads the row's element_dtype, or the values a list is made from);
// float lists beside them still do.
TEST(TensorArrayGrad, IntegerListsCarryNoGradient) {
  const Tensor x = Tensor({1.5, 2.5});
  GradientTape tape;
  tape.watch(x);
  const TensorArray ints = TensorArray(DType::kInt32, 2).unstack(cast(x, DType::kInt32));
  const TensorArray written =
      TensorArray(DType::kInt32, 2).write(0, cast(reduce_sum(x), DType::kInt32));
  const TensorArray floats = TensorArray(DType::kFloat64, 2).unstack(x * 3.0);
  const Tensor y = reduce_sum(cast(ints.stack(), DType::kFloat64)) +
                   cast(written.read(0), DType::kFloat64) + reduce_sum(floats.stack());
  testing::expect_tensor<double>(tape.gradient(y, x), {2}, {3.0, 3.0});
}

TEST(TensorArrayGrad, ReadAndWriteOneArrayInTheLoop) {
  // A prefix product in place: ta[i] = ta[i] * ta[i - 1] over an array
  // unstacked from x, carried as a loop variable.
  testing::check_gradients(
      "prefix product",
      [](const std::vector<Tensor>& a) {
        TensorArray ta = TensorArray(a[0].dtype(), 4).unstack(a[0]);
        std::vector<Tensor> r =
            while_loop([](const std::vector<Tensor>& s) { return s[0] < 4; },
                       [&](const std::vector<Tensor>& s) {
                         TensorArray cur = ta.with_handle(s[1]);
                         Tensor v = cur.read(s[0]) * cur.read(s[0] - 1) + a[1];
                         return std::vector<Tensor>{s[0] + 1, cur.write(s[0], v).handle()};
                       },
                       {Tensor(1), ta.handle()});
        return ta.with_handle(r[1]).stack();
      },
      {random_f64({4, 2}, 70, 0.5, 1.5), random_f64({2}, 71)});
}

TEST(TensorArrayGrad, ReadWriteStackOutsideLoops) {
  // Unwritten items stack as zeros and get no gradient; a read item's
  // gradient flows to the tensor unstacked into the array.
  testing::check_gradients(
      "array",
      [](const std::vector<Tensor>& a) {
        TensorArray src = TensorArray(a[0].dtype(), 3).unstack(a[0]);
        TensorArray out(a[0].dtype(), 4);
        out = out.write(0, src.read(2) * a[1]).write(2, src.read(0) + src.read(2));
        return out.stack();
      },
      {random_f64({3, 2}, 50), random_f64({2}, 51)});
}

TEST(TensorArrayGrad, ListGradientsAdd) {
  // Two reads of one array: their list gradients add item by item.
  Tensor x({1.0, 2.0, 3.0});
  GradientTape tape;
  tape.watch(x);
  TensorArray ta = TensorArray(DType::kFloat64, 3).unstack(x);
  Tensor y = ta.read(1) * ta.read(1) + ta.read(2) * 3.0;
  expect_tensor_near<double>(tape.gradient(y, x), {3}, {0, 4, 3});
}

// ---- the list ops behind list gradients ----

Tensor list_of(const std::vector<Tensor>& items, DType dtype = DType::kFloat64) {
  TensorArray ta(dtype, static_cast<int64_t>(items.size()));
  for (size_t k = 0; k < items.size(); ++k)
    if (items[k].defined()) ta = ta.write(static_cast<int64_t>(k), items[k]);
  return ta.handle();
}

Tensor stack_list(const Tensor& h, const Shape& elem, DType dtype = DType::kFloat64) {
  return call_op1(OpId::TensorListStack, {h}, Attrs{dtype, elem.to_vector(), false});
}

TEST(TensorListOps, AddSumsItemsTreatingMissingOnesAsZeros) {
  Tensor a = list_of({Tensor({1.0, 2.0}), Tensor(), Tensor({5.0, 6.0})});
  Tensor b = list_of({Tensor({10.0, 20.0}), Tensor({30.0, 40.0})});
  Tensor sum = call_op1(OpId::TensorListAdd, {a, b});
  expect_tensor_near<double>(stack_list(sum, {2}), {3, 2}, {11, 22, 30, 40, 5, 6});
  Tensor z = call_op1(OpId::TensorListZerosLike, {a});
  expect_tensor_near<double>(stack_list(z, {2}), {3, 2}, {0, 0, 0, 0, 0, 0});
  expect_tensor_near<double>(stack_list(call_op1(OpId::TensorListAdd, {z, a}), {2}), {3, 2},
                             {1, 2, 0, 0, 5, 6});
}

TEST(TensorListOps, AddRejectsMismatchedLists) {
  Tensor a = list_of({Tensor({1.0, 2.0})});
  expect_error(
      [&] {
        call_op1(OpId::TensorListAdd, {a, list_of({Tensor({1.0})})});
      },
      Code::kInvalidArgument, {"_TensorListAdd", "element 0", "[2]", "[1]"});
  expect_error(
      [&] {
        call_op1(OpId::TensorListAdd, {a, list_of({Tensor({1.f, 2.f})}, DType::kFloat32)});
      },
      Code::kInvalidArgument, {"_TensorListAdd", "float64", "float32"});
  expect_error(
      [&] {
        call_op1(OpId::TensorListAdd, {a, Tensor(1.0)});
      },
      Code::kInvalidArgument, {"_TensorListAdd", "TensorArray handle"});
  Variable v(Tensor(1.0), "v");
  expect_error([&] { call_op1(OpId::TensorListZerosLike, {v.handle()}); }, Code::kInvalidArgument,
               {"not a TensorArray", "Variable"});
}

TEST(TensorListOps, ListsOfHandlesCanBeWrittenAndReadNotStacked) {
  // The while gradient's accumulators of TensorArray loop variables.
  const Attrs ra{DType::kResource, std::vector<int64_t>{}, false, true, true};
  Tensor acc = call_op1(OpId::TensorListReserve, {Tensor(0)}, ra);
  Tensor inner = list_of({Tensor({7.0})});
  acc = call_op1(OpId::TensorListSetItem, {acc, Tensor(1), inner}, {DType::kResource});
  Tensor back = call_op1(OpId::TensorListGetItem, {acc, Tensor(1)},
                         Attrs{DType::kResource, std::vector<int64_t>{}, false});
  expect_tensor_near<double>(stack_list(back, {1}), {1, 1}, {7});
  expect_error([&] { stack_list(acc, {}, DType::kResource); }, Code::kInvalidArgument,
               {"element_dtype must be a value dtype"});
  expect_error(
      [&] {
        call_op1(OpId::TensorListGetItem, {acc, Tensor(0)},
                 Attrs{DType::kResource, std::vector<int64_t>{}, false});
      },
      Code::kInvalidArgument, {"element 0 was never written"});
}

TEST(TensorListOps, WithoutInferShapeItemsKeepTheirOwnShapes) {
  const Attrs ra{DType::kFloat64, std::vector<int64_t>{-1}, false, true, false};
  Tensor l = call_op1(OpId::TensorListReserve, {Tensor(0)}, ra);
  l = call_op1(OpId::TensorListSetItem, {l, Tensor(0), Tensor({1.0})}, {DType::kFloat64});
  l = call_op1(OpId::TensorListSetItem, {l, Tensor(1), Tensor({2.0, 3.0})}, {DType::kFloat64});
  const Attrs ga{DType::kFloat64, std::vector<int64_t>{-1}, false};
  expect_tensor_near<double>(call_op1(OpId::TensorListGetItem, {l, Tensor(1)}, ga), {2}, {2, 3});
  expect_tensor_near<double>(call_op1(OpId::TensorListGetItem, {l, Tensor(0)}, ga), {1}, {1});
  // With infer_shape (the default) the first write fixes the shape.
  TensorArray ta(DType::kFloat64, 2);
  ta = ta.write(0, Tensor({1.0}));
  expect_error(
      [&] {
        ta.write(1, Tensor({2.0, 3.0}));
      },
      Code::kInvalidArgument, {"has shape [2]", "elements have shape [1]"});
}

// ---- what the rule refuses, and side effects ----

TEST(WhileGrad, RandomOpsInTheBodyAreAClearError) {
  int traces = 0;
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    return while_loop(
        [](const std::vector<Tensor>& s) { return s[0] < 2; },
        [&](const std::vector<Tensor>& s) {
          return std::vector<Tensor>{s[0] + 1, s[1] * random_uniform({}, 0, 1, DType::kFloat64)};
        },
        {Tensor(0), a[0]})[1];
  };
  Function fn = grad_function(f, 1, &traces);
  expect_error([&] { call(fn, {Tensor(1.0)}); }, Code::kUnimplemented,
               {"RandomUniform", "random numbers"});
}

TEST(WhileGrad, AVariableHandleAsALoopVariableIsAClearError) {
  Variable v(Tensor(2.0), "v");
  int traces = 0;
  FnUnderTest f = [&](const std::vector<Tensor>& a) {
    return while_loop([](const std::vector<Tensor>& s) { return s[0] < 2; },
                      [&](const std::vector<Tensor>& s) {
                        Tensor w = call_op1(OpId::ReadVariable, {s[1]},
                                            Attrs{DType::kFloat64, std::vector<int64_t>{}});
                        return std::vector<Tensor>{s[0] + 1, s[1], s[2] * w};
                      },
                      {Tensor(0), v.handle(), a[0]})[2];
  };
  Function fn = grad_function(f, 1, &traces);
  expect_error([&] { call(fn, {Tensor(1.0)}); }, Code::kUnimplemented,
               {"loop variable 1 is the handle of Variable 'v:0'", "inside the loop body"});
}

TEST(WhileGrad, SideEffectsInTheBodyRunOncePerIteration) {
  Variable counter(Tensor(0), "counter", /*trainable=*/false);
  int traces = 0;
  FnUnderTest f = [&](const std::vector<Tensor>& a) {
    return while_loop([](const std::vector<Tensor>& s) { return s[0] < 3; },
                      [&](const std::vector<Tensor>& s) {
                        counter.assign_add(1);
                        return std::vector<Tensor>{s[0] + 1, s[1] * a[0]};
                      },
                      {Tensor(0), a[0]})[1];
  };
  Function fn = grad_function(f, 1, &traces);
  std::vector<Tensor> r = call(fn, {Tensor(2.0)});
  expect_tensor_near<double>(r[1], {}, {32});          // 4 x^3
  EXPECT_EQ(counter.read_value().item<int32_t>(), 3);  // not repeated by the gradient
}

// The public API never runs a While op eagerly, but the rule handles one
// (a graph of the gradient over the concrete values, run once).
TEST(WhileGrad, AWhileOpRunEagerlyUnderATape) {
  FunctionOptions o;
  o.name = "loop";
  Function loop([](const std::vector<Value>& a) { return Value(power(a[0].tensor(), Tensor(3))); },
                o);
  auto cf = loop.get_concrete_function({ArgSpec{DType::kFloat64, Shape{}, ""}});
  const Node* w = nullptr;
  for (const auto& n : cf->graph().nodes())
    if (n->op().id == OpId::While) w = n.get();
  ASSERT_NE(w, nullptr);
  Tensor x(1.5);
  GradientTape tape;
  tape.watch(x);
  // Loop variables (counter, y), then the capture x (the count is a constant).
  ASSERT_EQ(w->inputs().size(), 3u);
  std::vector<Tensor> outs;
  execute_op(w->op(), std::vector<Tensor>{Tensor(0), Tensor(1.0), x}, w->attrs(), outs);
  expect_tensor_near<double>(outs[1], {}, {1.5 * 1.5 * 1.5});
  expect_tensor_near<double>(tape.gradient(outs[1], x), {}, {3 * 1.5 * 1.5});
}

TEST(WhileGrad, LoopsWithoutDifferentiableInputsGiveNoGradient) {
  int traces = 0;
  FnUnderTest f = [](const std::vector<Tensor>& a) {
    Tensor k = while_loop([](const std::vector<Tensor>& s) { return s[0] < 3; },
                          [](const std::vector<Tensor>& s) {
                            return std::vector<Tensor>{s[0] + 1, s[1] * 2.0};
                          },
                          {Tensor(0), Tensor(1.0)})[1];
    return k * a[0];
  };
  Function fn = grad_function(f, 1, &traces);
  std::vector<Tensor> r = call(fn, {Tensor(5.0)});
  expect_tensor_near<double>(r[1], {}, {8});
  auto cf = fn.get_concrete_function({ArgSpec{DType::kFloat64, Shape{}, ""}});
  EXPECT_EQ(count_nodes(cf->graph(), OpId::While), 1);  // nothing to differentiate in it
}

}  // namespace
}  // namespace kiln
