// fn::detail::tanh_f32 (src/kernels/cpu/float_math.h): accuracy against tanh in
// double precision over a dense sweep of float32 (every flavour the CPU
// runs: baseline SSE2, AVX2+FMA, AVX-512), special values, and the unary
// span's vector tail (in place and not) giving the same values as the main
// vector loop.
#include <bit>
#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/float_math.h"
#include "kernels/cpu/functors.h"
#include "test_util.h"

namespace kiln {
namespace {

struct TanhF {
  float operator()(float x) const { return fn::detail::tanh_f32(x); }
};
struct ExpNormalF {
  float operator()(float x) const { return fn::detail::exp_f32_normal(x); }
};

using SpanFn = void (*)(const float*, float*, int64_t);

template <typename F>
void base_span(const float* in, float* out, int64_t n) {
  cpu::detail::unary_span(in, out, n, F{});
}
#ifdef KILN_X86_CLONES
template <typename F>
void avx2_span(const float* in, float* out, int64_t n) {
  cpu::detail::unary_span_avx2(in, out, n, F{});
}
template <typename F>
void avx512_span(const float* in, float* out, int64_t n) {
  cpu::detail::unary_span_avx512(in, out, n, F{});
}
#endif

struct Flavour {
  const char* name;
  SpanFn tanh, exp, exp_normal;
};

std::vector<Flavour> flavours() {
  std::vector<Flavour> f = {
      {"baseline", base_span<TanhF>, base_span<fn::Exp>, base_span<ExpNormalF>}};
#ifdef KILN_X86_CLONES
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    f.push_back({"avx2", avx2_span<TanhF>, avx2_span<fn::Exp>, avx2_span<ExpNormalF>});
  if (cpu::detail::simd_level() == cpu::detail::SimdLevel::kAvx512)
    f.push_back({"avx512", avx512_span<TanhF>, avx512_span<fn::Exp>, avx512_span<ExpNormalF>});
#endif
  return f;
}

// Error in units of the float32 spacing above |want| (as functors_test).
double ulp_error(float got, double want) {
  const float w = static_cast<float>(want);
  const float ulp =
      std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / static_cast<double>(ulp);
}

// Non-negative finite floats: every 97th bit pattern (22M values, all
// binades from subnormals to FLT_MAX) plus a dense grid over [0, 10], where
// tanh is not 0-or-1-like.
std::vector<float> positive_sweep() {
  std::vector<float> xs;
  const uint32_t top = std::bit_cast<uint32_t>(std::numeric_limits<float>::max());
  for (uint64_t b = 0; b <= top; b += 97)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (float x = 0.f; x < 10.f; x += 1.f / 4096) xs.push_back(x);
  return xs;
}

TEST(FastMath, TanhAccuracyOverADenseSweepInEveryFlavour) {
  const std::vector<float> xs = positive_sweep();
  std::vector<float> neg(xs.size()), out(xs.size()), out_neg(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) neg[i] = -xs[i];
  for (const Flavour& fl : flavours()) {
    SCOPED_TRACE(fl.name);
    fl.tanh(xs.data(), out.data(), static_cast<int64_t>(xs.size()));
    fl.tanh(neg.data(), out_neg.data(), static_cast<int64_t>(xs.size()));
    double worst_ulp = 0, worst_rel = 0, worst_abs = 0;
    float at = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = std::tanh(static_cast<double>(xs[i]));
      const double err = std::fabs(static_cast<double>(out[i]) - want);
      const double u = ulp_error(out[i], want);
      if (u > worst_ulp) {
        worst_ulp = u;
        at = xs[i];
      }
      if (want != 0) worst_rel = std::max(worst_rel, err / want);
      worst_abs = std::max(worst_abs, err);
      // Odd: tanh(-x) is exactly -tanh(x), sign of zero included.
      ASSERT_EQ(std::bit_cast<uint32_t>(out_neg[i]), std::bit_cast<uint32_t>(out[i]) ^ 0x80000000u)
          << "x=" << xs[i];
      // Never outside [-1, 1].
      ASSERT_LE(out[i], 1.0f) << "x=" << xs[i];
    }
    std::cout << "[ tanh " << fl.name << " ] max " << worst_ulp << " ulp at x=" << at
              << ", max rel " << worst_rel << ", max abs " << worst_abs << "\n";
    EXPECT_LE(worst_ulp, 1.6) << "at x=" << at;
    EXPECT_LE(worst_rel, 1.5e-7);
    EXPECT_LE(worst_abs, 1.0e-7);
  }
}

TEST(FastMath, TanhSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float denorm = std::numeric_limits<float>::denorm_min();
  const float min_normal = std::numeric_limits<float>::min();
  std::vector<float> in = {0.f,   -0.f,   inf,     -inf,       nan,
                           -nan,  denorm, -denorm, min_normal, 1e-30f,
                           9.02f, 9.1f,   20.f,    -1e30f,     std::numeric_limits<float>::max()};
  std::vector<float> out(in.size());
  for (const Flavour& fl : flavours()) {
    SCOPED_TRACE(fl.name);
    fl.tanh(in.data(), out.data(), static_cast<int64_t>(in.size()));
    EXPECT_EQ(std::bit_cast<uint32_t>(out[0]), 0u);           // +0
    EXPECT_EQ(std::bit_cast<uint32_t>(out[1]), 0x80000000u);  // -0 keeps its sign
    EXPECT_EQ(out[2], 1.f);
    EXPECT_EQ(out[3], -1.f);
    EXPECT_TRUE(std::isnan(out[4]));
    EXPECT_TRUE(std::isnan(out[5]));
    EXPECT_EQ(out[6], denorm);  // tanh(x) = x to float precision
    EXPECT_EQ(out[7], -denorm);
    EXPECT_EQ(out[8], min_normal);
    EXPECT_EQ(out[9], 1e-30f);
    EXPECT_EQ(out[10], 1.f);  // tanh(9.02) rounds to 1
    EXPECT_EQ(out[11], 1.f);
    EXPECT_EQ(out[12], 1.f);
    EXPECT_EQ(out[13], -1.f);
    EXPECT_EQ(out[14], 1.f);
  }
  // Below 2^-12, tanh(x) rounds to x itself.
  std::vector<float> tiny;
  for (float x = 1e-30f; x < 0.000244140625f; x *= 1.37f) tiny.push_back(x);
  std::vector<float> tiny_out(tiny.size());
  for (const Flavour& fl : flavours()) {
    fl.tanh(tiny.data(), tiny_out.data(), static_cast<int64_t>(tiny.size()));
    for (size_t i = 0; i < tiny.size(); ++i) EXPECT_EQ(tiny_out[i], tiny[i]) << fl.name;
  }
}

// exp_f32_normal (softmax rows' exp when every result is a normal float) gives
// exp_f32's bits over its whole range [kExpNormalLo,
// kExpNormalHi] and both ends, in every flavour. Every 61st float of that range
// and a dense grid over [-10, 10].
TEST(FastMath, ExpNormalRangeGivesExpsBits) {
  const float lo = fn::detail::kExpNormalLo, hi = fn::detail::kExpNormalHi;
  std::vector<float> xs = {lo, hi, 0.f, -0.f};
  for (uint32_t b = 0; b <= std::bit_cast<uint32_t>(-lo); b += 61)
    xs.push_back(-std::bit_cast<float>(b));
  for (uint32_t b = 0; b <= std::bit_cast<uint32_t>(hi); b += 61)
    xs.push_back(std::bit_cast<float>(b));
  for (float x = -10.f; x < 10.f; x += 1.f / 8192) xs.push_back(x);
  std::vector<float> want(xs.size()), got(xs.size());
  for (const Flavour& fl : flavours()) {
    SCOPED_TRACE(fl.name);
    fl.exp(xs.data(), want.data(), static_cast<int64_t>(xs.size()));
    fl.exp_normal(xs.data(), got.data(), static_cast<int64_t>(xs.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "x=" << xs[i];
      ASSERT_GE(got[i], std::numeric_limits<float>::min()) << "x=" << xs[i];  // normal
    }
  }
}

TEST(FastMath, ScalarCallMatchesTheKernels) {
  // The functor (used by conv's fused tanh post-op) is the same function.
  for (float x : {-3.f, -0.5f, 0.25f, 0.7f, 2.f, 8.f})
    EXPECT_NEAR(fn::Tanh{}(x), std::tanh(static_cast<double>(x)), 2e-7) << x;
  EXPECT_EQ(fn::Tanh{}(0.5), std::tanh(0.5));  // float64 uses the C library
}

// The span's last partial vector runs through the vector loop on a copy:
// every length and alignment gives, bit for bit, what the main loop gives
// for the same values, in place or not.
TEST(FastMath, SpanTailsMatchTheMainLoop) {
  constexpr int64_t kMax = 150;
  std::vector<float> values(kMax);
  for (int64_t i = 0; i < kMax; ++i) values[i] = std::sin(static_cast<float>(i)) * 6.f;
  for (const Flavour& fl : flavours()) {
    for (SpanFn f : {fl.tanh, fl.exp}) {
      // Reference: all values through the main loop (length a multiple of 64).
      std::vector<float> padded(192, 0.f), ref(192);
      std::copy(values.begin(), values.end(), padded.begin());
      f(padded.data(), ref.data(), 192);
      for (int64_t n = 0; n <= kMax; ++n) {
        for (int64_t off : {0, 3}) {  // misaligned starts too
          SCOPED_TRACE(str_cat(fl.name, " n=", n, " offset=", off));
          std::vector<float> buf(static_cast<size_t>(n + off + 1), -7.f), out(buf.size(), -7.f);
          std::copy(values.begin(), values.begin() + n, buf.begin() + off);
          f(buf.data() + off, out.data() + off, n);
          f(buf.data() + off, buf.data() + off, n);  // in place
          for (int64_t i = 0; i < n; ++i) {
            if (n > 16) {
              ASSERT_EQ(out[off + i], ref[i]) << "at " << i;
            } else {  // short spans may take GCC's scalar loop
              ASSERT_NEAR(out[off + i], ref[i], 4e-7 * std::fabs(ref[i])) << "at " << i;
            }
            ASSERT_EQ(buf[off + i], out[off + i]) << "in place, at " << i;
          }
          // Nothing outside [off, off + n) is written.
          for (int64_t i = 0; i < off; ++i) ASSERT_EQ(out[i], -7.f);
          ASSERT_EQ(out[off + n], -7.f);
          ASSERT_EQ(buf[off + n], -7.f);
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln
