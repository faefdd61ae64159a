// libm for kiln's scalar functions (functors.h), reached through the
// compiler's builtins: the first part of the JIT's prelude, which includes
// no <cmath>. kiln's own vectorizable float32 kernels are in float_math.h.
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

}  // namespace kiln::fast
