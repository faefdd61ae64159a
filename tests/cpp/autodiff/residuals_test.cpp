// Eager calls under a tape keep what the backward reads (src/autodiff/
// residuals.cpp): the backward does not recompute the forward, sees the
// values of the forward call (variables, random draws). Higher orders (the
// recomputing fallback): CallGrad.SecondOrderThroughACall.
#include "autodiff/backward_trace.h"
#include "kiln/function.h"
#include "kiln/gradient_tape.h"
#include "kiln/variable.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::count_nodes;
using testing::expect_error;
using testing::expect_tensor_near;

Function unary(std::function<Tensor(const Tensor&)> fn, std::string name) {
  FunctionOptions o;
  o.name = std::move(name);
  o.arg_names = {"x"};
  return Function([fn](const std::vector<Value>& a) { return Value(fn(a[0].tensor())); }, o);
}

const detail::Residuals& residuals_of(Function& f, const Shape& shape) {
  auto cf = f.get_concrete_function({ArgSpec{DType::kFloat32, shape, ""}});
  static std::vector<Ref<detail::FunctionSubgraph>> keep;
  keep.push_back(Ref<detail::FunctionSubgraph>::adopt(new detail::FunctionSubgraph(cf)));
  const detail::Residuals* r = keep.back()->residuals();
  if (!r) throw std::runtime_error("no residuals");
  return *r;
}

const Graph& optimized(const Ref<Subgraph>& s) {
  const Graph* g = subgraph_graph(*s);
  if (!g) throw std::runtime_error("not a graph subgraph");
  return *g;
}

TEST(Residuals, TheBackwardReadsTheForwardValuesInsteadOfRecomputing) {
  Function f = unary([](const Tensor& x) { return exp(tanh(x) * x); }, "f");
  const detail::Residuals& r = residuals_of(f, Shape{3});
  EXPECT_EQ(r.num_outputs, 1u);
  // tanh(x) (read by d(t*x)) and exp(...) (its own gradient) come out.
  EXPECT_EQ(r.forward->output_specs().size(), 3u);
  const Graph& back = optimized(r.backward.graph);
  EXPECT_EQ(count_nodes(back, OpId::Tanh), 0) << back.debug_listing();
  EXPECT_EQ(count_nodes(back, OpId::Exp), 0) << back.debug_listing();
  EXPECT_EQ(r.backward.input_index, std::vector<size_t>{0});
  // Inputs: x, the output gradient, then the residuals.
  EXPECT_EQ(r.backward.graph->input_specs().size(), 2u + 2u);
}

TEST(Residuals, EagerGradientMatchesTheAnalyticOne) {
  Function f = unary([](const Tensor& x) { return exp(tanh(x) * x); }, "f");
  const std::vector<float> xs{0.5f, -1.f, 2.f};
  Tensor x({xs[0], xs[1], xs[2]});
  for (int round = 0; round < 2; ++round) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = f({x}).tensor();
    Tensor g = tape.gradient(reduce_sum(y), x);
    std::vector<float> want;
    for (float v : xs) {
      const float t = std::tanh(v);
      want.push_back(std::exp(t * v) * (t + v * (1 - t * t)));
    }
    expect_tensor_near<float>(g, {3}, want, 1e-5);
  }
}

TEST(Residuals, TheGradientUsesTheVariableValueOfTheForwardCall) {
  // As in TensorFlow: assigning a variable between the forward call and
  // tape.gradient does not change the gradient.
  Variable v(Tensor(2.f), "v");
  Function f = unary([&](const Tensor& x) { return x * x * v.read_value(); }, "f");
  Tensor x(3.f);
  GradientTape tape;
  tape.watch(x);
  Tensor y = f({x}).tensor();
  v.assign(Tensor(100.f));
  std::vector<Tensor> g = tape.gradient(y, {GradSource(x), GradSource(v)});
  EXPECT_FLOAT_EQ(g[0].item<float>(), 12.f);  // 2 x v, v = 2 at the call
  EXPECT_FLOAT_EQ(g[1].item<float>(), 9.f);   // x^2
}

TEST(Residuals, RandomDrawsOfTheForwardAreDifferentiated) {
  Function noisy = unary([](const Tensor& x) { return x * random_uniform(x.shape()); }, "noisy");
  Tensor x({1.f, 2.f, 4.f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = noisy({x}).tensor();
  Tensor g = tape.gradient(reduce_sum(y), x);
  expect_tensor_near<float>(g, {3}, (y / x).to_vector<float>(), 1e-6);  // the drawn mask
}

TEST(Residuals, SideEffectsOfTheForwardRunOnce) {
  Variable counter(Tensor(0.f), "counter", /*trainable=*/false);
  Function f = unary(
      [&](const Tensor& x) {
        counter.assign_add(Tensor(1.f));
        return x * x;
      },
      "f");
  Tensor x(3.f);
  GradientTape tape;
  tape.watch(x);
  Tensor y = f({x}).tensor();
  EXPECT_FLOAT_EQ(tape.gradient(y, x).item<float>(), 6.f);
  EXPECT_FLOAT_EQ(counter.read_value().item<float>(), 1.f);
}

TEST(Residuals, PersistentTapeGivesTheSameGradientTwice) {
  Function f = unary([](const Tensor& x) { return sin(x) * x; }, "f");
  Tensor x({0.3f, 1.2f});
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor y = reduce_sum(f({x}).tensor());
  tape.stop();
  Tensor a = tape.gradient(y, x), b = tape.gradient(y, x);
  std::vector<float> want;
  for (float v : {0.3f, 1.2f}) want.push_back(std::cos(v) * v + std::sin(v));
  expect_tensor_near<float>(a, {2}, want, 1e-6);
  expect_tensor_near<float>(b, {2}, want, 1e-6);
}

TEST(Residuals, OnlyCallsATapeRecordsKeepValues) {
  Function f = unary([](const Tensor& x) { return tanh(x); }, "f");
  Tensor x({1.f}), c({2.f});
  GradientTape tape;
  tape.watch(x);
  EXPECT_TRUE(detail::tapes_would_record(std::vector<Tensor>{x}));
  EXPECT_FALSE(detail::tapes_would_record(std::vector<Tensor>{c}));  // the plain plan runs
  Tensor y = f({c}).tensor();
  expect_tensor_near<float>(y, {1}, {std::tanh(2.f)});
  EXPECT_FALSE(tape.gradient(y, x).defined());
  tape.stop();
  EXPECT_FALSE(detail::tapes_would_record(std::vector<Tensor>{x}));  // not recording
}

}  // namespace
}  // namespace kiln
