// bfloat16 MatMul runs natively (kNativeBFloat16: oneDNN's bf16 kernels, float32
// accumulation) against a float64 reference of the same bf16 values, eagerly
// and traced (no casts recorded), in every way the kernel splits a product;
// float16 still computes in float32 between casts.
#include <vector>

#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/trace.h"
#include "matmul_bf16_util.h"

namespace kiln {
namespace {
// A budget of 4 threads (before the pool starts), so the large cases run as
// blocks on any machine.
const bool kFourThreads = (config().num_threads = 4, true);

TEST(MatMulBFloat16, MatchesTheReferenceInEverySplit) {
  for (const testing::MatMulBf16Case& p : testing::mm_bf16_cases()) {
    SCOPED_TRACE(testing::mm_case_name(p));
    testing::check_bf16_matmul(p);
  }
}

TEST(MatMulBFloat16, TracedWithoutCasts) {
  const Tensor a = testing::mm_wave({2, 48, 40}, 0.7), b = testing::mm_wave({40, 24}, 1.3);
  for (DType half : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(half));
    const Tensor ah = cast(a, half), bh = cast(b, half);
    Graph g("f");
    {
      TracingContext tc(g);
      ContextScope scope(tc);
      const Tensor x = tc.add_input("a", half, ah.shape());
      const Tensor y = tc.add_input("b", half, bh.shape());
      g.outputs().push_back(tc.edge_for(matmul(x, y)));
    }
    int casts = 0, products = 0;
    for (const auto& n : g.nodes()) {
      casts += n->op().id == OpId::Cast;
      products += n->op().id == OpId::MatMul;
    }
    EXPECT_EQ(products, 1);
    // bfloat16 runs on MatMul's own kernel; float16 in float32.
    EXPECT_EQ(casts, half == DType::kBFloat16 ? 0 : 3);
    const std::vector<Tensor> got = Plan::compile(g)->run(std::vector<Tensor>{ah, bh});
    const Tensor eager = matmul(ah, bh);
    ASSERT_EQ(got[0].dtype(), half);
    EXPECT_EQ(cast(got[0], DType::kFloat32).to_vector<float>(),
              cast(eager, DType::kFloat32).to_vector<float>());
  }
}

TEST(MatMulBFloat16, EmptyAndZeroDepth) {
  const Tensor z = matmul(cast(testing::mm_wave({4, 0}, 1.0), DType::kBFloat16),
                          cast(testing::mm_wave({0, 3}, 1.0), DType::kBFloat16));
  testing::expect_tensor_near<float>(cast(z, DType::kFloat32), Shape({4, 3}),
                                     std::vector<float>(12, 0.f));
  const Tensor e = matmul(cast(testing::mm_wave({0, 5}, 1.0), DType::kBFloat16),
                          cast(testing::mm_wave({5, 3}, 1.0), DType::kBFloat16));
  EXPECT_EQ(e.shape(), Shape({0, 3}));
}

// matmul_float_weights' _FusedMatMul with the bias and relu it absorbs: oneDNN's
// bias input and relu post-op on the float32 sums, one rounding.
TEST(MatMulBFloat16, FusedEpilogues) {
  testing::check_fused_epilogues();
}

TEST(MatMulBFloat16, DtypesMustMatch) {
  const Tensor a = cast(testing::mm_wave({4, 4}, 0.3), DType::kBFloat16);
  const Tensor b = testing::mm_wave({4, 3}, 0.5);  // float32
  testing::expect_error([&] { matmul(a, b); }, Code::kInvalidArgument, {"MatMul"});
}

}  // namespace
}  // namespace kiln
