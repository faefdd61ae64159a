// TensorArray writes in while loops (issue 7): n writes to one array, as a
// traced Function and eagerly, and the seed guide's dynamic_rnn forward plus
// gradient (n steps) under a tape inside a Function. Arg: n.
#include <benchmark/benchmark.h>

#include "kiln/function.h"
#include "kiln/gradient_tape.h"
#include "kiln/kiln.h"

namespace {
using namespace kiln;
using Vars = std::vector<Tensor>;

// Writes x * i at every index i < n, then stacks: [n, 4].
Tensor write_loop(const Tensor& x, int64_t n) {
  TensorArray ta(DType::kFloat32, n);
  Vars r = while_loop([n](const Vars& v) { return v[0] < static_cast<int32_t>(n); },
                      [&](const Vars& v) {
                        Tensor xi = x * cast(v[0], DType::kFloat32);
                        return Vars{v[0] + 1, ta.with_handle(v[1]).write(v[0], xi).handle()};
                      },
                      {Tensor(0), ta.handle()});
  return ta.with_handle(r[1]).stack();
}

void BM_TensorArrayWriteLoop_Function(benchmark::State& state) {
  const int64_t n = state.range(0);
  FunctionOptions o;
  o.name = "write_loop";
  Function f([n](const std::vector<Value>& a) { return Value(write_loop(a[0].tensor(), n)); }, o);
  std::vector<Value> args{Value(Tensor({1.f, 2.f, 3.f, 4.f}))};
  f(args);
  for (auto _ : state) {
    Value r = f(args);
    benchmark::DoNotOptimize(r.tensor().impl());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_TensorArrayWriteLoop_Function)
    ->Arg(100)
    ->Arg(800)
    ->Arg(3200)
    ->Unit(benchmark::kMillisecond);

void BM_TensorArrayWriteLoop_Eager(benchmark::State& state) {
  const int64_t n = state.range(0);
  Tensor x({1.f, 2.f, 3.f, 4.f});
  for (auto _ : state) {
    Tensor r = write_loop(x, n);
    benchmark::DoNotOptimize(r.impl());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_TensorArrayWriteLoop_Eager)
    ->Arg(100)
    ->Arg(800)
    ->Arg(3200)
    ->Unit(benchmark::kMillisecond);

// h_{t+1} = tanh(h_t W + x_t U) over x [n, 2, 4], states written to a
// TensorArray and stacked; loss = sum(states), gradients for W and U.
void BM_RnnForwardGrad_Function(benchmark::State& state) {
  const int64_t n = state.range(0);
  FunctionOptions o;
  o.name = "rnn_step";
  Function f(
      [n](const std::vector<Value>& a) {
        const Tensor &x = a[0].tensor(), &h0 = a[1].tensor(), &w = a[2].tensor(),
                     &u = a[3].tensor();
        GradientTape tape;
        tape.watch(w);
        tape.watch(u);
        // The element shape given, so that the old build (which lost it
        // across the loop) runs the same graph.
        TensorArray hs(DType::kFloat32, n, false, Shape({2, 8}));
        Vars r =
            while_loop([n](const Vars& v) { return v[0] < static_cast<int32_t>(n); },
                       [&](const Vars& v) {
                         Tensor h = tanh(matmul(v[1], w) + matmul(gather(x, v[0]), u));
                         return Vars{v[0] + 1, h, hs.with_handle(v[2]).write(v[0], h).handle()};
                       },
                       {Tensor(0), h0, hs.handle()});
        Tensor loss = reduce_sum(hs.with_handle(r[2]).stack());
        std::vector<Tensor> g = tape.gradient(loss, {GradSource(w), GradSource(u)});
        return Value::list({Value(loss), Value(g[0]), Value(g[1])});
      },
      o);
  std::vector<Value> args{Value(random_uniform({n, 2, 4}, 0, 1, DType::kFloat32, 1)),
                          Value(zeros({2, 8})),
                          Value(random_uniform({8, 8}, -0.3, 0.3, DType::kFloat32, 2)),
                          Value(random_uniform({4, 8}, -0.3, 0.3, DType::kFloat32, 3))};
  f(args);
  for (auto _ : state) {
    Value r = f(args);
    benchmark::DoNotOptimize(r.items()[0].tensor().impl());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_RnnForwardGrad_Function)
    ->Arg(100)
    ->Arg(800)
    ->Arg(3200)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
