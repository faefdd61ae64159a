// Internal helpers for op front functions.
#pragma once
#include "kiln/tensor.h"

namespace kiln {

/// A scalar tensor holding `s` converted to `like`'s dtype (checked).
/// While tracing this becomes a constant in the graph like any eager tensor.
Tensor scalar_like(Scalar s, const Tensor& like);

/// An int64 vector tensor (shape arguments given as C++ lists).
Tensor int64_vector(std::span<const int64_t> v);
inline Tensor int64_vector(const std::vector<int64_t>& v) {
  return int64_vector(std::span<const int64_t>(v.data(), v.size()));
}
inline Tensor int64_vector(std::initializer_list<int64_t> v) {
  return int64_vector(std::span<const int64_t>(v.begin(), v.size()));
}

}  // namespace kiln
