// Broadcasting binary and ternary kernels with short inner dims: a column
// against a row ([R, 1] op [1, C]), a row vector against a matrix ([R, C] op
// [C]), a column against a matrix, a 3-D pattern, a select, and seed 000's
// eager CharUnpack (expand_dims, right_shift, bitwise_and, reshape, cast).
// Dense ops of the same output size are the references. Items are output
// elements; timings are wall-clock (the kernels use the thread pool).
//
// --kiln_threads=N sets kiln::config().num_threads (default: one per core).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_flags.h"
#include "kiln/kiln.h"

namespace {
using namespace kiln;

constexpr int64_t kOut = int64_t{1} << 22;  // ~4M output elements

template <typename T>
Tensor filled(const Shape& shape, int mod, T start) {
  std::vector<T> v(static_cast<size_t>(shape.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(start + static_cast<T>(i % mod));
  return Tensor::from_vector(v, shape);
}

void finish(benchmark::State& state, int64_t out_elements) {
  state.SetItemsProcessed(state.iterations() * out_elements);
}

// uint8 [3276800, 1] >> [8]: CharUnpack's right shift at [8192, 400].
void BM_RightShiftColumnU8(benchmark::State& state) {
  const int64_t rows = 8192 * 400;
  const Tensor x = filled<uint8_t>({rows, 1}, 251, 0);
  const Tensor s = Tensor::from_vector(std::vector<uint8_t>{7, 6, 5, 4, 3, 2, 1, 0}, {8});
  for (auto _ : state) {
    Tensor y = right_shift(x, s);
    benchmark::DoNotOptimize(y.raw_data());
  }
  finish(state, rows * 8);
}
BENCHMARK(BM_RightShiftColumnU8)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same shift with both operands dense (reference for the integer loops).
void BM_RightShiftDenseU8(benchmark::State& state) {
  const int64_t n = 8192 * 400 * 8;
  const Tensor x = filled<uint8_t>({n}, 251, 0);
  const Tensor s = filled<uint8_t>({n}, 8, 0);
  for (auto _ : state) {
    Tensor y = right_shift(x, s);
    benchmark::DoNotOptimize(y.raw_data());
  }
  finish(state, n);
}
BENCHMARK(BM_RightShiftDenseU8)->Unit(benchmark::kMillisecond)->UseRealTime();

// float32 [kOut] + [kOut]: the dense reference for the float cases.
void BM_AddDense(benchmark::State& state) {
  const Tensor a = filled<float>({kOut}, 1000, 1.f), b = filled<float>({kOut}, 999, 2.f);
  for (auto _ : state) {
    Tensor y = add(a, b);
    benchmark::DoNotOptimize(y.raw_data());
  }
  finish(state, kOut);
}
BENCHMARK(BM_AddDense)->Unit(benchmark::kMicrosecond)->UseRealTime();

// float32 [R, C] + [C], R * C = kOut.
void BM_AddRowVector(benchmark::State& state) {
  const int64_t c = state.range(0), r = kOut / c;
  const Tensor a = filled<float>({r, c}, 1000, 1.f), b = filled<float>({c}, 999, 2.f);
  for (auto _ : state) {
    Tensor y = add(a, b);
    benchmark::DoNotOptimize(y.raw_data());
  }
  finish(state, r * c);
}
BENCHMARK(BM_AddRowVector)
    ->Arg(8)
    ->Arg(32)
    ->Arg(64)
    ->Arg(128)
    ->Arg(1000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// float32 [R, 1] * [1, C] (outer product), R * C = kOut.
void BM_MulOuter(benchmark::State& state) {
  const int64_t c = state.range(0), r = kOut / c;
  const Tensor a = filled<float>({r, 1}, 1000, 1.f), b = filled<float>({1, c}, 999, 2.f);
  for (auto _ : state) {
    Tensor y = multiply(a, b);
    benchmark::DoNotOptimize(y.raw_data());
  }
  finish(state, r * c);
}
BENCHMARK(BM_MulOuter)
    ->Arg(8)
    ->Arg(16)
    ->Arg(32)
    ->Arg(64)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// float32 [R, 1] + [R, C], R * C = kOut.
void BM_AddColumn(benchmark::State& state) {
  const int64_t c = state.range(0), r = kOut / c;
  const Tensor a = filled<float>({r, 1}, 1000, 1.f), b = filled<float>({r, c}, 999, 2.f);
  for (auto _ : state) {
    Tensor y = add(a, b);
    benchmark::DoNotOptimize(y.raw_data());
  }
  finish(state, r * c);
}
BENCHMARK(BM_AddColumn)
    ->Arg(8)
    ->Arg(16)
    ->Arg(32)
    ->Arg(64)
    ->Arg(128)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// float32 [A, 64, 1] + [1, 64, C], A * 64 * C = kOut.
void BM_Add3D(benchmark::State& state) {
  const int64_t c = state.range(0), b = 64, a = kOut / (b * c);
  const Tensor x = filled<float>({a, b, 1}, 1000, 1.f), y = filled<float>({1, b, c}, 999, 2.f);
  for (auto _ : state) {
    Tensor z = add(x, y);
    benchmark::DoNotOptimize(z.raw_data());
  }
  finish(state, a * b * c);
}
BENCHMARK(BM_Add3D)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond)->UseRealTime();

// where(bool [R, 1], float32 [R, C], float32 [C]), R * C = kOut.
void BM_SelectColumn(benchmark::State& state) {
  const int64_t c = state.range(0), r = kOut / c;
  const Tensor cond = less(filled<float>({r, 1}, 7, 0.f), Tensor(3.f));
  const Tensor x = filled<float>({r, c}, 1000, 1.f), y = filled<float>({c}, 999, 2.f);
  for (auto _ : state) {
    Tensor z = where(cond, x, y);
    benchmark::DoNotOptimize(z.raw_data());
  }
  finish(state, r * c);
}
BENCHMARK(BM_SelectColumn)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Seed 000's CharUnpack, eager: uint8 [rows, 400] -> float32 [rows, 3200].
void BM_CharUnpackEager(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const Tensor x = filled<uint8_t>({rows, 400}, 253, 0);
  const Tensor shifts = Tensor::from_vector(std::vector<uint8_t>{7, 6, 5, 4, 3, 2, 1, 0}, {8});
  const Tensor one = cast(Tensor(1), DType::kUInt8);
  for (auto _ : state) {
    Tensor bits = bitwise_and(right_shift(expand_dims(x, -1), shifts), one);
    Tensor y = cast(reshape(bits, {rows, -1}), DType::kFloat32);
    benchmark::DoNotOptimize(y.raw_data());
  }
  finish(state, rows * 3200);
}
BENCHMARK(BM_CharUnpackEager)->Arg(64)->Arg(8192)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  argc = kiln::bench::take_kiln_flags(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
