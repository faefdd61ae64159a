// 16-bit floats: IEEE half (float16) and bfloat16, stored as bits. kiln
// computes with them in float32 (ops convert on the way in and round once on
// the way out, as TensorFlow's CPU kernels do element by element).
#pragma once
#include <cstdint>
#include <cstring>

namespace kiln {

/// IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits.
struct Half {
  uint16_t bits = 0;
};
/// bfloat16: the top 16 bits of a float32 (8 exponent, 7 mantissa bits).
struct BFloat16 {
  uint16_t bits = 0;
};

namespace detail {
inline uint32_t float_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline float bits_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
// x >> shift rounded to nearest, ties to even.
inline uint32_t shift_round_even(uint32_t x, uint32_t shift) {
  const uint32_t kept = x >> shift, rem = x & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  return kept + (rem > halfway || (rem == halfway && (kept & 1)));
}
}  // namespace detail

/// The nearest half (ties to even); overflow gives infinity, NaN stays NaN.
inline Half to_half(float f) {
  const uint32_t x = detail::float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (exp == 0xff) return {static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0))};
  const int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 0x1f) return {static_cast<uint16_t>(sign | 0x7c00)};
  if (e <= 0) {  // a subnormal half (or zero)
    if (e < -10) return {sign};
    const uint32_t m = detail::shift_round_even(mant | 0x800000, static_cast<uint32_t>(14 - e));
    return {static_cast<uint16_t>(sign | m)};
  }
  // Rounding may carry into the exponent (up to infinity): that is correct.
  const uint32_t body = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fff;
  const uint32_t rounded = body + (rem > 0x1000 || (rem == 0x1000 && (body & 1)));
  return {static_cast<uint16_t>(sign | rounded)};
}

/// The exact float value of a half.
inline float to_float(Half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1f, mant = h.bits & 0x3ff;
  if (exp == 0x1f) return detail::bits_float(sign | 0x7f800000 | (mant << 13));
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return detail::bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

/// The nearest bfloat16 (ties to even); NaN stays a (quiet) NaN.
inline BFloat16 to_bfloat16(float f) {
  const uint32_t x = detail::float_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return {static_cast<uint16_t>((x >> 16) | 0x40)};
  return {static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16)};
}

/// The exact float value of a bfloat16.
inline float to_float(BFloat16 b) {
  return detail::bits_float(static_cast<uint32_t>(b.bits) << 16);
}

}  // namespace kiln
