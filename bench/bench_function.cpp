// Graph functions against eager execution (issue 3, section 12): call
// overhead of a cached function, the 100-small-ops chain, CharUnpack,
// tracing + optimizing a 1,000-op function, independent branches run in
// parallel by the executor (arg 1) or in order (arg 0), and an eager tape's
// gradient of a function in graph mode and under jit_compile.
#include <benchmark/benchmark.h>

#include "kiln/function.h"
#include "kiln/gradient_tape.h"
#include "kiln/kiln.h"

namespace {
using namespace kiln;

void BM_EagerAdd(benchmark::State& state) {
  Tensor a({1.f}), b({2.f});
  for (auto _ : state) {
    Tensor c = add(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_EagerAdd);

// A cached function whose graph is one add, called with 2 tensors.
void BM_FunctionAddCall(benchmark::State& state) {
  FunctionOptions o;
  o.name = "add";
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() + a[1].tensor()); }, o);
  Tensor a({1.f}), b({2.f});
  std::vector<Value> args{Value(a), Value(b)};
  f(args);
  for (auto _ : state) {
    Value r = f(args);
    benchmark::DoNotOptimize(r.tensor().impl());
  }
}
BENCHMARK(BM_FunctionAddCall);

// The same through call_tensors (all-tensor arguments, no Values built: the
// entry point of the Python binding).
void BM_FunctionAddCallTensors(benchmark::State& state) {
  FunctionOptions o;
  o.name = "add";
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() + a[1].tensor()); }, o);
  std::vector<Tensor> args{Tensor({1.f}), Tensor({2.f})};
  f.call_tensors(args);
  for (auto _ : state) {
    Value r = f.call_tensors(args);
    benchmark::DoNotOptimize(r.tensor().impl());
  }
}
BENCHMARK(BM_FunctionAddCallTensors);

// One function called from several threads at once: a cache hit writes no
// shared state and takes no lock, so the per-call time should not grow.
void BM_FunctionAddCallShared(benchmark::State& state) {
  static Function* f = nullptr;
  if (state.thread_index() == 0) {
    FunctionOptions o;
    o.name = "add";
    f = new Function(
        [](const std::vector<Value>& a) { return Value(a[0].tensor() + a[1].tensor()); }, o);
    (*f)({Tensor({1.f}), Tensor({2.f})});
  }
  std::vector<Value> args{Value(Tensor({1.f})), Value(Tensor({2.f}))};
  for (auto _ : state) {
    Value r = (*f)(args);
    benchmark::DoNotOptimize(r.tensor().impl());
  }
  if (state.thread_index() == 0) {
    delete f;
    f = nullptr;
  }
}
BENCHMARK(BM_FunctionAddCallShared)->Threads(1)->Threads(2)->UseRealTime();

// The same through the ConcreteFunction's flat entry point (no key lookup).
void BM_ConcreteAddCallFlat(benchmark::State& state) {
  FunctionOptions o;
  o.name = "add";
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() + a[1].tensor()); }, o);
  Tensor a({1.f}), b({2.f});
  auto cf = f.get_concrete_function({Value(a), Value(b)});
  std::vector<Tensor> in{a, b};
  for (auto _ : state) {
    auto r = cf->call_flat(in);
    benchmark::DoNotOptimize(r.data());
  }
}
BENCHMARK(BM_ConcreteAddCallFlat);

Tensor chain(const Tensor& x) {
  Tensor y = x;
  for (int i = 0; i < 34; ++i) y = tanh(y) * 0.5f + x;  // ~100 ops
  return y;
}

void BM_Chain100_Eager(benchmark::State& state) {
  Tensor x = Tensor::from_vector(std::vector<float>(100, 0.5f), {10, 10});
  for (auto _ : state) {
    Tensor y = chain(x);
    benchmark::DoNotOptimize(y.impl());
  }
}
BENCHMARK(BM_Chain100_Eager);

void BM_Chain100_Function(benchmark::State& state) {
  Tensor x = Tensor::from_vector(std::vector<float>(100, 0.5f), {10, 10});
  FunctionOptions o;
  o.name = "chain";
  Function f([](const std::vector<Value>& a) { return Value(chain(a[0].tensor())); }, o);
  std::vector<Value> args{Value(x)};
  f(args);
  for (auto _ : state) {
    Value r = f(args);
    benchmark::DoNotOptimize(r.tensor().impl());
  }
}
BENCHMARK(BM_Chain100_Function);

// x * 2 + 1 over 32 floats, graph mode (arg 0: its interpreter) vs
// jit_compile (arg 1): the per-call cost of one tiny fused kernel.
void BM_TinyChain_Function(benchmark::State& state) {
  FunctionOptions o;
  o.name = "tiny_chain";
  o.jit_compile = state.range(0) == 1;
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() * 2.f + 1.f); }, o);
  std::vector<Tensor> args{Tensor::from_vector(std::vector<float>(32, 0.5f), {32})};
  f.call_tensors(args);
  for (auto _ : state) {
    Value r = f.call_tensors(args);
    benchmark::DoNotOptimize(r.tensor().impl());
  }
}
BENCHMARK(BM_TinyChain_Function)->Arg(0)->Arg(1);

// Seed 000's CharUnpack on [8192, 400] uint8 -> [8192, 3200] float32.
Tensor char_unpack(const Tensor& x, const Tensor& shifts, const Tensor& one) {
  Tensor bits = bitwise_and(right_shift(expand_dims(x, -1), shifts), one);
  return cast(reshape(bits, {x.dim(0), -1}), DType::kFloat32);
}

void BM_CharUnpack_Function(benchmark::State& state) {
  Tensor x = cast(random_uniform({8192, 400}, 0, 256, DType::kInt32, 1), DType::kUInt8);
  Tensor shifts = cast(Tensor({7, 6, 5, 4, 3, 2, 1, 0}), DType::kUInt8);
  Tensor one = cast(Tensor(1), DType::kUInt8);
  FunctionOptions o;
  o.name = "char_unpack";
  Function f(
      [&](const std::vector<Value>& a) { return Value(char_unpack(a[0].tensor(), shifts, one)); },
      o);
  std::vector<Value> args{Value(x)};
  f(args);
  for (auto _ : state) {
    Value r = f(args);
    benchmark::DoNotOptimize(r.tensor().impl());
  }
  state.SetBytesProcessed(state.iterations() * 8192 * 3200 * 4);
}
BENCHMARK(BM_CharUnpack_Function)->Unit(benchmark::kMillisecond)->UseRealTime();

// Reference: writing the 105 MB float32 output once.
void BM_CharUnpack_WriteOutputOnce(benchmark::State& state) {
  for (auto _ : state) {
    Tensor out = Tensor::empty(DType::kFloat32, {8192, 3200});
    float* p = out.mutable_data<float>();
    parallel_for(8192 * 3200, 0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = 1.f;
    });
    benchmark::DoNotOptimize(p);
  }
  state.SetBytesProcessed(state.iterations() * 8192 * 3200 * 4);
}
BENCHMARK(BM_CharUnpack_WriteOutputOnce)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Trace1000Ops(benchmark::State& state) {
  Tensor x = Tensor::from_vector(std::vector<float>(4, 0.5f), {4});
  for (auto _ : state) {
    FunctionOptions o;
    o.name = "big";
    Function f(
        [](const std::vector<Value>& a) {
          Tensor y = a[0].tensor();
          for (int i = 0; i < 500; ++i) y = y * 0.5f + a[0].tensor();
          return Value(y);
        },
        o);
    auto cf = f.get_concrete_function({Value(x)});
    benchmark::DoNotOptimize(cf.get());
  }
}
BENCHMARK(BM_Trace1000Ops)->Unit(benchmark::kMillisecond);

// Two independent 100-op chains on 128x128 (each one FusedElementwise node,
// single-threaded inside: 16K elements is below the kernel's split size),
// reduced and added. With config().parallel_branches the executor runs the
// two chains on two threads.
void BM_TwoChains_Function(benchmark::State& state) {
  config().parallel_branches = state.range(0) != 0;
  Tensor x = Tensor::from_vector(std::vector<float>(128 * 128, 0.5f), {128, 128});
  FunctionOptions o;
  o.name = "two_chains";
  Function f(
      [](const std::vector<Value>& a) {
        Tensor x = a[0].tensor();
        return Value(reduce_sum(chain(x), {1}) + reduce_sum(chain(x * 2.f), {1}));
      },
      o);
  std::vector<Value> args{Value(x)};
  f(args);
  for (auto _ : state) {
    Value r = f(args);
    benchmark::DoNotOptimize(r.tensor().impl());
  }
  config().parallel_branches = true;
}
BENCHMARK(BM_TwoChains_Function)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Two independent 512x512 matmuls: OpenBLAS already runs each on every
// core, so the cost model keeps them in order (both args time the same).
void BM_TwoMatmuls512_Function(benchmark::State& state) {
  config().parallel_branches = state.range(0) != 0;
  Tensor a = random_uniform({512, 512}, 0, 1, DType::kFloat32, 1);
  Tensor b = random_uniform({512, 512}, 0, 1, DType::kFloat32, 2);
  FunctionOptions o;
  o.name = "two_matmuls";
  Function f(
      [](const std::vector<Value>& v) {
        Tensor x = v[0].tensor(), y = v[1].tensor();
        return Value(matmul(x, x) + matmul(y, y));
      },
      o);
  std::vector<Value> args{Value(a), Value(b)};
  f(args);
  for (auto _ : state) {
    Value r = f(args);
    benchmark::DoNotOptimize(r.tensor().impl());
  }
  config().parallel_branches = true;
}
BENCHMARK(BM_TwoMatmuls512_Function)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// An eager tape over a function call: the forward that keeps the backward's
// residuals (25 outputs here) and the backward, graph mode (arg 0) vs
// jit_compile (arg 1, both compiled).
void BM_TapeGradientOfFunction(benchmark::State& state) {
  FunctionOptions o;
  o.name = "tanh_exp_chain";
  o.jit_compile = state.range(0) == 1;
  Function f(
      [](const std::vector<Value>& a) {
        Tensor y = a[0].tensor();
        for (int i = 0; i < 6; ++i) y = tanh(y) * 0.9f + exp(-y * y) * 0.1f;
        return Value(reduce_sum(y * y));
      },
      o);
  const Tensor x = random_uniform({512, 1024}, -2, 2, DType::kFloat32, 3);
  auto step = [&] {
    GradientTape tape;
    tape.watch(x);
    const Tensor loss = f({Value(x)}).tensor();
    return tape.gradient(loss, x);
  };
  step();  // trace and compile outside the timing
  for (auto _ : state) {
    Tensor g = step();
    benchmark::DoNotOptimize(g.impl());
  }
}
BENCHMARK(BM_TapeGradientOfFunction)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
