// Internal: canonical form of a StridedSlice spec, shared by its inference
// (src/ops/slicing.cpp) and its CPU kernel (src/kernels/cpu/slicing.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/shape.h"

namespace kiln {

struct StridedSliceMasks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink_axis = 0;
};

/// Per input dimension: the first index read, the step, and the number of
/// elements taken (-1 when unknown). `shape` is the output shape (new axes
/// inserted, shrunk axes removed).
struct StridedSliceSpec {
  std::vector<int64_t> begin, stride, size;
  Shape shape;
};

/// Resolves begin/end/strides (nullptr when the values are unknown; then
/// `spec_len` gives their length) against `input` (rank known) with Python
/// slicing semantics. Throws InvalidArgumentError prefixed "<op>: "
/// (StridedSliceGrad passes its own name).
StridedSliceSpec canonicalize_strided_slice(const Shape& input, int64_t spec_len,
                                            const std::vector<int64_t>* begin,
                                            const std::vector<int64_t>* end,
                                            const std::vector<int64_t>* strides,
                                            const StridedSliceMasks& masks,
                                            const char* op = "StridedSlice");

}  // namespace kiln
