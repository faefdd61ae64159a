// Helpers shared by the elementwise op tests (unary, binary, select/cast).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

namespace kiln::testing {

/// Builds a tensor from values (works for bool, unlike from_vector).
template <typename T>
Tensor make(const std::vector<T>& v, const Shape& shape) {
  Tensor t = Tensor::empty(dtype_v<T>, shape);
  EXPECT_EQ(t.num_elements(), static_cast<int64_t>(v.size()));
  T* p = t.mutable_data<T>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return t;
}
template <typename T>
Tensor make(const std::vector<T>& v) {
  return make<T>(v, Shape{static_cast<int64_t>(v.size())});
}

/// Calls f(T{}) for each type.
template <typename... Ts, typename F>
void for_types(F&& f) {
  (f(Ts{}), ...);
}
#define KILN_REAL_TYPES int8_t, uint8_t, int32_t, int64_t, float, double

/// The dtypes a test sweeps over for rejection checks.
inline std::vector<DType> value_dtypes() {
  return {DType::kBool,  DType::kInt8,    DType::kUInt8,   DType::kInt32,
          DType::kInt64, DType::kFloat32, DType::kFloat64, DType::kString};
}
/// A small tensor of any value dtype (zeros / empty strings).
inline Tensor sample_of(DType dt, const Shape& shape = {2}) {
  Tensor t = Tensor::empty(dt, shape);
  if (!is_object(dt)) std::memset(t.mutable_raw_data(), 0, t.nbytes());
  return t;
}

/// Interesting values per dtype: extremes, zeros, signs, halves, specials.
template <typename T>
std::vector<T> samples() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_same_v<T, bool>) {
    return {false, true};
  } else if constexpr (std::is_floating_point_v<T>) {
    return {-L::infinity(),  T(-1e30), T(-3.5),       T(-2.5),       T(-1.5), T(-1),  T(-0.5),
            T(-0.0),         T(0),     T(0.3),        T(0.5),        T(1.5),  T(2.5), T(3.7),
            L::denorm_min(), T(1e30),  L::infinity(), L::quiet_NaN()};
  } else if constexpr (std::is_unsigned_v<T>) {
    return {T(0), T(1), T(2), T(7), T(100), T(200), L::max()};
  } else {
    return {L::min(), T(L::min() + 1), T(-100), T(-7), T(-2), T(-1), T(0), T(1), T(2),
            T(7),     T(100),          L::max()};
  }
}

/// Bitwise-ish equality: NaN equals NaN, and signed zeros must match.
template <typename T>
bool same_value(T got, T want) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(want)) return std::isnan(got);
    return got == want && std::signbit(got) == std::signbit(want);
  } else {
    return got == want;
  }
}

/// `x`, or the zero of its sign when it is a denormal kiln may flush
/// (config().flush_denormals): a reference for results whose intermediate
/// value was a denormal (floor(denorm_min / -1.5) is -0 once flushed).
template <typename T>
T flushed(T x) {
  if constexpr (std::is_floating_point_v<T>)
    if (config().flush_denormals && std::fpclassify(x) == FP_SUBNORMAL)
      return std::signbit(x) ? T(-0.0) : T(0);
  return x;
}

/// same_value, or `want` a denormal that kiln flushed to zero of its sign
/// (config().flush_denormals, the default: kiln/config.h). Ops that only move
/// bits (neg, abs, copies) keep a denormal; arithmetic flushes it.
template <typename T>
bool same_or_flushed(T got, T want) {
  if (same_value(got, want)) return true;
  if constexpr (std::is_floating_point_v<T>)
    return config().flush_denormals && std::fpclassify(want) == FP_SUBNORMAL && got == T(0) &&
           std::signbit(got) == std::signbit(want);
  return false;
}

/// Distance in float32 ulps between `got` and the exact value `want`.
inline double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e9;
  const float w = static_cast<float>(want);  // overflows to inf where float does
  if (std::isinf(w) || std::isinf(got)) return got == w ? 0 : 1e9;
  const float ulp =
      std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / static_cast<double>(ulp);
}

/// ulp_error, where a result below float32's normal range may also be 0
/// (flushed: config().flush_denormals).
inline double ulp_error_or_flushed(float got, double want) {
  const bool tiny = std::fabs(want) < static_cast<double>(std::numeric_limits<float>::min());
  if (config().flush_denormals && tiny && got == 0.f) return 0;
  return ulp_error(got, want);
}

/// Flat index into an input of shape `in` for output flat index `flat`
/// under NumPy broadcasting to `out` (reference for broadcasting kernels).
inline int64_t bcast_index(const Shape& in, const Shape& out, int64_t flat) {
  int64_t idx = 0, stride = 1;
  for (int64_t d = out.rank() - 1; d >= 0; --d) {
    const int64_t coord = flat % out.dim(d);
    flat /= out.dim(d);
    const int64_t id = d - (out.rank() - in.rank());
    if (id < 0) continue;
    if (in.dim(id) != 1) idx += coord * stride;
    stride *= in.dim(id);
  }
  return idx;
}

/// A stand-in graph symbol, to run inference on symbolic tensors.
class FakeSymbol : public Symbol {
 public:
  std::string tensor_name(int32_t i) const override { return "s:" + std::to_string(i); }
  std::string describe() const override { return "node 's'"; }
};
inline Tensor symbolic(DType dt, const Shape& s) {
  return Tensor::symbolic(new FakeSymbol, 0, dt, s);
}

/// Runs op `id`'s inference on `inputs` and returns output 0's spec.
inline TensorSpec infer_spec(OpId id, std::vector<Tensor> inputs, Attrs attrs = {}) {
  InferContext ic(op_def(id), inputs, attrs);
  op_def(id).infer(ic);
  return ic.output(0);
}

}  // namespace kiln::testing
