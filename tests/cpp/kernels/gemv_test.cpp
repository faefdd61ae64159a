// Products of a few rows (kernels/cpu/gemv.h): gemv_rows against a float64
// reference over row counts, lengths with tails, strided operands and B large
// enough to split over the pool; and the kernels that use it (MatMul of few
// rows, one-pixel 1x1 convolutions plain and fused) against float64.
#include "kernels/cpu/gemv.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "conv_kernel_test_util.h"
#include "kiln/config.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln {
namespace {
// Two threads before the pool starts: large B splits into chunks.
const bool kTwoThreads = (config().num_threads = 2, true);
using testing::fused_conv_attrs;
using testing::wave;

std::vector<float> values(int64_t n, double freq) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(0.5 * std::sin(freq * static_cast<double>(i) + 0.3));
  return v;
}

struct Case {
  int64_t m, n, k, pad;  // pad: extra elements in every leading dimension
};

TEST(GemvRows, MatchesFloat64ForEveryShape) {
  const std::vector<Case> cases = {
      {1, 1, 1, 0},      {1, 17, 3, 0},    {2, 5, 4, 1},
      {3, 33, 7, 2},     {4, 16, 9, 0},    {1, 1000, 1024, 0},  // 4 MB: chunks on the pool
      {4, 600, 1024, 3},                                        // four rows, strided, split
      {2, 64, 1536, 0},  {1, 1536, 64, 5}, {3, 7, 4097, 0},     // a tail of one row
      {1, 8, 0, 0},                                             // k = 0: zeros
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(str_cat("m ", c.m, " n ", c.n, " k ", c.k, " pad ", c.pad));
    const int64_t lda = c.k + c.pad, ldb = c.n + c.pad, ldc = c.n + c.pad;
    const std::vector<float> a = values(c.m * lda, 0.37),
                             b = values(std::max<int64_t>(1, c.k) * ldb, 0.91);
    std::vector<float> got(static_cast<size_t>(c.m * ldc), -7.f);
    cpu::gemv_rows(c.m, c.n, c.k, a.data(), lda, b.data(), ldb, got.data(), ldc);
    double err = 0;
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double want = 0, mag = 0;
        for (int64_t t = 0; t < c.k; ++t) {
          want += double{a[static_cast<size_t>(i * lda + t)]} * b[static_cast<size_t>(t * ldb + j)];
          mag += std::abs(double{a[static_cast<size_t>(i * lda + t)]} *
                          b[static_cast<size_t>(t * ldb + j)]);
        }
        err = std::max(err, std::abs(got[static_cast<size_t>(i * ldc + j)] - want) / (mag + 1e-30));
      }
      for (int64_t j = c.n; j < ldc; ++j)  // the padding of C is not written
        EXPECT_EQ(got[static_cast<size_t>(i * ldc + j)], -7.f);
    }
    EXPECT_LT(err, 1e-6);
  }
}

TEST(GemvRows, SplitResultsRepeatExactly) {
  const int64_t m = 2, n = 700, k = 2000;
  const std::vector<float> a = values(m * k, 0.21), b = values(k * n, 0.53);
  std::vector<float> first(static_cast<size_t>(m * n)), again(first.size());
  cpu::gemv_rows(m, n, k, a.data(), k, b.data(), n, first.data(), n);
  for (int rep = 0; rep < 3; ++rep) {
    cpu::gemv_rows(m, n, k, a.data(), k, b.data(), n, again.data(), n);
    EXPECT_EQ(first, again);
  }
}

// |got - want| over want's largest magnitude.
double relative_error(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector<float>();
  const std::vector<double> w = want.to_vector<double>();
  double err = 0, scale = 1e-30;
  for (size_t i = 0; i < w.size(); ++i) {
    err = std::max(err, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return err / scale;
}

TEST(GemvRows, MatMulOfFewRowsMatchesFloat64) {
  for (const int64_t m : {1, 3, 8, 9}) {  // 9: OpenBLAS as before
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(str_cat("m ", m, tb ? " B transposed" : ""));
      const Tensor a = wave({m, 1280}, 0.37),
                   b = tb ? wave({1000, 1280}, 0.91) : wave({1280, 1000}, 0.91);
      const Tensor want = matmul(cast(a, DType::kFloat64), cast(b, DType::kFloat64), false, tb);
      EXPECT_LT(relative_error(matmul(a, b, false, tb), want), 1e-5);
    }
  }
  // A batch of products with a shared B folds into one of 2 * 2 rows.
  const Tensor a = wave({2, 2, 300}, 0.37), b = wave({300, 90}, 0.91);
  const Tensor want = matmul(cast(a, DType::kFloat64), cast(b, DType::kFloat64));
  EXPECT_LT(relative_error(matmul(a, b), want), 1e-5);
}

TEST(GemvRows, OnePixelConvolutionsMatchFloat64) {
  for (const int64_t n : {1, 2, 8, 9}) {  // 9: oneDNN as before
    for (const std::string padding : {"SAME", "VALID"}) {
      for (const int64_t stride : {1, 2}) {
        SCOPED_TRACE(str_cat("batch ", n, " ", padding, " stride ", stride));
        const Tensor x = wave({n, 1, 1, 960}, 0.37), f = wave({1, 1, 960, 40}, 0.91);
        const Tensor want =
            conv2d(cast(x, DType::kFloat64), cast(f, DType::kFloat64), {stride, stride}, padding);
        EXPECT_LT(relative_error(conv2d(x, f, {stride, stride}, padding), want), 1e-5);
      }
    }
  }
  // Fused: bias, a folded batch norm and swish after the product.
  const Tensor x = wave({1, 1, 1, 64}, 0.37), f = wave({1, 1, 64, 1536}, 0.91);
  const Tensor bias = wave({1536}, 1.3), scale = wave({1536}, 0.7) + 1.f, shift = wave({1536}, 2.1);
  const std::vector<Tensor> in = {x, f, bias, scale, shift};
  const Tensor got = call_op(OpId::FusedConv2D, in, fused_conv_attrs("BiasAdd,Mul,Add,Swish"))[0];
  Tensor y = bias_add(conv2d(cast(x, DType::kFloat64), cast(f, DType::kFloat64), {1, 1}, "SAME"),
                      cast(bias, DType::kFloat64));
  y = y * cast(scale, DType::kFloat64) + cast(shift, DType::kFloat64);
  EXPECT_LT(relative_error(got, y * sigmoid(y)), 1e-5);
}

}  // namespace
}  // namespace kiln
