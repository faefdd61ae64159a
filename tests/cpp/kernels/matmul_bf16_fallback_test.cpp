// bfloat16 MatMul on a CPU without oneDNN bf16 kernels: oneDNN is held to AVX2
// (ONEDNN_MAX_CPU_ISA, set before its first use), so MatMul computes on float32
// copies and rounds the output once; a single product handed to oneDNN
// directly (bf16_gemm_call, strided and transposed as row and column blocks
// are) runs its float32 path too. Same cases and reference as
// matmul_bf16_test.cpp.
#include <cstdlib>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/passes.h"
#include "kiln/trace.h"
#include "matmul_bf16_util.h"

namespace kiln {
namespace {
const bool kAvx2Only = (setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1),
                        setenv("DNNL_MAX_CPU_ISA", "AVX2", 1), config().num_threads = 4, true);

TEST(MatMulBFloat16Fallback, NoNativeKernel) {
  EXPECT_FALSE(cpu::bf16_gemm_native());
}

TEST(MatMulBFloat16Fallback, MatchesTheReferenceInEverySplit) {
  for (const testing::MatMulBf16Case& p : testing::mm_bf16_cases()) {
    SCOPED_TRACE(testing::mm_case_name(p));
    testing::check_bf16_matmul(p);
  }
}

// Columns [2, 7) of op(A) op(B) for A [5, 6] (stored [6, 5] when ta) and B
// [6, 9] (stored [9, 6] when tb), written into a wider C (ldc 11).
TEST(MatMulBFloat16Fallback, OneStridedBlock) {
  const int64_t m = 5, k = 6, n = 9, ldc = 11, c0 = 2, width = 5;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(str_cat("ta ", ta, " tb ", tb));
      const Tensor a =
          cast(testing::mm_wave(ta ? Shape{k, m} : Shape{m, k}, 0.7), DType::kBFloat16);
      const Tensor b =
          cast(testing::mm_wave(tb ? Shape{n, k} : Shape{k, n}, 1.3), DType::kBFloat16);
      const Tensor want =
          cast(matmul(cast(a, DType::kFloat64), cast(b, DType::kFloat64), ta, tb), DType::kFloat32);
      std::vector<BFloat16> c(static_cast<size_t>(m * ldc), to_bfloat16(-7.f));
      const BFloat16* bp = b.data<BFloat16>();
      cpu::bf16_gemm_call({ta, tb, m, width, k, a.data<BFloat16>(), ta ? m : k,
                           bp + (tb ? c0 * k : c0), tb ? k : n, c.data() + c0, ldc});
      const std::vector<float> w = want.to_vector<float>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const float got = to_float(c[static_cast<size_t>(i * ldc + j)]);
          if (j < c0 || j >= c0 + width)
            EXPECT_EQ(got, -7.f) << i << "," << j;  // outside the block: untouched
          else
            EXPECT_NEAR(got, w[static_cast<size_t>(i * n + j)], 8e-3) << i << "," << j;
        }
    }
}

// matmul_float_weights' _FusedMatMul rounds the float32 weights itself, then
// multiplies as MatMul does: the same values as the cast path.
TEST(MatMulBFloat16Fallback, FloatWeights) {
  const Tensor x = cast(testing::mm_wave({300, 64}, 0.7), DType::kBFloat16);
  const Tensor w = testing::mm_wave({64, 96}, 1.3);
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    const Tensor a = tc.add_input("x", x.dtype(), x.shape());
    const Tensor b = tc.add_input("w", w.dtype(), w.shape());
    g.outputs().push_back(tc.edge_for(matmul(a, cast(b, DType::kBFloat16))));
  }
  const std::vector<Tensor> in = {x, w};
  const std::vector<Tensor> want = Plan::compile(g)->run(in);
  ASSERT_EQ(matmul_float_weights(g).rewritten.size(), 1u);
  const std::vector<Tensor> got = Plan::compile(g)->run(in);
  EXPECT_EQ(cast(got[0], DType::kFloat32).to_vector<float>(),
            cast(want[0], DType::kFloat32).to_vector<float>());
}

// The bias and relu that matmul_float_weights absorbs: the float32 product of
// the same bf16 values, the epilogue, one rounding.
TEST(MatMulBFloat16Fallback, FusedEpilogues) {
  testing::check_fused_epilogues();
}

// Under jit_compile a bf16 product stays a MatMul node here (the kernel
// computes only products oneDNN has bf16 kernels for), and its epilogue's
// kernel reads it: eager's values.
TEST(MatMulBFloat16Fallback, JitKeepsTheProductANode) {
  const Tensor x = cast(testing::mm_wave({40, 32}, 0.7), DType::kBFloat16);
  const Tensor w = cast(testing::mm_wave({32, 24}, 1.3), DType::kBFloat16);
  auto body = [](const std::vector<Value>& a) {
    return Value(tanh(matmul(a[0].tensor(), a[1].tensor())) * 2.0f);
  };
  FunctionOptions o;
  o.jit_compile = true;
  const bool excess = config().jit_excess_precision;
  config().jit_excess_precision = false;  // each op rounds to bf16, as eagerly
  Function f(body, o);
  const std::vector<Value> args = {Value(x), Value(w)};
  const Value got = f(args);
  EXPECT_EQ(cast(got.tensor(), DType::kFloat32).to_vector<float>(),
            cast(body(args).tensor(), DType::kFloat32).to_vector<float>());
  const Graph& g = f.get_concrete_function(args)->optimized_graph();
  config().jit_excess_precision = excess;
  size_t matmuls = 0, kernels = 0;
  for (const auto& n : g.nodes()) {
    matmuls += n->op().id == OpId::MatMul;
    kernels += n->op().id == OpId::JitKernel;
  }
  EXPECT_EQ(matmuls, 1u);
  EXPECT_EQ(kernels, 1u);
}

}  // namespace
}  // namespace kiln
