// Elementwise kernel bandwidth against a plain copy measured in the same run
// (issue 2, section 6: elementwise ops on >= 1M float32 reach >= 70% of the
// bandwidth of std::memcpy). Bytes count every read and write: 2 x n x 4 for
// copy and unary ops, 3 x n x 4 for binary ops. All timings are wall-clock
// (the kernels use the thread pool). At the end a table gives each
// benchmark's bandwidth as a fraction of BM_Memcpy at the same size, from the
// median when run with --benchmark_repetitions.
//
// --kiln_threads=N sets kiln::config().num_threads (default: one per core).
// With --kiln_threads=1 the kernels run on one thread like the memcpy
// reference, which gives a fair ratio on a machine busy with other work.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench_flags.h"
#include "kiln/kiln.h"

namespace {

constexpr int64_t kSmall = int64_t{1} << 20;   // 1M float32 = 4 MiB
constexpr int64_t kLarge = int64_t{16} << 20;  // 16M float32 = 64 MiB

kiln::Tensor filled(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = start + static_cast<float>(i % 1000) * 0.01f;
  return kiln::Tensor::from_vector(v, kiln::Shape{n});
}

void BM_Memcpy(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> src(static_cast<size_t>(n), 1.f), dst(static_cast<size_t>(n));
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), static_cast<size_t>(n) * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 2 * int64_t{sizeof(float)});
}

template <kiln::Tensor (*Op)(const kiln::Tensor&)>
void BM_Unary(benchmark::State& state) {
  const int64_t n = state.range(0);
  const kiln::Tensor x = filled(n, -5.f);
  for (auto _ : state) {
    kiln::Tensor y = Op(x);
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * n * 2 * int64_t{sizeof(float)});
}

template <kiln::Tensor (*Op)(const kiln::Tensor&, const kiln::Tensor&)>
void BM_Binary(benchmark::State& state) {
  const int64_t n = state.range(0);
  const kiln::Tensor a = filled(n, 1.f), b = filled(n, 2.f);
  for (auto _ : state) {
    kiln::Tensor y = Op(a, b);
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * n * 3 * int64_t{sizeof(float)});
}

// x + scalar: one read and one write per element.
void BM_AddScalarBroadcast(benchmark::State& state) {
  const int64_t n = state.range(0);
  const kiln::Tensor x = filled(n, 1.f), s(2.5f);
  for (auto _ : state) {
    kiln::Tensor y = kiln::add(x, s);
    benchmark::DoNotOptimize(y.raw_data());
  }
  state.SetBytesProcessed(state.iterations() * n * 2 * int64_t{sizeof(float)});
}

void BM_Add(benchmark::State& s) {
  BM_Binary<kiln::add>(s);
}
void BM_Mul(benchmark::State& s) {
  BM_Binary<kiln::multiply>(s);
}
void BM_Tanh(benchmark::State& s) {
  BM_Unary<kiln::tanh>(s);
}
void BM_Exp(benchmark::State& s) {
  BM_Unary<kiln::exp>(s);
}
void BM_Relu(benchmark::State& s) {
  BM_Unary<kiln::relu>(s);
}
void BM_Sigmoid(benchmark::State& s) {
  BM_Unary<kiln::sigmoid>(s);
}
void BM_Log(benchmark::State& s) {
  BM_Unary<kiln::log>(s);
}
void BM_Erf(benchmark::State& s) {
  BM_Unary<kiln::erf>(s);
}

#define KILN_BENCH(fn) BENCHMARK(fn)->Arg(kSmall)->Arg(kLarge)->UseRealTime()
KILN_BENCH(BM_Memcpy);
KILN_BENCH(BM_Add);
KILN_BENCH(BM_Mul);
KILN_BENCH(BM_Tanh);
KILN_BENCH(BM_Exp);
KILN_BENCH(BM_Relu);
KILN_BENCH(BM_Sigmoid);
KILN_BENCH(BM_Log);
KILN_BENCH(BM_Erf);
KILN_BENCH(BM_AddScalarBroadcast);

// Console output plus a closing table of bandwidth ratios to BM_Memcpy.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      const bool single = r.run_type == Run::RT_Iteration && r.repetitions <= 1;
      if (!median && !single) continue;
      auto it = r.counters.find("bytes_per_second");
      if (it == r.counters.end()) continue;
      bw_[r.run_name.function_name][r.run_name.args] = it->second.value;
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    auto ref = bw_.find("BM_Memcpy");
    if (ref == bw_.end()) return;
    std::printf("\nBandwidth relative to BM_Memcpy at the same size (target >= 0.70):\n");
    for (const auto& [name, by_size] : bw_) {
      if (name == "BM_Memcpy") continue;
      for (const auto& [size, v] : by_size) {
        auto m = ref->second.find(size);
        if (m == ref->second.end() || m->second <= 0) continue;
        std::printf("  %-24s n=%-9s %7.2f GB/s  ratio %.2f\n", name.c_str(), size.c_str(), v / 1e9,
                    v / m->second);
      }
    }
    for (const auto& [size, v] : ref->second)
      std::printf("  %-24s n=%-9s %7.2f GB/s\n", "BM_Memcpy", size.c_str(), v / 1e9);
  }

 private:
  std::map<std::string, std::map<std::string, double>> bw_;
};

}  // namespace

int main(int argc, char** argv) {
  argc = kiln::bench::take_kiln_flags(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
