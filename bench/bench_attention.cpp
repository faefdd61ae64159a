// Attention as Keras' MultiHeadAttention writes it, on transformer4's shapes
// (batch 8, 128 steps, 4 heads of 64; docs/BENCHMARKS.md): q, k, v [8, 128, 4,
// 64] split into heads by Transposes, q scaled, softmax(q k^T) v, the heads
// merged by a Transpose. A function with the fuse_attention pass off (two
// batched products, a softmax, four transposes and a Mul) against one with it
// on (one _FusedAttention node), in graph mode and under jit_compile, in
// float32 and in bfloat16 (mixed precision's casts around the softmax).
// Run: bench_attention --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "kiln/function.h"
#include "kiln/kiln.h"

namespace {
using namespace kiln;

constexpr int64_t kB = 8, kT = 128, kN = 4, kH = 64;

Tensor wave(const Shape& s, double freq) {
  std::vector<float> v(static_cast<size_t>(s.num_elements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(std::sin(freq * static_cast<double>(i)));
  return Tensor::from_vector(v, s);
}

Value keras_attention(const std::vector<Value>& a) {
  const std::vector<int64_t> heads = {0, 2, 1, 3};
  const Tensor q = transpose(a[0].tensor(), heads) * Scalar(0.125f);
  const Tensor p = softmax(matmul(q, transpose(a[1].tensor(), heads), false, true));
  return Value(transpose(matmul(p, transpose(a[2].tensor(), heads)), heads));
}

// The same under mixed_bfloat16 as kiln's Keras writes it: bf16 operands, the
// scale and the softmax computed in float32 between Casts.
Value keras_attention_bf16(const std::vector<Value>& a) {
  const std::vector<int64_t> heads = {0, 2, 1, 3};
  const auto f32 = [](const Tensor& t) { return cast(t, DType::kFloat32); };
  const auto bf16 = [](const Tensor& t) { return cast(t, DType::kBFloat16); };
  const Tensor q = bf16(f32(transpose(a[0].tensor(), heads)) * Scalar(0.125f));
  const Tensor s = matmul(q, transpose(a[1].tensor(), heads), false, true);
  const Tensor p = bf16(softmax(f32(s)));
  return Value(transpose(matmul(p, transpose(a[2].tensor(), heads)), heads));
}

// arg 0: jit_compile; arg 1: fuse_attention on; arg 2: bfloat16.
void BM_KerasAttention8x128x4x64(benchmark::State& state) {
  FunctionOptions o;
  o.jit_compile = state.range(0) == 1;
  if (state.range(1) == 0) o.disabled_passes = {"fuse_attention"};
  const bool half = state.range(2) == 1;
  Function f(half ? keras_attention_bf16 : keras_attention, o);
  const Shape s{kB, kT, kN, kH};
  auto operand = [&](double freq) {
    const Tensor t = wave(s, freq);
    return Value(half ? cast(t, DType::kBFloat16) : t);
  };
  const std::vector<Value> args = {operand(0.37), operand(0.71), operand(0.53)};
  f(args);
  for (auto _ : state) {
    Value y = f(args);
    benchmark::DoNotOptimize(y);
  }
  const double flops = 4.0 * kB * kN * kT * kT * kH;  // the two products
  state.counters["GFLOPS"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_KerasAttention8x128x4x64)
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})
    ->ArgNames({"jit", "fused", "bf16"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
