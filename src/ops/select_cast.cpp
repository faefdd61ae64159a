// Select (where), Cast and ClipByValue: definitions, inference, front functions.
#include "kiln/ops/select_cast.h"

#include "elementwise_infer.h"
#include "families.h"
#include "front_util.h"
#include "grad_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops/binary.h"
#include "onnx_export.h"

namespace kiln {
namespace {

void infer_select(InferContext& c) {
  c.expect_dtype(0, DType::kBool);
  c.expect_same_dtype(1, 2);
  expect_dtype_in(c, 1, kAllValueSet);
  const char* op = c.op().type_name;
  c.set_output(0, c.dtype(1),
               broadcast_shapes(broadcast_shapes(c.shape(0), c.shape(1), op), c.shape(2), op));
}

void infer_cast(InferContext& c) {
  const DType from = c.dtype(0);
  const DType to = c.attr_dtype("DstT");
  if (!in_set(to, kAllValueSet))
    c.fail("DstT must be one of ", dtype_set_names(kAllValueSet), ", got ", dtype_name(to));
  expect_dtype_in(c, 0, kAllValueSet);
  if ((from == DType::kString) != (to == DType::kString))
    throw UnimplementedError(str_cat(c.op().type_name, ": cast from ", dtype_name(from), " to ",
                                     dtype_name(to), " is not supported"));
  c.set_output(0, to, c.shape(0));
}

// `bound` must broadcast to t's shape without changing it (unknown dims and
// ranks are accepted).
void check_broadcasts_to(const InferContext& c, size_t i, const Shape& t) {
  const Shape& s = c.shape(i);
  if (!s.rank_known() || !t.rank_known()) return;
  bool ok = s.rank() <= t.rank();
  for (int64_t d = 0; ok && d < s.rank(); ++d) {
    const int64_t sd = s.dim(d), td = t.dim(d + t.rank() - s.rank());
    ok = sd == 1 || sd < 0 || td < 0 || sd == td;
  }
  if (!ok)
    c.fail(c.input_name(i), " of shape ", s.debug_string(), " does not broadcast to t's shape ",
           t.debug_string());
}

void infer_clip(InferContext& c) {
  c.expect_same_dtype(0, 1);
  c.expect_same_dtype(0, 2);
  expect_dtype_in(c, 0, kRealSet);
  const Shape& t = c.shape(0);
  check_broadcasts_to(c, 1, t);
  check_broadcasts_to(c, 2, t);
  // Refine unknown dims of t from the bounds' known non-1 dims.
  const char* op = c.op().type_name;
  Shape full = broadcast_shapes(broadcast_shapes(t, c.shape(1), op), c.shape(2), op);
  Shape out = t;
  if (t.rank_known() && full.rank_known() && full.rank() == t.rank())
    for (int64_t d = 0; d < t.rank(); ++d)
      if (t.dim(d) < 0 && full.dim(d) > 1) out.set_dim(d, full.dim(d));
  c.set_output(0, c.dtype(0), out);
}

// ---- gradient rules ----
void select_grad(KILN_GRAD_ARGS) {
  gi[1] = grad::unbroadcast(where(in[0], g[0], 0), in[1]);
  gi[2] = grad::unbroadcast(where(in[0], 0, g[0]), in[2]);
}
// Only float -> float casts carry a gradient.
void cast_grad(KILN_GRAD_ARGS) {
  if (is_floating(in[0].dtype()) && is_floating(out[0].dtype())) gi[0] = cast(g[0], in[0].dtype());
}
// Inside [min, max] the gradient goes to t, below to min, above to max.
void clip_grad(KILN_GRAD_ARGS) {
  const Tensor below = less(in[0], in[1]);
  const Tensor above = greater(in[0], in[2]);
  gi[0] = where(logical_or(below, above), 0, g[0]);
  gi[1] = grad::unbroadcast(where(below, g[0], 0), in[1]);
  gi[2] = grad::unbroadcast(where(above, g[0], 0), in[2]);
}

void onnx_cast(onnx::ExportContext& c) {
  c.emit("Cast", {c.in(0)}, {{"to", c.onnx_dtype(c.attr_dtype("DstT"))}});
}
// Clip takes scalar bounds (as inputs since opset 11, integers since 12);
// other bounds broadcast through Max and Min.
void onnx_clip(onnx::ExportContext& c) {
  const bool scalars = c.input_spec(1).shape.rank() == 0 && c.input_spec(2).shape.rank() == 0;
  const bool typed = is_floating(c.input_spec(0).dtype) ? c.opset() >= 11 : c.opset() >= 12;
  if (scalars && typed) return c.emit("Clip", {c.in(0), c.in(1), c.in(2)});
  if (!is_floating(c.input_spec(0).dtype) && c.opset() < 12)
    c.unsupported("integer Max/Min need opset 12");
  c.emit("Min", {c.node1("Max", {c.in(0), c.in(1)}), c.in(2)});
}

}  // namespace

void define_select_cast_ops(OpTableBuilder& t) {
  t.def(OpId::Select)
      .tf()
      .inputs({"condition", "x", "y"})
      .outputs({"output"})
      .traits(kElementwise | kHalfInFloat)  // kHalfInFloat: float16/bfloat16 in float32
      .infer(infer_select)
      .grad(select_grad)
      .jit_lower([](jit::LowerContext& c) {
        c.set_output(0, c.select(c.input(0), c.input(1), c.input(2)));
        return true;
      })
      .onnx("Where");
  t.def(OpId::Cast)
      .tf()
      .inputs({"x"})
      .outputs({"y"})
      .attr("DstT", AttrType::kDType)  // required
      .traits(kElementwise)
      .infer(infer_cast)
      .grad(cast_grad)
      .jit_lower([](jit::LowerContext& c) {
        c.set_output(0, c.cast(c.input(0), c.out_dtype(0)));
        return true;
      })
      .onnx(onnx_cast);
  t.def(OpId::ClipByValue)
      .tf()
      .inputs({"t", "clip_value_min", "clip_value_max"})
      .outputs({"output"})
      .traits(kElementwise | kHalfInFloat)  // kHalfInFloat: float16/bfloat16 in float32
      .infer(infer_clip)
      .grad(clip_grad)
      .epilogue(Epilogue::kClip)
      .jit_lower(jit::lower_functor)
      .onnx(onnx_clip);
}

Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
  return call_op1(OpId::Select, {condition, x, y});
}
Tensor where(const Tensor& condition, const Tensor& x, Scalar y) {
  return where(condition, x, scalar_like(y, x));
}
Tensor where(const Tensor& condition, Scalar x, const Tensor& y) {
  return where(condition, scalar_like(x, y), y);
}

Tensor cast(const Tensor& x, DType dtype) {
  // As tf.cast: no op at all when the dtype already matches.
  if (x.defined() && x.dtype() == dtype) return x;
  return call_op1(OpId::Cast, {x}, {dtype});
}

Tensor clip_by_value(const Tensor& t, const Tensor& clip_value_min, const Tensor& clip_value_max) {
  return call_op1(OpId::ClipByValue, {t, clip_value_min, clip_value_max});
}
Tensor clip_by_value(const Tensor& t, Scalar clip_value_min, Scalar clip_value_max) {
  return clip_by_value(t, scalar_like(clip_value_min, t), scalar_like(clip_value_max, t));
}

}  // namespace kiln
