// Binary elementwise ops with NumPy broadcasting. Both tensor operands must
// have the same dtype (no implicit promotion, as in TensorFlow); a C++ scalar
// operand is converted to the other operand's dtype.
#pragma once
#include "kiln/tensor.h"

namespace kiln {

#define KILN_BINARY_FRONT(name)                  \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, Scalar b);        \
  Tensor name(Scalar a, const Tensor& b);

/// a + b; also concatenates strings.
KILN_BINARY_FRONT(add)
KILN_BINARY_FRONT(subtract)
KILN_BINARY_FRONT(multiply)
/// True division. Integer inputs are cast first as TensorFlow's truediv does:
/// int8/uint8 -> float32, int32/int64 -> float64.
KILN_BINARY_FRONT(divide)
/// Floor division (rounds toward -inf); floats give floor(a / b). Integer
/// division by zero is an InvalidArgument error; INT_MIN // -1 wraps.
KILN_BINARY_FRONT(floordiv)
/// Remainder with the sign of the divisor: a - floordiv(a, b) * b. Integer
/// modulo by zero is an InvalidArgument error.
KILN_BINARY_FRONT(floormod)
/// a^b. Integers: exact power with wrap-around; a negative integer exponent is
/// an InvalidArgument error (as in TensorFlow).
KILN_BINARY_FRONT(pow)
/// Elementwise max/min; a NaN operand gives NaN.
KILN_BINARY_FRONT(maximum)
KILN_BINARY_FRONT(minimum)
/// (a - b)^2
KILN_BINARY_FRONT(squared_difference)
/// Comparisons produce bool; equal/not_equal also compare bools and strings.
KILN_BINARY_FRONT(equal)
KILN_BINARY_FRONT(not_equal)
KILN_BINARY_FRONT(less)
KILN_BINARY_FRONT(less_equal)
KILN_BINARY_FRONT(greater)
KILN_BINARY_FRONT(greater_equal)
/// Logical ops on bool tensors.
KILN_BINARY_FRONT(logical_and)
KILN_BINARY_FRONT(logical_or)
KILN_BINARY_FRONT(logical_xor)
/// Bitwise ops on integer tensors (tf.bitwise). For bool tensors use the
/// logical ops, or the operators & | ^ which pick the right one.
KILN_BINARY_FRONT(bitwise_and)
KILN_BINARY_FRONT(bitwise_or)
KILN_BINARY_FRONT(bitwise_xor)
/// Shifts on integers. As in TensorFlow's kernels the shift count is clamped
/// to [0, bits - 1]: negative counts shift by 0, counts >= the bit width by
/// bits - 1. Right shifts of signed values fill with the sign bit.
KILN_BINARY_FRONT(left_shift)
KILN_BINARY_FRONT(right_shift)
#undef KILN_BINARY_FRONT

#define KILN_BINARY_OPERATOR(op, fn)                            \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { \
    return fn(a, b);                                            \
  }                                                             \
  inline Tensor operator op(const Tensor& a, Scalar b) {        \
    return fn(a, b);                                            \
  }                                                             \
  inline Tensor operator op(Scalar a, const Tensor& b) {        \
    return fn(a, b);                                            \
  }
KILN_BINARY_OPERATOR(+, add)
KILN_BINARY_OPERATOR(-, subtract)
KILN_BINARY_OPERATOR(*, multiply)
KILN_BINARY_OPERATOR(/, divide)
KILN_BINARY_OPERATOR(%, floormod)
KILN_BINARY_OPERATOR(<<, left_shift)
KILN_BINARY_OPERATOR(>>, right_shift)
KILN_BINARY_OPERATOR(==, equal)
KILN_BINARY_OPERATOR(!=, not_equal)
KILN_BINARY_OPERATOR(<, less)
KILN_BINARY_OPERATOR(<=, less_equal)
KILN_BINARY_OPERATOR(>, greater)
KILN_BINARY_OPERATOR(>=, greater_equal)
#undef KILN_BINARY_OPERATOR

/// & | ^ are logical on bool tensors and bitwise on integers (TensorFlow's
/// operator semantics). The tensor operand's dtype decides.
#define KILN_LOGICAL_OPERATOR(op, logical, bitwise)                                  \
  inline Tensor operator op(const Tensor& a, const Tensor& b) {                      \
    return a.defined() && a.dtype() == DType::kBool ? logical(a, b) : bitwise(a, b); \
  }                                                                                  \
  inline Tensor operator op(const Tensor& a, Scalar b) {                             \
    return a.defined() && a.dtype() == DType::kBool ? logical(a, b) : bitwise(a, b); \
  }                                                                                  \
  inline Tensor operator op(Scalar a, const Tensor& b) {                             \
    return b.defined() && b.dtype() == DType::kBool ? logical(a, b) : bitwise(a, b); \
  }
KILN_LOGICAL_OPERATOR(&, logical_and, bitwise_and)
KILN_LOGICAL_OPERATOR(|, logical_or, bitwise_or)
KILN_LOGICAL_OPERATOR(^, logical_xor, bitwise_xor)
#undef KILN_LOGICAL_OPERATOR

}  // namespace kiln
