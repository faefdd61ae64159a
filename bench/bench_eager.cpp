// Eager dispatch overhead: the cost of one op call on tiny tensors, next to
// the costs it is made of (a tensor allocation, a raw scalar add).
#include <benchmark/benchmark.h>

#include "kiln/kiln.h"

namespace {
using namespace kiln;

// Reference: the arithmetic alone.
void BM_RawScalarAdd(benchmark::State& state) {
  float a = 1.f, b = 2.f;
  for (auto _ : state) {
    benchmark::DoNotOptimize(a);
    float c = a + b;
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_RawScalarAdd);

// Reference: allocating one output tensor from the pool.
void BM_AllocateScalarTensor(benchmark::State& state) {
  for (auto _ : state) {
    Tensor t = Tensor::empty(DType::kFloat32, Shape{1});
    benchmark::DoNotOptimize(t.impl());
  }
}
BENCHMARK(BM_AllocateScalarTensor);

// The target: add on 1-element float32 tensors, end to end.
void BM_EagerAdd1(benchmark::State& state) {
  Tensor a({1.f}), b({2.f});
  for (auto _ : state) {
    Tensor c = add(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_EagerAdd1);

// With a C++ scalar operand (converted to a tensor per call).
void BM_EagerAddScalar(benchmark::State& state) {
  Tensor a({1.f});
  for (auto _ : state) {
    Tensor c = a + 2.f;
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_EagerAddScalar);

// Chained ops on 10x10 (the graph-mode comparison workload's eager half).
void BM_EagerChain100_10x10(benchmark::State& state) {
  std::vector<float> v(100, 0.5f);
  Tensor x = Tensor::from_vector(v, {10, 10});
  for (auto _ : state) {
    Tensor y = x;
    for (int i = 0; i < 50; ++i) y = y * 0.5f + x;
    benchmark::DoNotOptimize(y.impl());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_EagerChain100_10x10);

}  // namespace

BENCHMARK_MAIN();
