// kiln::benchmark: first call, warm-up, adaptive batched samples, statistics.
#include "kiln/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "kiln/status.h"

namespace kiln {
namespace {

const char* kNoResult =
    "returned None, so nothing forces its work to run: a traced function that returns "
    "nothing keeps only stateful operations, its computation is pruned, and it looks much "
    "faster than it is (seed 000's 10x CharUnpack speed-up). Return the value to time.";

double quantile(const std::vector<double>& sorted, double q) {
  const double pos = (sorted.size() - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string format_seconds(double s) {
  if (std::isnan(s)) return "-";
  const std::pair<const char*, double> units[] = {{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}};
  for (const auto& [unit, scale] : units)
    if (std::fabs(s) >= scale) return fmt("%.3g", s / scale) + " " + unit;
  return fmt("%.3g", s / 1e-9) + " ns";
}

void compute_statistics(BenchmarkResult& r) {
  KILN_CHECK_ARG(!r.samples.empty(), "benchmark '", r.name, "': no samples");
  std::vector<double> s = r.samples;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  r.median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  r.mean = std::accumulate(s.begin(), s.end(), 0.0) / n;
  double ss = 0;
  for (double v : s) ss += (v - r.mean) * (v - r.mean);
  r.stddev = n > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  r.q1 = quantile(s, 0.25);
  r.q3 = quantile(s, 0.75);
  r.iqr = r.q3 - r.q1;
  r.min = s.front();
  r.max = s.back();
}

std::string BenchmarkResult::to_string() const {
  std::ostringstream os;
  os << name << ": median " << format_seconds(median) << " (IQR " << format_seconds(iqr)
     << ", mean " << format_seconds(mean) << " ± " << format_seconds(stddev) << ", min "
     << format_seconds(min) << ", " << samples.size() << " runs x " << calls_per_sample
     << "); first call " << format_seconds(first_call);
  return os.str();
}

std::string BenchmarkResult::to_json() const {
  std::ostringstream os;
  os.precision(9);
  os << "{\"name\": \"" << name << "\", \"median_s\": " << median << ", \"mean_s\": " << mean
     << ", \"std_s\": " << stddev << ", \"iqr_s\": " << iqr << ", \"q1_s\": " << q1
     << ", \"q3_s\": " << q3 << ", \"min_s\": " << min << ", \"max_s\": " << max
     << ", \"runs\": " << samples.size() << ", \"calls_per_run\": " << calls_per_sample
     << ", \"first_call_s\": " << first_call << "}";
  return os.str();
}

BenchmarkResult benchmark(const std::function<Value()>& fn, const BenchmarkOptions& opts) {
  KILN_CHECK_ARG(opts.min_time >= 0 && opts.min_runs >= 1 && opts.max_runs >= opts.min_runs &&
                     opts.sample_time > 0,
                 "benchmark '", opts.name,
                 "': need min_time >= 0, 1 <= min_runs <= max_runs and sample_time > 0");
  std::function<double()> clock = opts.clock;
  if (!clock) {
    clock = [] {
      using namespace std::chrono;
      return duration<double>(steady_clock::now().time_since_epoch()).count();
    };
  }
  auto call = [&] {
    Value v = fn();
    KILN_CHECK_ARG(!v.is_none(), "benchmark '", opts.name, "': the callable ", kNoResult);
  };
  auto batch = [&](int64_t number) {
    const double start = clock();
    for (int64_t i = 0; i < number; ++i) call();
    return (clock() - start) / number;
  };

  BenchmarkResult r;
  r.name = opts.name;
  double start = clock();
  call();
  r.first_call = clock() - start;

  int64_t number = 1;
  const double warm_start = clock();
  double per_call = batch(number);
  while (per_call * number < opts.sample_time && number < (int64_t{1} << 20)) {
    const int64_t want = static_cast<int64_t>(opts.sample_time / std::max(per_call, 1e-9)) + 1;
    number = std::max(number * 2, std::min(int64_t{1} << 20, want));
    per_call = batch(number);
  }
  double best = per_call;
  for (int stable = 0; stable < 2 && clock() - warm_start < opts.max_warmup_time;) {
    const double t = batch(number);
    if (t < best * 0.98) {
      best = t;
      stable = 0;
    } else {
      ++stable;
    }
  }
  r.calls_per_sample = number;
  start = clock();
  while (static_cast<int>(r.samples.size()) < opts.max_runs &&
         (static_cast<int>(r.samples.size()) < opts.min_runs || clock() - start < opts.min_time))
    r.samples.push_back(batch(number));
  compute_statistics(r);
  return r;
}

}  // namespace kiln
