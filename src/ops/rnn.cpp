// _FusedLSTM, _FusedGRU and _FusedSimpleRNN (fuse_rnn): a Keras LSTM, GRU or
// SimpleRNN layer's loop over time as one node. Kernels: src/kernels/cpu/rnn.cpp (rows of the batch
// on the pool, every step of a row block on one thread: no barrier per step).
//
// _FusedLSTM. Inputs: x [T, B, 4U] float32, the steps' input projections with their bias
// (the layer's x W + b, gates in Keras' order i, f, c, o); h [B, U] and c
// [B, U], the initial states; kernel [U, 4U], the recurrent kernel; steps, an
// int32 or int64 scalar, the number of steps run (0 <= steps <= T). Step t:
// z = x[t] + h kernel, i = sigmoid(z_i), f = sigmoid(z_f), c = f c + i
// tanh(z_c), o = sigmoid(z_o), h = o tanh(c). Outputs: the steps' h stacked
// [steps, B, U], and the last h and c (the initial ones after no step).
//
// _FusedGRU (Keras' reset_after form). Inputs: x [T, B, 3U] float32, the
// input projections with the input bias (gates z, r, h); h [B, U]; kernel
// [U, 3U]; bias [3U], the recurrent bias, or [0] for none; steps. Step t:
// p = h kernel + bias, z = sigmoid(x_z + p_z), r = sigmoid(x_r + p_r),
// g = tanh(x_h + r p_h), h = z h + (1 - z) g. Outputs: the steps' h stacked
// and the last h.
//
// _FusedSimpleRNN (tanh): the GRU's inputs and outputs with one gate: x [T,
// B, U], kernel [U, U], bias [U] or [0]. Step t: h = tanh(x[t] + (h kernel +
// bias)).
#include <algorithm>
#include <cmath>

#include "families.h"

namespace kiln {
namespace {

constexpr size_t kX = 0, kH = 1, kC = 2, kKernel = 3, kSteps = 4;
constexpr size_t kGruKernel = 2, kGruBias = 3, kGruSteps = 4;

// dims[i] agrees with `want` where both are known.
bool fits(int64_t dim, int64_t want) {
  return dim < 0 || want < 0 || dim == want;
}

// The steps' number when `steps` is a known scalar, else -1; fails unless it
// is an int32 or int64 scalar.
int64_t infer_steps(InferContext& c, size_t i) {
  if (c.dtype(i) != DType::kInt32 && c.dtype(i) != DType::kInt64)
    c.fail("steps must be int32 or int64, got ", dtype_name(c.dtype(i)));
  if (c.shape(i).rank_known() && c.shape(i).rank() != 0)
    c.fail("steps must be a scalar, got ", c.shape(i).debug_string());
  int64_t steps = -1;
  if (SmallVec<int64_t, 8> v; c.int_values(i, v) && v.size() == 1) steps = v[0];
  return steps;
}

void infer_fused_lstm(InferContext& c) {
  for (size_t i : {kX, kH, kC, kKernel}) c.expect_dtype(i, DType::kFloat32);
  const int64_t steps = infer_steps(c, kSteps);
  const Shape &x = c.shape(kX), &h = c.shape(kH), &cs = c.shape(kC), &k = c.shape(kKernel);
  if (!x.rank_known() || x.rank() != 3) c.fail("x must have rank 3, got ", x.debug_string());
  if (!h.rank_known() || h.rank() != 2 || !cs.rank_known() || cs.rank() != 2)
    c.fail("h and c must have rank 2, got ", h.debug_string(), " and ", cs.debug_string());
  if (!k.rank_known() || k.rank() != 2) c.fail("kernel must have rank 2, got ", k.debug_string());
  const int64_t units = k.dim(0), batch = x.dim(1);
  if (!fits(k.dim(1), units < 0 ? -1 : 4 * units) || !fits(x.dim(2), k.dim(1)) ||
      !fits(h.dim(1), units) || !fits(cs.dim(1), units) || !fits(h.dim(0), batch) ||
      !fits(cs.dim(0), batch) || !fits(h.dim(0), cs.dim(0)))
    c.fail("x ", x.debug_string(), ", h ", h.debug_string(), ", c ", cs.debug_string(),
           " and kernel ", k.debug_string(), " do not fit [T, B, 4U], [B, U], [B, U], [U, 4U]");
  const int64_t b = batch >= 0 ? batch : h.dim(0) >= 0 ? h.dim(0) : cs.dim(0);
  const int64_t u = units >= 0 ? units : h.dim(1) >= 0 ? h.dim(1) : cs.dim(1);
  c.set_output(0, DType::kFloat32, Shape({steps, b, u}));
  c.set_output(1, DType::kFloat32, Shape({b, u}));
  c.set_output(2, DType::kFloat32, Shape({b, u}));
}

// _FusedGRU (G = 3) and _FusedSimpleRNN (G = 1): x [T, B, G U], h [B, U],
// kernel [U, G U], bias [G U] or [0], steps.
template <int G>
void infer_fused_h_rnn(InferContext& c) {
  static_assert(G == 1 || G == 3);
  static constexpr const char* kGu = G == 3 ? "3U" : "U";
  for (size_t i : {kX, kH, kGruKernel, kGruBias}) c.expect_dtype(i, DType::kFloat32);
  const int64_t steps = infer_steps(c, kGruSteps);
  const Shape &x = c.shape(kX), &h = c.shape(kH), &k = c.shape(kGruKernel), &b = c.shape(kGruBias);
  if (!x.rank_known() || x.rank() != 3) c.fail("x must have rank 3, got ", x.debug_string());
  if (!h.rank_known() || h.rank() != 2) c.fail("h must have rank 2, got ", h.debug_string());
  if (!k.rank_known() || k.rank() != 2) c.fail("kernel must have rank 2, got ", k.debug_string());
  if (!b.rank_known() || b.rank() != 1) c.fail("bias must have rank 1, got ", b.debug_string());
  const int64_t units = k.dim(0) >= 0 ? k.dim(0) : h.dim(1), batch = x.dim(1);
  const int64_t gu = units < 0 ? -1 : G * units;
  if (!fits(k.dim(1), gu) || !fits(x.dim(2), k.dim(1)) || !fits(x.dim(2), gu) ||
      !fits(h.dim(1), units) || !fits(h.dim(0), batch) || (b.dim(0) != 0 && !fits(b.dim(0), gu)))
    c.fail("x ", x.debug_string(), ", h ", h.debug_string(), ", kernel ", k.debug_string(),
           " and bias ", b.debug_string(), " do not fit [T, B, ", kGu, "], [B, U], [U, ", kGu,
           "], [", kGu, "] or [0]");
  const int64_t bt = batch >= 0 ? batch : h.dim(0);
  c.set_output(0, DType::kFloat32, Shape({steps, bt, units}));
  c.set_output(1, DType::kFloat32, Shape({bt, units}));
}

// Work: T x B x G U x U multiply-adds (x's elements times U, G the gates);
// the kernel splits itself.
template <size_t kKernelInput, int kGates>
OpCost fused_rnn_cost(const CostQuery& q) {
  if (q.in.size() <= kKernelInput) return {0, true};
  const double x = static_cast<double>(std::max<int64_t>(q.in[kX], 0));
  const double u =
      std::sqrt(static_cast<double>(std::max<int64_t>(q.in[kKernelInput], 0)) / kGates);
  return {x * std::max(u, 1.0), true};
}

}  // namespace

void define_rnn_ops(OpTableBuilder& t) {
  t.def(OpId::FusedLSTM)
      .inputs({"x", "h", "c", "kernel", "steps"})
      .outputs({"sequence", "h", "c"})
      .traits(kGraphOnly | kPassOnly | kNoGradient)
      .cost(fused_rnn_cost<kKernel, 4>)
      .infer(infer_fused_lstm);
  t.def(OpId::FusedGRU)
      .inputs({"x", "h", "kernel", "bias", "steps"})
      .outputs({"sequence", "h"})
      .traits(kGraphOnly | kPassOnly | kNoGradient)
      .cost(fused_rnn_cost<kGruKernel, 3>)
      .infer(infer_fused_h_rnn<3>);
  t.def(OpId::FusedSimpleRNN)
      .inputs({"x", "h", "kernel", "bias", "steps"})
      .outputs({"sequence", "h"})
      .traits(kGraphOnly | kPassOnly | kNoGradient)
      .cost(fused_rnn_cost<kGruKernel, 1>)
      .infer(infer_fused_h_rnn<1>);
}

}  // namespace kiln
