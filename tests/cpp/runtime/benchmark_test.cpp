// kiln::benchmark: statistics on a synthetic callable with a fake clock, batching
// of fast callables, the no-result trap and bad options.
#include "kiln/benchmark.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

struct FakeClock {
  double now = 0;
};

BenchmarkOptions fake_options(FakeClock& c) {
  BenchmarkOptions o;
  o.clock = [&c] { return c.now; };
  return o;
}

TEST(BenchmarkTest, StatisticsOfSyntheticCallable) {
  FakeClock c;
  const double durations[] = {0.010, 0.011, 0.012, 0.010, 0.030};
  int i = -1;
  auto fn = [&]() -> Value {
    c.now += i < 0 ? 0.5 : durations[i % 5];
    ++i;
    return Value(Tensor(1.f));
  };
  BenchmarkOptions o = fake_options(c);
  o.min_time = 0.5;
  o.min_runs = 5;
  o.sample_time = 1e-3;
  BenchmarkResult r = benchmark(fn, o);
  EXPECT_DOUBLE_EQ(r.first_call, 0.5);
  EXPECT_EQ(r.calls_per_sample, 1);
  ASSERT_GE(r.samples.size(), 5u);
  std::vector<double> s = r.samples;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  const double median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  double mean = 0;
  for (double v : s) mean += v / n;
  double ss = 0;
  for (double v : s) ss += (v - mean) * (v - mean);
  EXPECT_NEAR(r.median, median, 1e-12);
  EXPECT_NEAR(r.mean, mean, 1e-12);
  EXPECT_NEAR(r.stddev, std::sqrt(ss / (n - 1)), 1e-12);
  EXPECT_DOUBLE_EQ(r.min, s.front());
  EXPECT_DOUBLE_EQ(r.max, s.back());
  EXPECT_NEAR(r.iqr, r.q3 - r.q1, 1e-15);
  EXPECT_NE(r.to_string().find("benchmark: median"), std::string::npos);
  EXPECT_NE(r.to_json().find("\"first_call_s\": 0.5"), std::string::npos);
}

TEST(BenchmarkTest, QuartilesInterpolateLikeNumPy) {
  BenchmarkResult r;
  r.samples = {4, 1, 3, 2};  // numpy.percentile([1,2,3,4], [25, 75]) = 1.75, 3.25
  compute_statistics(r);
  EXPECT_DOUBLE_EQ(r.q1, 1.75);
  EXPECT_DOUBLE_EQ(r.q3, 3.25);
  EXPECT_DOUBLE_EQ(r.median, 2.5);
}

TEST(BenchmarkTest, FastCallablesAreBatched) {
  FakeClock c;
  auto fn = [&]() -> Value {
    c.now += 1e-6;
    return Value(Tensor(1.f));
  };
  BenchmarkOptions o = fake_options(c);
  o.min_time = 0.01;
  o.min_runs = 3;
  BenchmarkResult r = benchmark(fn, o);
  EXPECT_GE(r.calls_per_sample, 2000);  // sample_time 2 ms / 1 us
  EXPECT_NEAR(r.median, 1e-6, 1e-12);
}

TEST(BenchmarkTest, RefusesNoResult) {
  try {
    benchmark([] { return Value(); });
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("pruned"), std::string::npos) << e.what();
  }
}

TEST(BenchmarkTest, RefusesFunctionReturningNothing) {
  FunctionOptions fo;
  fo.name = "no_return";
  Function f(
      [](const std::vector<Value>& args) {
        (void)(args[0].tensor() * 2.f);
        return Value();
      },
      fo);
  Tensor x({1.f, 2.f});
  EXPECT_THROW(benchmark([&] { return f({x}); }), InvalidArgumentError);
}

TEST(BenchmarkTest, TimesARealFunction) {
  Function f([](const std::vector<Value>& args) { return Value(args[0].tensor() * 2.f); });
  Tensor x({1.f, 2.f});
  BenchmarkOptions o;
  o.min_time = 0.01;
  o.min_runs = 3;
  o.name = "double";
  BenchmarkResult r = benchmark([&] { return f({x}); }, o);
  EXPECT_GT(r.median, 0);
  EXPECT_GE(r.samples.size(), 3u);
  EXPECT_LE(r.min, r.median);
  EXPECT_LE(r.median, r.max);
}

TEST(BenchmarkTest, BadOptions) {
  BenchmarkOptions o;
  o.min_runs = 0;
  EXPECT_THROW(benchmark([] { return Value(1); }, o), InvalidArgumentError);
  BenchmarkResult empty;
  EXPECT_THROW(compute_statistics(empty), InvalidArgumentError);
}

TEST(BenchmarkTest, FormatSeconds) {
  EXPECT_EQ(format_seconds(812e-9), "812 ns");
  EXPECT_EQ(format_seconds(1.234e-3), "1.23 ms");
  EXPECT_EQ(format_seconds(4.5), "4.5 s");
  EXPECT_EQ(format_seconds(NAN), "-");
}

}  // namespace
}  // namespace kiln
