// Unary elementwise ops: definitions, inference, front functions.
#include "kiln/ops/unary.h"

#include "elementwise_infer.h"
#include "families.h"
#include "grad_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops/binary.h"
#include "kiln/ops/select_cast.h"
#include "onnx_export.h"

namespace kiln {
namespace {

// Output has the input's dtype and shape.
template <DTypeSet Allowed>
void infer_same(InferContext& c) {
  expect_dtype_in(c, 0, Allowed);
  c.set_output(0, c.dtype(0), c.shape(0));
}

// Predicates: bool output of the input's shape.
template <DTypeSet Allowed>
void infer_predicate(InferContext& c) {
  expect_dtype_in(c, 0, Allowed);
  c.set_output(0, DType::kBool, c.shape(0));
}

// ---- gradient rules: dx from x, y = f(x) and dy ----
using UnaryRule = Tensor (*)(const Tensor& x, const Tensor& y, const Tensor& dy);
template <UnaryRule R>
void unary_grad(KILN_GRAD_ARGS) {
  gi[0] = R(in[0], out[0], g[0]);
}
Tensor neg_rule(const Tensor&, const Tensor&, const Tensor& dy) {
  return negative(dy);
}
Tensor abs_rule(const Tensor& x, const Tensor&, const Tensor& dy) {
  return dy * sign(x);
}
Tensor square_rule(const Tensor& x, const Tensor&, const Tensor& dy) {
  return dy * (x * 2);
}
Tensor sqrt_rule(const Tensor&, const Tensor& y, const Tensor& dy) {
  return dy * 0.5 / y;
}
Tensor rsqrt_rule(const Tensor&, const Tensor& y, const Tensor& dy) {
  return dy * (y * y * y * -0.5);
}
Tensor exp_rule(const Tensor&, const Tensor& y, const Tensor& dy) {
  return dy * y;
}
Tensor log_rule(const Tensor& x, const Tensor&, const Tensor& dy) {
  return dy / x;
}
Tensor log1p_rule(const Tensor& x, const Tensor&, const Tensor& dy) {
  return dy / (x + 1);
}
Tensor tanh_rule(const Tensor&, const Tensor& y, const Tensor& dy) {
  return dy * (1 - y * y);
}
Tensor sigmoid_rule(const Tensor&, const Tensor& y, const Tensor& dy) {
  return dy * (y * (1 - y));
}
Tensor relu_rule(const Tensor& x, const Tensor&, const Tensor& dy) {
  return where(x > 0, dy, 0);
}
Tensor sin_rule(const Tensor& x, const Tensor&, const Tensor& dy) {
  return dy * cos(x);
}
Tensor cos_rule(const Tensor& x, const Tensor&, const Tensor& dy) {
  return negative(dy * sin(x));
}
Tensor expm1_rule(const Tensor&, const Tensor& y, const Tensor& dy) {
  return dy * (y + 1);
}
Tensor erf_rule(const Tensor& x, const Tensor&, const Tensor& dy) {
  // d/dx erf = 2 / sqrt(pi) e^{-x^2}
  return dy * (exp(negative(x * x)) * cast(Tensor(1.1283791670955126), x.dtype()));
}
constexpr UnaryRule no_grad = nullptr;

// ONNX export rules (the last column of unary.def).
void onnx_square(onnx::ExportContext& c) {
  c.emit("Mul", {c.in(0), c.in(0)});
}
void onnx_rsqrt(onnx::ExportContext& c) {
  c.emit("Reciprocal", {c.node1("Sqrt", {c.in(0)})});
}
void onnx_expm1(onnx::ExportContext& c) {
  c.emit("Sub", {c.node1("Exp", {c.in(0)}), c.scalar(1, c.input_spec(0).dtype)});
}
void onnx_log1p(onnx::ExportContext& c) {
  c.emit("Log", {c.node1("Add", {c.in(0), c.scalar(1, c.input_spec(0).dtype)})});
}
void onnx_relu(onnx::ExportContext& c) {
  const DType t = c.input_spec(0).dtype;
  if (is_floating(t) || c.opset() >= 14)
    c.emit("Relu", {c.in(0)});
  else if (c.opset() >= 12)
    c.emit("Max", {c.in(0), c.scalar(0, t)});
  else
    c.emit("Where", {c.node1("Less", {c.in(0), c.scalar(0, t)}), c.scalar(0, t), c.in(0)});
}
void onnx_round(onnx::ExportContext& c) {
  c.emit(is_floating(c.input_spec(0).dtype) ? "Round" : "Identity", {c.in(0)});
}
void onnx_invert(onnx::ExportContext& c) {
  if (c.opset() < 18) c.unsupported("BitwiseNot needs opset 18");
  c.emit("BitwiseNot", {c.in(0)});
}
void onnx_is_finite(onnx::ExportContext& c) {
  c.emit("Not", {c.node1("Or", {c.node1("IsNaN", {c.in(0)}), c.node1("IsInf", {c.in(0)})})});
}

// One row of unary.def: elementwise, x -> y, with its gradient rule (or
// kNoGradient).
template <UnaryRule R, typename E>
void define_unary(OpTableBuilder& t, OpId id, InferFn infer, DTypeSet dtypes, E onnx) {
  OpDefBuilder row = t.def(id);
  row.onnx(onnx).tf();  // every unary.def op is TensorFlow's, with its inputs
  row.inputs({"x"}).outputs({"y"}).traits(kElementwise).infer(infer).jit_lower(jit::lower_functor);
  if (dtypes & dtype_bit(DType::kFloat32)) row.traits(kHalfInFloat);
  if constexpr (R == nullptr)
    row.traits(kNoGradient);
  else
    row.grad(unary_grad<R>);
}

}  // namespace

void define_unary_ops(OpTableBuilder& t) {
#define KILN_UNARY(op, dtypes, rule, onnx) \
  define_unary<rule>(t, OpId::op, infer_same<dtypes>, dtypes, onnx);
#define KILN_PREDICATE(op, dtypes, onnx) \
  define_unary<no_grad>(t, OpId::op, infer_predicate<dtypes>, dtypes, onnx);
#include "unary.def"
#undef KILN_UNARY
#undef KILN_PREDICATE
  t.def(OpId::Relu).epilogue(Epilogue::kRelu);
  t.def(OpId::Sigmoid).epilogue(Epilogue::kSigmoid);
  t.def(OpId::Tanh).epilogue(Epilogue::kTanh);
}

Tensor negative(const Tensor& x) {
  return call_op1(OpId::Neg, {x});
}
Tensor abs(const Tensor& x) {
  return call_op1(OpId::Abs, {x});
}
Tensor sign(const Tensor& x) {
  return call_op1(OpId::Sign, {x});
}
Tensor square(const Tensor& x) {
  return call_op1(OpId::Square, {x});
}
Tensor sqrt(const Tensor& x) {
  return call_op1(OpId::Sqrt, {x});
}
Tensor rsqrt(const Tensor& x) {
  return call_op1(OpId::Rsqrt, {x});
}
Tensor exp(const Tensor& x) {
  return call_op1(OpId::Exp, {x});
}
Tensor log(const Tensor& x) {
  return call_op1(OpId::Log, {x});
}
Tensor expm1(const Tensor& x) {
  return call_op1(OpId::Expm1, {x});
}
Tensor erf(const Tensor& x) {
  return call_op1(OpId::Erf, {x});
}
Tensor log1p(const Tensor& x) {
  return call_op1(OpId::Log1p, {x});
}
Tensor tanh(const Tensor& x) {
  return call_op1(OpId::Tanh, {x});
}
Tensor sigmoid(const Tensor& x) {
  return call_op1(OpId::Sigmoid, {x});
}
Tensor relu(const Tensor& x) {
  return call_op1(OpId::Relu, {x});
}
Tensor sin(const Tensor& x) {
  return call_op1(OpId::Sin, {x});
}
Tensor cos(const Tensor& x) {
  return call_op1(OpId::Cos, {x});
}
Tensor floor(const Tensor& x) {
  return call_op1(OpId::Floor, {x});
}
Tensor ceil(const Tensor& x) {
  return call_op1(OpId::Ceil, {x});
}
Tensor round(const Tensor& x) {
  return call_op1(OpId::Round, {x});
}
Tensor logical_not(const Tensor& x) {
  return call_op1(OpId::LogicalNot, {x});
}
Tensor invert(const Tensor& x) {
  return call_op1(OpId::Invert, {x});
}
Tensor is_nan(const Tensor& x) {
  return call_op1(OpId::IsNan, {x});
}
Tensor is_finite(const Tensor& x) {
  return call_op1(OpId::IsFinite, {x});
}

Tensor operator-(const Tensor& x) {
  return negative(x);
}
Tensor operator~(const Tensor& x) {
  return x.defined() && x.dtype() == DType::kBool ? logical_not(x) : invert(x);
}

}  // namespace kiln
