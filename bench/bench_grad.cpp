// Eager GradientTape through a compiled function (issue 7, section 2): the
// function's forward call runs once and keeps what its backward reads, the
// backward is one compiled call. Compared with the same ops run eagerly
// under the tape.
// Also the convolution backward kernels (issue 16): a 3x3 conv
// 8x56x56x64 -> 64 (SAME) and 1x56x56x64 -> 64, and a 3x3 depthwise conv
// 8x56x56x64, input and filter gradients.
// Run: bench_grad --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// (--kiln_threads=N sets the thread budget).
#include <benchmark/benchmark.h>

#include "bench_flags.h"
#include "kiln/function.h"
#include "kiln/kiln.h"

namespace {
using namespace kiln;

// A two-layer MLP (batch 64, 256 -> 256 -> 10) with tanh, squared loss.
struct Mlp {
  Variable w1{random_normal({256, 256}, 0, 0.05, DType::kFloat32, 1), "w1"};
  Variable b1{zeros({256}, DType::kFloat32), "b1"};
  Variable w2{random_normal({256, 10}, 0, 0.05, DType::kFloat32, 2), "w2"};
  Tensor x = random_normal({64, 256}, 0, 1, DType::kFloat32, 3);

  Tensor forward(const Tensor& in) {
    Tensor h = tanh(matmul(in, w1.read_value()) + b1.read_value());
    Tensor y = matmul(h, w2.read_value());
    return reduce_sum(y * y);
  }
};

// A 40-op elementwise chain on 256x256 (forward costs as much as backward).
Tensor chain(const Tensor& x) {
  Tensor y = x;
  for (int i = 0; i < 10; ++i) y = tanh(y) * x + sin(y) * 0.5f;
  return reduce_sum(y);
}

template <typename Run>
void grad_loop(benchmark::State& state, Run run) {
  run();
  for (auto _ : state) run();
}

void BM_TapeMlp_Eager(benchmark::State& state) {
  Mlp m;
  grad_loop(state, [&] {
    GradientTape tape;
    Tensor loss = m.forward(m.x);
    auto g = tape.gradient(loss, {m.w1, m.b1, m.w2});
    benchmark::DoNotOptimize(g[0].impl());
  });
}
BENCHMARK(BM_TapeMlp_Eager)->Unit(benchmark::kMicrosecond);

void BM_TapeMlp_Function(benchmark::State& state) {
  Mlp m;
  FunctionOptions o;
  o.name = "mlp";
  Function f([&](const std::vector<Value>& a) { return Value(m.forward(a[0].tensor())); }, o);
  grad_loop(state, [&] {
    GradientTape tape;
    Tensor loss = f({m.x}).tensor();
    auto g = tape.gradient(loss, {m.w1, m.b1, m.w2});
    benchmark::DoNotOptimize(g[0].impl());
  });
}
BENCHMARK(BM_TapeMlp_Function)->Unit(benchmark::kMicrosecond);

void BM_TapeChain_Eager(benchmark::State& state) {
  Tensor x = random_uniform({256, 256}, -1, 1, DType::kFloat32, 4);
  grad_loop(state, [&] {
    GradientTape tape;
    tape.watch(x);
    Tensor y = chain(x);
    Tensor g = tape.gradient(y, x);
    benchmark::DoNotOptimize(g.impl());
  });
}
BENCHMARK(BM_TapeChain_Eager)->Unit(benchmark::kMicrosecond);

void BM_TapeChain_Function(benchmark::State& state) {
  Tensor x = random_uniform({256, 256}, -1, 1, DType::kFloat32, 4);
  FunctionOptions o;
  o.name = "chain";
  Function f([](const std::vector<Value>& a) { return Value(chain(a[0].tensor())); }, o);
  grad_loop(state, [&] {
    GradientTape tape;
    tape.watch(x);
    Tensor y = f({x}).tensor();
    Tensor g = tape.gradient(y, x);
    benchmark::DoNotOptimize(g.impl());
  });
}
BENCHMARK(BM_TapeChain_Function)->Unit(benchmark::kMicrosecond);

// ---- convolution backward ----

// A 3x3 SAME convolution of n x 56 x 56 x 64 (64 filters, or depthwise).
struct ConvGrad {
  int64_t n;
  bool depthwise;
  Tensor x = random_normal({n, 56, 56, 64}, 0, 1, DType::kFloat32, 5);
  Tensor f = random_normal({3, 3, 64, depthwise ? 1 : 64}, 0, 0.1, DType::kFloat32, 6);
  Tensor dy = random_normal({n, 56, 56, 64}, 0, 1, DType::kFloat32, 7);
  Tensor x_shape = Tensor::from_vector(std::vector<int64_t>{n, 56, 56, 64}, Shape{4});
  Tensor f_shape =
      Tensor::from_vector(std::vector<int64_t>{3, 3, 64, depthwise ? 1 : 64}, Shape{4});

  Tensor input_grad() const {
    return depthwise ? depthwise_conv2d_backprop_input(x_shape, f, dy, {1, 1}, "SAME")
                     : conv2d_backprop_input(x_shape, f, dy, {1, 1}, "SAME");
  }
  Tensor filter_grad() const {
    return depthwise ? depthwise_conv2d_backprop_filter(x, f_shape, dy, {1, 1}, "SAME")
                     : conv2d_backprop_filter(x, f_shape, dy, {1, 1}, "SAME");
  }
};

// state.range(0): batch; range(1): depthwise; range(2): filter (else input) gradient.
void BM_ConvBackprop(benchmark::State& state) {
  const ConvGrad c{state.range(0), state.range(1) != 0};
  const bool filter = state.range(2) != 0;
  grad_loop(state, [&] {
    Tensor g = filter ? c.filter_grad() : c.input_grad();
    benchmark::DoNotOptimize(g.impl());
  });
}
BENCHMARK(BM_ConvBackprop)
    ->ArgNames({"n", "depthwise", "filter"})
    ->Args({8, 0, 0})
    ->Args({8, 0, 1})
    ->Args({1, 0, 0})
    ->Args({1, 0, 1})
    ->Args({8, 1, 0})
    ->Args({8, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  argc = kiln::bench::take_kiln_flags(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
