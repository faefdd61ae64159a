#include "core/string_hash.h"

#include <bit>
#include <cstring>
#include <utility>

namespace kiln::hash {
namespace {

// Little-endian loads (the hashes are defined over little-endian words).
uint64_t load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
uint64_t load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}
uint64_t rotr(uint64_t v, int s) {
  return s == 0 ? v : (v >> s) | (v << (64 - s));
}
uint64_t rotl(uint64_t v, int s) {
  return (v << s) | (v >> (64 - s));
}
uint64_t shift_mix(uint64_t v) {
  return v ^ (v >> 47);
}

// FarmHash's primes.
constexpr uint64_t k0 = 0xc3a5c85c97cb3127ULL;
constexpr uint64_t k1 = 0xb492b66fbe98f273ULL;
constexpr uint64_t k2 = 0x9ae16a3b2f90404fULL;

// Mixes two words into one (a Murmur-style 128 -> 64 reduction).
uint64_t mix16(uint64_t u, uint64_t v, uint64_t mul) {
  uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

uint64_t upto16(const char* s, size_t n) {
  if (n >= 8) {
    const uint64_t mul = k2 + n * 2;
    const uint64_t a = load64(s) + k2, b = load64(s + n - 8);
    const uint64_t c = rotr(b, 37) * mul + a, d = (rotr(a, 25) + b) * mul;
    return mix16(c, d, mul);
  }
  if (n >= 4) {
    const uint64_t mul = k2 + n * 2;
    return mix16(n + (load32(s) << 3), load32(s + n - 4), mul);
  }
  if (n > 0) {
    const auto a = static_cast<uint8_t>(s[0]), b = static_cast<uint8_t>(s[n >> 1]),
               c = static_cast<uint8_t>(s[n - 1]);
    const uint32_t y = static_cast<uint32_t>(a) + (static_cast<uint32_t>(b) << 8);
    const uint32_t z = static_cast<uint32_t>(n) + (static_cast<uint32_t>(c) << 2);
    return shift_mix(y * k2 ^ z * k0) * k2;
  }
  return k2;
}

uint64_t upto32(const char* s, size_t n) {
  const uint64_t mul = k2 + n * 2;
  const uint64_t a = load64(s) * k1, b = load64(s + 8);
  const uint64_t c = load64(s + n - 8) * mul, d = load64(s + n - 16) * k2;
  return mix16(rotr(a + b, 43) + rotr(c, 30) + d, a + rotr(b + k2, 18) + c, mul);
}

uint64_t upto64(const char* s, size_t n) {
  const uint64_t mul = k2 + n * 2;
  const uint64_t a = load64(s) * k2, b = load64(s + 8);
  const uint64_t c = load64(s + n - 8) * mul, d = load64(s + n - 16) * k2;
  const uint64_t y = rotr(a + b, 43) + rotr(c, 30) + d;
  const uint64_t z = mix16(y, a + rotr(b + k2, 18) + c, mul);
  const uint64_t e = load64(s + 16) * mul, f = load64(s + 24);
  const uint64_t g = (y + load64(s + n - 32)) * mul, h = (z + load64(s + n - 24)) * mul;
  return mix16(rotr(e + f, 43) + rotr(g, 30) + h, e + rotr(f + a, 18) + g, mul);
}

// Two words from 32 bytes and two seeds.
std::pair<uint64_t, uint64_t> weak32(const char* s, uint64_t a, uint64_t b) {
  const uint64_t w = load64(s), x = load64(s + 8), y = load64(s + 16), z = load64(s + 24);
  a += w;
  b = rotr(b + a + z, 21);
  const uint64_t c = a;
  a += x;
  a += y;
  b += rotr(a, 44);
  return {a + z, b + c};
}

// One 64-byte round of the long-input loop.
struct LongState {
  uint64_t x, y, z;
  std::pair<uint64_t, uint64_t> v{0, 0}, w{0, 0};
  void round(const char* s, uint64_t mul, uint64_t times) {
    x = rotr(x + y + v.first + load64(s + 8), 37) * mul;
    y = rotr(y + v.second + load64(s + 48), 42) * mul;
    x ^= w.second * times;
    y += v.first * times + load64(s + 40);
    z = rotr(z + w.first, 33) * mul;
    v = weak32(s, v.second * mul, x + w.first);
    w = weak32(s + 32, z + w.second, y + load64(s + 16));
    std::swap(z, x);
  }
};

}  // namespace

uint64_t fingerprint64(std::string_view str) {
  const char* s = str.data();
  const size_t n = str.size();
  if (n <= 16) return upto16(s, n);
  if (n <= 32) return upto32(s, n);
  if (n <= 64) return upto64(s, n);
  constexpr uint64_t seed = 81;
  LongState st{seed, seed * k1 + 113, 0};
  st.z = shift_mix(st.y * k2 + 113) * k2;
  st.x = st.x * k2 + load64(s);
  const char* end = s + ((n - 1) / 64) * 64;
  const char* last64 = end + ((n - 1) & 63) - 63;
  // The first rounds: x ^= w.second and y += v.first (times 1).
  for (; s != end; s += 64) st.round(s, k1, 1);
  const uint64_t mul = k1 + ((st.z & 0xff) << 1);
  st.w.first += (n - 1) & 63;
  st.v.first += st.w.first;
  st.w.first += st.v.first;
  st.round(last64, mul, 9);
  return mix16(mix16(st.v.first, st.w.first, mul) + shift_mix(st.y) * k0 + st.z,
               mix16(st.v.second, st.w.second, mul) + st.x, mul);
}

uint64_t siphash24(std::string_view str, uint64_t key0, uint64_t key1) {
  uint64_t v0 = 0x736f6d6570736575ULL ^ key0, v1 = 0x646f72616e646f6dULL ^ key1;
  uint64_t v2 = 0x6c7967656e657261ULL ^ key0, v3 = 0x7465646279746573ULL ^ key1;
  auto sip_round = [&] {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  };
  auto compress = [&](uint64_t m) {
    v3 ^= m;
    sip_round();
    sip_round();
    v0 ^= m;
  };
  const char* s = str.data();
  const size_t n = str.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) compress(load64(s + i));
  uint64_t last = static_cast<uint64_t>(n & 0xff) << 56;
  for (size_t k = 0; i + k < n; ++k)
    last |= static_cast<uint64_t>(static_cast<uint8_t>(s[i + k])) << (8 * k);
  compress(last);
  v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) sip_round();
  return v0 ^ v1 ^ v2 ^ v3;
}

}  // namespace kiln::hash
