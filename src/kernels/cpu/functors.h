// Scalar math functors shared by the eager CPU kernels and (later) the code
// the JIT generates: one definition of each elementwise operation.
//
// Rules every functor follows:
// - Total: defined for every input value, no UB (integer overflow wraps,
//   shift counts are clamped, integer division by zero yields 0 -- the eager
//   kernels reject zero divisors before calling the functor).
// - Branch-free where it matters, so loops over contiguous data vectorize.
// - float32 transcendentals (exp, log, tanh, sigmoid) use Cephes-style
//   polynomials (<= 2-3 ulp, checked by tests against double precision;
//   tanh lives in fast_math.h); float64 uses the C library.
// - No <cmath>: libm is reached through fast_math.h's builtin wrappers, so the
//   JIT pastes this header and fast_math.h into the code it generates.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "fast_math.h"

namespace kiln::fn {

namespace detail {

template <typename T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool is_sint_v = is_int_v<T>&& std::is_signed_v<T>;

// Wrapping integer arithmetic through the unsigned type (no signed overflow UB).
template <typename T>
inline T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
inline T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
inline T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  // uint8 promotes to int; 255 * 255 fits, so no overflow there either.
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <typename T>
inline T wrap_neg(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(a));
}

template <size_t N>
struct UIntOfSize;
template <>
struct UIntOfSize<1> {
  using type = uint8_t;
};
template <>
struct UIntOfSize<4> {
  using type = uint32_t;
};
template <>
struct UIntOfSize<8> {
  using type = uint64_t;
};

// Bit-level helpers for the float kernels.
template <typename T>
struct FloatBits;
template <>
struct FloatBits<float> {
  using I = int32_t;
  static constexpr float kMagic = 8388608.0f;  // 2^23: above it every float is an integer
};
template <>
struct FloatBits<double> {
  using I = int64_t;
  static constexpr double kMagic = 4503599627370496.0;  // 2^52
};

// Branch-free c ? a : b on the bit patterns. GCC will not if-convert a
// ternary whose arms hold floating-point arithmetic (it may trap), which
// keeps such loops scalar; this form vectorizes to and/andnot/or.
template <typename T>
inline T select(bool c, T a, T b) {
  using I = typename FloatBits<T>::I;
  const I m = -static_cast<I>(c);
  return std::bit_cast<T>((std::bit_cast<I>(a) & m) | (std::bit_cast<I>(b) & ~m));
}

// Round half to even (default rounding mode) without libm calls, so it
// vectorizes on plain SSE2. Needs IEEE semantics (no -ffast-math).
template <typename T>
inline T round_even(T x) {
  const T a = fast::fabs(x);
  const T m = FloatBits<T>::kMagic;
  const T r = fast::copysign((a + m) - m, x);
  return select(a < m, r, x);  // large values and NaN/inf are returned as is
}
template <typename T>
inline T floor_f(T x) {
  const T r = round_even(x);
  // floor/ceil results always carry x's sign (floor(-0.0) = -0.0, ceil(-0.5) = -0.0).
  return fast::copysign(select(r > x, r - T(1), r), x);
}
template <typename T>
inline T ceil_f(T x) {
  const T r = round_even(x);
  return fast::copysign(select(r < x, r + T(1), r), x);
}

// e^r for x = n ln2 + r, |r| <= ln2/2 (Cody-Waite reduction, the degree-6
// polynomial of Cephes expf); x must be finite and within [-104, 88.8].
inline float exp_f32_core(float x, int32_t& n) {
  const float t = x * 1.44269504088896341f + 12582912.0f;  // 1.5 * 2^23: rounds to int
  const float nf = t - 12582912.0f;
  n = std::bit_cast<int32_t>(t) - 0x4B400000;
  float r = x - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * (r * r) + r + 1.0f;
}

// exp for float32: exp_f32_core, then scaling by 2^n in two steps so that
// results in the subnormal range are rounded once.
inline float exp_f32(float x) {
  float xc = select(x > -104.0f, x, -104.0f);  // exp(-104) rounds to 0; NaN -> -104, fixed below
  xc = select(xc < 88.8f, xc, 88.8f);          // exp(88.8) overflows to inf
  int32_t n;
  float y = exp_f32_core(xc, n);
  const int32_t n1 = n >> 1;  // n in [-150, 129]: both halves stay in the normal range
  const int32_t n2 = n - n1;
  y = y * std::bit_cast<float>((n1 + 127) << 23);
  y = y * std::bit_cast<float>((n2 + 127) << 23);
  return select(x != x, x, y);
}

/// The range where exp_f32_normal holds: e^x is a normal float there.
inline constexpr float kExpNormalLo = -86.9f, kExpNormalHi = 88.0f;

// exp_f32 for x in [kExpNormalLo, kExpNormalHi] only (callers check the range,
// as softmax rows do with the row's min and max): the same bits as exp_f32, but
// no clamps or NaN test, and 2^n added to the exponent field (n in [-125, 127]),
// about 40 % fewer instructions.
inline float exp_f32_normal(float x) {
  int32_t n;
  const float y = exp_f32_core(x, n);
  return std::bit_cast<float>(std::bit_cast<int32_t>(y) +
                              static_cast<int32_t>(static_cast<uint32_t>(n) << 23));
}

// log for float32 (Cephes logf): x = m 2^e with m in [sqrt(.5), sqrt(2)),
// log(m) by a degree-9 polynomial in m - 1.
inline float log_f32(float x) {
  const bool sub = x < 1.17549435e-38f;  // subnormals (and non-positives) are rescaled
  const float xs = select(sub, x * 8388608.0f, x);
  const int32_t bits = std::bit_cast<int32_t>(xs);
  int32_t e = ((bits >> 23) & 0xff) - 126;
  float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);  // [0.5, 1)
  e -= sub ? 23 : 0;
  const bool lo = m < 0.707106781186547524f;
  e -= lo ? 1 : 0;
  m = select(lo, (m + m) - 1.0f, m - 1.0f);
  const float ef = static_cast<float>(e);
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y = y + ef * -2.12194440e-4f;
  y = y - 0.5f * z;
  float res = m + y;
  res = res + ef * 0.693359375f;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  res = select(x == kInf, kInf, res);
  res = select(x == 0.0f, -kInf, res);
  res = select(x < 0.0f, std::numeric_limits<float>::quiet_NaN(), res);
  return select(x != x, x, res);
}

// 16-bit floats as bits, without branches (mask selects: GCC keeps `?:` over
// float arithmetic as a branch and the loop scalar); the same results as
// kiln/half.h's to_float/to_half/to_bfloat16.
inline uint32_t select_u32(bool c, uint32_t a, uint32_t b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return (a & m) | (b & ~m);
}

/// The exact float of an IEEE half.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t body = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t e = body & 0x0f800000u;
  const uint32_t rebiased = body + 0x38000000u;  // exponent + (127 - 15)
  const uint32_t normal = select_u32(e == 0x0f800000u, rebiased + 0x38000000u, rebiased);
  const float tiny = static_cast<float>(static_cast<int32_t>(h & 0x3ffu)) * 5.9604644775390625e-8f;
  return std::bit_cast<float>(select_u32(e == 0, std::bit_cast<uint32_t>(tiny), normal) | sign);
}

/// The nearest IEEE half (ties to even); overflow gives inf, NaN a quiet NaN.
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t a = x & 0x7fffffffu;
  const uint32_t special = select_u32(a > 0x7f800000u, 0x7e00u, 0x7c00u);
  // Below 2^-14 the half is subnormal: adding 0.5, whose ulp is the half's
  // step 2^-24, lets the FPU round to nearest even.
  const uint32_t tiny = std::bit_cast<uint32_t>(std::bit_cast<float>(a) + 0.5f) - 0x3f000000u;
  const uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  const uint32_t o =
      select_u32(a >= 0x47800000u, special, select_u32(a < 0x38800000u, tiny, normal));
  return static_cast<uint16_t>(o | ((x >> 16) & 0x8000u));
}

/// The exact float of a bfloat16.
inline float bf16_to_f32(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

/// The nearest bfloat16 (ties to even); NaN stays a quiet NaN.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(
      select_u32((x & 0x7fffffffu) > 0x7f800000u, (x >> 16) | 0x40u, rounded));
}

// erf for float32: at most 0.96 ulp from libm's erf over the sweep of
// tests/cpp/ops/unary_test.cpp (which allows 1.5). |x| < 1: x P(x^2), summed in double and rounded
// once, P a degree-6 fit of erf(x) / x's relative error on [0, 1]. Above:
// 1 - e^{-a^2} R(1/a) with a = min(|x|, 4), R a degree-8 fit of
// erfc(a) e^{a^2} on [1, 4] (past 4 erf rounds to 1). The fits were made
// for kiln (iteratively reweighted least squares on Chebyshev nodes). Both
// halves are computed and one selected; NaN stays NaN, erf(+-0) = +-0.
inline float erf_f32(float x) {
  const float ax = fast::fabs(x);
  const double xd = x, s = xd * xd;
  double p = 7.853829870514967e-05;
  p = p * s - 8.010184088560954e-04;
  p = p * s + 5.188326599996101e-03;
  p = p * s - 2.6853811363781635e-02;
  p = p * s + 1.1283585134953296e-01;
  p = p * s - 3.7612625823030393e-01;
  p = p * s + 1.1283791657265374;
  const float small = static_cast<float>(xd * p);
  const float a = select(ax < 4.0f, ax, 4.0f);       // NaN -> 4, fixed below
  const float t = 1.0f / select(a > 0.5f, a, 0.5f);  // (|x| < 1 takes the other half)
  float r = -1.1368495412170887e-02f;
  r = r * t + 3.7969280034303665e-02f;
  r = r * t + 4.0900064632296562e-03f;
  r = r * t - 2.1914158761501312e-01f;
  r = r * t + 4.8098954558372498e-01f;
  r = r * t - 4.6468859910964966e-01f;
  r = r * t + 4.0165249258279800e-02f;
  r = r * t + 5.5931502580642700e-01f;
  r = r * t + 2.5314211961813271e-04f;
  const float large = fast::copysign(1.0f - exp_f32(-(a * a)) * r, x);
  return select(x != x, x, select(ax < 1.0f, small, large));
}

}  // namespace detail

// ---- unary ----

struct Neg {
  template <typename T>
  T operator()(T x) const {
    if constexpr (detail::is_int_v<T>)
      return detail::wrap_neg(x);
    else
      return -x;
  }
};
struct Abs {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return fast::fabs(x);
    else if constexpr (std::is_unsigned_v<T>)
      return x;
    else
      return x < 0 ? detail::wrap_neg(x) : x;  // abs(INT_MIN) wraps to INT_MIN as in TF
  }
};
/// -1, 0 or 1; NaN stays NaN and zeros keep their sign.
struct Sign {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
    else
      return static_cast<T>((x > T(0)) - (x < T(0)));
  }
};
struct Square {
  template <typename T>
  T operator()(T x) const {
    if constexpr (detail::is_int_v<T>)
      return detail::wrap_mul(x, x);
    else
      return x * x;
  }
};
struct Sqrt {
  template <typename T>
  T operator()(T x) const {
    return fast::sqrt(x);
  }
};
struct Rsqrt {
  template <typename T>
  T operator()(T x) const {
    return T(1) / fast::sqrt(x);
  }
};
struct Exp {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return detail::exp_f32(x);
    else
      return fast::exp(x);
  }
};
struct Log {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return detail::log_f32(x);
    else
      return fast::log(x);
  }
};
struct Expm1 {
  template <typename T>
  T operator()(T x) const {
    return fast::expm1(x);
  }
};
/// The error function. float32: detail::erf_f32 (kiln's, vectorizes);
/// float64: libm's erf.
struct Erf {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return detail::erf_f32(x);
    else
      return fast::erf(x);
  }
};
struct Log1p {
  template <typename T>
  T operator()(T x) const {
    return fast::log1p(x);
  }
};
struct Tanh {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return fast::tanh_f32(x);
    else
      return fast::tanh(x);
  }
};
/// 1 / (1 + exp(-x)), computed as e^x / (1 + e^x) for x < 0 so that tiny
/// (subnormal) results are not flushed to 0; saturates to exactly 0 and 1.
struct Sigmoid {
  template <typename T>
  T operator()(T x) const {
    const T e = Exp{}(-fast::fabs(x));
    return detail::select(x >= T(0), T(1), e) / (T(1) + e);
  }
};
/// max(x, 0); NaN propagates.
struct Relu {
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};
struct Sin {
  template <typename T>
  T operator()(T x) const {
    return fast::sin(x);
  }
};
struct Cos {
  template <typename T>
  T operator()(T x) const {
    return fast::cos(x);
  }
};
struct Floor {
  template <typename T>
  T operator()(T x) const {
    return detail::floor_f(x);
  }
};
struct Ceil {
  template <typename T>
  T operator()(T x) const {
    return detail::ceil_f(x);
  }
};
/// Half to even (TensorFlow's round, numpy's rint); identity on integers.
struct Round {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return detail::round_even(x);
    else
      return x;
  }
};
struct LogicalNot {
  bool operator()(bool x) const { return !x; }
};
struct Invert {
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>(~x);
  }
};
struct IsNan {
  template <typename T>
  bool operator()(T x) const {
    return x != x;
  }
};
struct IsFinite {
  template <typename T>
  bool operator()(T x) const {
    return (x - x) == T(0);
  }  // inf - inf and NaN give NaN
};

// ---- binary ----

struct Add {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (detail::is_int_v<T>)
      return detail::wrap_add(a, b);
    else
      return static_cast<T>(a + b);
  }
};
struct Sub {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (detail::is_int_v<T>)
      return detail::wrap_sub(a, b);
    else
      return static_cast<T>(a - b);
  }
};
struct Mul {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else if constexpr (detail::is_int_v<T>)
      return detail::wrap_mul(a, b);
    else
      return static_cast<T>(a * b);
  }
};
/// Floats: IEEE division. Integers: C truncation; x / 0 = 0 (kernels reject
/// zero divisors first) and INT_MIN / -1 wraps to INT_MIN.
struct Div {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (!detail::is_int_v<T>) {
      return a / b;  // floats and complex values
    } else {
      if (b == T(0)) return T(0);
      if constexpr (detail::is_sint_v<T>)
        if (b == T(-1)) return detail::wrap_neg(a);
      return static_cast<T>(a / b);
    }
  }
};
/// Division rounding toward -inf. Floats: floor(a / b).
struct FloorDiv {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return detail::floor_f(a / b);
    } else {
      if (b == T(0)) return T(0);
      if constexpr (detail::is_sint_v<T>) {
        if (b == T(-1)) return detail::wrap_neg(a);
        const T q = static_cast<T>(a / b);
        const T r = static_cast<T>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
      } else {
        return static_cast<T>(a / b);
      }
    }
  }
};
/// Remainder with the divisor's sign: a - floordiv(a, b) * b.
struct FloorMod {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      const T m = fast::fmod(a, b);
      return (m != T(0) && ((b < T(0)) != (m < T(0)))) ? m + b : m;
    } else {
      if (b == T(0)) return T(0);
      if constexpr (detail::is_sint_v<T>) {
        if (b == T(-1)) return T(0);
        const T r = static_cast<T>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
      } else {
        return static_cast<T>(a % b);
      }
    }
  }
};
/// Floats: std::pow. Integers: exact power with wrap-around; a negative
/// exponent yields 0 (kernels reject it first, as TensorFlow does).
struct Pow {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return fast::pow(a, b);
    } else {
      if (b < T(0)) return T(0);
      T result = T(1), base = a;
      for (auto e = static_cast<std::make_unsigned_t<T>>(b); e != 0; e >>= 1) {
        if (e & 1) result = detail::wrap_mul(result, base);
        base = detail::wrap_mul(base, base);
      }
      return result;
    }
  }
};
/// NaN in either operand gives NaN (TensorFlow's Maximum).
struct Maximum {
  template <typename T>
  T operator()(T a, T b) const {
    const T m = a > b ? a : b;
    if constexpr (std::is_floating_point_v<T>)
      return a != a ? a : m;
    else
      return m;
  }
};
struct Minimum {
  template <typename T>
  T operator()(T a, T b) const {
    const T m = a < b ? a : b;
    if constexpr (std::is_floating_point_v<T>)
      return a != a ? a : m;
    else
      return m;
  }
};
struct SquaredDifference {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (detail::is_int_v<T>) {
      const T d = detail::wrap_sub(a, b);
      return detail::wrap_mul(d, d);
    } else {
      const T d = a - b;
      return d * d;
    }
  }
};
struct Equal {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a == b;
  }
};
struct NotEqual {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a != b;
  }
};
struct Less {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqual {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Greater {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqual {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct LogicalAnd {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct LogicalOr {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct LogicalXor {
  bool operator()(bool a, bool b) const { return a != b; }
};
struct BitwiseAnd {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct BitwiseOr {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct BitwiseXor {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};
/// Shift counts are clamped to [0, bits - 1] as TensorFlow does (so shifting
/// left by >= bits keeps only the top bit pattern, never UB).
template <typename T>
inline int clamp_shift(T b) {
  constexpr int kMax = static_cast<int>(sizeof(T) * 8 - 1);
  return b < T(0) ? 0 : (b > T(kMax) ? kMax : static_cast<int>(b));
}
// Types narrower than 32 bits shift in 32-bit lanes with the value at the
// top: GCC would narrow `uint32_t(a) >> s` back to an 8-bit vector shift,
// which x86 lacks, and leave the loop scalar (4x slower on uint8).
struct LeftShift {
  template <typename T>
  T operator()(T a, T b) const {
    using U = std::make_unsigned_t<T>;
    if constexpr (sizeof(T) < 4) {
      constexpr int kUp = 32 - static_cast<int>(sizeof(T)) * 8;
      return static_cast<T>((uint32_t{static_cast<U>(a)} << (clamp_shift(b) + kUp)) >> kUp);
    } else {
      return static_cast<T>(static_cast<U>(static_cast<U>(a) << clamp_shift(b)));
    }
  }
};
/// Arithmetic shift for signed types (sign fill), logical for unsigned.
struct RightShift {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (sizeof(T) < 4) {
      using W = std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>;
      constexpr int kUp = 32 - static_cast<int>(sizeof(T)) * 8;
      const W top = static_cast<W>(static_cast<uint32_t>(a) << kUp);
      return static_cast<T>(static_cast<W>(top >> clamp_shift(b)) >> kUp);
    } else {
      return static_cast<T>(a >> clamp_shift(b));
    }
  }
};

// ---- complex values ----
// As GCC's builtin complex types (__complex__ float/double), which
// std::complex<T> wraps with the same layout: the generated code includes
// no <complex>, and the eager kernels read their tensors as these too.

namespace detail {
template <typename R>
struct ComplexOf;
template <>
struct ComplexOf<float> {
  using type = __complex__ float;
};
template <>
struct ComplexOf<double> {
  using type = __complex__ double;
};
}  // namespace detail
/// GCC's complex type of parts R (float or double).
template <typename R>
using complex_t = typename detail::ComplexOf<R>::type;

/// re + im i.
struct Complex {
  template <typename R>
  complex_t<R> operator()(R re, R im) const {
    complex_t<R> z;
    __real__ z = re;
    __imag__ z = im;
    return z;
  }
};
struct Real {
  template <typename Z>
  auto operator()(Z z) const {
    return __real__ z;
  }
};
struct Imag {
  template <typename Z>
  auto operator()(Z z) const {
    return __imag__ z;
  }
};
struct Conj {
  template <typename Z>
  Z operator()(Z z) const {
    return Complex{}(__real__ z, -__imag__ z);
  }
};
/// |z| with no overflow for large parts. float parts: glibc's hypotf
/// written out (the squares are exact in double, so the sum rounds once
/// with or without FMA; inf beats a quiet NaN), which inlines and vectorizes where
/// the libm call ran at a third of the speed in generated code. double parts:
/// libm's cabs, as std::abs.
struct ComplexAbs {
  template <typename Z>
  auto operator()(Z z) const {
    if constexpr (sizeof(Z) == 2 * sizeof(float)) {
      const float ax = fast::fabs(__real__ z), ay = fast::fabs(__imag__ z);
      const double dx = ax, dy = ay;
      const float r = static_cast<float>(__builtin_sqrt(dx * dx + dy * dy));
      const float inf = __builtin_inff();
      const uint32_t bx = std::bit_cast<uint32_t>(ax), by = std::bit_cast<uint32_t>(ay);
      const bool snan =
          (bx > 0x7f800000u && !(bx & 0x400000u)) || (by > 0x7f800000u && !(by & 0x400000u));
      return (ax == inf || ay == inf) && !snan ? inf : ax != ax || ay != ay ? ax * ay : r;
    } else {
      return __builtin_cabs(z);
    }
  }
};

// ---- select, clip, cast ----

/// c ? x : y. `c` may be bool or a 0/1 byte (kernels read bool conditions
/// as uint8_t, which GCC vectorizes); plain types select on bit masks.
struct Select {
  template <typename C, typename T>
  T operator()(C c, const T& x, const T& y) const {
    if constexpr (std::is_arithmetic_v<T>) {
      using U = typename detail::UIntOfSize<sizeof(T)>::type;
      const U m = static_cast<U>(U(0) - static_cast<U>(c));
      return std::bit_cast<T>(
          static_cast<U>((std::bit_cast<U>(x) & m) | (std::bit_cast<U>(y) & static_cast<U>(~m))));
    } else {
      return c ? x : y;
    }
  }
};
/// min(max(t, lo), hi) with NaN propagation; lo > hi gives hi.
struct ClipByValue {
  template <typename T>
  T operator()(T t, T lo, T hi) const {
    return Minimum{}(Maximum{}(t, lo), hi);
  }
};
/// static_cast with TensorFlow's conventions plus defined edge cases:
/// number -> bool is x != 0 (NaN -> true); float -> integer truncates toward
/// zero, saturates out-of-range values to the type's min/max, and maps NaN to
/// 0; integer -> narrower integer wraps (two's complement).
template <typename To>
struct Cast {
  template <typename From>
  To operator()(From x) const {
    if constexpr (std::is_same_v<To, From>) {
      return x;
    } else if constexpr (std::is_same_v<To, bool>) {
      return x != From(0);
    } else if constexpr (std::is_floating_point_v<From> && detail::is_int_v<To>) {
      // Bounds exact in From: min is a power of two (or 0), max + 1 is one.
      constexpr From kLo = static_cast<From>(std::numeric_limits<To>::min());
      constexpr From kHiExcl =
          static_cast<From>(static_cast<From>(std::numeric_limits<To>::max() / 2 + 1) * 2);
      if (x != x) return To(0);
      if (x < kLo) return std::numeric_limits<To>::min();
      if (x >= kHiExcl) return std::numeric_limits<To>::max();
      return static_cast<To>(x);
    } else {
      return static_cast<To>(x);
    }
  }
};

}  // namespace kiln::fn
