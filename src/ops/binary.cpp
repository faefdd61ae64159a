// Binary elementwise ops: definitions, inference, front functions.
#include "kiln/ops/binary.h"

#include "elementwise_infer.h"
#include "families.h"
#include "front_util.h"
#include "grad_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops/select_cast.h"
#include "kiln/ops/unary.h"
#include "onnx_export.h"

namespace kiln {
namespace {

// Same dtype for both inputs (in `Allowed`), broadcast shapes; the output
// has the input dtype, or bool for comparisons.
template <DTypeSet Allowed, bool kBoolOut>
void infer_binary(InferContext& c) {
  c.expect_same_dtype(0, 1);
  expect_dtype_in(c, 0, Allowed);
  c.set_output(0, kBoolOut ? DType::kBool : c.dtype(0),
               broadcast_shapes(c.shape(0), c.shape(1), c.op().type_name));
}

// ---- gradient rules (broadcast inputs get their gradient summed back) ----
using grad::unbroadcast;
void add_grad(KILN_GRAD_ARGS) {
  gi[0] = unbroadcast(g[0], in[0]);
  gi[1] = unbroadcast(g[0], in[1]);
}
void sub_grad(KILN_GRAD_ARGS) {
  gi[0] = unbroadcast(g[0], in[0]);
  gi[1] = unbroadcast(negative(g[0]), in[1]);
}
void mul_grad(KILN_GRAD_ARGS) {
  gi[0] = unbroadcast(g[0] * in[1], in[0]);
  gi[1] = unbroadcast(g[0] * in[0], in[1]);
}
void div_grad(KILN_GRAD_ARGS) {
  gi[0] = unbroadcast(g[0] / in[1], in[0]);
  gi[1] = unbroadcast(negative(g[0]) * in[0] / (in[1] * in[1]), in[1]);
}
void floormod_grad(KILN_GRAD_ARGS) {
  gi[0] = unbroadcast(g[0], in[0]);
  gi[1] = unbroadcast(negative(g[0]) * floordiv(in[0], in[1]), in[1]);
}
// d(x^y)/dx = y x^(y-1); d/dy = x^y log(x), taken as 0 where x <= 0.
void pow_grad(KILN_GRAD_ARGS) {
  const Tensor &x = in[0], &y = in[1];
  gi[0] = unbroadcast(g[0] * y * pow(x, y - 1), x);
  const Tensor log_x = where(x > 0, log(where(x > 0, x, 1)), 0);
  gi[1] = unbroadcast(g[0] * out[0] * log_x, y);
}
// Ties send the gradient to x (as TensorFlow).
template <bool kMax>
void minmax_grad(KILN_GRAD_ARGS) {
  const Tensor mask = kMax ? greater_equal(in[0], in[1]) : less_equal(in[0], in[1]);
  gi[0] = unbroadcast(where(mask, g[0], 0), in[0]);
  gi[1] = unbroadcast(where(mask, 0, g[0]), in[1]);
}
void squared_difference_grad(KILN_GRAD_ARGS) {
  const Tensor d = g[0] * ((in[0] - in[1]) * 2);
  gi[0] = unbroadcast(d, in[0]);
  gi[1] = unbroadcast(negative(d), in[1]);
}

constexpr GradFn no_grad = nullptr;

// ONNX export rules (the last column of binary.def).
void onnx_add(onnx::ExportContext& c) {
  if (c.input_spec(0).dtype != DType::kString) return c.emit("Add", {c.in(0), c.in(1)});
  if (c.opset() < 20) c.unsupported("string concatenation needs opset 20 (StringConcat)");
  c.emit("StringConcat", {c.in(0), c.in(1)});
}
// Floor division: a / b rounded down; integers as (a - mod(a, b)) / b.
void onnx_floor_div(onnx::ExportContext& c) {
  if (is_floating(c.input_spec(0).dtype))
    return c.emit("Floor", {c.node1("Div", {c.in(0), c.in(1)})});
  const std::string m = c.node1("Mod", {c.in(0), c.in(1)});
  c.emit("Div", {c.node1("Sub", {c.in(0), m}), c.in(1)});
}
// Floor modulo (the divisor's sign): Mod for integers, a - floor(a / b) * b
// for floats (ONNX's float Mod is fmod).
void onnx_floor_mod(onnx::ExportContext& c) {
  if (!is_floating(c.input_spec(0).dtype)) return c.emit("Mod", {c.in(0), c.in(1)});
  const std::string q = c.node1("Floor", {c.node1("Div", {c.in(0), c.in(1)})});
  c.emit("Sub", {c.in(0), c.node1("Mul", {q, c.in(1)})});
}
void onnx_squared_difference(onnx::ExportContext& c) {
  const std::string d = c.node1("Sub", {c.in(0), c.in(1)});
  c.emit("Mul", {d, d});
}
void onnx_not_equal(onnx::ExportContext& c) {
  c.emit("Not", {c.node1("Equal", {c.in(0), c.in(1)})});
}
// Max/Min (integers since opset 12; before, a Where of a comparison).
template <bool kMax>
void onnx_minmax(onnx::ExportContext& c) {
  if (is_floating(c.input_spec(0).dtype) || c.opset() >= 12)
    return c.emit(kMax ? "Max" : "Min", {c.in(0), c.in(1)});
  const std::string first = c.node1(kMax ? "Greater" : "Less", {c.in(0), c.in(1)});
  c.emit("Where", {first, c.in(0), c.in(1)});
}
// LessOrEqual/GreaterOrEqual since opset 12; before, the negated opposite.
template <bool kLess>
void onnx_or_equal(onnx::ExportContext& c) {
  if (c.opset() >= 12) return c.emit(kLess ? "LessOrEqual" : "GreaterOrEqual", {c.in(0), c.in(1)});
  c.emit("Not", {c.node1(kLess ? "Greater" : "Less", {c.in(0), c.in(1)})});
}
void onnx_bitwise(onnx::ExportContext& c, const char* op) {
  if (c.opset() < 18) c.unsupported(str_cat(op, " needs opset 18"));
  c.emit(op, {c.in(0), c.in(1)});
}
void onnx_bitwise_and(onnx::ExportContext& c) {
  onnx_bitwise(c, "BitwiseAnd");
}
void onnx_bitwise_or(onnx::ExportContext& c) {
  onnx_bitwise(c, "BitwiseOr");
}
void onnx_bitwise_xor(onnx::ExportContext& c) {
  onnx_bitwise(c, "BitwiseXor");
}
// BitShift (unsigned types only); kiln clamps counts to [0, bits - 1].
template <bool kLeft>
void onnx_shift(onnx::ExportContext& c) {
  const DType t = c.input_spec(0).dtype;
  if (t != DType::kUInt8) c.unsupported("ONNX's BitShift takes unsigned integers only");
  bool in_range = false;  // constant counts below 8 need no clamp
  if (const Tensor* v = c.input_value(1)) {
    in_range = true;
    for (int64_t k = 0; k < v->num_elements(); ++k) in_range &= v->data<uint8_t>()[k] < 8;
  }
  if (!in_range && c.opset() < 12) c.unsupported("clamping uint8 shift counts needs opset 12");
  const std::string n = in_range ? c.in(1) : c.node1("Min", {c.in(1), c.scalar(7, t)});
  c.emit("BitShift", {c.in(0), n}, {{"direction", std::string(kLeft ? "LEFT" : "RIGHT")}});
}

// One row of binary.def: elementwise (x, y) -> z, with its gradient rule (or
// kNoGradient).
template <GradFn R, typename E>
void define_binary(OpTableBuilder& t, OpId id, InferFn infer, uint32_t traits, DTypeSet dtypes,
                   E onnx) {
  OpDefBuilder row = t.def(id);
  row.onnx(onnx);
  if (id != OpId::LogicalXor) row.tf();  // TensorFlow has the others, with these inputs
  row.inputs({"x", "y"}).outputs({"z"}).traits(kElementwise | traits).infer(infer);
  row.jit_lower(jit::lower_functor);
  if (dtypes & dtype_bit(DType::kFloat32)) row.traits(kHalfInFloat);
  if constexpr (R == nullptr)
    row.traits(kNoGradient);
  else
    row.grad(R);
}

}  // namespace

void define_binary_ops(OpTableBuilder& t) {
#define KILN_BINARY(op, dtypes, kind, traits, rule, onnx)                                      \
  define_binary<rule>(t, OpId::op, infer_binary<dtypes, std::string_view(#kind) == "compare">, \
                      traits, dtypes, onnx);
#include "binary.def"
#undef KILN_BINARY
  t.def(OpId::Add).epilogue(Epilogue::kAdd);
  t.def(OpId::Sub).epilogue(Epilogue::kSub);
  t.def(OpId::Mul).epilogue(Epilogue::kMul);
}

#define KILN_BINARY_IMPL(name, id)                \
  Tensor name(const Tensor& a, const Tensor& b) { \
    return call_op1(OpId::id, {a, b});            \
  }                                               \
  Tensor name(const Tensor& a, Scalar b) {        \
    return name(a, scalar_like(b, a));            \
  }                                               \
  Tensor name(Scalar a, const Tensor& b) {        \
    return name(scalar_like(a, b), b);            \
  }

KILN_BINARY_IMPL(add, Add)
KILN_BINARY_IMPL(subtract, Sub)
KILN_BINARY_IMPL(multiply, Mul)
KILN_BINARY_IMPL(floordiv, FloorDiv)
KILN_BINARY_IMPL(floormod, FloorMod)
KILN_BINARY_IMPL(pow, Pow)
KILN_BINARY_IMPL(maximum, Maximum)
KILN_BINARY_IMPL(minimum, Minimum)
KILN_BINARY_IMPL(squared_difference, SquaredDifference)
KILN_BINARY_IMPL(equal, Equal)
KILN_BINARY_IMPL(not_equal, NotEqual)
KILN_BINARY_IMPL(less, Less)
KILN_BINARY_IMPL(less_equal, LessEqual)
KILN_BINARY_IMPL(greater, Greater)
KILN_BINARY_IMPL(greater_equal, GreaterEqual)
KILN_BINARY_IMPL(logical_and, LogicalAnd)
KILN_BINARY_IMPL(logical_or, LogicalOr)
KILN_BINARY_IMPL(logical_xor, LogicalXor)
KILN_BINARY_IMPL(bitwise_and, BitwiseAnd)
KILN_BINARY_IMPL(bitwise_or, BitwiseOr)
KILN_BINARY_IMPL(bitwise_xor, BitwiseXor)
KILN_BINARY_IMPL(left_shift, LeftShift)
KILN_BINARY_IMPL(right_shift, RightShift)
#undef KILN_BINARY_IMPL

// TensorFlow's truediv: integers become floats first (8-bit -> float32,
// 32/64-bit -> float64). Mismatched dtypes are left for RealDiv to report.
Tensor divide(const Tensor& a, const Tensor& b) {
  if (a.defined() && b.defined() && a.dtype() == b.dtype() && is_integer(a.dtype())) {
    const DType to = (a.dtype() == DType::kInt8 || a.dtype() == DType::kUInt8) ? DType::kFloat32
                                                                               : DType::kFloat64;
    return call_op1(OpId::Div, {cast(a, to), cast(b, to)});
  }
  return call_op1(OpId::Div, {a, b});
}
Tensor divide(const Tensor& a, Scalar b) {
  return divide(a, scalar_like(b, a));
}
Tensor divide(Scalar a, const Tensor& b) {
  return divide(scalar_like(a, b), b);
}

}  // namespace kiln
