// Float32 products on oneDNN's brgemm kernel (kernels/cpu/matmul_onednn.cpp):
// against a float64 reference in every way MatMul splits a product (row
// blocks with tails, column blocks with strided operands, transposed B,
// batches), on the call that first meets a size (OpenBLAS) and on the next
// (oneDNN where the CPU has the kernel); transposed A and small products stay
// on OpenBLAS; batches of heads; MatMul in a function gives the same values
// on every call, its weights packed from the second.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kiln/config.h"
#include "kiln/function.h"
#include "kiln/ops.h"
#include "matmul_onednn_util.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::Case;
using testing::Lib;
using testing::max_error;
using testing::name_of;
using testing::values;
// A budget of 4 threads (before the pool starts), so products split into
// blocks on any machine.
const bool kFourThreads = (config().num_threads = 4, true);

TEST(MatMulOneDnn, MatchesFloat64OnEitherLibrary) {
  const std::vector<Case> cases = {
      {256, 256, 256, false, false},                 // 4 blocks of 64 rows
      {520, 70, 500, false, false},                  // 8 blocks of 65 rows (tails)
      {1024, 96, 200, false, true},                  // transposed B
      {100, 4096, 256, false, false, Lib::kEither},  // blocks of columns: strided B, C
      {100, 4096, 256, false, true, Lib::kEither},   // the same with B transposed
      {300, 300, 300, true, false, Lib::kOpenBlas},  // transposed A
      {96, 80, 64, false, false, Lib::kOpenBlas},    // small
  };
  for (const Case& p : cases) {
    SCOPED_TRACE(name_of(p));
    const std::vector<float> a = values(p.m * p.k, 0.37), b = values(p.k * p.n, 0.91);
    const cpu::GemmArgs<float> g{p.ta, p.tb, p.m, p.n, p.k, a.data(), b.data()};
    // The first call meets the blocks' sizes (the first block runs on
    // OpenBLAS, blocks of the same size after it may not); the second runs
    // every block on the library of its case.
    for (int call = 0; call < 2; ++call) {
      SCOPED_TRACE(str_cat("call ", call));
      std::vector<float> c(static_cast<size_t>(p.m * p.n), -7.f);
      const int64_t before = cpu::onednn_f32_products();
      cpu::gemm_product(g, c.data());
      const int64_t on_onednn = cpu::onednn_f32_products() - before;
      if (p.lib == Lib::kOpenBlas || !cpu::f32_gemm_native()) EXPECT_EQ(on_onednn, 0);
      if (call == 1 && p.lib == Lib::kOneDnn && cpu::f32_gemm_native()) {
        EXPECT_GE(on_onednn, 1);
        EXPECT_EQ(on_onednn, std::max<int64_t>(1, cpu::gemm_row_blocks(p.m, p.n, p.k)));
      }
      EXPECT_LT(max_error(p, a, b, c), 2e-6);
    }
  }
}

TEST(MatMulOneDnn, BatchesAndRowBlocksAsTheJitRunsThem) {
  const Case p{192, 160, 256, false, false};
  constexpr int64_t kBatches = 3;
  const std::vector<float> a = values(kBatches * p.m * p.k, 0.53), b = values(p.k * p.n, 0.29);
  cpu::GemmArgs<float> g{false, false, p.m, p.n, p.k, a.data(), b.data()};
  for (int call = 0; call < 2; ++call) {
    std::vector<float> c(static_cast<size_t>(kBatches * p.m * p.n), -7.f);
    const int64_t before = cpu::onednn_f32_products();
    cpu::gemm_batches(g, kBatches, p.m * p.k, 0, c.data());
    if (call == 1) EXPECT_EQ(cpu::onednn_f32_products() > before, cpu::f32_gemm_native());
    for (int64_t i = 0; i < kBatches; ++i) {
      SCOPED_TRACE(str_cat("call ", call, " batch ", i));
      const std::vector<float> ai(a.begin() + i * p.m * p.k, a.begin() + (i + 1) * p.m * p.k);
      const std::vector<float> ci(c.begin() + i * p.m * p.n, c.begin() + (i + 1) * p.m * p.n);
      EXPECT_LT(max_error(p, ai, b, ci), 2e-6);
    }
  }
  // Rows [64, 192) in one call, as a JIT kernel computes its row block.
  const Case rows{128, p.n, p.k, false, false};
  for (int call = 0; call < 2; ++call) {
    std::vector<float> c(static_cast<size_t>(rows.m * p.n), -7.f);
    const int64_t before = cpu::onednn_f32_products();
    cpu::gemm_product_rows(g, 64, 192, c.data());
    EXPECT_EQ(cpu::onednn_f32_products() > before, call == 1 && cpu::f32_gemm_native());
    const std::vector<float> ai(a.begin() + 64 * p.k, a.begin() + 192 * p.k);
    EXPECT_LT(max_error(rows, ai, b, c), 2e-6);
  }
}

// An attention's products per head: many whole products spread over the
// pool, each B its own (scores: B transposed), on oneDNN from 0.5M
// multiply-adds.
TEST(MatMulOneDnn, BatchesOfHeadsSpreadOverThePool) {
  constexpr int64_t kHeads = 32;
  for (const Case& p : {Case{128, 128, 64, false, true}, Case{128, 64, 128, false, false},
                        Case{40, 24, 16, false, false, Lib::kOpenBlas}}) {
    SCOPED_TRACE(name_of(p));
    const std::vector<float> a = values(kHeads * p.m * p.k, 0.61),
                             b = values(kHeads * p.k * p.n, 0.23);
    const cpu::GemmArgs<float> g{p.ta, p.tb, p.m, p.n, p.k, a.data(), b.data()};
    for (int call = 0; call < 2; ++call) {
      std::vector<float> c(static_cast<size_t>(kHeads * p.m * p.n), -7.f);
      const int64_t before = cpu::onednn_f32_products();
      cpu::gemm_batches(g, kHeads, p.m * p.k, p.k * p.n, c.data());
      const int64_t on_onednn = cpu::onednn_f32_products() - before;
      if (call == 1 && p.lib == Lib::kOneDnn && cpu::f32_gemm_native())
        EXPECT_EQ(on_onednn, kHeads);
      if (p.lib == Lib::kOpenBlas) EXPECT_EQ(on_onednn, 0);
      for (int64_t i = 0; i < kHeads; i += 7) {
        SCOPED_TRACE(str_cat("call ", call, " head ", i));
        const auto at = [](const std::vector<float>& v, int64_t i, int64_t size) {
          return std::vector<float>(v.begin() + i * size, v.begin() + (i + 1) * size);
        };
        EXPECT_LT(max_error(p, at(a, i, p.m * p.k), at(b, i, p.k * p.n), at(c, i, p.m * p.n)),
                  2e-6);
      }
    }
  }
}

TEST(MatMulOneDnn, AFunctionGivesTheSameProductOnEveryCall) {
  const Tensor x = Tensor::from_vector(values(512 * 384, 0.41), Shape({2, 256, 384}));
  const Tensor w = Tensor::from_vector(values(384 * 320, 0.77), Shape({384, 320}));
  Function f(
      [](const std::vector<Value>& in) { return Value(matmul(in[0].tensor(), in[1].tensor())); });
  // Call 1 meets the sizes and the weights, call 2 runs on oneDNN and packs
  // the weights (seen before at this version), call 3 reads the packing.
  const Tensor first = f({x, w}).tensor();
  const std::vector<float> u = first.to_vector<float>();
  for (int call = 2; call <= 3; ++call) {
    SCOPED_TRACE(str_cat("call ", call));
    const int64_t before = cpu::onednn_f32_products(), packed = cpu::onednn_f32_packed_products();
    const std::vector<float> v = f({x, w}).tensor().to_vector<float>();
    EXPECT_EQ(cpu::onednn_f32_products() > before, cpu::f32_gemm_native());
    EXPECT_EQ(cpu::onednn_f32_packed_products() > packed, cpu::f32_gemm_native());
    ASSERT_EQ(u.size(), v.size());
    double err = 0;
    for (size_t i = 0; i < u.size(); ++i) err = std::max(err, double{std::abs(u[i] - v[i])});
    EXPECT_LT(err, 1e-4);
  }
  // New weights (a new version): read unpacked on their first call.
  Tensor w2 = Tensor::from_vector(values(384 * 320, 0.19), Shape({384, 320}));
  const int64_t packed = cpu::onednn_f32_packed_products();
  f({x, w2});
  EXPECT_EQ(cpu::onednn_f32_packed_products(), packed);
}

}  // namespace
}  // namespace kiln
