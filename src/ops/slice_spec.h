// Internal: canonical form of a StridedSlice spec, shared by its inference
// (src/ops/slicing.cpp) and its CPU kernel (src/kernels/cpu/slicing.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/shape.h"
#include "kiln/small_vector.h"

namespace kiln {

struct StridedSliceMasks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink_axis = 0;
};

/// Per input dimension: the first index read, the step, and the number of
/// elements taken (-1 when unknown). `shape` is the output shape (new axes
/// inserted, shrunk axes removed).
/// begin/end/strides values, inline for the usual few entries.
using SliceInts = SmallVec<int64_t, 8>;

struct StridedSliceSpec {
  SliceInts begin, stride, size;
  /// Per output dim (shrunk dims included, in order): the input dim it
  /// reads, kSliceNewAxis, or kSliceShrunk for an input dim indexed away.
  SliceInts gather;
  /// Bit k (k < 64): input dim k is read whole, start to end in steps of 1
  /// (also when its size is unknown).
  uint64_t whole = 0;
  Shape shape;
};
inline constexpr int64_t kSliceNewAxis = -1;
inline constexpr int64_t kSliceShrunk = -2;

/// Resolves begin/end/strides (`spec_len` values each; nullptr when the
/// values are unknown) against `input` (rank known) with Python
/// slicing semantics. Throws InvalidArgumentError prefixed "<op>: "
/// (StridedSliceGrad passes its own name).
StridedSliceSpec canonicalize_strided_slice(const Shape& input, int64_t spec_len,
                                            const int64_t* begin, const int64_t* end,
                                            const int64_t* strides, const StridedSliceMasks& masks,
                                            const char* op = "StridedSlice");

}  // namespace kiln
