// max_pool2d and avg_pool2d (and their gradients) against plain reference
// loops (NHWC), with TensorFlow's SAME/VALID arithmetic (conv_test_util.h).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "conv_test_util.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::dot;
using testing::expect_error;
using testing::expect_tensor;
using testing::expect_tensor_near;
using testing::Out1;
using testing::sizes_of;
using testing::tf_out;
using testing::wave;

struct PoolCase {
  int64_t n, h, w, c, kh, kw, sh, sw;
  bool same;
};

template <typename T>
std::vector<T> ref_pool(const PoolCase& p, bool avg, const std::vector<T>& x, Shape& shape) {
  const Out1 oh = tf_out(p.h, p.kh, p.sh, 1, p.same);
  const Out1 ow = tf_out(p.w, p.kw, p.sw, 1, p.same);
  shape = Shape{p.n, oh.size, ow.size, p.c};
  std::vector<T> out(shape.num_elements());
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t i = 0; i < oh.size; ++i)
      for (int64_t j = 0; j < ow.size; ++j)
        for (int64_t ch = 0; ch < p.c; ++ch) {
          double sum = 0;
          int64_t count = 0;
          T best = std::numeric_limits<T>::lowest();
          if constexpr (std::is_floating_point_v<T>) best = -std::numeric_limits<T>::infinity();
          for (int64_t ki = 0; ki < p.kh; ++ki)
            for (int64_t kj = 0; kj < p.kw; ++kj) {
              const int64_t y = i * p.sh - oh.pad + ki, z = j * p.sw - ow.pad + kj;
              if (y < 0 || y >= p.h || z < 0 || z >= p.w) continue;
              const T v = x[((b * p.h + y) * p.w + z) * p.c + ch];
              sum += static_cast<double>(v);
              ++count;
              if constexpr (std::is_floating_point_v<T>)
                if (std::isnan(v) || std::isnan(best)) {
                  best = v;
                  continue;
                }
              if (v > best) best = v;
            }
          out[((b * oh.size + i) * ow.size + j) * p.c + ch] =
              avg ? static_cast<T>(sum / static_cast<double>(count)) : best;
        }
  return out;
}

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> c = {
      {1, 4, 4, 1, 2, 2, 2, 2, false}, {1, 4, 4, 1, 2, 2, 2, 2, true},
      {2, 5, 7, 3, 3, 3, 2, 2, true},  {2, 5, 7, 3, 3, 3, 2, 2, false},
      {1, 6, 5, 4, 3, 2, 1, 1, true},  {1, 6, 5, 4, 1, 1, 1, 1, false},
      {3, 9, 9, 2, 4, 3, 3, 2, true},  {1, 3, 3, 5, 5, 5, 1, 1, true},
      {1, 8, 8, 32, 2, 2, 2, 2, true},
  };
  return c;
}

std::vector<int64_t> window_arg(int64_t h, int64_t w, int form) {
  if (form == 4) return {1, h, w, 1};
  if (form == 1 && h == w) return {h};
  return {h, w};
}

template <typename T>
void check_pool(bool avg) {
  int form = 0;
  for (const PoolCase& p : pool_cases()) {
    form = (form + 1) % 3;
    const int f = form == 0 ? 1 : form == 1 ? 2 : 4;
    SCOPED_TRACE(::testing::Message()
                 << dtype_name(dtype_v<T>) << " N" << p.n << " H" << p.h << " W" << p.w << " C"
                 << p.c << " k" << p.kh << "x" << p.kw << " s" << p.sh << "," << p.sw
                 << (p.same ? " SAME" : " VALID"));
    const Shape xs{p.n, p.h, p.w, p.c};
    std::vector<T> x(xs.num_elements());
    for (size_t i = 0; i < x.size(); ++i) {
      int64_t k = static_cast<int64_t>((i * 37 + 5) % 19) - 9;
      if constexpr (std::is_unsigned_v<T>) k = k < 0 ? -k : k;
      x[i] = static_cast<T>(k);
    }
    Shape s;
    const auto want = ref_pool(p, avg, x, s);
    const Tensor t = Tensor::from_vector(x, xs);
    const std::string pad = p.same ? "SAME" : "VALID";
    const auto k = window_arg(p.kh, p.kw, f), st = window_arg(p.sh, p.sw, f);
    if (avg)
      expect_tensor_near<T>(avg_pool2d(t, k, st, pad), s, want);
    else
      expect_tensor<T>(max_pool2d(t, k, st, pad), s, want);
  }
}

template <typename T>
class PoolTyped : public ::testing::Test {};
using NumericTypes = ::testing::Types<int8_t, uint8_t, int32_t, int64_t, float, double>;
TYPED_TEST_SUITE(PoolTyped, NumericTypes);

TYPED_TEST(PoolTyped, MaxPool) {
  check_pool<TypeParam>(false);
}
TEST(AvgPool, Float32) {
  check_pool<float>(true);
}
TEST(AvgPool, Float64) {
  check_pool<double>(true);
}

TEST(Pool, SameExcludesPaddingAndNaN) {
  // 3x3 input 1..9, 2x2 window stride 2 SAME: windows {1,2,4,5}, {3,6}, {7,8}, {9}.
  const Tensor x = Tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f}).view({1, 3, 3, 1});
  expect_tensor<float>(avg_pool2d(x, {2, 2}, {2, 2}, "SAME"), {1, 2, 2, 1}, {3, 4.5f, 7.5f, 9});
  expect_tensor<float>(max_pool2d(x, {2}, {2}, "SAME"), {1, 2, 2, 1}, {5, 6, 8, 9});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor y = Tensor({-1.f, nan, -3.f, -4.f}).view({1, 2, 2, 1});
  expect_tensor<float>(max_pool2d(y, {2}, {1}, "VALID"), {1, 1, 1, 1}, {nan});
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor z = Tensor({-inf, -inf, -inf, -inf}).view({1, 2, 2, 1});
  expect_tensor<float>(max_pool2d(z, {1}, {1}, "SAME"), {1, 2, 2, 1}, {-inf, -inf, -inf, -inf});
}

TEST(Pool, Empty) {
  expect_tensor<float>(max_pool2d(Tensor::empty(DType::kFloat32, {0, 4, 4, 2}), {2}, {2}, "VALID"),
                       {0, 2, 2, 2}, {});
  expect_tensor<double>(avg_pool2d(Tensor::empty(DType::kFloat64, {1, 0, 4, 2}), {2}, {2}, "SAME"),
                        {1, 0, 2, 2}, {});
  expect_tensor<int32_t>(max_pool2d(Tensor::empty(DType::kInt32, {1, 4, 4, 0}), {2}, {2}, "SAME"),
                         {1, 2, 2, 0}, {});
}

TEST(Pool, Errors) {
  const Tensor x = Tensor::empty(DType::kFloat32, {1, 4, 4, 2});
  expect_error(
      [&] {
        max_pool2d(x, {0, 2}, {1}, "SAME");
      },
      Code::kInvalidArgument, {"MaxPool", "ksize", "positive"});
  expect_error(
      [&] {
        max_pool2d(x, {2, 2, 2, 1}, {1}, "SAME");
      },
      Code::kInvalidArgument, {"ksize", "batch and channel"});
  expect_error(
      [&] {
        avg_pool2d(x, {2}, {1, 2, 3}, "SAME");
      },
      Code::kInvalidArgument, {"AvgPool", "strides", "1, 2 or 4"});
  expect_error([&] { avg_pool2d(x, {2}, {1}, "Same"); }, Code::kInvalidArgument,
               {"padding", "'SAME', 'VALID'", "'Same'"});
  expect_error(
      [&] {
        max_pool2d(x, {5, 1}, {1}, "VALID");
      },
      Code::kInvalidArgument, {"negative", "height", "5", "4"});
  expect_error(
      [&] {
        max_pool2d(Tensor::empty(DType::kFloat32, {4, 4, 2}), {2}, {1}, "VALID");
      },
      Code::kInvalidArgument, {"4-D", "[4,4,2]"});
  expect_error(
      [] {
        avg_pool2d(Tensor::empty(DType::kInt32, {1, 4, 4, 2}), {2}, {1}, "VALID");
      },
      Code::kInvalidArgument, {"AvgPool", "float32 or float64", "int32"});
  expect_error(
      [] {
        max_pool2d(Tensor::empty(DType::kBool, {1, 4, 4, 2}), {2}, {1}, "VALID");
      },
      Code::kInvalidArgument, {"MaxPool", "numeric", "bool"});
}

// MaxPoolGrad against a reference scatter (first maximum of each window);
// AvgPoolGrad and MaxPoolGradGrad through their adjoint identities.
template <typename T>
void check_pool_backprop() {
  for (const PoolCase& p : pool_cases()) {
    SCOPED_TRACE(::testing::Message()
                 << dtype_name(dtype_v<T>) << " N" << p.n << " H" << p.h << " W" << p.w << " C"
                 << p.c << " k" << p.kh << "x" << p.kw << " s" << p.sh << "," << p.sw
                 << (p.same ? " SAME" : " VALID"));
    const Shape xs{p.n, p.h, p.w, p.c};
    const std::vector<T> xv = wave<T>(xs.num_elements(), 0.7);
    const Tensor x = Tensor::from_vector(xv, xs);
    const std::string pad = p.same ? "SAME" : "VALID";
    const std::vector<int64_t> k = {p.kh, p.kw}, st = {p.sh, p.sw};
    const Tensor y = max_pool2d(x, k, st, pad);
    const Shape ys = y.shape();
    const std::vector<T> dyv = wave<T>(ys.num_elements(), 0.45);
    const Tensor dy = Tensor::from_vector(dyv, ys);
    // Reference MaxPoolGrad.
    const Out1 oh = tf_out(p.h, p.kh, p.sh, 1, p.same), ow = tf_out(p.w, p.kw, p.sw, 1, p.same);
    std::vector<double> want(xv.size(), 0.0);
    for (int64_t b = 0; b < p.n; ++b)
      for (int64_t i = 0; i < oh.size; ++i)
        for (int64_t j = 0; j < ow.size; ++j)
          for (int64_t ch = 0; ch < p.c; ++ch) {
            int64_t arg = -1;
            for (int64_t ki = 0; ki < p.kh; ++ki)
              for (int64_t kj = 0; kj < p.kw; ++kj) {
                const int64_t r = i * p.sh - oh.pad + ki, s = j * p.sw - ow.pad + kj;
                if (r < 0 || r >= p.h || s < 0 || s >= p.w) continue;
                const int64_t idx = ((b * p.h + r) * p.w + s) * p.c + ch;
                if (arg < 0 || xv[idx] > xv[arg]) arg = idx;
              }
            want[arg] += dyv[((b * oh.size + i) * ow.size + j) * p.c + ch];
          }
    const Tensor dx = max_pool_grad(x, y, dy, k, st, pad);
    std::vector<T> want_t(want.begin(), want.end());
    expect_tensor_near<T>(dx, xs, want_t, std::is_same_v<T, float> ? 1e-5 : 1e-12);
    const Tensor gg = Tensor::from_vector(wave<T>(xs.num_elements(), 0.9), xs);
    const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-10;
    const double a = dot(dx, gg);
    EXPECT_NEAR(dot(dy, max_pool_grad_grad(x, y, gg, k, st, pad)), a, tol * (1 + std::fabs(a)));
    const double v = dot(avg_pool2d(x, k, st, pad), dy);
    EXPECT_NEAR(dot(x, avg_pool_grad(sizes_of(xs), dy, k, st, pad)), v, tol * (1 + std::fabs(v)));
  }
}

TEST(PoolBackprop, Float32) {
  check_pool_backprop<float>();
}
TEST(PoolBackprop, Float64) {
  check_pool_backprop<double>();
}

}  // namespace
}  // namespace kiln
