// Internal: Transpose's permutation, shared by its inference and view rule
// (src/ops/shape_ops.cpp) and its CPU kernel (src/kernels/cpu/shape.cpp).
#pragma once
#include <cstdint>
#include <vector>

namespace kiln {

/// The "perm" attribute for an input of rank `rank`, or the dims reversed
/// when it is empty (TensorFlow's default).
inline std::vector<int64_t> transpose_perm(std::vector<int64_t> perm, int64_t rank) {
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  return perm;
}

}  // namespace kiln
