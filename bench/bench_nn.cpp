// NN kernels against the libraries they sit on, measured in the same process:
//  - matmul 1024x1024 float32: kiln::matmul vs cblas_sgemm on preallocated
//    buffers (target: kiln within 10%);
//  - conv2d 1x200x200x100 input, 100 filters 3x3, VALID: kiln::conv2d vs a
//    oneDNN convolution primitive created once and executed on preallocated
//    memory with weights already in its preferred layout (target: within 15%);
//  - reduce_sum over 1M float32 vs a plain loop;
//  - softmax / log_softmax [4096, 1024] float32 vs a parallel copy (the floor);
//  - softmax and layer norm (moments + batch_normalization over the last dim)
//    [4096, 1024] float32 in graph mode and under jit_compile (row kernels);
//  - a convolution block epilogue, Conv2D 3x3 (1x96x96x64 -> 64, SAME) or
//    DepthwiseConv2dNative 3x3 (1x96x96x64), then BiasAdd, batch-norm
//    scale/shift (Mul, AddV2 with [C] operands) and swish: eager op by op vs
//    a function without conv fusion vs a function (fused into one oneDNN
//    primitive with post-ops by the fuse_conv pass).
// Run: bench_nn --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "kiln/function.h"
#include "kiln/kiln.h"

namespace {
using namespace kiln;

template <typename T>
Tensor wave(const Shape& s, double freq) {
  std::vector<T> v(static_cast<size_t>(s.num_elements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<T>(std::sin(freq * static_cast<double>(i)));
  return Tensor::from_vector(v, s);
}

// ---- matmul ----

constexpr int kN = 1024;

void set_flops(benchmark::State& state, double flops_per_iter) {
  state.counters["GFLOPS"] = benchmark::Counter(
      flops_per_iter * static_cast<double>(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

void BM_MatMul1024_Kiln(benchmark::State& state) {
  const Tensor a = wave<float>({kN, kN}, 0.1), b = wave<float>({kN, kN}, 0.2);
  for (auto _ : state) {
    Tensor c = matmul(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
  set_flops(state, 2.0 * kN * kN * kN);
}
BENCHMARK(BM_MatMul1024_Kiln)->Unit(benchmark::kMillisecond)->UseRealTime();

// OpenBLAS's own threads, as many as kiln's budget (kiln itself keeps OpenBLAS
// single-threaded and splits the product over its pool; set back afterwards).
void BM_MatMul1024_OpenBLAS(benchmark::State& state) {
  const Tensor a = wave<float>({kN, kN}, 0.1), b = wave<float>({kN, kN}, 0.2);
  std::vector<float> c(static_cast<size_t>(kN) * kN);
  openblas_set_num_threads(ThreadPool::global().num_threads());
  struct Restore {
    ~Restore() { openblas_set_num_threads(1); }
  } restore;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.f, a.data<float>(), kN,
                b.data<float>(), kN, 0.f, c.data(), kN);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, 2.0 * kN * kN * kN);
}
BENCHMARK(BM_MatMul1024_OpenBLAS)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- conv2d ----

constexpr int64_t kH = 200, kW = 200, kC = 100, kO = 100, kK = 3;
constexpr double kConvFlops = 2.0 * (kH - kK + 1) * (kW - kK + 1) * kO * kK * kK * kC;

void BM_Conv2D_Kiln(benchmark::State& state) {
  const Tensor x = wave<float>({1, kH, kW, kC}, 0.01), f = wave<float>({kK, kK, kC, kO}, 0.3);
  for (auto _ : state) {
    Tensor y = conv2d(x, f, {1, 1}, "VALID");
    benchmark::DoNotOptimize(y.impl());
  }
  set_flops(state, kConvFlops);
}
BENCHMARK(BM_Conv2D_Kiln)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Conv2D_OneDNN(benchmark::State& state) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const Tensor x = wave<float>({1, kH, kW, kC}, 0.01), f = wave<float>({kK, kK, kC, kO}, 0.3);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const int64_t oh = kH - kK + 1, ow = kW - kK + 1;
  dnnl::memory::desc src_md({1, kC, kH, kW}, dt::f32, tag::nhwc);
  dnnl::memory::desc dst_md({1, kO, oh, ow}, dt::f32, tag::nhwc);
  dnnl::memory::desc user_wei_md({kO, kC, kK, kK}, dt::f32, tag::hwio);
  dnnl::memory::desc any_wei({kO, kC, kK, kK}, dt::f32, tag::any);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, src_md, any_wei, dst_md,
                                    {1, 1}, {0, 0}, {0, 0}, {0, 0});
  dnnl::convolution_forward::primitive_desc pd(d, eng);
  dnnl::convolution_forward conv(pd);
  dnnl::memory src(src_md, eng, const_cast<float*>(x.data<float>()));
  dnnl::memory user_wei(user_wei_md, eng, const_cast<float*>(f.data<float>()));
  dnnl::memory wei(pd.weights_desc(), eng);
  dnnl::reorder(user_wei, wei).execute(s, user_wei, wei);
  dnnl::memory dst(dst_md, eng);
  s.wait();
  for (auto _ : state) {
    conv.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    s.wait();
    benchmark::DoNotOptimize(dst.get_data_handle());
  }
  set_flops(state, kConvFlops);
}
BENCHMARK(BM_Conv2D_OneDNN)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- reduce_sum ----

constexpr int64_t kReduceN = 1 << 20;

void BM_ReduceSum1M_Kiln(benchmark::State& state) {
  const Tensor x = wave<float>({kReduceN}, 0.001);
  for (auto _ : state) {
    Tensor s = reduce_sum(x);
    benchmark::DoNotOptimize(s.impl());
  }
  state.SetBytesProcessed(state.iterations() * kReduceN * 4);
}
BENCHMARK(BM_ReduceSum1M_Kiln)->UseRealTime();

void BM_ReduceSum1M_PlainLoop(benchmark::State& state) {
  const Tensor x = wave<float>({kReduceN}, 0.001);
  const float* p = x.data<float>();
  for (auto _ : state) {
    float s = 0;
    for (int64_t i = 0; i < kReduceN; ++i) s += p[i];
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(state.iterations() * kReduceN * 4);
}
BENCHMARK(BM_ReduceSum1M_PlainLoop)->UseRealTime();

// Row-wise max and sum over [4096, 1024] (logits' max, a loss's sum): the same
// traffic, so the same time when both folds vectorize.
template <Tensor (*kReduce)(const Tensor&, const std::vector<int64_t>&, bool)>
void reduce_rows_bench(benchmark::State& state) {
  const Tensor x = wave<float>({4096, 1024}, 0.001);
  for (auto _ : state) {
    Tensor s = kReduce(x, {1}, false);
    benchmark::DoNotOptimize(s.impl());
  }
  state.SetBytesProcessed(state.iterations() * 4096 * 1024 * 4);
}
BENCHMARK(reduce_rows_bench<reduce_max>)->Name("BM_ReduceMaxRows4096x1024_Kiln")->UseRealTime();
BENCHMARK(reduce_rows_bench<reduce_sum>)->Name("BM_ReduceSumRows4096x1024_Kiln")->UseRealTime();

// Column sums (outer-axis reduction) over a 1024x1024 matrix.
void BM_ReduceSumAxis0_1024x1024_Kiln(benchmark::State& state) {
  const Tensor x = wave<float>({1024, 1024}, 0.001);
  for (auto _ : state) {
    Tensor s = reduce_sum(x, {0});
    benchmark::DoNotOptimize(s.impl());
  }
  state.SetBytesProcessed(state.iterations() * kReduceN * 4);
}
BENCHMARK(BM_ReduceSumAxis0_1024x1024_Kiln)->UseRealTime();

// ---- softmax [4096, 1024] float32 vs the memory-traffic floor ----
// The floor: one read and one write of the tensor (a parallel copy), the least any
// softmax kernel moves.

constexpr int64_t kSmRows = 4096, kSmCols = 1024;

void softmax_bench(benchmark::State& state, Tensor (*f)(const Tensor&)) {
  const Tensor x = wave<float>({kSmRows, kSmCols}, 0.01);
  for (auto _ : state) {
    Tensor y = f(x);
    benchmark::DoNotOptimize(y.impl());
  }
  state.SetBytesProcessed(state.iterations() * kSmRows * kSmCols * 8);
}
void BM_Softmax4096x1024_Kiln(benchmark::State& state) {
  softmax_bench(state, softmax);
}
void BM_LogSoftmax4096x1024_Kiln(benchmark::State& state) {
  softmax_bench(state, log_softmax);
}
BENCHMARK(BM_Softmax4096x1024_Kiln)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LogSoftmax4096x1024_Kiln)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Copy4096x1024_Floor(benchmark::State& state) {
  const Tensor x = wave<float>({kSmRows, kSmCols}, 0.01);
  for (auto _ : state) {
    Tensor y = Tensor::empty(DType::kFloat32, x.shape());
    const float* src = x.data<float>();
    float* dst = y.mutable_data<float>();
    parallel_for(kSmRows, 64, [&](int64_t r0, int64_t r1) {
      std::memcpy(dst + r0 * kSmCols, src + r0 * kSmCols, (r1 - r0) * kSmCols * sizeof(float));
    });
    benchmark::DoNotOptimize(y.impl());
  }
  state.SetBytesProcessed(state.iterations() * kSmRows * kSmCols * 8);
}
BENCHMARK(BM_Copy4096x1024_Floor)->Unit(benchmark::kMillisecond)->UseRealTime();

using Body = std::function<Value(const std::vector<Value>&)>;

// Times calls of `body` as a function, graph mode or jit_compile (`jit`),
// traced (and compiled) outside the timing.
void time_function(benchmark::State& state, bool jit, const Body& body,
                   const std::vector<Value>& args,
                   std::optional<std::vector<ArgSpec>> signature = std::nullopt) {
  FunctionOptions o;
  o.jit_compile = jit;
  o.input_signature = std::move(signature);
  Function f(body, o);
  f(args);
  for (auto _ : state) {
    Value y = f(args);
    benchmark::DoNotOptimize(y);
  }
}

// Softmax and layer norm as functions: graph mode (arg 0) vs jit_compile (arg 1).
void row_function_bench(benchmark::State& state, const Body& body) {
  const Tensor x = wave<float>({kSmRows, kSmCols}, 0.01);
  const Tensor gamma = wave<float>({kSmCols}, 0.3) + 1.f, beta = wave<float>({kSmCols}, 0.7);
  time_function(state, state.range(0) == 1, body, {Value(x), Value(gamma), Value(beta)});
  state.SetBytesProcessed(state.iterations() * kSmRows * kSmCols * 8);
}
void BM_SoftmaxFunction4096x1024(benchmark::State& state) {
  row_function_bench(state,
                     [](const std::vector<Value>& a) { return Value(softmax(a[0].tensor())); });
}
void BM_LayerNormFunction4096x1024(benchmark::State& state) {
  row_function_bench(state, [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &gamma = a[1].tensor(), &beta = a[2].tensor();
    const Tensor mean = reduce_mean(x, {-1}, true);
    const Tensor var = reduce_mean(squared_difference(x, mean), {-1}, true);
    const Tensor inv = rsqrt(var + 1e-3f) * gamma;
    return Value(x * inv + (beta - mean * inv));
  });
}
// softmax(x + 0.5): graph mode runs the add and the softmax kernel; under
// jit_compile both are one compiled kernel (as a lone Softmax is too).
void BM_ShiftSoftmaxFunction4096x1024(benchmark::State& state) {
  row_function_bench(
      state, [](const std::vector<Value>& a) { return Value(softmax(a[0].tensor() + 0.5f)); });
}
BENCHMARK(BM_SoftmaxFunction4096x1024)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ShiftSoftmaxFunction4096x1024)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LayerNormFunction4096x1024)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// ---- float16: casts, and a mixed-precision chain as a function ----

// Eager float32 -> float16 -> float32 of [4096, 1024] (two cast kernels).
void BM_HalfCastRoundTrip4096x1024(benchmark::State& state) {
  const Tensor x = wave<float>({kSmRows, kSmCols}, 0.01) * 100.f;
  for (auto _ : state) {
    Tensor y = cast(cast(x, DType::kFloat16), DType::kFloat32);
    benchmark::DoNotOptimize(y.impl());
  }
  state.SetBytesProcessed(state.iterations() * kSmRows * kSmCols * 12);
}
BENCHMARK(BM_HalfCastRoundTrip4096x1024)->Unit(benchmark::kMillisecond)->UseRealTime();

// tanh(x * w + b) * x in float16 (each op computes in float32 and rounds):
// graph mode (arg 0) runs the casts as kernels, jit_compile (arg 1) fuses them.
void BM_HalfChainFunction4096x1024(benchmark::State& state) {
  const bool jit = state.range(0) == 1;
  const Body body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &w = a[1].tensor(), &b = a[2].tensor();
    return Value(tanh(x * w + b) * x);
  };
  const auto h = DType::kFloat16;
  const std::vector<Value> args{Value(cast(wave<float>({kSmRows, kSmCols}, 0.01), h)),
                                Value(cast(wave<float>({kSmCols}, 0.3), h)),
                                Value(cast(wave<float>({kSmCols}, 0.7), h))};
  time_function(state, jit, body, args);
  state.SetBytesProcessed(state.iterations() * kSmRows * kSmCols * 4);
}
BENCHMARK(BM_HalfChainFunction4096x1024)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// relu(transpose(x, perm) * 2 + 1) over [64, 256, 256] float32: graph mode
// (arg 0: perm [1, 0, 2]; arg 2: [0, 2, 1]) copies the transpose out first;
// jit_compile (args 1, 3) reads x through the permutation: in place when it
// keeps the last dim (perm [1, 0, 2]), in tiles when it swaps the inner two.
void BM_TransposeChainFunction64x256x256(benchmark::State& state) {
  const std::vector<int64_t> perm =
      state.range(0) < 2 ? std::vector<int64_t>{1, 0, 2} : std::vector<int64_t>{0, 2, 1};
  time_function(state, state.range(0) % 2 == 1,
                [perm](const std::vector<Value>& a) {
                  return Value(relu(transpose(a[0].tensor(), perm) * 2.f + 1.f));
                },
                {Value(wave<float>({64, 256, 256}, 0.01))});
  state.SetBytesProcessed(state.iterations() * 64 * 256 * 256 * 8);
}
BENCHMARK(BM_TransposeChainFunction64x256x256)
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// relu(transpose(x) * 2 + 1) over a [2048, 2048] float32 matrix: graph mode
// (0) copies the transpose out; jit (1) reads x in tiles of 32 rows (the
// source's rows are 8 KB apart: a strided read per value was 2x slower than
// graph mode).
void BM_TransposeSwapFunction2048x2048(benchmark::State& state) {
  time_function(state, state.range(0) == 1,
                [](const std::vector<Value>& a) {
                  return Value(relu(transpose(a[0].tensor(), {1, 0}) * 2.f + 1.f));
                },
                {Value(wave<float>({2048, 2048}, 0.01))});
  state.SetBytesProcessed(state.iterations() * 2048 * 2048 * 8);
}
BENCHMARK(BM_TransposeSwapFunction2048x2048)
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// relu(transpose(x, [0, 3, 1, 2]) * 2 + 1): NHWC to NCHW over x [32, 56,
// 56, 64] float32. Graph mode (0) copies the transpose out; jit (1) reads x
// in tiles (H, W merge into one dim: a swap of the inner two).
void BM_NhwcToNchwFunction(benchmark::State& state) {
  time_function(state, state.range(0) == 1,
                [](const std::vector<Value>& a) {
                  return Value(relu(transpose(a[0].tensor(), {0, 3, 1, 2}) * 2.f + 1.f));
                },
                {Value(wave<float>({32, 56, 56, 64}, 0.01))});
  state.SetBytesProcessed(state.iterations() * 32 * 56 * 56 * 64 * 8);
}
BENCHMARK(BM_NhwcToNchwFunction)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->UseRealTime();

// tanh(x[:, ::2]) * 2 + 1 over x [4096, 2048] float32: graph mode (0) copies
// the slice out first; jit (1) reads every other value of each row in place.
void BM_StridedSliceFunction4096x2048(benchmark::State& state) {
  time_function(state, state.range(0) == 1,
                [](const std::vector<Value>& a) {
                  return Value(tanh(index(a[0].tensor(), {Slice(), Slice().step(2)})) * 2.f + 1.f);
                },
                {Value(wave<float>({4096, 2048}, 0.01))});
  state.SetBytesProcessed(state.iterations() * 4096 * 2048 * 6);
}
BENCHMARK(BM_StridedSliceFunction4096x2048)
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Views of computed values over [2048, 2048] float32: transpose(tanh(x) *
// 2) + 1 (args 0, 1) and (tanh(x * 3) * 2)[:, ::2] + 1 (args 2, 3). Graph
// mode (even args) computes the value, copies the view out and adds; jit
// (odd) moves the view onto x (sink_views.h) and runs one kernel reading x
// in tiles or strided (and computes only the points a slice keeps).
void BM_ViewOfComputedFunction2048x2048(benchmark::State& state) {
  const bool slice = state.range(0) >= 2;
  time_function(state, state.range(0) % 2 == 1,
                [slice](const std::vector<Value>& a) {
                  const Tensor& x = a[0].tensor();
                  if (slice)
                    return Value(index(tanh(x * 3.f) * 2.f, {Slice(), Slice().step(2)}) + 1.f);
                  return Value(transpose(tanh(x) * 2.f) + 1.f);
                },
                {Value(wave<float>({2048, 2048}, 0.01))});
  state.SetBytesProcessed(state.iterations() * 2048 * 2048 * (slice ? 6 : 8));
}
BENCHMARK(BM_ViewOfComputedFunction2048x2048)
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// |z * w + conj(z) * 2 - w| over [1024, 1024] complex values, w a broadcast
// row: graph mode runs five kernels (0: complex64, 2: complex128); jit (1, 3)
// runs one over GCC's complex types.
void BM_ComplexChainFunction1024x1024(benchmark::State& state) {
  const DType dt = state.range(0) < 2 ? DType::kComplex64 : DType::kComplex128;
  const DType part = dt == DType::kComplex64 ? DType::kFloat32 : DType::kFloat64;
  auto values = [&](const Shape& s, double f) {
    return complex(cast(wave<float>(s, f), part), cast(wave<float>(s, f * 1.7), part) + 2.f);
  };
  time_function(state, state.range(0) % 2 == 1,
                [](const std::vector<Value>& a) {
                  const Tensor &z = a[0].tensor(), &w = a[1].tensor();
                  return Value(complex_abs(z * w + conj(z) * cast(Tensor(2.f), z.dtype()) - w));
                },
                {Value(values({1024, 1024}, 0.01)), Value(values({1024}, 0.03))});
  state.SetBytesProcessed(state.iterations() * 1024 * 1024 *
                          static_cast<int64_t>(dtype_size(dt) + dtype_size(part)));
}
BENCHMARK(BM_ComplexChainFunction1024x1024)
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// An LSTM cell's gates from pre-activations [512, 4 x 512] (split in four,
// sigmoid/tanh, the new state and output): graph mode (0) runs a split and
// separate kernels; jit (1) reads the four parts in place in one kernel.
void BM_LstmGatesFunction512x512(benchmark::State& state) {
  const bool jit = state.range(0) == 1;
  const Body body = [](const std::vector<Value>& a) {
    const std::vector<Tensor> g = split(a[0].tensor(), 4, 1);
    const Tensor c = sigmoid(g[1]) * a[1].tensor() + sigmoid(g[0]) * tanh(g[2]);
    return Value::list({Value(sigmoid(g[3]) * tanh(c)), Value(c)});
  };
  const std::vector<Value> args{Value(wave<float>({512, 4 * 512}, 0.01)),
                                Value(wave<float>({512, 512}, 0.02))};
  time_function(state, jit, body, args);
  state.SetBytesProcessed(state.iterations() * 512 * 512 * 4 * 8);
}
BENCHMARK(BM_LstmGatesFunction512x512)
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A whole LSTM cell, z = x @ W + h @ U + b split in four gates, over a
// batch of rows x 256 inputs and 256 units (arg 1: rows). Graph mode (arg 0
// = 0) runs the products, the sum with the bias, the split and the gates;
// jit (1) moves the split onto the products and the bias (sink_views.h), so
// one kernel reads four parts of each in place and z is never written.
void BM_LstmCellFunction(benchmark::State& state) {
  const bool jit = state.range(0) == 1;
  const int64_t rows = state.range(1), units = 256;
  const Body body = [](const std::vector<Value>& a) {
    const Tensor z =
        matmul(a[0].tensor(), a[2].tensor()) + matmul(a[1].tensor(), a[3].tensor()) + a[4].tensor();
    const std::vector<Tensor> g = split(z, 4, 1);
    const Tensor c = sigmoid(g[1]) * a[5].tensor() + sigmoid(g[0]) * tanh(g[2]);
    return Value::list({Value(sigmoid(g[3]) * tanh(c)), Value(c)});
  };
  const std::vector<Value> args{
      Value(wave<float>({rows, units}, 0.01)),       Value(wave<float>({rows, units}, 0.02)),
      Value(wave<float>({units, 4 * units}, 0.001)), Value(wave<float>({units, 4 * units}, 0.002)),
      Value(wave<float>({4 * units}, 0.03)),         Value(wave<float>({rows, units}, 0.04))};
  time_function(state, jit, body, args);
}
BENCHMARK(BM_LstmCellFunction)
    ->ArgsProduct({{0, 1}, {16, 512}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A dense layer's epilogue, gelu-like (x * sigmoid(1.702 x)) after the bias:
// graph mode (0) runs MatMul, then the bias and activation; jit (1) computes
// the product by blocks of rows inside the epilogue's kernel. Sizes: rows x
// k inputs x 1024 units (args 1 and 2: rows, k).
void BM_DenseEpilogueFunction(benchmark::State& state) {
  const bool jit = state.range(0) == 1;
  const Body body = [](const std::vector<Value>& a) {
    const Tensor y = bias_add(matmul(a[0].tensor(), a[1].tensor()), a[2].tensor());
    return Value(y * sigmoid(y * 1.702f));
  };
  const int64_t rows = state.range(1), k = state.range(2);
  const std::vector<Value> args{Value(wave<float>({rows, k}, 0.01)),
                                Value(wave<float>({k, 1024}, 0.02)),
                                Value(wave<float>({1024}, 0.03))};
  time_function(state, jit, body, args);
  state.SetItemsProcessed(state.iterations() * rows * k * 1024);
}
BENCHMARK(BM_DenseEpilogueFunction)
    ->ArgsProduct({{0, 1}, {32, 4096}, {32, 256}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A batch norm in training over x [32, 28, 28, 128]: the statistics over N,
// H, W, then the normalized output. Graph mode (0) runs each op as a kernel;
// jit (1) folds the variance's reduction into the kernel of (x - mean)^2 and
// fuses the normalization.
void BM_BatchNormTrainingFunction(benchmark::State& state) {
  const bool jit = state.range(0) == 1;
  const Body body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor mean = reduce_mean(x, {0, 1, 2});
    const Tensor d = x - mean;
    const Tensor var = reduce_mean(d * d, {0, 1, 2});
    return Value::list(
        {Value(d * rsqrt(var + 1e-3f) * a[1].tensor() + a[2].tensor()), Value(mean), Value(var)});
  };
  const std::vector<Value> args{Value(wave<float>({32, 28, 28, 128}, 0.01)),
                                Value(wave<float>({128}, 0.02)), Value(wave<float>({128}, 0.03))};
  time_function(state, jit, body, args);
  state.SetBytesProcessed(state.iterations() * 32 * 28 * 28 * 128 * 4 * 2);
}
BENCHMARK(BM_BatchNormTrainingFunction)
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Reductions over middle dims: a global average pool of swish(x) over
// x [32, 28, 28, 256] (args 0, 1) and a mean over the steps of tanh(x) * 2
// for x [64, 512, 256] (args 2, 3). Graph mode (even) writes the value and
// reduces it; jit (odd) folds the reduction into the value's kernel (each
// leading value's rows apart), so the value never reaches memory.
void BM_MiddleFoldFunction(benchmark::State& state) {
  const bool pool = state.range(0) < 2;
  const Body body = [pool](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    if (pool) return Value(reduce_mean(x * sigmoid(x), {1, 2}));
    return Value(reduce_mean(tanh(x) * 2.f, {1}));
  };
  const std::vector<int64_t> dims =
      pool ? std::vector<int64_t>{32, 28, 28, 256} : std::vector<int64_t>{64, 512, 256};
  time_function(state, state.range(0) % 2 == 1, body, {Value(wave<float>(Shape(dims), 0.01))});
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  state.SetBytesProcessed(state.iterations() * n * 4);
}
BENCHMARK(BM_MiddleFoldFunction)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->UseRealTime();

// A channels-first batch norm's variance, mean((x - m)^2) over N, H, W of
// x [32, 64, 56, 56] (NCHW; dims [0, 2, 3], not one run), m the per-channel
// mean: graph mode (0) writes (x - m)^2 and reduces it; jit (1) splits the
// reduction into a row sum over H, W, computed in the kernel that squares,
// and a small reduction over N.
void BM_NchwVarianceFunction(benchmark::State& state) {
  const Body body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor d = x - a[1].tensor();
    return Value(reduce_mean(d * d, {0, 2, 3}));
  };
  const std::vector<int64_t> dims{32, 64, 56, 56};
  time_function(state, state.range(0) == 1, body,
                {Value(wave<float>(Shape(dims), 0.01)), Value(wave<float>({1, 64, 1, 1}, 0.1))});
  state.SetBytesProcessed(state.iterations() * 32 * 64 * 56 * 56 * 4);
}
BENCHMARK(BM_NchwVarianceFunction)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Siblings: three readers of x [2048, 2048] (abs, a float64 cast, a small
// chain): graph mode (0) runs three kernels reading x three times; jit (1)
// runs one kernel with three outputs that reads x once.
void BM_SiblingsFunction2048x2048(benchmark::State& state) {
  const Body body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value::list(
        {Value(abs(x)), Value(cast(x, DType::kFloat64)), Value(tanh(x) * 2.f + 1.f)});
  };
  time_function(state, state.range(0) == 1, body, {Value(wave<float>({2048, 2048}, 0.01))});
}
BENCHMARK(BM_SiblingsFunction2048x2048)
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Consumers of a kernel's value outside its cluster, over x [2048, 2048]:
// y = tanh(x) * 2 read by two chains (args 0, 1), and softmax(2x) beside the
// row max of 2x (args 2, 3). Graph mode (even); jit (odd) computes each
// consumer in the kernel that computes the value, so it is never re-read.
void BM_ConsumersFunction2048x2048(benchmark::State& state) {
  const bool rows = state.range(0) >= 2;
  const Body body = [rows](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    if (rows) return Value::list({Value(softmax(x * 2.f)), Value(reduce_max(x * 2.f, {-1}))});
    const Tensor y = tanh(x) * 2.f;
    return Value::list({Value((y + 1.f) * 3.f), Value(sigmoid(y) - 0.5f)});
  };
  time_function(state, state.range(0) % 2 == 1, body, {Value(wave<float>({2048, 2048}, 0.01))});
}
BENCHMARK(BM_ConsumersFunction2048x2048)
    ->DenseRange(0, 3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Row siblings over x [4096, 1024]: max, sum and min of each row (args 0,
// 1), and softmax(x) with the row max (args 2, 3). Graph mode (even) runs a
// reduce kernel (or softmax) per result; jit (odd) runs one row kernel that
// reads x once.
void BM_RowSiblingsFunction(benchmark::State& state) {
  const bool softmax_too = state.range(0) >= 2;
  const Body body = [softmax_too](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    if (softmax_too) return Value::list({Value(softmax(x)), Value(reduce_max(x, {-1}))});
    return Value::list(
        {Value(reduce_max(x, {-1})), Value(reduce_sum(x, {-1})), Value(reduce_min(x, {-1}, true))});
  };
  time_function(state, state.range(0) % 2 == 1, body, {Value(wave<float>({4096, 1024}, 0.01))});
}
BENCHMARK(BM_RowSiblingsFunction)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->UseRealTime();

// A reduction of a value that is also read elsewhere: t = x * sigmoid(x)
// returned with its sum over rows (args 0, 1; a bias gradient's shape) over
// x [4096, 1024], and a squeeze-and-excitation scale y * sigmoid(mean(y))
// over x [32, 28, 28, 256] (args 2, 3). Graph mode (even) writes the value
// and reduces it; jit (odd) writes it and folds a copy in the same pass.
void BM_FoldACopyFunction(benchmark::State& state) {
  const bool se = state.range(0) >= 2;
  const Body body = [se](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor y = x * sigmoid(x);
    if (se) return Value(y * sigmoid(reduce_mean(y, {1, 2}, true)));
    return Value::list({Value(y), Value(reduce_sum(y, {0}))});
  };
  const std::vector<int64_t> dims =
      se ? std::vector<int64_t>{32, 28, 28, 256} : std::vector<int64_t>{4096, 1024};
  time_function(state, state.range(0) % 2 == 1, body, {Value(wave<float>(Shape(dims), 0.01))});
}
BENCHMARK(BM_FoldACopyFunction)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->UseRealTime();

// A row mean behind a [None, None] signature: graph mode (0) writes x * 2 + 1
// and reduces it; jit (1) runs one row kernel that reads N at run time and
// counts the values in the same pass.
void BM_RowMeanUnknownDimsFunction4096x1024(benchmark::State& state) {
  const Body body = [](const std::vector<Value>& a) {
    return Value(reduce_mean(a[0].tensor() * 2.f + 1.f, {-1}));
  };
  time_function(state, state.range(0) == 1, body, {Value(wave<float>({kSmRows, kSmCols}, 0.01))},
                std::vector<ArgSpec>{{DType::kFloat32, Shape({-1, -1}), "x"}});
  state.SetBytesProcessed(state.iterations() * kSmRows * kSmCols * 4);
}
BENCHMARK(BM_RowMeanUnknownDimsFunction4096x1024)
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A language model's shifted logits behind a [None, None, 1024] signature:
// log_softmax(x[:, :-1] * 2) over x [8, 512, 1024]. Graph mode (0) copies
// the part out and runs the rows; jit (1) reads the rest of the dim of
// unknown size in place in one row kernel.
void BM_ShiftedLogitsFunction(benchmark::State& state) {
  const Body body = [](const std::vector<Value>& a) {
    return Value(log_softmax(index(a[0].tensor(), {Slice(), Slice(None, -1)}) * 2.f));
  };
  time_function(state, state.range(0) == 1, body, {Value(wave<float>({8, 512, 1024}, 0.01))},
                std::vector<ArgSpec>{{DType::kFloat32, Shape({-1, -1, 1024}), "x"}});
  state.SetBytesProcessed(state.iterations() * 8 * 511 * 1024 * 4);
}
BENCHMARK(BM_ShiftedLogitsFunction)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->UseRealTime();

// A mean squared error over [4096, 1024] (y, t): graph mode (0) writes
// (y - t)^2 and reduces it; jit (1) folds the mean into the kernel that
// computes it, so (y - t)^2 never reaches memory.
void BM_MeanSquaredErrorFunction(benchmark::State& state) {
  const bool jit = state.range(0) == 1;
  const Body body = [](const std::vector<Value>& a) {
    const Tensor d = a[0].tensor() - a[1].tensor();
    return Value(reduce_mean(d * d));
  };
  const std::vector<Value> args{Value(wave<float>({kSmRows, kSmCols}, 0.01)),
                                Value(wave<float>({kSmRows, kSmCols}, 0.02))};
  time_function(state, jit, body, args);
  state.SetBytesProcessed(state.iterations() * kSmRows * kSmCols * 8);
}
BENCHMARK(BM_MeanSquaredErrorFunction)
    ->DenseRange(0, 1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// ---- conv block epilogue: eager vs function vs fused function ----

constexpr int64_t kBlkH = 96, kBlkW = 96, kBlkC = 64;

Tensor block(const std::vector<Tensor>& a, bool depthwise) {
  Tensor y =
      depthwise ? depthwise_conv2d(a[0], a[1], {1, 1}, "SAME") : conv2d(a[0], a[1], {1, 1}, "SAME");
  y = bias_add(y, a[2]) * a[3] + a[4];
  return y * sigmoid(y);
}

std::vector<Tensor> block_inputs(bool depthwise) {
  return {wave<float>({1, kBlkH, kBlkW, kBlkC}, 0.01),
          wave<float>({3, 3, kBlkC, depthwise ? 1 : kBlkC}, 0.3), wave<float>({kBlkC}, 0.7),
          wave<float>({kBlkC}, 0.5) + 1.f, wave<float>({kBlkC}, 0.9)};
}

void block_eager(benchmark::State& state, bool depthwise) {
  const std::vector<Tensor> a = block_inputs(depthwise);
  for (auto _ : state) {
    Tensor y = block(a, depthwise);
    benchmark::DoNotOptimize(y.impl());
  }
}

// A function without fuse_conv, or with the default pipeline (fused).
void block_function(benchmark::State& state, bool depthwise, bool fused) {
  const std::vector<Tensor> a = block_inputs(depthwise);
  FunctionOptions o;
  o.name = "conv_block";
  if (!fused) o.disabled_passes = {"fuse_conv"};
  Function f(
      [depthwise](const std::vector<Value>& v) {
        std::vector<Tensor> t;
        for (const Value& x : v) t.push_back(x.tensor());
        return Value(block(t, depthwise));
      },
      o);
  std::vector<Value> args(a.begin(), a.end());
  Value warm = f(args);
  benchmark::DoNotOptimize(&warm);
  for (auto _ : state) {
    Value y = f(args);
    benchmark::DoNotOptimize(&y);
  }
}

void BM_ConvBlock_Eager(benchmark::State& s) {
  block_eager(s, false);
}
void BM_ConvBlock_FunctionUnfused(benchmark::State& s) {
  block_function(s, false, false);
}
void BM_ConvBlock_FunctionFused(benchmark::State& s) {
  block_function(s, false, true);
}
void BM_DepthwiseBlock_Eager(benchmark::State& s) {
  block_eager(s, true);
}
void BM_DepthwiseBlock_FunctionUnfused(benchmark::State& s) {
  block_function(s, true, false);
}
void BM_DepthwiseBlock_FunctionFused(benchmark::State& s) {
  block_function(s, true, true);
}
BENCHMARK(BM_ConvBlock_Eager)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ConvBlock_FunctionUnfused)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ConvBlock_FunctionFused)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_DepthwiseBlock_Eager)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_DepthwiseBlock_FunctionUnfused)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_DepthwiseBlock_FunctionFused)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
