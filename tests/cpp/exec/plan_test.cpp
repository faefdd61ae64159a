#include "kiln/executor.h"
#include "kiln/trace.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using testing::expect_tensor_near;

// Traces `body` over placeholders of the given specs into `g`.
template <typename F>
void trace(Graph& g, std::vector<std::pair<std::string, TensorSpec>> args, F body) {
  TracingContext tc(g);
  ContextScope scope(tc);
  std::vector<Tensor> in;
  for (auto& [name, spec] : args) in.push_back(tc.add_input(name, spec.dtype, spec.shape));
  std::vector<Tensor> out = body(in);
  for (const Tensor& t : out) {
    Edge e = tc.edge_for(t);
    g.outputs().push_back(e);
  }
}

TEST(Plan, RunsATracedGraphAndMatchesEager) {
  Graph g("f");
  trace(g, {{"x", {DType::kFloat32, Shape({2, 3})}}, {"w", {DType::kFloat32, Shape({3})}}},
        [](std::vector<Tensor> a) {
          return std::vector<Tensor>{reduce_sum(tanh(a[0] * a[1] + 1.f), {1})};
        });
  auto plan = Plan::compile(g);
  Tensor x({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}), w({0.5f, -1.f, 0.f});
  std::vector<Tensor> got = plan->run(std::vector<Tensor>{x, w});
  Tensor want = reduce_sum(tanh(x * w + 1.f), {1});
  ASSERT_EQ(got.size(), 1u);
  expect_tensor_near<float>(got[0], {2}, want.to_vector<float>());
  // Runs again with other values (state is per call).
  got = plan->run(std::vector<Tensor>{x * 2.f, w});
  expect_tensor_near<float>(got[0], {2},
                            reduce_sum(tanh(x * 2.f * w + 1.f), {1}).to_vector<float>());
}

TEST(Plan, UnknownDimsAreResolvedPerCall) {
  Graph g("f");
  trace(g, {{"x", {DType::kInt32, Shape({-1})}}}, [](std::vector<Tensor> a) {
    return std::vector<Tensor>{a[0] * 2, reshape(a[0], {-1, 1})};
  });
  auto plan = Plan::compile(g);
  for (int n : {1, 3, 7}) {
    std::vector<int32_t> v(static_cast<size_t>(n), 5);
    auto out = plan->run(std::vector<Tensor>{Tensor::from_vector(v, {n})});
    expect_tensor<int32_t>(out[0], {n}, std::vector<int32_t>(static_cast<size_t>(n), 10));
    expect_tensor<int32_t>(out[1], {n, 1}, v);
  }
}

TEST(Plan, IntermediatesAreUpdatedInPlaceButInputsNever) {
  Graph g("f");
  trace(g, {{"x", {DType::kFloat32, Shape({1000})}}}, [](std::vector<Tensor> a) {
    Tensor y = a[0] + 1.f;
    return std::vector<Tensor>{(y * 2.f) - 1.f};
  });
  auto plan = Plan::compile(g);
  EXPECT_NE(plan->debug_string().find("s"), std::string::npos);
  Tensor x = Tensor::from_vector(std::vector<float>(1000, 1.f), {1000});
  auto out = plan->run(std::vector<Tensor>{x});
  EXPECT_EQ(out[0].at<float>({0}), 3.f);
  EXPECT_EQ(x.at<float>({0}), 1.f);  // the caller's tensor is untouched
}

// run_owned: a caller's input moves into the step that reads it last, which
// may then write in place; an input read again later or returned as it is
// stays. run() never writes a caller's tensor.
TEST(Plan, OwnedInputsMoveIntoTheirLastReader) {
  Graph g("f");
  const TensorSpec spec{DType::kFloat32, Shape({1000})};
  trace(g, {{"x", spec}, {"y", spec}}, [](std::vector<Tensor> a) {
    Tensor u = a[0] + 1.f;  // x's only reader
    Tensor v = a[1] * 2.f;  // y is read again below and returned
    return std::vector<Tensor>{u, v + a[1], a[1]};
  });
  auto plan = Plan::compile(g);
  EXPECT_EQ(plan->num_parallel_regions(), 0u);
  auto ones = [] { return Tensor::from_vector(std::vector<float>(1000, 1.f), {1000}); };
  const Tensor y = ones();
  Tensor x = ones();
  const void* x_data = x.raw_data();
  std::vector<Tensor> in{std::move(x), y}, out;
  plan->run_owned(in, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].raw_data(), x_data);  // x + 1 written over x
  EXPECT_EQ(out[0].at<float>({999}), 2.f);
  EXPECT_EQ(out[1].at<float>({0}), 3.f);
  EXPECT_EQ(out[2].raw_data(), y.raw_data());
  EXPECT_EQ(y.at<float>({0}), 1.f);
  // The same plan through run(): the caller's x is left as it was.
  const Tensor x2 = ones();
  const std::vector<Tensor> out2 = plan->run(std::vector<Tensor>{x2, y});
  EXPECT_NE(out2[0].raw_data(), x2.raw_data());
  EXPECT_EQ(x2.at<float>({0}), 1.f);
}

// Memory kiln does not own (a SavedModel's mapped variables) is never written
// in place, even when its only reference moves into its last reader: another
// buffer may wrap the same memory (a second read of the same variable).
TEST(Plan, WrappedInputsAreNeverWrittenInPlace) {
  Graph g("f");
  trace(g, {{"x", {DType::kFloat32, Shape({4})}}},
        [](std::vector<Tensor> a) { return std::vector<Tensor>{a[0] + 1.f}; });
  auto plan = Plan::compile(g);
  static float storage[4] = {1, 2, 3, 4};
  for (bool fixed : {false, true}) {
    auto wrapped = [&] {
      Buffer* b = Buffer::wrap(
          storage, sizeof storage, [] {}, fixed);
      Tensor t = Tensor::from_buffer(b, 0, DType::kFloat32, {4});
      b->unref();
      return t;
    };
    const Tensor other = wrapped();
    std::vector<Tensor> in{wrapped()}, out;
    EXPECT_FALSE(in[0].buffer()->unique());
    plan->run_owned(in, out);
    EXPECT_NE(out[0].raw_data(), static_cast<const void*>(storage));
    expect_tensor<float>(out[0], {4}, {2, 3, 4, 5});
    expect_tensor<float>(other, {4}, {1, 2, 3, 4});
  }
}

TEST(Plan, StatefulOpsRunInProgramOrderEveryCall) {
  Variable v(Tensor(0));
  Graph g("f");
  trace(g, {}, [&](std::vector<Tensor>) {
    v.assign_add(Tensor(1));
    Tensor r = v.read_value();
    v.assign_add(Tensor(10));
    return std::vector<Tensor>{r};
  });
  auto plan = Plan::compile(g);
  EXPECT_EQ(plan->run({})[0].item<int32_t>(), 1);
  EXPECT_EQ(plan->run({})[0].item<int32_t>(), 12);
  EXPECT_EQ(v.read_value().item<int32_t>(), 22);
}

TEST(Plan, KernelErrorsNameTheNodeAndFunction) {
  Graph g("divider");
  trace(g, {{"x", {DType::kInt32, Shape({2})}}}, [](std::vector<Tensor> a) {
    return std::vector<Tensor>{floordiv(Tensor({1, 2}), a[0])};
  });
  auto plan = Plan::compile(g);
  expect_error(
      [&] {
        plan->run(std::vector<Tensor>{Tensor({1, 0})});
      },
      Code::kInvalidArgument, {"division by zero", "node 'floordiv'", "function 'divider'"});
  expect_error([&] { plan->run({}); }, Code::kInvalidArgument, {"expects 1 inputs, got 0"});
}

TEST(Plan, OutputsMayRepeatAndMayBeInputsOrConstants) {
  Graph g("f");
  Tensor c({7});
  trace(g, {{"x", {DType::kInt32, Shape({1})}}}, [&](std::vector<Tensor> a) {
    Tensor y = a[0] + c;
    return std::vector<Tensor>{y, y, a[0], c};
  });
  auto plan = Plan::compile(g);
  auto out = plan->run(std::vector<Tensor>{Tensor({1})});
  ASSERT_EQ(out.size(), 4u);
  expect_tensor<int32_t>(out[0], {1}, {8});
  expect_tensor<int32_t>(out[1], {1}, {8});
  expect_tensor<int32_t>(out[2], {1}, {1});
  expect_tensor<int32_t>(out[3], {1}, {7});
}

}  // namespace
}  // namespace kiln
