// The profiler's cost (docs/PROFILER.md): a function of 100 small ops with
// the profiler off and on, and the disabled check on its own. Arg 0 of the
// chains: the optimized graph (fused into a few kernels); arg 1: fusion off,
// so the plan runs ~100 steps and each step pays the hook.
#include <benchmark/benchmark.h>

#include "kiln/function.h"
#include "kiln/kiln.h"

namespace {
using namespace kiln;

Tensor chain(const Tensor& x) {
  Tensor y = x;
  for (int i = 0; i < 34; ++i) y = tanh(y) * 0.5f + x;  // ~100 ops
  return y;
}

Function chain_function(bool unfused) {
  FunctionOptions o;
  o.name = "chain";
  if (unfused) o.disabled_passes = {"fuse"};
  return Function([](const std::vector<Value>& a) { return Value(chain(a[0].tensor())); }, o);
}

void run_chain(benchmark::State& state, bool profiling) {
  Tensor x = Tensor::from_vector(std::vector<float>(100, 0.5f), {10, 10});
  Function f = chain_function(state.range(0) == 1);
  std::vector<Value> args{Value(x)};
  f(args);
  if (profiling) profiler::start();
  int64_t calls = 0;
  for (auto _ : state) {
    Value r = f(args);
    benchmark::DoNotOptimize(r.tensor().impl());
    // Bounded memory: a fresh profile every 2,000 calls (~200k events).
    if (profiling && ++calls % 2000 == 0) {
      state.PauseTiming();
      profiler::stop();
      profiler::start();
      state.ResumeTiming();
    }
  }
  if (profiling) profiler::stop();
}

void BM_Chain100_ProfilerOff(benchmark::State& state) {
  run_chain(state, false);
}
BENCHMARK(BM_Chain100_ProfilerOff)->Arg(0)->Arg(1);

void BM_Chain100_ProfilerOn(benchmark::State& state) {
  run_chain(state, true);
}
BENCHMARK(BM_Chain100_ProfilerOn)->Arg(0)->Arg(1);

// The same 100 ops run eagerly (each pays the eager hook), profiler off.
void BM_Chain100_Eager_ProfilerOff(benchmark::State& state) {
  Tensor x = Tensor::from_vector(std::vector<float>(100, 0.5f), {10, 10});
  for (auto _ : state) {
    Tensor y = chain(x);
    benchmark::DoNotOptimize(y.impl());
  }
}
BENCHMARK(BM_Chain100_Eager_ProfilerOff);

// 100 disabled kernel hooks (what a 100-step plan pays with the profiler off).
void BM_DisabledHook_x100(benchmark::State& state) {
  for (auto _ : state) {
    for (int i = 0; i < 100; ++i) {
      const int64_t t0 = profiler::kernel_begin();
      benchmark::DoNotOptimize(t0);
      profiler::kernel_end(t0, "kernel", "Op", "node", {});
    }
  }
}
BENCHMARK(BM_DisabledHook_x100);

// An annotation with the profiler off: one check.
void BM_DisabledScopedTrace(benchmark::State& state) {
  for (auto _ : state) {
    profiler::ScopedTrace t("step");
    benchmark::DoNotOptimize(t.active());
  }
}
BENCHMARK(BM_DisabledScopedTrace);

}  // namespace

BENCHMARK_MAIN();
