// Select (where), dtype conversion (cast) and clip_by_value.
#pragma once
#include "kiln/tensor.h"

namespace kiln {

/// Elementwise `condition ? x : y` (tf.where with three arguments, SelectV2):
/// condition is bool; x and y have the same dtype (any, including string); all
/// three broadcast together.
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);
/// The scalar operand takes the tensor operand's dtype.
Tensor where(const Tensor& condition, const Tensor& x, Scalar y);
Tensor where(const Tensor& condition, Scalar x, const Tensor& y);
/// Where (tf.where with one argument): the int64 coordinates [N, rank] of the
/// N true (non-zero) elements of `condition`, in row-major order. N depends on
/// the values, so a traced graph has an unknown first dimension.
Tensor where(const Tensor& condition);

/// Converts x to `dtype` (tf.cast). Every pair of numeric and bool dtypes:
/// - number -> bool is x != 0 (NaN -> true); bool -> number is 0 or 1;
/// - float -> integer truncates toward zero; values beyond the integer range
///   saturate to its min/max and NaN becomes 0 (TensorFlow leaves these
///   platform-dependent);
/// - integer -> narrower integer wraps (two's complement), float64 -> float32
///   rounds to nearest (overflowing to +-inf).
/// Casting to x's own dtype returns x itself. string -> string is allowed;
/// string <-> number is an Unimplemented error.
Tensor cast(const Tensor& x, DType dtype);

/// min(max(t, clip_value_min), clip_value_max) elementwise. The bounds have
/// t's dtype and broadcast to t's shape; NaN in t stays NaN; if min > max the
/// result is max. Numeric dtypes.
Tensor clip_by_value(const Tensor& t, const Tensor& clip_value_min, const Tensor& clip_value_max);
/// Scalar bounds take t's dtype.
Tensor clip_by_value(const Tensor& t, Scalar clip_value_min, Scalar clip_value_max);

}  // namespace kiln
