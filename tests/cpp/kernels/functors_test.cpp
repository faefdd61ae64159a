// The scalar functors (src/kernels/cpu/functors.h) compiled in every vector
// flavour the CPU supports (baseline SSE2, AVX2, AVX-512): float32 accuracy
// of the polynomial transcendentals and exactness of the rounding tricks,
// independently of which flavour the eager kernels pick on this machine.
#include "kernels/cpu/functors.h"

#include <bit>
#include <cmath>
#include <complex>
#include <functional>
#include <vector>

#include "kernels/cpu/elementwise_util.h"
#include "kiln/half.h"
#include "test_util.h"

namespace kiln {
namespace {

// All float bit patterns with a stride, plus a dense grid over [-105, 105].
std::vector<float> sweep_inputs() {
  std::vector<float> xs;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (float x = -105.f; x < 105.f; x += 0.00390625f) xs.push_back(x);
  return xs;
}

double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e9;
  const float w = static_cast<float>(want);
  if (std::isinf(w) || std::isinf(got)) return got == w ? 0 : 1e9;
  const float ulp =
      std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / static_cast<double>(ulp);
}

bool same(float a, float b) {
  return std::isnan(b) ? std::isnan(a) : (a == b && std::signbit(a) == std::signbit(b));
}

// One span runner per vector flavour available here.
struct Flavour {
  const char* name;
  std::function<void(const float*, float*, int64_t, int)> run;  // op index
};

template <typename F>
void run_base(const float* in, float* out, int64_t n) {
  cpu::detail::unary_span(in, out, n, F{});
}

#ifdef KILN_X86_CLONES
template <typename F>
void run_avx2(const float* in, float* out, int64_t n) {
  cpu::detail::unary_span_avx2(in, out, n, F{});
}
template <typename F>
void run_avx512(const float* in, float* out, int64_t n) {
  cpu::detail::unary_span_avx512(in, out, n, F{});
}
#endif

template <template <typename> class Runner>
void run_op(const float* in, float* out, int64_t n, int op) {
  switch (op) {
    case 0: Runner<fn::Exp>::run(in, out, n); break;
    case 1: Runner<fn::Log>::run(in, out, n); break;
    case 2: Runner<fn::Tanh>::run(in, out, n); break;
    case 3: Runner<fn::Sigmoid>::run(in, out, n); break;
    case 4: Runner<fn::Round>::run(in, out, n); break;
    case 5: Runner<fn::Floor>::run(in, out, n); break;
    case 6: Runner<fn::Ceil>::run(in, out, n); break;
  }
}
template <typename F>
struct Base {
  static void run(const float* i, float* o, int64_t n) { run_base<F>(i, o, n); }
};
#ifdef KILN_X86_CLONES
template <typename F>
struct Avx2 {
  static void run(const float* i, float* o, int64_t n) { run_avx2<F>(i, o, n); }
};
template <typename F>
struct Avx512 {
  static void run(const float* i, float* o, int64_t n) { run_avx512<F>(i, o, n); }
};
#endif

std::vector<Flavour> flavours() {
  std::vector<Flavour> f = {{"baseline", run_op<Base>}};
#ifdef KILN_X86_CLONES
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    f.push_back({"avx2", run_op<Avx2>});
  if (cpu::detail::simd_level() == cpu::detail::SimdLevel::kAvx512)
    f.push_back({"avx512", run_op<Avx512>});
#endif
  return f;
}

long double reference(int op, long double x) {
  switch (op) {
    case 0: return std::exp(x);
    case 1: return std::log(x);
    case 2: return std::tanh(x);
    case 3: return 1.0L / (1.0L + std::exp(-x));
  }
  return 0;
}

TEST(Functors, TranscendentalAccuracyInEveryFlavour) {
  const std::vector<float> xs = sweep_inputs();
  const char* names[] = {"exp", "log", "tanh", "sigmoid"};
  const double bounds[] = {1.5, 1.5, 2.0, 2.5};
  std::vector<float> out(xs.size());
  for (const Flavour& fl : flavours()) {
    for (int op = 0; op < 4; ++op) {
      SCOPED_TRACE(str_cat(fl.name, " ", names[op]));
      fl.run(xs.data(), out.data(), static_cast<int64_t>(xs.size()), op);
      double worst = 0;
      float worst_x = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        const double e = ulp_error(out[i], static_cast<double>(reference(op, xs[i])));
        if (e > worst) {
          worst = e;
          worst_x = xs[i];
        }
      }
      EXPECT_LE(worst, bounds[op]) << "at x=" << worst_x;
    }
  }
}

TEST(Functors, RoundingTricksAreExactInEveryFlavour) {
  const std::vector<float> xs = sweep_inputs();
  std::vector<float> out(xs.size());
  float (*libm[])(float) = {[](float x) { return std::nearbyint(x); },
                            [](float x) { return std::floor(x); },
                            [](float x) { return std::ceil(x); }};
  for (const Flavour& fl : flavours()) {
    for (int k = 0; k < 3; ++k) {
      SCOPED_TRACE(str_cat(fl.name, " op ", k));
      fl.run(xs.data(), out.data(), static_cast<int64_t>(xs.size()), 4 + k);
      for (size_t i = 0; i < xs.size(); ++i)
        ASSERT_TRUE(same(out[i], libm[k](xs[i]))) << xs[i] << " -> " << out[i];
    }
  }
}

TEST(Functors, HalfConversionsMatchHalfH) {
  // Every 16-bit pattern both ways, then floats: a stride over all patterns
  // plus, around each half and bfloat16 value, the patterns at and beside
  // the rounding ties and the neighbours of the value itself.
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto b = static_cast<uint16_t>(h);
    ASSERT_EQ(std::bit_cast<uint32_t>(fn::detail::f16_to_f32(b)),
              std::bit_cast<uint32_t>(to_float(Half{b})))
        << std::hex << h;
    ASSERT_EQ(std::bit_cast<uint32_t>(fn::detail::bf16_to_f32(b)),
              std::bit_cast<uint32_t>(to_float(BFloat16{b})))
        << std::hex << h;
  }
  std::vector<uint32_t> xs;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) xs.push_back(static_cast<uint32_t>(b));
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint32_t f16 = std::bit_cast<uint32_t>(to_float(Half{static_cast<uint16_t>(h)}));
    const uint32_t bf16 = h << 16;
    for (uint32_t d : {0u, 1u, 0xfffu, 0x1000u, 0x1001u}) xs.insert(xs.end(), {f16 + d, f16 - d});
    for (uint32_t d : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u})
      xs.insert(xs.end(), {bf16 + d, bf16 - d});
  }
  for (uint32_t x : xs) {
    const float f = std::bit_cast<float>(x);
    ASSERT_EQ(fn::detail::f32_to_f16(f), to_half(f).bits) << std::hex << x;
    ASSERT_EQ(fn::detail::f32_to_bf16(f), to_bfloat16(f).bits) << std::hex << x;
  }
}

TEST(Functors, DoubleRoundingMatchesLibm) {
  for (double x : {-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.49999, 4503599627370495.5,
                   4503599627370497.0, -1e300, std::numeric_limits<double>::infinity()}) {
    EXPECT_TRUE(fn::Round{}(x) == std::nearbyint(x) &&
                std::signbit(fn::Round{}(x)) == std::signbit(std::nearbyint(x)))
        << x;
    EXPECT_EQ(fn::Floor{}(x), std::floor(x)) << x;
    EXPECT_EQ(fn::Ceil{}(x), std::ceil(x)) << x;
  }
}

// Every (a, b) byte pair through each vector flavour's binary loop: the shifts
// of 8-bit types run in 32-bit lanes; the results must be the plain ones.
template <typename T, typename F, typename Ref>
void expect_all_byte_pairs(F f, Ref ref, const char* what) {
  std::vector<T> a, b;
  for (int x = 0; x < 256; ++x)
    for (int y = 0; y < 256; ++y) {
      a.push_back(static_cast<T>(x));
      b.push_back(static_cast<T>(y));
    }
  const int64_t n = static_cast<int64_t>(a.size());
  std::vector<std::pair<const char*, std::vector<T>>> outs;
  outs.emplace_back("baseline", std::vector<T>(a.size()));
  cpu::detail::binary_run<true, true>(a.data(), b.data(), outs.back().second.data(), n, f);
#ifdef KILN_X86_CLONES
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    outs.emplace_back("avx2", std::vector<T>(a.size()));
    cpu::detail::binary_run_avx2<true, true>(a.data(), b.data(), outs.back().second.data(), n, f);
  }
  if (cpu::detail::simd_level() == cpu::detail::SimdLevel::kAvx512) {
    outs.emplace_back("avx512", std::vector<T>(a.size()));
    cpu::detail::binary_run_avx512<true, true>(a.data(), b.data(), outs.back().second.data(), n, f);
  }
#endif
  for (const auto& [flavour, o] : outs)
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(o[i], ref(a[i], b[i]))
          << what << " " << flavour << " a=" << int(a[i]) << " b=" << int(b[i]);
}

// The modulus of float-part complex values is glibc's hypotf written out:
// bit for bit what std::abs (libm's cabsf) gives, over parts of every
// magnitude (squares that overflow or underflow float), zeros, subnormals,
// inf and NaN in every combination.
TEST(Functors, ComplexAbsMatchesLibmBitForBit) {
  const std::vector<float> xs = sweep_inputs();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<float> edge = {0.f,
                                   -0.f,
                                   inf,
                                   -inf,
                                   nan,
                                   1e-45f,
                                   3e-39f,
                                   1e-20f,
                                   1e20f,
                                   3e38f,
                                   std::numeric_limits<float>::max(),
                                   -1.5f};
  size_t n = 0;
  auto check = [&](float re, float im) {
    const float want = std::abs(std::complex<float>(re, im));
    const float got = fn::ComplexAbs{}(fn::Complex{}(re, im));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got))
          << std::bit_cast<uint32_t>(re) << " " << std::bit_cast<uint32_t>(im);
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << re << " " << im;
    }
    ++n;
  };
  for (size_t i = 0; i + 1 < xs.size(); i += 7) check(xs[i], xs[i + 1]);
  for (float a : edge)
    for (float b : edge) check(a, b);
  for (size_t i = 0; i < xs.size(); i += 997)
    for (float b : edge) check(xs[i], b);
  EXPECT_GT(n, 100000u);
}

TEST(Functors, ByteShiftsMatchPlainShiftsInEveryFlavour) {
  // TensorFlow's rule: counts clamp to [0, 7]; left shifts wrap, right shifts
  // fill with the sign (signed) or zeros (unsigned).
  auto count = [](int b) { return b < 0 ? 0 : (b > 7 ? 7 : b); };
  expect_all_byte_pairs<uint8_t>(
      fn::LeftShift{},
      [&](uint8_t a, uint8_t b) { return static_cast<uint8_t>((a << count(b)) & 0xff); },
      "uint8 <<");
  expect_all_byte_pairs<int8_t>(
      fn::LeftShift{},
      [&](int8_t a, int8_t b) {
        return static_cast<int8_t>(
            static_cast<uint8_t>((static_cast<uint8_t>(a) << count(b)) & 0xff));
      },
      "int8 <<");
  expect_all_byte_pairs<uint8_t>(
      fn::RightShift{}, [&](uint8_t a, uint8_t b) { return static_cast<uint8_t>(a >> count(b)); },
      "uint8 >>");
  expect_all_byte_pairs<int8_t>(
      fn::RightShift{},
      [&](int8_t a, int8_t b) {
        const int v = a, s = count(b);
        return static_cast<int8_t>(v < 0 ? -((-v - 1) >> s) - 1 : v >> s);  // floor(v / 2^s)
      },
      "int8 >>");
}

TEST(Functors, IntegerEdgeCasesAreDefined) {
  EXPECT_EQ(fn::Neg{}(INT32_MIN), INT32_MIN);
  EXPECT_EQ(fn::Abs{}(int8_t{-128}), int8_t{-128});
  EXPECT_EQ(fn::Add{}(INT64_MAX, int64_t{1}), INT64_MIN);
  EXPECT_EQ(fn::Mul{}(uint8_t{16}, uint8_t{16}), uint8_t{0});
  EXPECT_EQ(fn::FloorDiv{}(7, 0), 0);  // kernels reject zero divisors first
  EXPECT_EQ(fn::FloorMod{}(INT32_MIN, -1), 0);
  EXPECT_EQ(fn::Div{}(INT32_MIN, -1), INT32_MIN);
  EXPECT_EQ(fn::Pow{}(3, -1), 0);  // kernels reject negative exponents first
  EXPECT_EQ(fn::Pow{}(int64_t{3}, int64_t{40}),
            static_cast<int64_t>(12157665459056928801ull));  // 3^40 wraps
  EXPECT_EQ(fn::LeftShift{}(int8_t{1}, int8_t{100}), int8_t{-128});
  EXPECT_EQ(fn::RightShift{}(int8_t{-128}, int8_t{-3}), int8_t{-128});
  EXPECT_EQ(fn::Cast<int32_t>{}(std::nanf("")), 0);
  EXPECT_EQ(fn::Cast<int64_t>{}(1e300), INT64_MAX);
  EXPECT_EQ(fn::Cast<uint8_t>{}(-1e300), 0);
  EXPECT_EQ(fn::Cast<int8_t>{}(300), int8_t{44});
  EXPECT_TRUE(fn::Cast<bool>{}(std::nan("")));
}

}  // namespace
}  // namespace kiln
