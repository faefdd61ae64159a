// Random ops: Philox4x32-10, random_uniform, random_normal, seeds.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "kernels/cpu/philox.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

TEST(Philox, Random123KnownAnswers) {
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  struct Case {
    cpu::PhiloxCounter ctr;
    cpu::PhiloxKey key;
    cpu::PhiloxCounter want;
  };
  const Case cases[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Case& c : cases) EXPECT_EQ(cpu::philox4x32_10(c.ctr, c.key), c.want);
}

TEST(Philox, StreamBlocksUseConsecutiveCounters) {
  cpu::PhiloxStream s;
  s.key = {1, 2};
  s.first_block = 0xffffffffull;  // the carry into the second counter word
  s.stream = (uint64_t{7} << 32) | 5;
  EXPECT_EQ(s.block(1), cpu::philox4x32_10({0, 1, 5, 7}, {1, 2}));
  EXPECT_EQ(s.block(0), cpu::philox4x32_10({0xffffffff, 0, 5, 7}, {1, 2}));
}

struct Moments {
  double mean = 0, var = 0, min = 0, max = 0;
};
template <typename T>
Moments moments(const Tensor& t) {
  const T* p = t.data<T>();
  const int64_t n = t.num_elements();
  Moments m;
  m.min = m.max = static_cast<double>(p[0]);
  double s = 0, s2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    s += v;
    s2 += v * v;
    m.min = std::min(m.min, v);
    m.max = std::max(m.max, v);
  }
  m.mean = s / n;
  m.var = s2 / n - m.mean * m.mean;
  return m;
}

template <typename T>
bool equal_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.to_vector<T>() == b.to_vector<T>();
}

// ---- uniform ----

template <typename T>
void check_uniform_float(double lo, double hi) {
  SCOPED_TRACE(str_cat(dtype_name(dtype_v<T>), " [", lo, ", ", hi, ")"));
  const int64_t n = 100000;
  Tensor t = random_uniform({n}, lo, hi, dtype_v<T>, 1);
  ASSERT_EQ(t.dtype(), dtype_v<T>);
  ASSERT_EQ(t.shape(), (Shape{n}));
  const T* p = t.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_GE(p[i], static_cast<T>(lo)) << i;
    ASSERT_LT(p[i], static_cast<T>(hi)) << i;
  }
  const Moments m = moments<T>(t);
  const double w = hi - lo;
  // Standard error of the mean: w / sqrt(12 n); allow 5 of them.
  EXPECT_NEAR(m.mean, lo + w / 2, 5 * w / std::sqrt(12.0 * n));
  EXPECT_NEAR(m.var, w * w / 12, 0.02 * w * w / 12);
  EXPECT_LT(m.min, lo + 0.001 * w);
  EXPECT_GT(m.max, hi - 0.001 * w);
}

TEST(RandomUniform, FloatRangeAndMoments) {
  set_random_seed(11);
  check_uniform_float<float>(0, 1);
  check_uniform_float<float>(-3, 5);
  check_uniform_float<double>(0, 1);
  check_uniform_float<double>(10, 10.5);
}

TEST(RandomUniform, DefaultsAreFloat32In01) {
  Tensor t = random_uniform({3, 4});
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  EXPECT_EQ(t.shape(), (Shape{3, 4}));
  for (float v : t.to_vector<float>()) {
    EXPECT_GE(v, 0.f);
    EXPECT_LT(v, 1.f);
  }
}

TEST(RandomUniform, Float32ValuesHave24BitResolution) {
  Tensor t = random_uniform({1000}, 0, 1, DType::kFloat32, 3);
  for (float v : t.to_vector<float>()) {
    const float scaled = v * 16777216.0f;
    EXPECT_EQ(scaled, std::floor(scaled));
  }
}

template <typename T>
void check_uniform_int(T lo, T hi) {
  SCOPED_TRACE(str_cat(dtype_name(dtype_v<T>), " [", lo, ", ", hi, ")"));
  const int64_t n = 100000;
  Tensor t = random_uniform({n}, lo, hi, dtype_v<T>, 2);
  ASSERT_EQ(t.dtype(), dtype_v<T>);
  const T* p = t.data<T>();
  std::map<T, int64_t> counts;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_GE(p[i], lo) << i;
    ASSERT_LT(p[i], hi) << i;
    counts[p[i]]++;
  }
  const double k = static_cast<double>(hi) - static_cast<double>(lo);
  if (k <= 100) {
    // Every value shows up about n / k times (binomial, 5 sigma).
    ASSERT_EQ(static_cast<double>(counts.size()), k);
    const double expect = n / k, sigma = std::sqrt(n * (1 / k) * (1 - 1 / k));
    for (auto [v, c] : counts) EXPECT_NEAR(c, expect, 5 * sigma) << "value " << v;
  } else {
    const Moments m = moments<T>(t);
    const double mid = (static_cast<double>(lo) + static_cast<double>(hi)) / 2;
    EXPECT_NEAR(m.mean, mid, 5 * k / std::sqrt(12.0 * n));
  }
}

TEST(RandomUniform, IntegerRangeAndFrequencies) {
  set_random_seed(12);
  check_uniform_int<int32_t>(0, 10);
  check_uniform_int<int32_t>(-5, -2);
  check_uniform_int<int32_t>(7, 8);
  check_uniform_int<int64_t>(-50, 50);
  check_uniform_int<int32_t>(std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max());
  check_uniform_int<int64_t>(std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max());
  check_uniform_int<int64_t>(int64_t{1} << 40, (int64_t{1} << 40) + 3);
}

TEST(RandomUniform, TensorArgumentsAndShapeForms) {
  Tensor t = random_uniform(Tensor({2, 3}), Tensor(int64_t{4}), Tensor(int64_t{9}), 5);
  EXPECT_EQ(t.dtype(), DType::kInt64);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(random_uniform(Shape{4}).shape(), (Shape{4}));
  EXPECT_EQ(random_uniform(std::vector<int64_t>{1, 2}).shape(), (Shape{1, 2}));
  EXPECT_EQ(random_uniform(Shape()).shape(), Shape());
  EXPECT_EQ(random_uniform({0, 3}).shape(), (Shape{0, 3}));
  // Equal float bounds give the bound itself.
  for (double v : random_uniform({5}, 2.0, 2.0, DType::kFloat64).to_vector<double>())
    EXPECT_EQ(v, 2.0);
  // Bounds spanning the whole float range stay finite.
  const float big = std::numeric_limits<float>::max();
  for (float v : random_uniform({100}, -big, big, DType::kFloat32).to_vector<float>()) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_LT(v, big);
  }
}

TEST(RandomUniform, Errors) {
  expect_error(
      [] {
        random_uniform({2, -1});
      },
      Code::kInvalidArgument, {"RandomUniform", "shape[1] = -1", "non-negative"});
  expect_error([] { random_uniform(Tensor({2.f}), Tensor(0.f), Tensor(1.f)); },
               Code::kInvalidArgument, {"RandomUniform", "shape", "int32 or int64", "float32"});
  expect_error([] { random_uniform(Tensor({{2}}), Tensor(0.f), Tensor(1.f)); },
               Code::kInvalidArgument, {"RandomUniform", "shape", "1-D"});
  expect_error([] { random_uniform(Tensor({2}), Tensor({0.f}), Tensor(1.f)); },
               Code::kInvalidArgument, {"RandomUniform", "minval", "scalar"});
  expect_error([] { random_uniform(Tensor({2}), Tensor(0.f), Tensor(1.0)); },
               Code::kInvalidArgument, {"RandomUniform", "dtype mismatch", "float32", "float64"});
  expect_error([] { random_uniform({2}, 5, 5, DType::kInt32); }, Code::kInvalidArgument,
               {"RandomUniform", "minval < maxval", "minval = 5", "maxval = 5"});
  expect_error([] { random_uniform({2}, 6, 5, DType::kInt64); }, Code::kInvalidArgument,
               {"RandomUniform", "minval < maxval"});
  expect_error([] { random_uniform({2}, 0, 1, DType::kInt8); }, Code::kInvalidArgument,
               {"RandomUniform", "int8"});
  expect_error([] { random_uniform({2}, false, true, DType::kBool); }, Code::kInvalidArgument,
               {"RandomUniform", "bool"});
  expect_error([] { random_uniform(Tensor({2}), Tensor("a"), Tensor("b")); },
               Code::kInvalidArgument, {"RandomUniform", "string"});
  expect_error([] { random_uniform({2}, 0, 1, DType::kFloat32, -2); }, Code::kInvalidArgument,
               {"RandomUniform", "seed", "-2"});
  expect_error(
      [] {
        random_uniform({int64_t{1} << 40, int64_t{1} << 20});
      },
      Code::kResourceExhausted, {"allocation cap"});
  expect_error([] { random_uniform({2}, 0.5, 1, DType::kInt32); }, Code::kInvalidArgument,
               {"int32"});
}

// ---- normal ----

template <typename T>
void check_normal(double mean, double sd) {
  SCOPED_TRACE(str_cat(dtype_name(dtype_v<T>), " N(", mean, ", ", sd, ")"));
  const int64_t n = 100000;
  Tensor t = random_normal({n}, mean, sd, dtype_v<T>, 4);
  ASSERT_EQ(t.dtype(), dtype_v<T>);
  ASSERT_EQ(t.shape(), (Shape{n}));
  const T* p = t.data<T>();
  int64_t within1 = 0;
  double m4 = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(p[i])) << i;
    const double z = (static_cast<double>(p[i]) - mean) / sd;
    within1 += std::fabs(z) < 1;
    m4 += z * z * z * z;
  }
  const Moments m = moments<T>(t);
  EXPECT_NEAR(m.mean, mean, 5 * sd / std::sqrt(static_cast<double>(n)));
  EXPECT_NEAR(std::sqrt(m.var), sd, 0.02 * sd);
  // P(|z| < 1) = 0.6827; kurtosis 3.
  EXPECT_NEAR(static_cast<double>(within1) / n, 0.6827, 0.01);
  EXPECT_NEAR(m4 / n, 3.0, 0.15);
}

TEST(RandomNormal, Moments) {
  set_random_seed(13);
  check_normal<float>(0, 1);
  check_normal<float>(3, 2);
  check_normal<double>(0, 1);
  check_normal<double>(-1, 0.5);
}

TEST(RandomNormal, OddSizesAndTensorArguments) {
  for (int64_t n : {0, 1, 2, 3, 5, 7}) {
    Tensor t = random_normal({n});
    EXPECT_EQ(t.shape(), (Shape{n}));
    for (float v : t.to_vector<float>()) EXPECT_TRUE(std::isfinite(v));
  }
  Tensor t = random_normal(Tensor({int64_t{2}, int64_t{2}}), Tensor(5.0), Tensor(0.0), 9);
  EXPECT_EQ(t.dtype(), DType::kFloat64);
  for (double v : t.to_vector<double>()) EXPECT_EQ(v, 5.0);  // stddev 0
}

TEST(RandomNormal, Errors) {
  expect_error([] { random_normal({-2}); }, Code::kInvalidArgument,
               {"RandomStandardNormal", "shape[0] = -2"});
  expect_error([] { random_normal({2}, 0, 1, DType::kInt32); }, Code::kInvalidArgument,
               {"RandomStandardNormal", "mean and stddev", "float32 or float64", "int32"});
  expect_error([] { random_normal(Tensor({2}), Tensor(0.f), Tensor(1.0)); }, Code::kInvalidArgument,
               {"RandomStandardNormal", "dtype mismatch"});
  expect_error(
      [] {
        random_normal(Tensor({2}), Tensor(0.f), Tensor({1.f, 2.f}));
      },
      Code::kInvalidArgument, {"RandomStandardNormal", "stddev", "scalar"});
  expect_error([] { random_normal({2}, 0, 1, DType::kFloat32, -7); }, Code::kInvalidArgument,
               {"RandomStandardNormal", "seed"});
}

// ---- seeds and streams ----

TEST(RandomSeed, SeededCallsContinueOneReproducibleStream) {
  set_random_seed(42);
  Tensor a1 = random_uniform({8}, 0, 1, DType::kFloat32, 7);
  Tensor a2 = random_uniform({8}, 0, 1, DType::kFloat32, 7);
  Tensor b1 = random_uniform({8}, 0, 1, DType::kFloat32, 8);
  EXPECT_FALSE(equal_values<float>(a1, a2));  // successive calls differ
  EXPECT_FALSE(equal_values<float>(a1, b1));  // different op seeds differ
  set_random_seed(42);
  EXPECT_TRUE(equal_values<float>(random_uniform({8}, 0, 1, DType::kFloat32, 7), a1));
  EXPECT_TRUE(equal_values<float>(random_uniform({8}, 0, 1, DType::kFloat32, 7), a2));
  EXPECT_TRUE(equal_values<float>(random_uniform({8}, 0, 1, DType::kFloat32, 8), b1));
  set_random_seed(43);
  EXPECT_FALSE(equal_values<float>(random_uniform({8}, 0, 1, DType::kFloat32, 7), a1));
}

TEST(RandomSeed, UnseededCallsRepeatAfterSetRandomSeed) {
  set_random_seed(5);
  Tensor u1 = random_uniform({16});
  Tensor u2 = random_uniform({16});
  Tensor n1 = random_normal({16}, 0, 1, DType::kFloat64);
  EXPECT_FALSE(equal_values<float>(u1, u2));
  set_random_seed(5);
  EXPECT_TRUE(equal_values<float>(random_uniform({16}), u1));
  EXPECT_TRUE(equal_values<float>(random_uniform({16}), u2));
  EXPECT_TRUE(equal_values<double>(random_normal({16}, 0, 1, DType::kFloat64), n1));
}

TEST(RandomSeed, StreamPositionDependsOnElementsDrawn) {
  // The values a call gets depend only on the seed state, not on how the
  // work was split across threads: a big draw starts like a small one.
  set_random_seed(1);
  Tensor big = random_uniform({1 << 18}, 0, 1, DType::kFloat64, 3);
  set_random_seed(1);
  Tensor small = random_uniform({5}, 0, 1, DType::kFloat64, 3);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(big.data<double>()[i], small.data<double>()[i]);
  // Two calls of 4 continue where one call of 8 would have gone.
  set_random_seed(2);
  Tensor whole = random_uniform({8}, 0, 1, DType::kFloat32, 3);
  set_random_seed(2);
  Tensor first = random_uniform({4}, 0, 1, DType::kFloat32, 3);
  Tensor second = random_uniform({4}, 0, 1, DType::kFloat32, 3);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(whole.data<float>()[i], first.data<float>()[i]);
    EXPECT_EQ(whole.data<float>()[4 + i], second.data<float>()[i]);
  }
  // A large parallel draw has no repeated blocks.
  Tensor ints = random_uniform({1 << 18}, std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max(), DType::kInt64, 3);
  std::vector<int64_t> v = ints.to_vector<int64_t>();
  std::sort(v.begin(), v.end());
  EXPECT_EQ(std::adjacent_find(v.begin(), v.end()), v.end());
}

TEST(RandomSeed, UniformAndNormalStreamsAreIndependent) {
  set_random_seed(3);
  Tensor u = random_uniform({4}, 0, 1, DType::kFloat32, 1);
  Tensor z = random_normal({4}, 0, 1, DType::kFloat32, 1);
  set_random_seed(3);
  Tensor z2 = random_normal({4}, 0, 1, DType::kFloat32, 1);
  // Normal draws do not depend on the earlier uniform call with the same seed.
  EXPECT_TRUE(equal_values<float>(z, z2));
  EXPECT_NE(u.data<float>()[0], z.data<float>()[0]);
}

TEST(RandomSeed, ValuesArePinnedAcrossRuns) {
  // A given global seed, op seed and call sequence gives the same values in
  // every run; pinned so an accidental algorithm change shows.
  set_random_seed(2024);
  std::vector<float> u = random_uniform({4}, 0, 1, DType::kFloat32, 0).to_vector<float>();
  std::vector<int32_t> i = random_uniform({4}, 0, 1000, DType::kInt32, 0).to_vector<int32_t>();
  std::vector<double> z = random_normal({2}, 0, 1, DType::kFloat64, 0).to_vector<double>();
  EXPECT_EQ(u, (std::vector<float>{0.215531468f, 0.285286188f, 0.991245508f, 0.368784904f}));
  EXPECT_EQ(i, (std::vector<int32_t>{100, 470, 704, 133}));
  // Box-Muller goes through libm: allow a few ulps.
  ASSERT_EQ(z.size(), 2u);
  EXPECT_NEAR(z[0], -1.5804598985773783, 1e-13);
  EXPECT_NEAR(z[1], -1.4203707369363909, 1e-13);
}

TEST(RandomOps, RowsAreStatefulAndRandom) {
  for (OpId id : {OpId::RandomUniform, OpId::RandomNormal}) {
    const OpDef& d = op_def(id);
    EXPECT_TRUE(d.has(kStateful));
    EXPECT_TRUE(d.has(kRandom));
    ASSERT_EQ(d.attrs.size(), 1u);
    EXPECT_STREQ(d.attrs[0].name, "seed");
    EXPECT_EQ(std::get<int64_t>(d.attrs[0].default_value), -1);
  }
}

}  // namespace
}  // namespace kiln
