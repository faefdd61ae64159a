// Eager GradientTape through a compiled function (issue 7, section 2): the
// function's forward call runs once and keeps what its backward reads, the
// backward is one compiled call. Compared with the same ops run eagerly
// under the tape.
#include <benchmark/benchmark.h>

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

}  // namespace

BENCHMARK_MAIN();
