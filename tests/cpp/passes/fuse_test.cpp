#include "kiln/executor.h"
#include "kiln/passes.h"
#include "kiln/trace.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::count_nodes;
using testing::expect_tensor_near;

template <typename F>
std::unique_ptr<Graph> trace1(DType dt, const Shape& shape, F body) {
  auto g = std::make_unique<Graph>("f");
  TracingContext tc(*g);
  ContextScope scope(tc);
  Tensor x = tc.add_input("x", dt, shape);
  for (const Tensor& t : body(x)) g->outputs().push_back(tc.edge_for(identity(t)));
  return g;
}

TEST(Fuse, ChainBecomesOneNodeAndComputesTheSame) {
  auto chain = [](const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < 10; ++i) y = tanh(y) * 0.5f + x;
    return std::vector<Tensor>{y};
  };
  auto g = trace1(DType::kFloat32, Shape({3, 700}), chain);
  PassResult r = fuse_elementwise(*g);
  g->verify();
  EXPECT_EQ(count_nodes(*g, OpId::FusedElementwise), 1);
  EXPECT_EQ(count_nodes(*g, OpId::Tanh), 0);
  ASSERT_EQ(r.rewritten.size(), 1u);
  EXPECT_NE(r.rewritten[0].second.find("fused 30 ops"), std::string::npos) << r.rewritten[0].second;
  std::vector<float> v(2100);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 17) * 0.3f - 2.f;
  Tensor x = Tensor::from_vector(v, {3, 700});
  auto plan = Plan::compile(*g);
  Tensor got = plan->run(std::vector<Tensor>{x})[0];
  expect_tensor_near<float>(got, {3, 700}, chain(x)[0].to_vector<float>(), 1e-6);
}

TEST(Fuse, SingleElementChainKeepsItsShape) {
  // [1] inputs mixed with scalar constants: the fused node is [1], not [].
  auto g = trace1(DType::kFloat32, Shape({1}),
                  [](const Tensor& x) { return std::vector<Tensor>{(x + 1.f) * 2.f}; });
  fuse_elementwise(*g);
  g->verify();
  ASSERT_EQ(count_nodes(*g, OpId::FusedElementwise), 1);
  auto plan = Plan::compile(*g);
  std::vector<Tensor> out = plan->run(std::vector<Tensor>{Tensor({3.f})});
  expect_tensor_near<float>(out[0], {1}, {8.f});
}

TEST(Fuse, SharedIntermediatesOutputsAndBroadcastsStayOut) {
  auto g = trace1(DType::kFloat32, Shape({2, 3}), [](const Tensor& x) {
    Tensor a = exp(x);                       // used twice: stays materialized
    Tensor b = a * a + 1.f;                  // fused: Mul, Add
    Tensor c = b + Tensor({1.f, 2.f, 3.f});  // [3] broadcast: not fused
    return std::vector<Tensor>{c, a};
  });
  fuse_elementwise(*g);
  g->verify();
  EXPECT_EQ(count_nodes(*g, OpId::FusedElementwise), 1);
  EXPECT_EQ(count_nodes(*g, OpId::Exp), 1);
  EXPECT_EQ(count_nodes(*g, OpId::Add), 1);
}

TEST(Fuse, IgnoresOtherDtypesAndUnknownShapes) {
  auto gi = trace1(DType::kInt32, Shape({4}),
                   [](const Tensor& x) { return std::vector<Tensor>{(x * 2 + 1) * 3}; });
  EXPECT_FALSE(fuse_elementwise(*gi).changed());
  auto gu = trace1(DType::kFloat32, Shape({-1}),
                   [](const Tensor& x) { return std::vector<Tensor>{tanh(x * 2.f)}; });
  EXPECT_FALSE(fuse_elementwise(*gu).changed());
}

TEST(Fuse, RunsInTheOptimizePipeline) {
  auto g = trace1(DType::kFloat32, Shape({8}),
                  [](const Tensor& x) { return std::vector<Tensor>{sigmoid(x) * x - 1.f}; });
  OptimizeReport rep = optimize(*g);
  EXPECT_NE(rep.to_string().find("fuse"), std::string::npos);
  EXPECT_EQ(count_nodes(*g, OpId::FusedElementwise), 1);
  Tensor x({-2.f, -1.f, 0.f, 1.f, 2.f, 3.f, 4.f, 5.f});
  Tensor got = Plan::compile(*g)->run(std::vector<Tensor>{x})[0];
  expect_tensor_near<float>(got, {8}, (sigmoid(x) * x - 1.f).to_vector<float>(), 1e-6);
}

TEST(Fuse, MalformedProgramsAreRejectedByInference) {
  std::vector<Tensor> x{Tensor({1.f, 2.f})};
  testing::expect_error(
      [&] {
        call_op(OpId::FusedElementwise, x,
                {std::vector<int64_t>{static_cast<int64_t>(OpId::Tanh), 5, -1}});
      },
      Code::kInvalidArgument, {"FusedElementwise", "register"});
  testing::expect_error(
      [&] {
        call_op(OpId::FusedElementwise, x,
                {std::vector<int64_t>{static_cast<int64_t>(OpId::MatMul), 0, 0}});
      },
      Code::kInvalidArgument, {"cannot be fused"});
  std::vector<Tensor> x3{x[0], Tensor(3.f)};
  auto out = call_op(OpId::FusedElementwise, x3,
                     {std::vector<int64_t>{static_cast<int64_t>(OpId::Mul), 0, 1,
                                           static_cast<int64_t>(OpId::Neg), 2, -1}});
  testing::expect_tensor<float>(out[0], {2}, {-3.f, -6.f});
}

}  // namespace
}  // namespace kiln
