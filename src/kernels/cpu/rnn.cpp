// _FusedLSTM, _FusedGRU and _FusedSimpleRNN (ops/rnn.cpp): a Keras LSTM, GRU
// or SimpleRNN layer's steps in one kernel.
//
// The batch's rows split into blocks, one per thread when there are rows
// enough (kMinBlockRows); each block runs every step on its thread: the
// product of its h rows by the recurrent kernel (one single-threaded gemm
// call), then its cells. Rows never meet, so the blocks need no barrier per
// step, where the While loop ran its cond and body plans and synchronized the
// pool at every step (a quarter of lstm2's step time; docs/BENCHMARKS.md,
// twenty-sixth session). Too few rows for a block per thread: each step's
// product is shared by the pool instead. The cell computes what the loop's
// ops did, with the same functors and in the same order (functors.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "bind.h"
#include "elementwise_util.h"
#include "functors.h"
#include "gemm.h"
#include "kernel_util.h"
#include "kiln/thread_pool.h"
#include "threading.h"

namespace kiln::cpu {
namespace {

// Fewer rows per block run the product below speed.
constexpr int64_t kMinBlockRows = 8;
// Less work per step (multiply-adds of all rows) stays on one thread.
constexpr int64_t kMinSplitStepMacs = 1 << 16;
// With fewer row blocks than threads, steps of this much work share each
// product among the pool instead (run_rows' `shared`).
constexpr int64_t kMinSharedStepMacs = 1 << 18;

// One row's cell over u units. x: the row's G u input projections; p: its
// product by the recurrent kernel (the GRU adds its recurrent bias b there);
// c: the LSTM's cell state (updated); hp: the previous h; h: the new h (may be
// hp: unit j reads hp[j] before writing h[j]).
using CellFn = void (*)(const float* x, float* p, const float* b, float* c, const float* hp,
                        float* h, int64_t u);

// Gates i, f, c, o.
#define KILN_LSTM_CELL(name, target)                                                         \
  target void name(const float* x, float* p, const float*, float* c, const float*, float* h, \
                   int64_t u) {                                                              \
    _Pragma("GCC ivdep") for (int64_t j = 0; j < u; ++j) {                                   \
      const float i = fn::Sigmoid{}(fn::Add{}(x[j], p[j]));                                  \
      const float f = fn::Sigmoid{}(fn::Add{}(x[u + j], p[u + j]));                          \
      const float g = fn::Tanh{}(fn::Add{}(x[2 * u + j], p[2 * u + j]));                     \
      const float o = fn::Sigmoid{}(fn::Add{}(x[3 * u + j], p[3 * u + j]));                  \
      const float cn = fn::Add{}(fn::Mul{}(f, c[j]), fn::Mul{}(i, g));                       \
      c[j] = cn;                                                                             \
      h[j] = fn::Mul{}(o, fn::Tanh{}(cn));                                                   \
    }                                                                                        \
  }
// Gates z, r, h (reset after the product); b null: no recurrent bias.
#define KILN_GRU_CELL(name, target)                                                             \
  target void name(const float* x, float* p, const float* b, float*, const float* hp, float* h, \
                   int64_t u) {                                                                 \
    if (b) {                                                                                    \
      _Pragma("GCC ivdep") for (int64_t j = 0; j < 3 * u; ++j) p[j] = fn::Add{}(p[j], b[j]);    \
    }                                                                                           \
    _Pragma("GCC ivdep") for (int64_t j = 0; j < u; ++j) {                                      \
      const float z = fn::Sigmoid{}(fn::Add{}(x[j], p[j]));                                     \
      const float r = fn::Sigmoid{}(fn::Add{}(x[u + j], p[u + j]));                             \
      const float g = fn::Tanh{}(fn::Add{}(x[2 * u + j], fn::Mul{}(r, p[2 * u + j])));          \
      h[j] = fn::Add{}(fn::Mul{}(z, hp[j]), fn::Mul{}(fn::Sub{}(1.0f, z), g));                  \
    }                                                                                           \
  }
// One gate: h = tanh(x + p) (p with the bias added first, as the GRU's).
#define KILN_SIMPLE_CELL(name, target)                                                             \
  target void name(const float* x, float* p, const float* b, float*, const float*, float* h,       \
                   int64_t u) {                                                                    \
    if (b) {                                                                                       \
      _Pragma("GCC ivdep") for (int64_t j = 0; j < u; ++j) p[j] = fn::Add{}(p[j], b[j]);           \
    }                                                                                              \
    _Pragma("GCC ivdep") for (int64_t j = 0; j < u; ++j) h[j] = fn::Tanh{}(fn::Add{}(x[j], p[j])); \
  }
KILN_LSTM_CELL(lstm_base, )
KILN_GRU_CELL(gru_base, )
KILN_SIMPLE_CELL(simple_base, )
#ifdef KILN_X86_CLONES  // the elementwise kernels' flavours (elementwise_util.h)
KILN_LSTM_CELL(lstm_avx2, KILN_AVX2_TARGET)
KILN_LSTM_CELL(lstm_avx512, KILN_AVX512_TARGET)
KILN_GRU_CELL(gru_avx2, KILN_AVX2_TARGET)
KILN_GRU_CELL(gru_avx512, KILN_AVX512_TARGET)
KILN_SIMPLE_CELL(simple_avx2, KILN_AVX2_TARGET)
KILN_SIMPLE_CELL(simple_avx512, KILN_AVX512_TARGET)
#endif
#undef KILN_LSTM_CELL
#undef KILN_GRU_CELL
#undef KILN_SIMPLE_CELL

struct Rnn {
  int64_t steps, batch, units, gates;
  const float* x;       // [T, B, G U]
  const float* kernel;  // [U, G U]
  const float* bias;    // [G U] (the GRU's recurrent bias), or null
  float* seq;           // [steps, B, U], or null
  float* h;             // [B, U]: the initial h, then the last
  float* c;             // [B, U] (the LSTM's): likewise; null for the GRU
  CellFn cell;
};

// Rows [r0, r1) through every step, the cells on this thread; each product
// on this thread too, or (`shared`) on the whole pool, split as MatMul splits
// it: for batches too small for a block per thread, where one thread alone
// would read the whole recurrent kernel each step (a [8, 1024] x [1024, 4096]
// step took 2.7x the While loop's time on one).
void run_rows(const Rnn& l, int64_t r0, int64_t r1, bool shared) {
  const int64_t rows = r1 - r0, u = l.units, gu = l.gates * u;
  std::vector<float> prod(static_cast<size_t>(rows * gu));
  float* h = l.h + r0 * u;
  float* c = l.c ? l.c + r0 * u : nullptr;
  for (int64_t t = 0; t < l.steps; ++t) {
    if (shared)
      gemm_product(GemmArgs<float>{false, false, rows, gu, u, h, l.kernel, 0}, prod.data());
    else
      f32_gemm_call(
          GemmCall<float>{false, false, rows, gu, u, h, u, l.kernel, gu, prod.data(), gu});
    const float* x = l.x + (t * l.batch + r0) * gu;
    float* out = l.seq ? l.seq + (t * l.batch + r0) * u : h;
    for (int64_t r = 0; r < rows; ++r)
      l.cell(x + r * gu, prod.data() + r * gu, l.bias, c ? c + r * u : nullptr, h + r * u,
             out + r * u, u);
    if (l.seq) std::memcpy(h, out, static_cast<size_t>(rows * u) * sizeof(float));
  }
}

// Runs `l` (every pointer set) on the pool: blocks of rows, or shared products.
void run_rnn(const Rnn& l) {
  const int threads = ThreadPool::global().num_threads();
  const int64_t step_macs = l.batch * l.gates * l.units * l.units;
  const int64_t blocks =
      step_macs < kMinSplitStepMacs ? 1 : std::clamp<int64_t>(l.batch / kMinBlockRows, 1, threads);
  if (blocks < threads && step_macs >= kMinSharedStepMacs) {
    run_rows(l, 0, l.batch, true);
    return;
  }
  const int64_t per = (l.batch + blocks - 1) / blocks;
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    LibrariesSingleThreaded single;
    for (int64_t b = b0; b < b1; ++b)
      if (const int64_t r0 = b * per, r1 = std::min(l.batch, r0 + per); r0 < r1)
        run_rows(l, r0, r1, false);
  });
}

// The steps input's value, checked against the inputs' T.
int64_t steps_of(KernelContext& c, const Tensor& steps_t, int64_t t_max) {
  if (steps_t.num_elements() != 1) c.fail("steps must be a scalar, got ", steps_t.shape());
  const int64_t steps =
      steps_t.dtype() == DType::kInt32 ? *steps_t.data<int32_t>() : *steps_t.data<int64_t>();
  if (steps < 0 || steps > t_max)
    c.fail("steps (", steps, ") must be in [0, ", t_max, "], the inputs' time steps");
  return steps;
}

// A copy of `s` (an initial state) to update.
Tensor state_copy(const Tensor& s) {
  Tensor out = Tensor::empty(DType::kFloat32, s.shape());
  if (out.num_elements() > 0) std::memcpy(out.mutable_raw_data(), s.raw_data(), s.nbytes());
  return out;
}

float* data_or_null(Tensor& t) {
  return t.num_elements() > 0 ? t.mutable_data<float>() : nullptr;
}

void fused_lstm_kernel(KernelContext& c) {
  const Tensor &x = c.input(0), &h0 = c.input(1), &c0 = c.input(2), &k = c.input(3);
  const int64_t batch = x.dim(1), units = k.dim(0);
  if (k.dim(1) != 4 * units || x.dim(2) != 4 * units)
    c.fail("x ", x.shape(), " and kernel ", k.shape(), " do not fit [T, B, 4U] and [U, 4U]");
  for (const Tensor* s : {&h0, &c0})
    if (s->rank() != 2 || s->dim(0) != batch || s->dim(1) != units)
      c.fail("initial states must be [", batch, ", ", units, "], got ", s->shape());
  const int64_t steps = steps_of(c, c.input(4), x.dim(0));
  Tensor seq = Tensor::empty(DType::kFloat32, Shape({steps, batch, units}));
  Tensor h = state_copy(h0), cs = state_copy(c0);
  static const CellFn cell = KILN_WIDEST(lstm);
  if (steps > 0 && batch > 0 && units > 0)
    run_rnn(Rnn{steps, batch, units, 4, x.data<float>(), k.data<float>(), nullptr,
                data_or_null(seq), h.mutable_data<float>(), cs.mutable_data<float>(), cell});
  c.set_output(0, std::move(seq));
  c.set_output(1, std::move(h));
  c.set_output(2, std::move(cs));
}

// _FusedGRU (gates 3) and _FusedSimpleRNN (1): x, h, kernel, bias, steps.
void h_rnn_kernel(KernelContext& c, int64_t gates, CellFn cell) {
  const Tensor &x = c.input(0), &h0 = c.input(1), &k = c.input(2), &b = c.input(3);
  const int64_t batch = x.dim(1), units = k.dim(0);
  if (k.dim(1) != gates * units || x.dim(2) != gates * units)
    c.fail("x ", x.shape(), " and kernel ", k.shape(), " do not fit [T, B, ", gates,
           " x U] and [U, ", gates, " x U]");
  if (b.rank() != 1 || (b.dim(0) != 0 && b.dim(0) != gates * units))
    c.fail("bias must be [", gates * units, "] or [0], got ", b.shape());
  if (h0.rank() != 2 || h0.dim(0) != batch || h0.dim(1) != units)
    c.fail("the initial state must be [", batch, ", ", units, "], got ", h0.shape());
  const int64_t steps = steps_of(c, c.input(4), x.dim(0));
  Tensor seq = Tensor::empty(DType::kFloat32, Shape({steps, batch, units}));
  Tensor h = state_copy(h0);
  if (steps > 0 && batch > 0 && units > 0)
    run_rnn(Rnn{steps, batch, units, gates, x.data<float>(), k.data<float>(),
                b.num_elements() > 0 ? b.data<float>() : nullptr, data_or_null(seq),
                h.mutable_data<float>(), nullptr, cell});
  c.set_output(0, std::move(seq));
  c.set_output(1, std::move(h));
}

void fused_gru_kernel(KernelContext& c) {
  static const CellFn cell = KILN_WIDEST(gru);
  h_rnn_kernel(c, 3, cell);
}

void fused_simple_rnn_kernel(KernelContext& c) {
  static const CellFn cell = KILN_WIDEST(simple);
  h_rnn_kernel(c, 1, cell);
}

}  // namespace

void bind_rnn_kernels(OpTableBuilder& t) {
  t.kernel(OpId::FusedLSTM, fused_lstm_kernel);
  t.kernel(OpId::FusedGRU, fused_gru_kernel);
  t.kernel(OpId::FusedSimpleRNN, fused_simple_rnn_kernel);
}

}  // namespace kiln::cpu
