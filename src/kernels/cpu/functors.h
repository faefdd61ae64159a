// Scalar math functors shared by the eager CPU kernels and the code the JIT
// generates: one definition of each elementwise operation.
//
// Rules every functor follows:
// - Total: defined for every input value, no UB (integer overflow wraps,
//   shift counts are clamped, integer division by zero yields 0 -- the eager
//   kernels reject zero divisors before calling the functor).
// - Branch-free where it matters, so loops over contiguous data vectorize.
// - float32 transcendentals are kiln's own branch-free code (float_math.h,
//   fast_math.h's tanh: <= 2 ulp, checked by sweeps against long double);
//   float64 uses the C library.
// - No <cmath>: libm is reached through fast_math.h's builtin wrappers, so the
//   JIT pastes fast_math.h, float_math.h and this header into the code it
//   generates.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "fast_math.h"
#include "float_math.h"

namespace kiln::fn {

/// What one value of a functor over operands of type T costs in generated
/// code, for the JIT's stage planner (src/jit/): about how many vector
/// instructions a vector of values takes, or kScalarOnly where T has no vector
/// code (a libm call, integer division, complex products): such a loop runs
/// one value at a time. A functor says so with a member `template <typename
/// T> static constexpr int cost`; one without it costs 1.
/// tests/cpp/jit/vectorize_test.cpp checks that each claim of vector code holds.
inline constexpr int kScalarOnly = -1;
template <typename F, typename T>
constexpr int cost_of() {
  if constexpr (requires { F::template cost<T>; })
    return F::template cost<T>;
  else
    return 1;
}

namespace detail {

template <typename T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool is_sint_v = is_int_v<T>&& std::is_signed_v<T>;
template <typename T>
inline constexpr bool is_complex_v = !std::is_arithmetic_v<T>;  // GCC's __complex__ types
// Cost of a kernel kiln writes for float32 only (float64 calls libm).
template <typename T>
constexpr int f32_only(int c) {
  return std::is_same_v<T, float> ? c : kScalarOnly;
}

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
  static constexpr int cost = 3;
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)  // branch-free: nested ?: stays a branch
      return detail::select(x > T(0), T(1), detail::select(x < T(0), T(-1), x));
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
  static constexpr int cost = 6;
  template <typename T>
  T operator()(T x) const {
    return fast::sqrt(x);
  }
};
struct Rsqrt {
  template <typename T>
  static constexpr int cost = 10;
  template <typename T>
  T operator()(T x) const {
    return T(1) / fast::sqrt(x);
  }
};
struct Exp {
  template <typename T>
  static constexpr int cost = detail::f32_only<T>(20);
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
  static constexpr int cost = detail::f32_only<T>(30);
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
  static constexpr int cost = detail::f32_only<T>(24);
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return detail::expm1_f32(x);
    else
      return fast::expm1(x);
  }
};
/// The error function. float32: detail::erf_f32 (kiln's, vectorizes);
/// float64: libm's erf.
struct Erf {
  template <typename T>
  static constexpr int cost = detail::f32_only<T>(50);
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
  static constexpr int cost = detail::f32_only<T>(36);
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return detail::log1p_f32(x);
    else
      return fast::log1p(x);
  }
};
struct Tanh {
  template <typename T>
  static constexpr int cost = detail::f32_only<T>(32);
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return detail::tanh_f32(x);
    else
      return fast::tanh(x);
  }
};
/// 1 / (1 + exp(-x)), computed as e^x / (1 + e^x) for x < 0 so that tiny
/// (subnormal) results are not flushed to 0; saturates to exactly 0 and 1.
struct Sigmoid {
  template <typename T>
  static constexpr int cost = detail::f32_only<T>(26);
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
    if constexpr (std::is_floating_point_v<T>)
      return detail::select(x < T(0), T(0), x);
    else
      return x < T(0) ? T(0) : x;
  }
};
struct Sin {
  template <typename T>
  static constexpr int cost = detail::f32_only<T>(60);
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return detail::sincos_f32<false>(x);
    else
      return fast::sin(x);
  }
};
struct Cos {
  template <typename T>
  static constexpr int cost = detail::f32_only<T>(60);
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>)
      return detail::sincos_f32<true>(x);
    else
      return fast::cos(x);
  }
};
struct Floor {
  template <typename T>
  static constexpr int cost = 6;
  template <typename T>
  T operator()(T x) const {
    return detail::floor_f(x);
  }
};
struct Ceil {
  template <typename T>
  static constexpr int cost = 6;
  template <typename T>
  T operator()(T x) const {
    return detail::ceil_f(x);
  }
};
/// Half to even (TensorFlow's round, numpy's rint); identity on integers.
struct Round {
  template <typename T>
  static constexpr int cost = std::is_floating_point_v<T> ? 6 : 1;
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
  static constexpr int cost = detail::is_complex_v<T> ? kScalarOnly : 1;
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
  static constexpr int cost = detail::is_int_v<T> || detail::is_complex_v<T> ? kScalarOnly : 8;
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
  static constexpr int cost = detail::is_int_v<T> ? kScalarOnly : 14;
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
  static constexpr int cost = kScalarOnly;
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
  static constexpr int cost = kScalarOnly;
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
  static constexpr int cost = 2;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return detail::select(a != a, a, detail::select(a > b, a, b));
    else
      return a > b ? a : b;
  }
};
struct Minimum {
  template <typename T>
  static constexpr int cost = 2;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return detail::select(a != a, a, detail::select(a < b, a, b));
    else
      return a < b ? a : b;
  }
};
struct SquaredDifference {
  template <typename T>
  static constexpr int cost = 2;
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
/// The count is in b's own type from 32 bits up (int otherwise): a select
/// between types of two sizes leaves GCC's vectorizer without a vector type.
template <typename T>
inline auto clamp_shift(T b) {
  if constexpr (sizeof(T) < 4) {
    constexpr int kMax = static_cast<int>(sizeof(T) * 8 - 1);
    const int c = b;
    return c < 0 ? 0 : (c > kMax ? kMax : c);
  } else {
    constexpr T kMax = static_cast<T>(sizeof(T) * 8 - 1);
    return b < T(0) ? T(0) : (b > kMax ? kMax : b);
  }
}
// Types narrower than 32 bits shift in 32-bit lanes with the value at the
// top: GCC would narrow `uint32_t(a) >> s` back to an 8-bit vector shift,
// which x86 lacks, and leave the loop scalar (4x slower on uint8).
struct LeftShift {
  template <typename T>
  static constexpr int cost = 2;
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
  static constexpr int cost = 2;
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
  template <typename T>
  static constexpr int cost = sizeof(T) == 2 * sizeof(float) ? 20 : kScalarOnly;
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
    if constexpr (std::is_same_v<T, bool>) {  // bytes (a bit_cast to bool stays scalar)
      const auto s = static_cast<uint8_t>(c != C(0));
      return static_cast<bool>((s & uint8_t{x}) | (static_cast<uint8_t>(s ^ 1u) & uint8_t{y}));
    } else if constexpr (std::is_arithmetic_v<T>) {
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
  static constexpr int cost = 4;
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
