// Linear algebra and NN ops: matmul, bias_add, softmax, one op at a time
// (inference, gradient, cost, JIT, ONNX, then its row), then the front
// functions. Convolutions and pooling are in conv.cpp.
#include "kiln/ops/nn.h"

#include "families.h"
#include "grad_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "onnx_export.h"

namespace kiln {
void define_conv_ops(OpTableBuilder& t);  // conv.cpp

namespace {

void expect_numeric_not_bool(InferContext& c, size_t i) {
  if (!is_numeric(c.dtype(i)))
    c.fail(c.input_name(i),
           " must have a numeric dtype (int8, uint8, int32, int64, float32, float64), got ",
           dtype_name(c.dtype(i)));
}

// ---- MatMul ----

// MatMul's output shape (batch dims broadcast), of dtype `dt`.
void infer_matmul_shape(InferContext& c, DType dt) {
  const Shape& a = c.shape(0);
  const Shape& b = c.shape(1);
  const bool ta = c.attr_bool("adj_x"), tb = c.attr_bool("adj_y");
  for (size_t i = 0; i < 2; ++i)
    if (c.shape(i).rank_known() && c.shape(i).rank() < 2)
      c.fail(c.input_name(i), " must have rank >= 2, got shape ", c.shape(i).debug_string());
  if (!a.rank_known() || !b.rank_known()) {
    c.set_output(0, dt, Shape::unknown_rank());
    return;
  }
  const int64_t ra = a.rank(), rb = b.rank();
  const int64_t m = ta ? a.dim(ra - 1) : a.dim(ra - 2);
  const int64_t ka = ta ? a.dim(ra - 2) : a.dim(ra - 1);
  const int64_t kb = tb ? b.dim(rb - 1) : b.dim(rb - 2);
  const int64_t n = tb ? b.dim(rb - 2) : b.dim(rb - 1);
  if (ka >= 0 && kb >= 0 && ka != kb)
    c.fail("inner dimensions do not match: x shape ", a.debug_string(),
           " (transpose_a=", ta ? "true" : "false", ") has ", ka, " columns but y shape ",
           b.debug_string(), " (transpose_b=", tb ? "true" : "false", ") has ", kb, " rows");
  Shape ba(std::span<const int64_t>(a.dims().data(), static_cast<size_t>(ra - 2)));
  Shape bb(std::span<const int64_t>(b.dims().data(), static_cast<size_t>(rb - 2)));
  Shape out;
  try {
    out = broadcast_shapes(ba, bb, c.op().type_name);
  } catch (const InvalidArgumentError&) {
    c.fail("batch dimensions of x shape ", a.debug_string(), " and y shape ", b.debug_string(),
           " are not broadcastable");
  }
  out.push_back(m);
  out.push_back(n);
  c.set_output(0, dt, std::move(out));
}

// BatchMatMulV2. Attrs: adj_x, adj_y.
void infer_matmul(InferContext& c) {
  c.expect_same_dtype(0, 1);
  expect_numeric_not_bool(c, 0);
  infer_matmul_shape(c, c.dtype(0));
}

// _FusedMatMul (matmul_float_weights): a bfloat16 x times float32 weights y of
// rank 2 (rounded to bf16 when packed); x of rank 2 when adj_x. Optional: a
// float32 bias [n] (third input) and attr activation "relu", applied to the
// float32 sums before the one rounding to bf16.
void infer_fused_matmul(InferContext& c) {
  c.expect_dtype(0, DType::kBFloat16);
  c.expect_dtype(1, DType::kFloat32);
  if (c.num_inputs() > 3) c.fail("takes 2 or 3 inputs, got ", c.num_inputs());
  if (c.shape(1).rank_known() && c.shape(1).rank() != 2)
    c.fail("y must have rank 2, got shape ", c.shape(1).debug_string());
  if (c.attr_bool("adj_x") && c.shape(0).rank_known() && c.shape(0).rank() != 2)
    c.fail("x must have rank 2 when adj_x, got shape ", c.shape(0).debug_string());
  const std::string& act = c.attr_string("activation");
  if (act != "" && act != "relu") c.fail("activation must be \"\" or \"relu\", got \"", act, "\"");
  infer_matmul_shape(c, DType::kBFloat16);
  if (c.num_inputs() < 3) return;
  c.expect_dtype(2, DType::kFloat32);
  const Shape& y = c.shape(1);
  const int64_t n = y.rank_known() ? y.dim(c.attr_bool("adj_y") ? 0 : 1) : -1;
  const Shape& b = c.shape(2);
  if (!b.rank_known() || b.rank() != 1 || (n >= 0 && b.dim(0) >= 0 && b.dim(0) != n))
    c.fail("bias must have shape [", n, "], got ", b.debug_string());
}

// MatMul: the four transpose cases, then batch broadcasting summed back.
void matmul_grad(KILN_GRAD_ARGS) {
  const Tensor &a = in[0], &b = in[1], &dy = g[0];
  const bool ta = attr_value<bool>(op, attrs, "adj_x"), tb = attr_value<bool>(op, attrs, "adj_y");
  Tensor da, db;
  if (!ta && !tb) {
    da = matmul(dy, b, false, true);
    db = matmul(a, dy, true, false);
  } else if (!ta && tb) {
    da = matmul(dy, b);
    db = matmul(dy, a, true, false);
  } else if (ta && !tb) {
    da = matmul(b, dy, false, true);
    db = matmul(a, dy);
  } else {
    da = matmul(b, dy, true, true);
    db = matmul(dy, a, true, true);
  }
  gi[0] = grad::unbroadcast(da, a);
  gi[1] = grad::unbroadcast(db, b);
}

// m*k * n multiply-adds (input 0's elements times the output's columns);
// the matmul kernel splits from ~4 grains.
OpCost matmul_cost(const CostQuery& q) {
  const double base = q.elements();
  const double inner = static_cast<double>(std::max<int64_t>(q.out_inner, 1));
  const double w = q.in.empty() ? base : static_cast<double>(std::max<int64_t>(q.in[0], 0)) * inner;
  return {std::max(w, base), w > 4.0 * static_cast<double>(q.grain)};
}

// ONNX export: adjoints as Transposes of the last two dims.
std::string onnx_adjoint(onnx::ExportContext& c, size_t i, bool adj) {
  if (!adj) return c.in(i);
  const int64_t r = c.input_rank(i);
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < r; ++k) perm.push_back(k < r - 2 ? k : (k == r - 2 ? r - 1 : r - 2));
  return c.node1("Transpose", {c.in(i)}, {{"perm", perm}});
}
// A bfloat16 product runs on float32 between casts (onnxruntime's CPU MatMul
// has no bf16 kernel).
void onnx_matmul(onnx::ExportContext& c) {
  const DType dt = c.input_spec(0).dtype;
  const bool bf16 = dt == DType::kBFloat16;
  std::vector<std::string> ins = {onnx_adjoint(c, 0, c.attr_bool("adj_x")),
                                  onnx_adjoint(c, 1, c.attr_bool("adj_y"))};
  if (!bf16) return c.emit("MatMul", std::move(ins));
  for (std::string& in : ins) in = c.cast(in, dt, DType::kFloat32);
  c.emit("Cast", {c.node1("MatMul", std::move(ins))}, {{"to", c.onnx_dtype(dt)}});
}
// MatMul as a product a compiled kernel computes itself: float32/64, y of
// rank 2 (x's leading dims fold into its rows; x not transposed then), or
// batched with the same, statically known batch dims (no broadcasting).
bool matmul_product(const jit::ViewQuery& q, jit::Product& p) {
  const DType dt = q.inputs[0].dtype;
  if (dt != DType::kFloat32 && dt != DType::kFloat64 && dt != DType::kBFloat16) return false;
  const Shape &x = q.inputs[0].shape, &y = q.inputs[1].shape;
  if (!x.rank_known() || !y.rank_known() || x.rank() < 2 || y.rank() < 2) return false;
  p.transpose_a = attr_value<bool>(q.op, q.attrs, "adj_x");
  p.transpose_b = attr_value<bool>(q.op, q.attrs, "adj_y");
  if (y.rank() == 2) return x.rank() == 2 || !p.transpose_a;
  if (x.rank() != y.rank()) return false;
  for (int d = 0; d + 2 < x.rank(); ++d)
    if (x.dim(d) < 0 || x.dim(d) != y.dim(d)) return false;
  return true;
}

void define_matmul(OpTableBuilder& t) {
  t.def(OpId::MatMul)
      .tf()
      .inputs({"x", "y"})
      .outputs({"output"})
      .attr("adj_x", AttrType::kBool, false)
      .attr("adj_y", AttrType::kBool, false)
      .traits(kHalfInFloat | kNativeBFloat16)  // float16 in float32, bfloat16 on oneDNN
      .cost(matmul_cost)
      .infer(infer_matmul)
      .grad(matmul_grad)
      .jit_product(matmul_product)
      .onnx(onnx_matmul);
  t.def(OpId::FusedMatMul)
      .inputs({"x", "y", "bias"})
      .outputs({"output"})
      .attr("adj_x", AttrType::kBool, false)
      .attr("adj_y", AttrType::kBool, false)
      .attr("activation", AttrType::kString, std::string())
      .traits(kVariadicInput | kGraphOnly | kPassOnly)
      .cost(matmul_cost)
      .infer(infer_fused_matmul);
}

// ---- BiasAdd ----

void infer_bias_add(InferContext& c) {
  c.expect_same_dtype(0, 1);
  expect_numeric_not_bool(c, 0);
  const Shape& v = c.shape(0);
  const Shape& b = c.shape(1);
  if (v.rank_known() && v.rank() < 2)
    c.fail("value must have rank >= 2, got shape ", v.debug_string());
  if (b.rank_known() && b.rank() != 1) c.fail("bias must be 1-D, got shape ", b.debug_string());
  if (v.rank_known() && b.rank_known()) {
    const int64_t last = v.dim(v.rank() - 1), nb = b.dim(0);
    if (last >= 0 && nb >= 0 && last != nb)
      c.fail("bias length ", nb, " must match the last dimension of value ", last, " (value shape ",
             v.debug_string(), ", bias shape ", b.debug_string(), ")");
  }
  Shape out = v;
  if (v.rank_known() && b.rank_known() && out.dim(out.rank() - 1) < 0)
    out.set_dim(out.rank() - 1, b.dim(0));
  c.set_output(0, c.dtype(0), std::move(out));
}

void bias_add_grad(KILN_GRAD_ARGS) {
  const Shape& s = g[0].shape();
  if (!s.rank_known()) throw UnimplementedError("BiasAdd gradient: value of unknown rank");
  std::vector<int64_t> axes;
  for (int64_t i = 0; i + 1 < s.rank(); ++i) axes.push_back(i);
  gi[0] = g[0];
  gi[1] = reduce_sum(g[0], axes);
}

void define_bias_add(OpTableBuilder& t) {
  t.def(OpId::BiasAdd)
      .tf()
      .inputs({"value", "bias"})
      .outputs({"output"})
      .traits(kHalfInFloat)  // float16/bfloat16 in float32
      .infer(infer_bias_add)
      .grad(bias_add_grad)
      .epilogue(Epilogue::kBiasAdd)
      // value + bias broadcast over the last dim (NHWC): the JIT's Add.
      .jit_lower([](jit::LowerContext& c) {
        c.set_output(0, c.apply(OpId::Add, c.out_dtype(0), c.input(0), c.input(1)));
        return true;
      })
      .onnx("Add");  // the bias broadcasts over the last (NHWC channel) dim
}

// ---- Softmax, LogSoftmax ----

void infer_softmax(InferContext& c) {
  if (!is_floating(c.dtype(0)))
    c.fail("logits must be float32 or float64, got ", dtype_name(c.dtype(0)));
  if (c.shape(0).rank_known() && c.shape(0).rank() < 1)
    c.fail("logits must have rank >= 1, got a scalar");
  c.set_output(0, c.dtype(0), c.shape(0));
}

void softmax_grad(KILN_GRAD_ARGS) {
  const Tensor& y = out[0];
  gi[0] = y * (g[0] - reduce_sum(g[0] * y, {-1}, true));
}
void log_softmax_grad(KILN_GRAD_ARGS) {
  gi[0] = g[0] - exp(out[0]) * reduce_sum(g[0], {-1}, true);
}

// Over the last dim, as the kernel computes it: m = max(x), e = exp(x - m),
// s = sum(e); softmax = e * (1 / s), log-softmax = x - (m + log(s)).
template <bool kLog>
bool lower_softmax(jit::LowerContext& c) {
  const DType dt = c.dtype(0);
  const Shape& s = c.spec(0).shape;
  // The last dim may be of unknown size: its row kernel takes N at run time.
  if ((dt != DType::kFloat32 && dt != DType::kFloat64) || !s.rank_known() || s.rank() == 0)
    return false;
  const int32_t x = c.input(0);
  const int32_t m = c.reduce(OpId::Maximum, x, jit::lowest_bits(dt), 1);
  const int32_t e = c.apply(OpId::Exp, dt, c.apply(OpId::Sub, dt, x, m));
  const int32_t sum = c.reduce(OpId::Add, e, jit::bits_of(0, dt), 1);
  if (kLog) {
    c.set_output(0,
                 c.apply(OpId::Sub, dt, x, c.apply(OpId::Add, dt, m, c.apply(OpId::Log, dt, sum))));
  } else {
    const int32_t inv = c.apply(OpId::Div, dt, c.constant(1, dt), sum);
    c.set_output(0, c.apply(OpId::Mul, dt, e, inv));
  }
  return true;
}

// Softmax over the last axis: axis -1 since opset 13; before, the axis
// flattens the dims after it, so rank - 1 is the last axis too.
template <bool kLog>
void onnx_softmax(onnx::ExportContext& c) {
  const int64_t axis = c.opset() >= 13 ? -1 : c.input_rank(0) - 1;
  c.emit(kLog ? "LogSoftmax" : "Softmax", {c.in(0)}, {{"axis", axis}});
}

template <bool kLog>
void define_softmax_row(OpTableBuilder& t, OpId id, const char* output, GradFn grad) {
  t.def(id)
      .tf()
      .inputs({"logits"})
      .outputs({output})
      .traits(kHalfInFloat)  // float16/bfloat16 in float32
      .infer(infer_softmax)
      .grad(grad)
      .jit_lower(lower_softmax<kLog>)
      .onnx(onnx_softmax<kLog>);
}

void define_softmax(OpTableBuilder& t) {
  define_softmax_row<false>(t, OpId::Softmax, "softmax", softmax_grad);
  define_softmax_row<true>(t, OpId::LogSoftmax, "logsoftmax", log_softmax_grad);
}

}  // namespace

void define_nn_ops(OpTableBuilder& t) {
  define_matmul(t);
  define_bias_add(t);
  define_softmax(t);
  define_conv_ops(t);
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  return call_op1(OpId::MatMul, {a, b}, {transpose_a, transpose_b});
}
Tensor bias_add(const Tensor& value, const Tensor& bias) {
  return call_op1(OpId::BiasAdd, {value, bias});
}
Tensor softmax(const Tensor& logits) {
  return call_op1(OpId::Softmax, {logits});
}
Tensor log_softmax(const Tensor& logits) {
  return call_op1(OpId::LogSoftmax, {logits});
}

}  // namespace kiln
