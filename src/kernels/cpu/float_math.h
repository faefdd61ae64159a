// The float kernels of kiln's scalar functions (functors.h): branch-free
// selects, rounding, and kiln's own float32 exp, log, erf, expm1, log1p, sin
// and cos, written as straight-line arithmetic on bit patterns so that loops
// over them vectorize (no libm calls), plus the 16-bit float conversions.
// Pasted into every JIT translation unit after fast_math.h (the prelude).
//
// Accuracy is measured over a sweep of all floats against long double
// (tests/cpp/ops/unary_test.cpp, UnaryAccuracy.*).
#pragma once
#include <bit>
#include <cstdint>
#include <limits>

#include "fast_math.h"

namespace kiln::fn::detail {

/// c0 x^n + c1 x^(n-1) + ... + cn by Horner's rule: ((c0 x + c1) x + ...) + cn.
template <typename T, typename... C>
inline T horner(T x, T c0, C... cs) {
  ((c0 = c0 * x + static_cast<T>(cs)), ...);
  return c0;
}

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

// x / ln2 rounded to the nearest integer n (|x| < 2^21), as a float; n too.
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: x + it rounds x to an int
inline constexpr int32_t kRoundMagicBits = 0x4B400000;
inline float round_log2(float x, int32_t& n) {
  const float t = x * kLog2e + kRoundMagic;
  n = std::bit_cast<int32_t>(t) - kRoundMagicBits;
  return t - kRoundMagic;
}

// e^r - 1 for |r| <= ln2/2: r + r^2 Q(r), Q a degree-4 minimax fit (fitted
// for kiln); no cancellation for small r.
inline float expm1_poly(float r) {
  float q = horner(r, 1.3882515486e-03f, 8.3665130660e-03f, 4.1667200625e-02f, 1.6666543484e-01f,
                   4.9999997020e-01f);
  return q * (r * r) + r;
}

/// exp_f32_core's constants, also read by SIMD copies of it (attention.cpp):
/// ln2 in two parts (Cody-Waite) and the polynomial's coefficients, highest first.
inline constexpr float kExpLn2Hi = 0.693359375f, kExpLn2Lo = -2.12194440e-4f;
inline constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

// e^r for x = n ln2 + r, |r| <= ln2/2 (Cody-Waite reduction, the degree-6
// polynomial of Cephes expf); x must be finite and within [-104, 88.8].
inline float exp_f32_core(float x, int32_t& n) {
  const float nf = round_log2(x, n);
  float r = x - nf * kExpLn2Hi;
  r = r - nf * kExpLn2Lo;
  float p = horner(r, kExpPoly[0], kExpPoly[1], kExpPoly[2], kExpPoly[3], kExpPoly[4], kExpPoly[5]);
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
  float y = horner(m, 7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f,
                   1.4249322787e-1f, -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f,
                   3.3333331174e-1f);
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

/// The nearest bfloat16 (ties to even); NaN stays a quiet NaN. (Selected
/// on the 32-bit values, then shifted once: the same results for every float,
/// checked exhaustively, in fewer vector instructions than shifting both.)
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t r =
      select_u32((x & 0x7fffffffu) > 0x7f800000u, x | 0x00400000u, x + 0x7fffu + ((x >> 16) & 1u));
  return static_cast<uint16_t>(r >> 16);
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
  double p = horner(s, 7.853829870514967e-05, -8.010184088560954e-04, 5.188326599996101e-03,
                    -2.6853811363781635e-02, 1.1283585134953296e-01, -3.7612625823030393e-01,
                    1.1283791657265374);
  const float small = static_cast<float>(xd * p);
  const float a = select(ax < 4.0f, ax, 4.0f);       // NaN -> 4, fixed below
  const float t = 1.0f / select(a > 0.5f, a, 0.5f);  // (|x| < 1 takes the other half)
  float r = horner(t, -1.1368495412170887e-02f, 3.7969280034303665e-02f, 4.0900064632296562e-03f,
                   -2.1914158761501312e-01f, 4.8098954558372498e-01f, -4.6468859910964966e-01f,
                   4.0165249258279800e-02f, 5.5931502580642700e-01f, 2.5314211961813271e-04f);
  const float large = fast::copysign(1.0f - exp_f32(-(a * a)) * r, x);
  return select(x != x, x, select(ax < 1.0f, small, large));
}

// expm1 for float32: x = n ln2 + r (|r| <= ln2/2, two-constant reduction),
// e^x - 1 = 2^n (e^r - 1) + (2^n - 1), with e^r - 1 by expm1_poly, so no
// cancellation for small x (n = 0). x is
// clamped to [-17.5, 88.8] first: below, the result rounds to -1; above, it
// overflows (2^128 as 2 * 2^127). At most 1.5 ulp over the sweep.
inline float expm1_f32(float x) {
  float xc = select(x > -17.5f, x, -17.5f);  // NaN -> -17.5, fixed below
  xc = select(xc < 88.8f, xc, 88.8f);
  int32_t n;  // in [-25, 128]
  const float nf = round_log2(xc, n);
  const float p = expm1_poly((xc - nf * 0.693359375f) - nf * -2.12194440e-4f);  // e^r - 1
  const int32_t top = n == 128 ? 1 : 0;
  const float k = select(top != 0, 2.0f, 1.0f);
  const float sc = std::bit_cast<float>((n - top + 127) << 23);  // 2^n / k
  const float y = k * (sc * p + (sc - 1.0f / k));
  return select(x != x, x, y);
}

/// float32 tanh, max error 1.5 ulp (relative 1.5e-7), about 30 vector
/// instructions and one division per lane.
///
/// |x| < 0.625: x + x^3 S(x^2), S a degree-4 minimax fit of the relative
/// error (fitted for kiln). Above: tanh|x| = m / (m + 2) with
/// m = e^{2|x|} - 1 = 2^n (e^r - 1) + (2^n - 1), e^r - 1 by expm1_poly, so m
/// has no cancellation; 2|x| is capped at 18.05, where tanh already rounds
/// to 1. Both halves are computed and one is selected (no branches).
/// tanh(+-0) = +-0, +-inf -> +-1, NaN -> NaN, subnormals are returned
/// unchanged.
inline float tanh_f32(float x) {
  const float s = std::bit_cast<float>(std::bit_cast<int32_t>(x) & 0x7fffffff);
  // Small |x|: odd polynomial.
  const float z = s * s;
  float ps = horner(z, -5.7049971074e-03f, 2.0639097318e-02f, -5.3739719093e-02f, 1.3331441581e-01f,
                    -3.3333280683e-01f);
  const float small = ps * z * s + s;
  // Large |x|: expm1 by range reduction (NaN fails the comparison and flows
  // through as NaN; the shift below is done unsigned so no value is UB).
  const float y = select(s + s > 18.05f, 18.05f, s + s);
  int32_t n;  // in [0, 26]
  const float nf = round_log2(y, n);
  // One-constant reduction: its error n * 1.9e-9 is damped by 2 / (m + 2).
  const float p = expm1_poly(y - nf * 0.693147182f);
  const float sc = std::bit_cast<float>(static_cast<uint32_t>(n + 127) << 23);  // 2^n
  const float m = sc * p + (sc - 1.0f);
  const float large = m / (m + 2.0f);
  const float a = select(s < 0.625f, small, large);
  // The sign of x (tanh is odd).
  return std::bit_cast<float>(std::bit_cast<int32_t>(a) | (std::bit_cast<int32_t>(x) & INT32_MIN));
}

// log1p for float32: log(u) for u = 1 + x rounded, plus the rounding's error
// relative to u, (x - (u - 1)) / u; x itself where u rounds to 1, -inf at
// -1, NaN below, inf at inf. At most 1.5 ulp over the sweep.
inline float log1p_f32(float x) {
  const float u = 1.0f + x;
  const float y = log_f32(u) + (x - (u - 1.0f)) / u;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  return select(x == kInf, kInf, select(u == 1.0f, x, select(u == 0.0f, -kInf, y)));
}

// 2/pi's fraction bits after 32 zero bits, 64 per word (0.a2f9836e 4e441529
// ... in hex; computed for kiln by Machin's formula in integers): the
// sine and cosine's reduction (Payne-Hanek) reads 128 of them.
inline constexpr uint64_t kTwoOverPi[5] = {0x00000000a2f9836eull, 0x4e441529fc2757d1ull,
                                           0xf534ddc0db629599ull, 0x3c439041fe5163abull,
                                           0xdebbc561b7246e3aull};

// sin (kCos false) or cos of float32 x, correctly rounded over the sweep
// (0.5 ulp). |x| = m 2^(e - 23) times 2/pi, mod 4, in 128-bit fixed point
// (four 32 x 32-bit products) from the bits of 2/pi that matter for e,
// [e - 24, e + 104): those before are multiplied into multiples of 4, those
// after into less than 2^-100 of a quarter turn. Out come the quadrant and
// the signed fraction f of a quarter turn left over, so r = f pi/2 lies in
// [-pi/4, pi/4] (|x| below pi/4 is r itself). sin r and cos r by their
// Taylor series in double, one chosen and signed by the quadrant. inf and
// NaN give NaN. The window's words are chosen by selects, not loads, so the
// loop needs no gathers.
template <bool kCos>
inline float sincos_f32(float x) {
  const uint32_t ix = std::bit_cast<uint32_t>(x) & 0x7fffffffu;
  const float ax = std::bit_cast<float>(ix);
  const uint32_t be = ix >> 23;
  // The window starts at bit e - 24 + 31 of kTwoOverPi (e >= -1): in word
  // at (at most 2), `sh` bits in.
  const uint32_t first = (be < 126 ? 126 : be) - 126 + 6, sh = first & 63, at = first >> 6;
  // Words at, at + 1 and at + 2 by masks (GCC turns `?:` chains into a
  // table load, a gather that keeps the loop scalar without AVX-512).
  const uint64_t m0 = uint64_t{0} - uint64_t{at == 0}, m1 = uint64_t{0} - uint64_t{at == 1};
  const uint64_t m2 = ~(m0 | m1);
  auto word = [&](int i) {
    return (kTwoOverPi[i] & m0) | (kTwoOverPi[i + 1] & m1) | (kTwoOverPi[i + 2] & m2);
  };
  const uint64_t w0 = word(0), w1 = word(1), w2 = word(2);
  const uint64_t hi = (w0 << sh) | ((w1 >> 1) >> (63 - sh));
  const uint64_t lo = (w1 << sh) | ((w2 >> 1) >> (63 - sh));
  const uint32_t m = (ix & 0x7fffffu) | 0x800000u;
  // m * (hi:lo) mod 2^128: its top two bits are the quadrant.
  const uint64_t p0 = uint64_t{m} * static_cast<uint32_t>(lo);
  const uint64_t p1 = uint64_t{m} * static_cast<uint32_t>(lo >> 32);
  const uint64_t p2 = uint64_t{m} * static_cast<uint32_t>(hi) +
                      (uint64_t{m * static_cast<uint32_t>(hi >> 32)} << 32);
  const uint64_t low = p0 + (p1 << 32);
  const uint64_t high = p2 + (p1 >> 32) + (low < p0 ? 1u : 0u);
  const uint64_t f = (high << 2) | (low >> 62);        // the fraction, 2^-64 units
  const uint64_t quadrant = (high >> 62) + (f >> 63);  // rounded to the nearest
  // f as signed, to double through 2^52's mantissa (no int64 conversion).
  const uint64_t neg = uint64_t{0} - (f >> 63);
  const uint64_t mag = (f ^ neg) - neg;
  const double top = std::bit_cast<double>(0x4330000000000000ull | (mag >> 11)) - 0x1p52;
  const double fr = std::bit_cast<double>(
      std::bit_cast<uint64_t>(top * 0x1p-53 * 1.5707963267948966) ^ (neg & 0x8000000000000000ull));
  const bool small = ax < 0.785398163f;
  const double r = select(small, static_cast<double>(ax), fr);
  const uint64_t q = quadrant & 3 & (uint64_t{0} - uint64_t{!small});
  const double z = r * r;
  double s = horner(z, -2.5052108385441720e-08, 2.7557319223985893e-06, -1.9841269841269841e-04,
                    8.3333333333333333e-03,
                    -1.6666666666666667e-01);  // sin r = r + r z S(z), Taylor to r^11
  s = r + r * z * s;
  double c =
      horner(z, 2.0876756987868099e-09, -2.7557319223985888e-07, 2.4801587301587302e-05,
             -1.3888888888888889e-03, 4.1666666666666667e-02, -0.5, 1.0);  // cos r, Taylor to r^12
  const uint64_t k = kCos ? q + 1 : q;                                     // cos x = sin(x + pi/2)
  double v = select((k & 1) != 0, c, s);
  v = select((k & 2) != 0, -v, v);
  float out = static_cast<float>(v);
  if constexpr (!kCos)  // sin is odd
    out = std::bit_cast<float>(std::bit_cast<uint32_t>(out) ^
                               (std::bit_cast<uint32_t>(x) & 0x80000000u));
  return select(ix >= 0x7f800000u, x - x, out);
}

}  // namespace kiln::fn::detail
