// _FusedLSTM (fuse_lstm): a Keras LSTM layer's loop over time as one node.
//
// Inputs: x [T, B, 4U] float32, the steps' input projections with their bias
// (the layer's x W + b, gates in Keras' order i, f, c, o); h [B, U] and c
// [B, U], the initial states; kernel [U, 4U], the recurrent kernel; steps, an
// int32 or int64 scalar, the number of steps run (0 <= steps <= T). Step t:
// z = x[t] + h kernel, i = sigmoid(z_i), f = sigmoid(z_f), c = f c + i
// tanh(z_c), o = sigmoid(z_o), h = o tanh(c). Outputs: the steps' h stacked
// [steps, B, U], and the last h and c (the initial ones after no step).
// Kernel: src/kernels/cpu/lstm.cpp (rows of the batch on the pool, every
// step of a row block on one thread: no barrier per step).
#include <algorithm>
#include <cmath>

#include "families.h"

namespace kiln {
namespace {

constexpr size_t kX = 0, kH = 1, kC = 2, kKernel = 3, kSteps = 4;

// dims[i] agrees with `want` where both are known.
bool fits(int64_t dim, int64_t want) {
  return dim < 0 || want < 0 || dim == want;
}

void infer_fused_lstm(InferContext& c) {
  for (size_t i : {kX, kH, kC, kKernel}) c.expect_dtype(i, DType::kFloat32);
  if (c.dtype(kSteps) != DType::kInt32 && c.dtype(kSteps) != DType::kInt64)
    c.fail("steps must be int32 or int64, got ", dtype_name(c.dtype(kSteps)));
  const Shape &x = c.shape(kX), &h = c.shape(kH), &cs = c.shape(kC), &k = c.shape(kKernel);
  if (!x.rank_known() || x.rank() != 3) c.fail("x must have rank 3, got ", x.debug_string());
  if (!h.rank_known() || h.rank() != 2 || !cs.rank_known() || cs.rank() != 2)
    c.fail("h and c must have rank 2, got ", h.debug_string(), " and ", cs.debug_string());
  if (!k.rank_known() || k.rank() != 2) c.fail("kernel must have rank 2, got ", k.debug_string());
  if (c.shape(kSteps).rank_known() && c.shape(kSteps).rank() != 0)
    c.fail("steps must be a scalar, got ", c.shape(kSteps).debug_string());
  const int64_t units = k.dim(0), batch = x.dim(1);
  if (!fits(k.dim(1), units < 0 ? -1 : 4 * units) || !fits(x.dim(2), k.dim(1)) ||
      !fits(h.dim(1), units) || !fits(cs.dim(1), units) || !fits(h.dim(0), batch) ||
      !fits(cs.dim(0), batch) || !fits(h.dim(0), cs.dim(0)))
    c.fail("x ", x.debug_string(), ", h ", h.debug_string(), ", c ", cs.debug_string(),
           " and kernel ", k.debug_string(), " do not fit [T, B, 4U], [B, U], [B, U], [U, 4U]");
  const int64_t b = batch >= 0 ? batch : h.dim(0) >= 0 ? h.dim(0) : cs.dim(0);
  const int64_t u = units >= 0 ? units : h.dim(1) >= 0 ? h.dim(1) : cs.dim(1);
  int64_t steps = -1;
  if (SmallVec<int64_t, 8> v; c.int_values(kSteps, v) && v.size() == 1) steps = v[0];
  c.set_output(0, DType::kFloat32, Shape({steps, b, u}));
  c.set_output(1, DType::kFloat32, Shape({b, u}));
  c.set_output(2, DType::kFloat32, Shape({b, u}));
}

// Work: T x B x 4U x U multiply-adds (x's elements times U); the kernel
// splits itself.
OpCost fused_lstm_cost(const CostQuery& q) {
  const double x = q.in.size() > kKernel ? static_cast<double>(std::max<int64_t>(q.in[kX], 0)) : 0;
  const double u = q.in.size() > kKernel ? std::sqrt(std::max<int64_t>(q.in[kKernel], 0) / 4.0) : 0;
  return {x * std::max(u, 1.0), true};
}

}  // namespace

void define_lstm_ops(OpTableBuilder& t) {
  t.def(OpId::FusedLSTM)
      .inputs({"x", "h", "c", "kernel", "steps"})
      .outputs({"sequence", "h", "c"})
      .traits(kGraphOnly | kPassOnly | kNoGradient)
      .cost(fused_lstm_cost)
      .infer(infer_fused_lstm);
}

}  // namespace kiln
