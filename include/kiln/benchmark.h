// kiln::benchmark: the C++ counterpart of Python's kiln.benchmark. Times a
// callable honestly: the first call (which traces a Function) on its own,
// warm-up until the per-call time stops improving, an adaptive number of
// samples (batched for fast callables), and median / mean ± std / IQR / min.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/function.h"

namespace kiln {

struct BenchmarkOptions {
  std::string name = "benchmark";
  double min_time = 1.0;         ///< seconds of samples to collect, at least
  int min_runs = 7;              ///< samples to collect, at least
  int max_runs = 10000;          ///< samples to collect, at most
  double sample_time = 2e-3;     ///< a sample batches calls until it lasts this long
  double max_warmup_time = 5.0;  ///< warm-up stops after this many seconds
  /// Seconds from an arbitrary origin; steady_clock when empty (tests pass a fake).
  std::function<double()> clock;
};

/// Statistics of one benchmark; times are seconds per call.
struct BenchmarkResult {
  std::string name;
  std::vector<double> samples;  ///< per-call time of each sample
  int64_t calls_per_sample = 1;
  double first_call = 0;  ///< the first call alone (tracing included)
  double median = 0, mean = 0, stddev = 0, q1 = 0, q3 = 0, iqr = 0, min = 0, max = 0;

  /// "name: median 1.2 ms (IQR 20 us, mean 1.21 ms ± 30 us, 812 runs x 1); first call 45 ms"
  std::string to_string() const;
  /// One JSON object with the fields of Python's Result.to_dict().
  std::string to_json() const;
};

/// Fills the statistics of `r` from r.samples (throws InvalidArgument when empty).
void compute_statistics(BenchmarkResult& r);

/// Times fn(). fn must return the value it computed: a None Value is refused
/// with InvalidArgumentError (a function returning nothing has its work pruned
/// and looks fast — seed 000's trap). kiln runs ops synchronously, so a returned
/// tensor is already computed when fn returns.
BenchmarkResult benchmark(const std::function<Value()>& fn, const BenchmarkOptions& opts = {});

/// A duration with a readable unit: "812 ns", "1.23 ms", "4.5 s".
std::string format_seconds(double s);

}  // namespace kiln
