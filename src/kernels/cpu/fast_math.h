// Fast float32 transcendentals written so that GCC vectorizes loops over
// them: straight-line arithmetic, no libm calls, branch-free selects on bit
// patterns. Used by the unary and fused-elementwise kernels through
// functors.h (fn::Tanh), and meant for generated code later.
//
// Accuracy is measured over every float32 against tanh in double precision
// (tests/cpp/kernels/fast_math_test.cpp, numbers in docs/BENCHMARKS.md).
#pragma once
#include <bit>
#include <cstdint>

namespace kiln::fast {

// libm through the compiler's builtins, for float and double: no <cmath>, so
// generated code that pastes this header stays self-contained and quick to
// compile. Same calls (and results) as std::fabs etc.
inline float fabs(float x) {
  return __builtin_fabsf(x);
}
inline double fabs(double x) {
  return __builtin_fabs(x);
}
inline float sqrt(float x) {
  return __builtin_sqrtf(x);
}
inline double sqrt(double x) {
  return __builtin_sqrt(x);
}
inline float exp(float x) {
  return __builtin_expf(x);
}
inline double exp(double x) {
  return __builtin_exp(x);
}
inline float log(float x) {
  return __builtin_logf(x);
}
inline double log(double x) {
  return __builtin_log(x);
}
inline float expm1(float x) {
  return __builtin_expm1f(x);
}
inline double expm1(double x) {
  return __builtin_expm1(x);
}
inline float log1p(float x) {
  return __builtin_log1pf(x);
}
inline double log1p(double x) {
  return __builtin_log1p(x);
}
inline float tanh(float x) {
  return __builtin_tanhf(x);
}
inline double tanh(double x) {
  return __builtin_tanh(x);
}
inline float sin(float x) {
  return __builtin_sinf(x);
}
inline double sin(double x) {
  return __builtin_sin(x);
}
inline float cos(float x) {
  return __builtin_cosf(x);
}
inline double cos(double x) {
  return __builtin_cos(x);
}
inline double erf(double x) {
  return __builtin_erf(x);
}
inline float copysign(float x, float y) {
  return __builtin_copysignf(x, y);
}
inline double copysign(double x, double y) {
  return __builtin_copysign(x, y);
}
inline float fmod(float x, float y) {
  return __builtin_fmodf(x, y);
}
inline double fmod(double x, double y) {
  return __builtin_fmod(x, y);
}
inline float pow(float x, float y) {
  return __builtin_powf(x, y);
}
inline double pow(double x, double y) {
  return __builtin_pow(x, y);
}

/// Branch-free c ? a : b on the bit patterns (GCC will not if-convert a
/// ternary whose arms hold float arithmetic; this form becomes a blend).
inline float select_f32(bool c, float a, float b) {
  const int32_t m = -static_cast<int32_t>(c);
  return std::bit_cast<float>((std::bit_cast<int32_t>(a) & m) | (std::bit_cast<int32_t>(b) & ~m));
}

/// float32 tanh, max error 1.5 ulp (relative 1.5e-7), about 30 vector
/// instructions and one division per lane.
///
/// |x| < 0.625: x + x^3 S(x^2), S a degree-4 minimax fit of the relative
/// error (fitted for kiln). Above: tanh|x| = m / (m + 2) with
/// m = e^{2|x|} - 1 = 2^n (e^r - 1) + (2^n - 1), e^r - 1 = r + r^2 P(r) with
/// P a degree-4 minimax fit on |r| <= ln2/2, so m has no cancellation; 2|x|
/// is capped at 18.05, where tanh already rounds to 1. Both halves are
/// computed and one is selected (no branches). tanh(+-0) = +-0, +-inf ->
/// +-1, NaN -> NaN, subnormals are returned unchanged.
inline float tanh_f32(float x) {
  const float s = std::bit_cast<float>(std::bit_cast<int32_t>(x) & 0x7fffffff);
  // Small |x|: odd polynomial.
  const float z = s * s;
  float ps = -5.7049971074e-03f;
  ps = ps * z + 2.0639097318e-02f;
  ps = ps * z - 5.3739719093e-02f;
  ps = ps * z + 1.3331441581e-01f;
  ps = ps * z - 3.3333280683e-01f;
  const float small = ps * z * s + s;
  // Large |x|: expm1 by range reduction (NaN fails the comparison and flows
  // through as NaN; the shift below is done unsigned so no value is UB).
  float y = s + s;
  y = select_f32(y > 18.05f, 18.05f, y);
  const float t = y * 1.44269504088896341f + 12582912.0f;  // 1.5 * 2^23: rounds to int
  const float nf = t - 12582912.0f;
  const int32_t n = std::bit_cast<int32_t>(t) - 0x4B400000;  // in [0, 26]
  // One-constant reduction: its error n * 1.9e-9 is damped by 2 / (m + 2).
  const float r = y - nf * 0.693147182f;
  float q = 1.3882515486e-03f;
  q = q * r + 8.3665130660e-03f;
  q = q * r + 4.1667200625e-02f;
  q = q * r + 1.6666543484e-01f;
  q = q * r + 4.9999997020e-01f;
  const float p = q * (r * r) + r;                                              // e^r - 1
  const float sc = std::bit_cast<float>(static_cast<uint32_t>(n + 127) << 23);  // 2^n
  const float m = sc * p + (sc - 1.0f);
  const float large = m / (m + 2.0f);
  const float a = select_f32(s < 0.625f, small, large);
  // The sign of x (tanh is odd).
  return std::bit_cast<float>(std::bit_cast<int32_t>(a) | (std::bit_cast<int32_t>(x) & INT32_MIN));
}

}  // namespace kiln::fast
