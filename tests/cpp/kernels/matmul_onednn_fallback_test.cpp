// Float32 products on a CPU without oneDNN's brgemm kernel: oneDNN is held to
// AVX2 (ONEDNN_MAX_CPU_ISA, set before its first use), so every product, its
// blocks, batches of heads and weights seen before run on OpenBLAS, with the
// same values as matmul_onednn_test.cpp checks on oneDNN.
#include <cstdlib>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kiln/config.h"
#include "kiln/function.h"
#include "kiln/ops.h"
#include "matmul_onednn_util.h"
#include "test_util.h"

namespace kiln {
namespace {
const bool kAvx2Only = (setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1),
                        setenv("DNNL_MAX_CPU_ISA", "AVX2", 1), config().num_threads = 4, true);
using testing::Case;
using testing::max_error;
using testing::name_of;
using testing::values;

TEST(MatMulOneDnnFallback, NoBrgemmKernel) {
  EXPECT_FALSE(cpu::f32_gemm_native());
}

TEST(MatMulOneDnnFallback, EveryProductOnOpenBlas) {
  for (const Case& p : {Case{256, 256, 256, false, false}, Case{1024, 96, 200, false, true},
                        Case{520, 70, 500, false, false}}) {
    SCOPED_TRACE(name_of(p));
    const std::vector<float> a = values(p.m * p.k, 0.37), b = values(p.k * p.n, 0.91);
    const cpu::GemmArgs<float> g{p.ta, p.tb, p.m, p.n, p.k, a.data(), b.data()};
    for (int call = 0; call < 2; ++call) {
      std::vector<float> c(static_cast<size_t>(p.m * p.n), -7.f);
      cpu::gemm_product(g, c.data());
      EXPECT_LT(max_error(p, a, b, c), 2e-6);
    }
  }
  constexpr int64_t kHeads = 16;
  const Case head{128, 128, 64, false, true};
  const std::vector<float> a = values(kHeads * 128 * 64, 0.61), b = values(kHeads * 64 * 128, 0.23);
  std::vector<float> c(static_cast<size_t>(kHeads * 128 * 128), -7.f);
  for (int call = 0; call < 2; ++call)
    cpu::gemm_batches(cpu::GemmArgs<float>{false, true, 128, 128, 64, a.data(), b.data()}, kHeads,
                      128 * 64, 64 * 128, c.data());
  EXPECT_LT(max_error(head, std::vector<float>(a.begin(), a.begin() + 128 * 64),
                      std::vector<float>(b.begin(), b.begin() + 64 * 128),
                      std::vector<float>(c.begin(), c.begin() + 128 * 128)),
            2e-6);
  EXPECT_EQ(cpu::onednn_f32_products(), 0);
}

TEST(MatMulOneDnnFallback, WeightsSeenBeforeAreNotPacked) {
  const Tensor x = Tensor::from_vector(values(512 * 384, 0.41), Shape({2, 256, 384}));
  const Tensor w = Tensor::from_vector(values(384 * 320, 0.77), Shape({384, 320}));
  Function f(
      [](const std::vector<Value>& in) { return Value(matmul(in[0].tensor(), in[1].tensor())); });
  const std::vector<float> first = f({x, w}).tensor().to_vector<float>();
  for (int call = 0; call < 2; ++call) EXPECT_EQ(f({x, w}).tensor().to_vector<float>(), first);
  EXPECT_EQ(cpu::onednn_f32_packed_products(), 0);
  EXPECT_EQ(cpu::onednn_f32_products(), 0);
}

}  // namespace
}  // namespace kiln
