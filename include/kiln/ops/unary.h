// Unary elementwise ops (TensorFlow's tf.math names). Each keeps the input's
// shape; dtypes follow TensorFlow: floating-point-only ops (sqrt, exp, log,
// tanh, sin, ...) reject integer tensors with InvalidArgument.
#pragma once
#include "kiln/tensor.h"

namespace kiln {

/// -x (signed integers wrap: -INT_MIN == INT_MIN). Signed ints and floats.
Tensor negative(const Tensor& x);
/// |x| (abs(INT_MIN) wraps to INT_MIN). Signed ints and floats.
Tensor abs(const Tensor& x);
/// -1, 0 or 1 by the sign of x; NaN stays NaN. Signed ints and floats.
Tensor sign(const Tensor& x);
/// x * x (integers wrap). All numeric dtypes.
Tensor square(const Tensor& x);
/// Square root; NaN for negative x. Floats.
Tensor sqrt(const Tensor& x);
/// 1 / sqrt(x). Floats.
Tensor rsqrt(const Tensor& x);
/// e^x. Floats.
Tensor exp(const Tensor& x);
/// Natural logarithm: log(0) = -inf, log(x < 0) = NaN. Floats.
Tensor log(const Tensor& x);
/// e^x - 1, accurate for small x (tf.math.expm1). Floats.
Tensor expm1(const Tensor& x);
/// The error function 2/sqrt(pi) * integral of e^{-t^2} from 0 to x
/// (tf.math.erf). Floats: float32 within 1 ulp (kiln's own, vectorized),
/// float64 libm's.
Tensor erf(const Tensor& x);
/// log(1 + x), accurate for small x. Floats.
Tensor log1p(const Tensor& x);
/// Hyperbolic tangent. Floats.
Tensor tanh(const Tensor& x);
/// 1 / (1 + e^-x). Floats.
Tensor sigmoid(const Tensor& x);
/// max(x, 0); NaN propagates. All numeric dtypes.
Tensor relu(const Tensor& x);
/// Sine (radians). Floats.
Tensor sin(const Tensor& x);
/// Cosine (radians). Floats.
Tensor cos(const Tensor& x);
/// Largest integer <= x. Floats.
Tensor floor(const Tensor& x);
/// Smallest integer >= x. Floats.
Tensor ceil(const Tensor& x);
/// Round half to even (0.5 -> 0, 1.5 -> 2), like tf.round. Floats and signed
/// ints (identity).
Tensor round(const Tensor& x);
/// Elementwise not of a bool tensor.
Tensor logical_not(const Tensor& x);
/// Bitwise not (tf.bitwise.invert). Integers.
Tensor invert(const Tensor& x);
/// True where x is NaN. Floats; bool output.
Tensor is_nan(const Tensor& x);
/// True where x is neither infinite nor NaN. Floats; bool output.
Tensor is_finite(const Tensor& x);

/// -x: negative(x).
Tensor operator-(const Tensor& x);
/// ~x: logical_not for bool tensors (as TensorFlow), invert for integers.
Tensor operator~(const Tensor& x);

/// Complex numbers (complex64 from float32 parts, complex128 from float64):
/// complex(real, imag) broadcasts its parts; real/imag/complex_abs give the
/// parts' dtype; conj negates the imaginary part. Add, Sub, Mul, Div, Neg,
/// Equal and NotEqual accept complex tensors; no gradients through them yet.
Tensor complex(const Tensor& real, const Tensor& imag);
Tensor real(const Tensor& input);
Tensor imag(const Tensor& input);
Tensor complex_abs(const Tensor& x);
Tensor conj(const Tensor& input);

}  // namespace kiln
