// _FusedLSTM (ops/lstm.cpp): a Keras LSTM layer's steps in one kernel.
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

// One row's cell over u units: x and p are the row's 4u input projections
// and product (gates i, f, c, o); c is updated, h written.
#define KILN_LSTM_CELL(name, target)                                                \
  target void name(const float* x, const float* p, float* c, float* h, int64_t u) { \
    _Pragma("GCC ivdep") for (int64_t j = 0; j < u; ++j) {                          \
      const float i = fn::Sigmoid{}(fn::Add{}(x[j], p[j]));                         \
      const float f = fn::Sigmoid{}(fn::Add{}(x[u + j], p[u + j]));                 \
      const float g = fn::Tanh{}(fn::Add{}(x[2 * u + j], p[2 * u + j]));            \
      const float o = fn::Sigmoid{}(fn::Add{}(x[3 * u + j], p[3 * u + j]));         \
      const float cn = fn::Add{}(fn::Mul{}(f, c[j]), fn::Mul{}(i, g));              \
      c[j] = cn;                                                                    \
      h[j] = fn::Mul{}(o, fn::Tanh{}(cn));                                          \
    }                                                                               \
  }
KILN_LSTM_CELL(cell_base, )
#ifdef KILN_X86_CLONES  // the elementwise kernels' flavours (elementwise_util.h)
KILN_LSTM_CELL(cell_avx2, KILN_AVX2_TARGET)
KILN_LSTM_CELL(cell_avx512, KILN_AVX512_TARGET)
#endif
#undef KILN_LSTM_CELL

using CellFn = void (*)(const float*, const float*, float*, float*, int64_t);

CellFn best_cell() {
#ifdef KILN_X86_CLONES
  switch (detail::simd_level()) {
    case detail::SimdLevel::kAvx512: return cell_avx512;
    case detail::SimdLevel::kAvx2: return cell_avx2;
    case detail::SimdLevel::kBase: break;
  }
#endif
  return cell_base;
}

struct Lstm {
  int64_t steps, batch, units;
  const float* x;       // [T, B, 4U]
  const float* kernel;  // [U, 4U]
  float* seq;           // [steps, B, U], or null
  float* h;             // [B, U]: the initial h, then the last
  float* c;             // [B, U]: likewise
};

// Rows [r0, r1) through every step, the cells on this thread; each product
// on this thread too, or (`shared`) on the whole pool, split as MatMul splits
// it: for batches too small for a block per thread, where one thread alone
// would read the whole recurrent kernel each step (a [8, 1024] x [1024, 4096]
// step took 2.7x the While loop's time on one).
void run_rows(const Lstm& l, int64_t r0, int64_t r1, CellFn cell, bool shared) {
  const int64_t rows = r1 - r0, u = l.units, g4 = 4 * u;
  std::vector<float> prod(static_cast<size_t>(rows * g4));
  float* h = l.h + r0 * u;
  float* c = l.c + r0 * u;
  for (int64_t t = 0; t < l.steps; ++t) {
    if (shared)
      gemm_product(GemmArgs<float>{false, false, rows, g4, u, h, l.kernel, 0}, prod.data());
    else
      f32_gemm_call(
          GemmCall<float>{false, false, rows, g4, u, h, u, l.kernel, g4, prod.data(), g4});
    const float* x = l.x + (t * l.batch + r0) * g4;
    float* out = l.seq ? l.seq + (t * l.batch + r0) * u : h;
    for (int64_t r = 0; r < rows; ++r)
      cell(x + r * g4, prod.data() + r * g4, c + r * u, out + r * u, u);
    if (l.seq) std::memcpy(h, out, static_cast<size_t>(rows * u) * sizeof(float));
  }
}

void fused_lstm_kernel(KernelContext& c) {
  const Tensor &x = c.input(0), &h0 = c.input(1), &c0 = c.input(2), &k = c.input(3);
  const Tensor& steps_t = c.input(4);
  const int64_t t_max = x.dim(0), batch = x.dim(1), units = k.dim(0);
  if (k.dim(1) != 4 * units || x.dim(2) != 4 * units)
    c.fail("x ", x.shape(), " and kernel ", k.shape(), " do not fit [T, B, 4U] and [U, 4U]");
  for (const Tensor* s : {&h0, &c0})
    if (s->rank() != 2 || s->dim(0) != batch || s->dim(1) != units)
      c.fail("initial states must be [", batch, ", ", units, "], got ", s->shape());
  if (steps_t.num_elements() != 1) c.fail("steps must be a scalar, got ", steps_t.shape());
  const int64_t steps =
      steps_t.dtype() == DType::kInt32 ? *steps_t.data<int32_t>() : *steps_t.data<int64_t>();
  if (steps < 0 || steps > t_max)
    c.fail("steps (", steps, ") must be in [0, ", t_max, "], the inputs' time steps");
  Tensor seq = Tensor::empty(DType::kFloat32, Shape({steps, batch, units}));
  Tensor h = Tensor::empty(DType::kFloat32, h0.shape());
  Tensor cs = Tensor::empty(DType::kFloat32, c0.shape());
  if (h.num_elements() > 0) {
    std::memcpy(h.mutable_raw_data(), h0.raw_data(), h0.nbytes());
    std::memcpy(cs.mutable_raw_data(), c0.raw_data(), c0.nbytes());
  }
  const Lstm l{steps,
               batch,
               units,
               x.data<float>(),
               k.data<float>(),
               seq.num_elements() > 0 ? seq.mutable_data<float>() : nullptr,
               h.num_elements() > 0 ? h.mutable_data<float>() : nullptr,
               cs.num_elements() > 0 ? cs.mutable_data<float>() : nullptr};
  if (steps > 0 && batch > 0 && units > 0) {
    static const CellFn cell = best_cell();
    const int threads = ThreadPool::global().num_threads();
    const int64_t step_macs = batch * 4 * units * units;
    const int64_t blocks =
        step_macs < kMinSplitStepMacs ? 1 : std::clamp<int64_t>(batch / kMinBlockRows, 1, threads);
    if (blocks < threads && step_macs >= kMinSharedStepMacs) {
      run_rows(l, 0, batch, cell, true);
    } else {
      const int64_t per = (batch + blocks - 1) / blocks;
      parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
        LibrariesSingleThreaded single;
        for (int64_t b = b0; b < b1; ++b)
          if (const int64_t r0 = b * per, r1 = std::min(batch, r0 + per); r0 < r1)
            run_rows(l, r0, r1, cell, false);
      });
    }
  }
  c.set_output(0, std::move(seq));
  c.set_output(1, std::move(h));
  c.set_output(2, std::move(cs));
}

}  // namespace

void bind_lstm_kernels(OpTableBuilder& t) {
  t.kernel(OpId::FusedLSTM, fused_lstm_kernel);
}

}  // namespace kiln::cpu
