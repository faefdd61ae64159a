// Reductions, argmax/argmin and cumsum against plain reference loops.
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using testing::expect_tensor_near;

enum class R { kSum, kMean, kMax, kMin, kProd };
const char* r_name(R r) {
  switch (r) {
    case R::kSum: return "sum";
    case R::kMean: return "mean";
    case R::kMax: return "max";
    case R::kMin: return "min";
    case R::kProd: return "prod";
  }
  return "?";
}

Tensor run(R r, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  switch (r) {
    case R::kSum: return reduce_sum(x, axes, keepdims);
    case R::kMean: return reduce_mean(x, axes, keepdims);
    case R::kMax: return reduce_max(x, axes, keepdims);
    case R::kMin: return reduce_min(x, axes, keepdims);
    case R::kProd: return reduce_prod(x, axes, keepdims);
  }
  return {};
}

int64_t prod(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

// Reduced-axis mask (empty axes = all).
std::vector<bool> mask_of(size_t rank, const std::vector<int64_t>& axes) {
  std::vector<bool> m(rank, axes.empty());
  for (int64_t a : axes) m[a < 0 ? a + static_cast<int64_t>(rank) : a] = true;
  return m;
}

Shape out_shape(const std::vector<int64_t>& dims, const std::vector<int64_t>& axes, bool keepdims) {
  auto m = mask_of(dims.size(), axes);
  Shape s;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!m[d])
      s.push_back(dims[d]);
    else if (keepdims)
      s.push_back(1);
  }
  return s;
}

// Maps each input element to its output slot (keepdims=false order).
std::vector<int64_t> out_index(const std::vector<int64_t>& dims, const std::vector<bool>& m) {
  const int64_t n = prod(dims);
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, o = 0, mul = 1;
    for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
      const int64_t c = rem % dims[d];
      rem /= dims[d];
      if (!m[d]) {
        o += c * mul;
        mul *= dims[d];
      }
    }
    idx[i] = o;
  }
  return idx;
}

// Plain reference: integer sums/products wrap (computed mod 2^64, then
// narrowed), floats accumulate in double, NaN propagates through max/min.
template <typename T>
std::vector<T> ref_reduce(R r, const std::vector<T>& x, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& axes) {
  auto m = mask_of(dims.size(), axes);
  int64_t n_out = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    if (!m[d]) n_out *= dims[d];
  const int64_t count = n_out ? prod(dims) / n_out : 0;
  auto idx = out_index(dims, m);
  std::vector<T> out(n_out);
  if constexpr (std::is_floating_point_v<T>) {
    std::vector<double> acc(n_out, r == R::kProd  ? 1.0
                                   : r == R::kMax ? -INFINITY
                                   : r == R::kMin ? INFINITY
                                                  : 0.0);
    for (size_t i = 0; i < x.size(); ++i) {
      double& a = acc[idx[i]];
      const double v = x[i];
      if (r == R::kSum || r == R::kMean)
        a += v;
      else if (r == R::kProd)
        a *= v;
      else if (std::isnan(v) || std::isnan(a))
        a = NAN;
      else if (r == R::kMax)
        a = std::max(a, v);
      else
        a = std::min(a, v);
    }
    for (int64_t o = 0; o < n_out; ++o)
      out[o] = static_cast<T>(r == R::kMean ? acc[o] / static_cast<double>(count) : acc[o]);
  } else {
    std::vector<uint64_t> acc(n_out, r == R::kProd ? 1 : 0);
    std::vector<T> ext(
        n_out, r == R::kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t o = idx[i];
      const uint64_t v = static_cast<uint64_t>(static_cast<int64_t>(x[i]));
      if (r == R::kProd)
        acc[o] *= v;
      else
        acc[o] += v;
      ext[o] = r == R::kMax ? std::max(ext[o], x[i]) : std::min(ext[o], x[i]);
    }
    for (int64_t o = 0; o < n_out; ++o) {
      if (r == R::kMax || r == R::kMin)
        out[o] = ext[o];
      else if (r == R::kMean)
        out[o] = count ? static_cast<T>(static_cast<T>(acc[o]) / count) : T(0);
      else
        out[o] = static_cast<T>(acc[o]);
    }
  }
  return out;
}

// Deterministic values: small integers (exact float sums); products stay in
// range by using +-1 except on small inputs.
template <typename T>
std::vector<T> make_values(int64_t n, R r, int seed = 0) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = (i * 7919 + seed * 31 + 3) % 23;
    if (r == R::kProd)
      k = n <= 64 ? (k % 5) - 1 : (k % 2 ? 1 : -1);
    else
      k = k - 11;
    if constexpr (std::is_unsigned_v<T>) k = k < 0 ? -k : k;
    v[i] = static_cast<T>(k);
  }
  return v;
}

struct Case {
  std::vector<int64_t> dims;
  std::vector<int64_t> axes;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {{}, {}},
      {{7}, {}},
      {{7}, {0}},
      {{7}, {-1}},
      {{2, 3, 4}, {}},
      {{2, 3, 4}, {0}},
      {{2, 3, 4}, {1}},
      {{2, 3, 4}, {2}},
      {{2, 3, 4}, {-1}},
      {{2, 3, 4}, {0, 1}},
      {{2, 3, 4}, {0, 2}},
      {{2, 3, 4}, {2, 0}},
      {{2, 3, 4}, {1, 2}},
      {{2, 3, 4}, {0, 1, 2}},
      {{5, 1, 3}, {1}},  // only a length-1 axis: a view
      {{1, 1}, {}},      // all length 1
      {{5, 1, 3}, {0, 1}},
      {{2, 1, 3, 1, 4}, {0, 2, 4}},
      {{3, 2, 2, 3}, {0, 3}},
      {{3, 40000}, {1}},      // long rows: blocked partials
      {{40000, 3}, {0}},      // long columns: row blocks
      {{70000, 2}, {0}},      // row-accumulate with partials
      {{2, 300, 1500}, {1}},  // column chunks and partials
      {{3, 2500}, {0}},       // wide rows: several column chunks
      {{5, 2000, 3}, {0, 2}},
      {{70001}, {}},
      // Columns in register chunks (128, 64 or 32 wide, then 16) and a tail:
      {{2, 9, 161}, {1}},
      {{3, 5, 47}, {1}},
      {{4, 33, 16}, {1}},
      {{1, 7, 7, 1536}, {1, 2}},  // a squeeze-and-excitation block's mean
      {{2, 6, 6, 96}, {1, 2}},
  };
  return c;
}

template <typename T>
void check_all_cases(R r) {
  for (const Case& cs : cases()) {
    for (bool keepdims : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << r_name(r) << " " << dtype_name(dtype_v<T>) << " shape " << Shape(cs.dims)
                   << " axes " << cs.axes.size() << " keepdims " << keepdims);
      const auto x = make_values<T>(prod(cs.dims), r);
      const Tensor got = run(r, Tensor::from_vector(x, Shape(cs.dims)), cs.axes, keepdims);
      const auto want = ref_reduce(r, x, cs.dims, cs.axes);
      const Shape s = out_shape(cs.dims, cs.axes, keepdims);
      if constexpr (std::is_floating_point_v<T>)
        expect_tensor_near<T>(got, s, want);
      else
        expect_tensor<T>(got, s, want);
    }
  }
}

template <typename T>
class ReduceTyped : public ::testing::Test {};
using NumericTypes = ::testing::Types<int8_t, uint8_t, int32_t, int64_t, float, double>;
TYPED_TEST_SUITE(ReduceTyped, NumericTypes);

TYPED_TEST(ReduceTyped, Sum) {
  check_all_cases<TypeParam>(R::kSum);
}
TYPED_TEST(ReduceTyped, Mean) {
  check_all_cases<TypeParam>(R::kMean);
}
TYPED_TEST(ReduceTyped, Max) {
  check_all_cases<TypeParam>(R::kMax);
}
TYPED_TEST(ReduceTyped, Min) {
  check_all_cases<TypeParam>(R::kMin);
}
TYPED_TEST(ReduceTyped, Prod) {
  check_all_cases<TypeParam>(R::kProd);
}

TYPED_TEST(ReduceTyped, EmptyAxisGivesIdentity) {
  using T = TypeParam;
  const Tensor x = Tensor::empty(dtype_v<T>, {2, 0, 3});
  const T lo = std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity()
                                           : std::numeric_limits<T>::lowest();
  const T hi = std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity()
                                           : std::numeric_limits<T>::max();
  const T mean = std::is_floating_point_v<T> ? std::numeric_limits<T>::quiet_NaN() : T(0);
  expect_tensor<T>(reduce_sum(x, {1}), {2, 3}, std::vector<T>(6, T(0)));
  expect_tensor<T>(reduce_prod(x, {1}), {2, 3}, std::vector<T>(6, T(1)));
  expect_tensor<T>(reduce_max(x, {1}), {2, 3}, std::vector<T>(6, lo));
  expect_tensor<T>(reduce_min(x, {1}, true), {2, 1, 3}, std::vector<T>(6, hi));
  expect_tensor<T>(reduce_mean(x, {1}), {2, 3}, std::vector<T>(6, mean));
  expect_tensor<T>(reduce_sum(x), {}, {T(0)});
  // Reducing a non-empty axis of an empty tensor gives an empty result.
  expect_tensor<T>(reduce_sum(x, {0}), {0, 3}, {});
  expect_tensor<T>(reduce_max(x, {2}, true), {2, 0, 1}, {});
}

TYPED_TEST(ReduceTyped, IntegerOverflowWraps) {
  using T = TypeParam;
  if constexpr (std::is_integral_v<T>) {
    const T big = std::numeric_limits<T>::max();
    const std::vector<T> x = {big, big, T(3)};
    const Tensor t = Tensor::from_vector(x, {3});
    expect_tensor<T>(reduce_sum(t), {}, ref_reduce(R::kSum, x, {3}, {}));
    expect_tensor<T>(reduce_prod(t), {}, ref_reduce(R::kProd, x, {3}, {}));
  }
}

TEST(Reduce, IntegerMeanTruncates) {
  expect_tensor<int32_t>(reduce_mean(Tensor({{1, 2}, {-3, -4}}), {1}), {2}, {1, -3});
  expect_tensor<uint8_t>(reduce_mean(Tensor::from_vector<uint8_t>({250, 251, 255}, {3})), {},
                         {static_cast<uint8_t>(static_cast<uint8_t>(250 + 251 + 255) / 3)});
}

TEST(Reduce, FloatSumIsAccurate) {
  const int64_t n = 1 << 20;
  std::vector<float> x(n);
  double want = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.1f + static_cast<float>(i % 1000) * 1e-3f;
    want += x[i];
  }
  const float got = reduce_sum(Tensor::from_vector(x, {n})).item<float>();
  EXPECT_NEAR(got, want, 1e-6 * want);
  // Column sums over many rows.
  const float col = reduce_sum(Tensor::from_vector(x, {n / 2, 2}), {0}).to_vector<float>()[0];
  double want_col = 0;
  for (int64_t i = 0; i < n; i += 2) want_col += x[i];
  EXPECT_NEAR(col, want_col, 1e-5 * want_col);
  const float mean = reduce_mean(Tensor::from_vector(x, {n})).item<float>();
  EXPECT_NEAR(mean, want / n, 1e-6);
}

// Sum, mean and product of complex values (TensorFlow's), over every axis
// form; complex64 sums accumulate their parts in double. Max and min refuse
// them (complex values have no order).
TEST(Reduce, ComplexSumMeanAndProduct) {
  for (DType dt : {DType::kComplex64, DType::kComplex128}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t rows = 3, cols = 5000;
    std::vector<double> re(rows * cols), im(rows * cols);
    for (int64_t i = 0; i < rows * cols; ++i) {
      re[static_cast<size_t>(i)] = 0.1 + static_cast<double>(i % 97) * 1e-2;
      im[static_cast<size_t>(i)] = -0.5 + static_cast<double>(i % 13) * 1e-1;
    }
    const DType part = dt == DType::kComplex64 ? DType::kFloat32 : DType::kFloat64;
    const Tensor z = complex(cast(Tensor::from_vector(re, {rows, cols}), part),
                             cast(Tensor::from_vector(im, {rows, cols}), part));
    const double tol = dt == DType::kComplex64 ? 1e-6 : 1e-12;
    auto check = [&](const Tensor& got, const std::vector<std::complex<long double>>& want) {
      ASSERT_EQ(got.dtype(), dt);
      ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
      const std::vector<double> gr = cast(real(got), DType::kFloat64).to_vector<double>();
      const std::vector<double> gi = cast(imag(got), DType::kFloat64).to_vector<double>();
      for (size_t k = 0; k < want.size(); ++k) {
        const double scale = 1 + static_cast<double>(std::abs(want[k]));
        EXPECT_NEAR(gr[k], static_cast<double>(want[k].real()), tol * scale) << k;
        EXPECT_NEAR(gi[k], static_cast<double>(want[k].imag()), tol * scale) << k;
      }
    };
    // References from the float parts as stored.
    const std::vector<double> sr = cast(real(z), DType::kFloat64).to_vector<double>();
    const std::vector<double> si = cast(imag(z), DType::kFloat64).to_vector<double>();
    std::vector<std::complex<long double>> row(rows), col(cols), all(1), prod(rows, 1.0L);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const std::complex<long double> v(sr[static_cast<size_t>(r * cols + c)],
                                          si[static_cast<size_t>(r * cols + c)]);
        row[static_cast<size_t>(r)] += v;
        col[static_cast<size_t>(c)] += v;
        all[0] += v;
        if (c < 20) prod[static_cast<size_t>(r)] *= v;
      }
    check(reduce_sum(z, {1}), row);
    check(reduce_sum(z, {0}), col);
    check(reduce_sum(z), all);
    std::vector<std::complex<long double>> mean = row;
    for (auto& m : mean) m /= static_cast<long double>(cols);
    check(reduce_mean(z, {1}), mean);
    check(reduce_prod(slice(z, {0, 0}, {rows, 20}), {1}), prod);
    // No values: sum 0, mean NaN in both parts.
    const Tensor none = reduce_mean(slice(z, {0, 0}, {0, cols}));
    EXPECT_TRUE(std::isnan(cast(real(none), DType::kFloat64).item<double>()));
    EXPECT_TRUE(std::isnan(cast(imag(none), DType::kFloat64).item<double>()));
    expect_error([&] { reduce_max(z); }, Code::kInvalidArgument, {"Max", "complex"});
    expect_error([&] { reduce_min(z, {0}); }, Code::kInvalidArgument, {"Min", "complex"});
  }
}

TEST(Reduce, MaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x({{1.f, nan, 3.f}, {4.f, 5.f, 6.f}});
  expect_tensor<float>(reduce_max(x, {1}), {2}, {nan, 6.f});
  expect_tensor<float>(reduce_min(x, {1}), {2}, {nan, 4.f});
  expect_tensor<float>(reduce_max(x, {0}), {3}, {4.f, nan, 6.f});
  expect_tensor<float>(reduce_max(x), {}, {nan});
  // A NaN in a column chunk and in the columns after the chunks.
  std::vector<float> wide(5 * 200, 2.f);
  wide[3 * 200 + 150] = nan;
  wide[1 * 200 + 199] = nan;
  const Tensor w = reduce_min(Tensor::from_vector(wide, {5, 200}), {0});
  const std::vector<float> got = w.to_vector<float>();
  for (int64_t j = 0; j < 200; ++j)
    EXPECT_EQ(std::isnan(got[static_cast<size_t>(j)]), j == 150 || j == 199) << j;
  std::vector<double> big(5000, 1.0);
  big[4321] = std::nan("");
  expect_tensor<double>(reduce_min(Tensor::from_vector(big, {5000})), {}, {std::nan("")});
}

TEST(Reduce, AnyAll) {
  const std::vector<Case> bool_cases = {
      {{}, {}},          {{5}, {}},         {{2, 3, 4}, {1}},  {{2, 3, 4}, {0, 2}},
      {{2, 3, 4}, {-1}}, {{3, 40000}, {1}}, {{40000, 3}, {0}}, {{2, 0, 3}, {1}},
      {{5, 1}, {1}}};
  for (const Case& cs : bool_cases) {
    const int64_t n = prod(cs.dims);
    for (int density : {0, 1, 2}) {
      std::vector<bool> v(n);
      for (int64_t i = 0; i < n; ++i)
        v[i] = density == 0 ? false : density == 1 ? (i % 97 == 13) : (i % 89 != 5);
      Tensor x = Tensor::empty(DType::kBool, Shape(cs.dims));
      for (int64_t i = 0; i < n; ++i) x.mutable_data<bool>()[i] = v[i];
      auto m = mask_of(cs.dims.size(), cs.axes);
      auto idx = out_index(cs.dims, m);
      const Shape s = out_shape(cs.dims, cs.axes, false);
      const int64_t n_out = s.num_elements();
      std::vector<bool> any(n_out, false), all(n_out, true);
      for (int64_t i = 0; i < n; ++i) {
        any[idx[i]] = any[idx[i]] || v[i];
        all[idx[i]] = all[idx[i]] && v[i];
      }
      SCOPED_TRACE(::testing::Message() << "shape " << Shape(cs.dims) << " density " << density);
      const Tensor ga = reduce_any(x, cs.axes), gl = reduce_all(x, cs.axes, true);
      ASSERT_EQ(ga.shape(), s);
      ASSERT_EQ(gl.shape(), out_shape(cs.dims, cs.axes, true));
      for (int64_t o = 0; o < n_out; ++o) {
        EXPECT_EQ(ga.data<bool>()[o], any[o]) << o;
        EXPECT_EQ(gl.data<bool>()[o], all[o]) << o;
      }
    }
  }
}

TEST(Reduce, ViewsAndIntegralAxis) {
  const Tensor x = Tensor({1, 2, 3, 4, 5, 6}).view({2, 3});
  expect_tensor<int32_t>(reduce_sum(x, 0), {3}, {5, 7, 9});
  expect_tensor<int32_t>(reduce_sum(x, -1, true), {2, 1}, {6, 15});
  const Tensor y = reduce_max(Tensor({{1.5, 2.5}}), {0});  // length-1 axis: shares data
  expect_tensor<double>(y, {2}, {1.5, 2.5});
}

TEST(Reduce, Errors) {
  const Tensor x({{1, 2}, {3, 4}});
  expect_error([&] { reduce_sum(x, {2}); }, Code::kInvalidArgument, {"Sum", "axis 2", "rank 2"});
  expect_error([&] { reduce_mean(x, {-3}); }, Code::kInvalidArgument, {"Mean", "-3"});
  expect_error([&] { reduce_max(x, {1, -1}); }, Code::kInvalidArgument, {"Max", "duplicate", "1"});
  expect_error(
      [&] {
        reduce_sum(Tensor({true, false}));
      },
      Code::kInvalidArgument, {"Sum", "input", "bool"});
  expect_error(
      [&] {
        reduce_prod(Tensor({"a", "b"}));
      },
      Code::kInvalidArgument, {"Prod", "string"});
  expect_error([&] { reduce_any(x); }, Code::kInvalidArgument, {"Any", "bool", "int32"});
  expect_error([&] { reduce_all(Tensor({1.f})); }, Code::kInvalidArgument,
               {"All", "bool", "float32"});
  expect_error([&] { reduce_min(Tensor(3), {0}); }, Code::kInvalidArgument, {"Min", "rank 0"});
}

// ---- argmax / argmin ----

template <typename T>
std::vector<int64_t> ref_arg(bool is_max, const std::vector<T>& x, const std::vector<int64_t>& dims,
                             int64_t axis) {
  int64_t A = 1, B = 1;
  for (int64_t d = 0; d < axis; ++d) A *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) B *= dims[d];
  const int64_t Rn = dims[axis];
  std::vector<int64_t> out(A * B);
  for (int64_t a = 0; a < A; ++a)
    for (int64_t b = 0; b < B; ++b) {
      int64_t best = -1;
      for (int64_t r = 0; r < Rn; ++r) {
        const T v = x[(a * Rn + r) * B + b];
        if constexpr (std::is_floating_point_v<T>)
          if (std::isnan(v)) continue;
        if (best < 0) {
          best = r;
          continue;
        }
        const T w = x[(a * Rn + best) * B + b];
        if (is_max ? v > w : v < w) best = r;
      }
      out[a * B + b] = best < 0 ? 0 : best;
    }
  return out;
}

TYPED_TEST(ReduceTyped, ArgMaxArgMin) {
  using T = TypeParam;
  const std::vector<std::vector<int64_t>> shapes = {{7}, {2, 3, 4}, {3, 5, 2100}, {1, 40}, {4, 1}};
  for (const auto& dims : shapes)
    for (int64_t axis = -static_cast<int64_t>(dims.size());
         axis < static_cast<int64_t>(dims.size()); ++axis) {
      std::vector<T> x(prod(dims));
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>((i * 37 + 11) % 9);  // ties
      const Tensor t = Tensor::from_vector(x, Shape(dims));
      const int64_t ax = axis < 0 ? axis + static_cast<int64_t>(dims.size()) : axis;
      Shape s(dims);
      s.erase(ax);
      SCOPED_TRACE(::testing::Message() << Shape(dims) << " axis " << axis);
      expect_tensor<int64_t>(argmax(t, axis), s, ref_arg(true, x, dims, ax));
      const auto mn = ref_arg(false, x, dims, ax);
      expect_tensor<int32_t>(argmin(t, axis, DType::kInt32), s,
                             std::vector<int32_t>(mn.begin(), mn.end()));
    }
}

TEST(ArgMax, NaNIsIgnoredAsInTensorFlow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x({{nan, 1.f, 3.f, nan}, {2.f, nan, 2.f, 1.f}, {nan, nan, nan, nan}});
  expect_tensor<int64_t>(argmax(x, 1), {3}, {2, 0, 0});
  expect_tensor<int64_t>(argmin(x, 1), {3}, {1, 3, 0});
  expect_tensor<int64_t>(argmax(x, 0), {4}, {1, 0, 0, 1});
  expect_tensor<int64_t>(argmin(x, 0), {4}, {1, 0, 1, 1});
  const float inf = std::numeric_limits<float>::infinity();
  expect_tensor<int64_t>(argmax(Tensor({nan, -inf, -inf})), {}, {1});
  expect_tensor<int64_t>(argmin(Tensor({nan, inf, 5.f})), {}, {2});
}

TEST(ArgMax, BoolAndEmpty) {
  expect_tensor<int64_t>(argmax(Tensor({false, true, true})), {}, {1});
  expect_tensor<int64_t>(argmin(Tensor({true, true, false})), {}, {2});
  expect_tensor<int64_t>(argmax(Tensor::empty(DType::kFloat32, {0, 3}), 1), {0}, {});
}

TEST(ArgMax, Errors) {
  expect_error(
      [] {
        argmax(Tensor::empty(DType::kFloat32, {2, 0}), 1);
      },
      Code::kInvalidArgument, {"ArgMax", "empty", "[2,0]"});
  expect_error([] { argmin(Tensor(1.f)); }, Code::kInvalidArgument, {"ArgMin", "rank"});
  expect_error(
      [] {
        argmax(Tensor({1, 2}), 1);
      },
      Code::kInvalidArgument, {"ArgMax", "axis 1", "rank 1"});
  expect_error(
      [] {
        argmax(Tensor({1, 2}), 0, DType::kFloat32);
      },
      Code::kInvalidArgument, {"ArgMax", "output_type", "float32"});
  expect_error([] { argmax(Tensor({"a"})); }, Code::kInvalidArgument, {"ArgMax", "string"});
}

// ---- cumsum ----

template <typename T>
std::vector<T> ref_cumsum(const std::vector<T>& x, const std::vector<int64_t>& dims, int64_t axis,
                          bool exclusive, bool reverse) {
  int64_t A = 1, B = 1;
  for (int64_t d = 0; d < axis; ++d) A *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) B *= dims[d];
  const int64_t Rn = dims[axis];
  std::vector<T> out(x.size());
  for (int64_t a = 0; a < A; ++a)
    for (int64_t b = 0; b < B; ++b) {
      uint64_t wrap = 0;
      double acc = 0;
      for (int64_t k = 0; k < Rn; ++k) {
        const int64_t r = reverse ? Rn - 1 - k : k;
        const int64_t i = (a * Rn + r) * B + b;
        if (exclusive) out[i] = std::is_integral_v<T> ? static_cast<T>(wrap) : static_cast<T>(acc);
        wrap += static_cast<uint64_t>(static_cast<int64_t>(x[i]));
        acc += static_cast<double>(x[i]);
        if (!exclusive) out[i] = std::is_integral_v<T> ? static_cast<T>(wrap) : static_cast<T>(acc);
      }
    }
  return out;
}

TYPED_TEST(ReduceTyped, Cumsum) {
  using T = TypeParam;
  const std::vector<std::vector<int64_t>> shapes = {{6}, {2, 3, 4}, {3, 1100}, {2, 0, 3}};
  for (const auto& dims : shapes)
    for (int64_t axis = 0; axis < static_cast<int64_t>(dims.size()); ++axis)
      for (bool exclusive : {false, true})
        for (bool reverse : {false, true}) {
          const auto x = make_values<T>(prod(dims), R::kSum, static_cast<int>(axis));
          SCOPED_TRACE(::testing::Message() << Shape(dims) << " axis " << axis << " exclusive "
                                            << exclusive << " reverse " << reverse);
          const Tensor got =
              cumsum(Tensor::from_vector(x, Shape(dims)),
                     axis - (reverse ? static_cast<int64_t>(dims.size()) : 0), exclusive, reverse);
          expect_tensor<T>(got, Shape(dims), ref_cumsum(x, dims, axis, exclusive, reverse));
        }
}

TEST(Cumsum, ValuesAndErrors) {
  expect_tensor<int32_t>(cumsum(Tensor({1, 2, 3})), {3}, {1, 3, 6});
  expect_tensor<int32_t>(cumsum(Tensor({1, 2, 3}), 0, true), {3}, {0, 1, 3});
  expect_tensor<int32_t>(cumsum(Tensor({1, 2, 3}), 0, false, true), {3}, {6, 5, 3});
  expect_tensor<int32_t>(cumsum(Tensor({1, 2, 3}), 0, true, true), {3}, {5, 3, 0});
  expect_tensor<float>(cumsum(Tensor({{1.f, 2.f}, {3.f, 4.f}}), 1), {2, 2}, {1, 3, 3, 7});
  expect_error([] { cumsum(Tensor(1)); }, Code::kInvalidArgument, {"Cumsum", "rank"});
  expect_error(
      [] {
        cumsum(Tensor({1, 2}), 1);
      },
      Code::kInvalidArgument, {"Cumsum", "axis 1", "rank 1"});
  expect_error([] { cumsum(Tensor({true})); }, Code::kInvalidArgument, {"Cumsum", "bool"});
}

// ---- inference on partially known shapes (used when tracing) ----

class FakeSymbol : public Symbol {
 public:
  std::string tensor_name(int32_t i) const override { return "x:" + std::to_string(i); }
  std::string describe() const override { return "fake"; }
};

Tensor symbolic(DType dt, const Shape& s) {
  return Tensor::symbolic(new FakeSymbol, 0, dt, s);
}

TensorSpec infer(OpId id, std::vector<Tensor> in, Attrs attrs) {
  const OpDef& op = op_def(id);
  complete_attrs(op, attrs);
  InferContext c(op, in, attrs);
  op.infer(c);
  return c.output(0);
}

TEST(Reduce, InferenceWithUnknownDims) {
  const Tensor x = symbolic(DType::kFloat32, Shape{-1, 3, -1});
  EXPECT_EQ(infer(OpId::ReduceSum, {x}, {std::vector<int64_t>{1}, false}).shape, Shape({-1, -1}));
  EXPECT_EQ(infer(OpId::ReduceMax, {x}, {std::vector<int64_t>{0}, true}).shape, Shape({1, 3, -1}));
  EXPECT_EQ(infer(OpId::ArgMax, {x}, {int64_t{2}}).shape, Shape({-1, 3}));
  EXPECT_EQ(infer(OpId::Cumsum, {x}, {int64_t{0}}).shape, Shape({-1, 3, -1}));
  const Tensor u = symbolic(DType::kFloat32, Shape::unknown_rank());
  EXPECT_FALSE(infer(OpId::ReduceMean, {u}, {std::vector<int64_t>{1}}).shape.rank_known());
  expect_error(
      [&] {
        infer(OpId::ReduceMean, {u}, {std::vector<int64_t>{1, 1}});
      },
      Code::kInvalidArgument, {"duplicate"});
}

}  // namespace
}  // namespace kiln
