// TensorFlow's SAME/VALID window arithmetic written out and small helpers,
// shared by the convolution and pooling tests' reference loops.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kiln/ops.h"
#include "kiln/tensor.h"

namespace kiln::testing {

/// Output size and leading pad of one spatial dim, as TensorFlow defines them.
struct Out1 {
  int64_t size, pad;
};
inline Out1 tf_out(int64_t in, int64_t k, int64_t s, int64_t d, bool same) {
  const int64_t eff = (k - 1) * d + 1;
  if (!same) return {(in - eff + s) / s, 0};
  const int64_t out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>((out - 1) * s + eff - in, 0);
  return {out, total / 2};
}

/// n values of a sine of frequency `freq` (deterministic test data).
template <typename T>
std::vector<T> wave(int64_t n, double freq) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<T>(std::sin(freq * static_cast<double>(i) + 0.3));
  return v;
}

/// <a, b> in float64.
inline double dot(const Tensor& a, const Tensor& b) {
  return reduce_sum(cast(a, DType::kFloat64) * cast(b, DType::kFloat64)).item<double>();
}

/// The dims of `s` as an int64 vector tensor (a backprop op's sizes input).
inline Tensor sizes_of(const Shape& s) {
  return Tensor::from_vector(s.to_vector(), Shape{s.rank()});
}

}  // namespace kiln::testing
