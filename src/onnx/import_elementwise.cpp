// ONNX import rules: elementwise ops (unary, binary with numpy broadcasting,
// variadic folds, activations, casts).
#include <cmath>
#include <limits>

#include "kiln/context.h"
#include "onnx/import.h"

namespace kiln::onnx::detail {
namespace {

using C = ImportContext;

template <OpId id>
void unary(C& c) {
  c.set_output(0, call_op1(id, {c.input(0)}));
}
template <OpId id>
void binary(C& c) {
  c.set_output(0, call_op1(id, {c.input(0), c.input(1)}));
}
// Max, Min, Sum: a fold over any number of inputs.
template <OpId id>
void fold(C& c) {
  Tensor acc = c.input(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) acc = call_op1(id, {acc, c.input(i)});
  c.set_output(0, acc);
}
void mean(C& c) {
  fold<OpId::Add>(c);
  c.set_output(0, c.outputs()[0] / static_cast<double>(c.num_inputs()));
}
// A scalar of x's dtype.
Tensor lit(const Tensor& x, double v) {
  return constant(v, x.dtype());
}

void identity_rule(C& c) {
  c.set_output(0, identity(c.input(0)));
}
void reciprocal(C& c) {
  c.set_output(0, lit(c.input(0), 1) / c.input(0));
}
void tan(C& c) {
  c.set_output(0, sin(c.input(0)) / cos(c.input(0)));
}
void softplus(C& c) {
  const Tensor& x = c.input(0);  // max(x, 0) + log1p(exp(-|x|)), stable
  c.set_output(0, relu(x) + log1p(exp(negative(abs(x)))));
}
void softsign(C& c) {
  c.set_output(0, c.input(0) / (abs(c.input(0)) + lit(c.input(0), 1)));
}
void leaky_relu(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(0, where(x >= lit(x, 0), x, x * lit(x, c.attr_float("alpha", 0.01))));
}
void elu(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(0, where(x >= lit(x, 0), x, lit(x, c.attr_float("alpha", 1.0)) * expm1(x)));
}
void celu(C& c) {
  const Tensor& x = c.input(0);
  const Tensor a = lit(x, c.attr_float("alpha", 1.0));
  c.set_output(0, relu(x) + minimum(lit(x, 0), a * expm1(x / a)));
}
void selu(C& c) {
  const Tensor& x = c.input(0);
  const double alpha = c.attr_float("alpha", 1.67326319217681884765625);
  const double gamma = c.attr_float("gamma", 1.05070102214813232421875);
  c.set_output(0, lit(x, gamma) * where(x > lit(x, 0), x, lit(x, alpha) * expm1(x)));
}
void thresholded_relu(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(0, where(x > lit(x, c.attr_float("alpha", 1.0)), x, lit(x, 0)));
}
void hard_sigmoid(C& c) {
  const Tensor& x = c.input(0);
  const Tensor y = x * lit(x, c.attr_float("alpha", 0.2)) + lit(x, c.attr_float("beta", 0.5));
  c.set_output(0, clip_by_value(y, lit(x, 0), lit(x, 1)));
}
void hard_swish(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(0, x * clip_by_value(x / lit(x, 6) + lit(x, 0.5), lit(x, 0), lit(x, 1)));
}
void prelu(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(0, where(x < lit(x, 0), x * c.input(1), x));
}
void mish(C& c) {
  softplus(c);
  c.set_output(0, c.input(0) * tanh(c.outputs()[0]));
}
void gelu(C& c) {
  const Tensor& x = c.input(0);
  if (c.attr_string("approximate", "none") == "tanh") {
    const Tensor inner = lit(x, std::sqrt(2.0 / M_PI)) * (x + lit(x, 0.044715) * x * x * x);
    c.set_output(0, lit(x, 0.5) * x * (lit(x, 1) + tanh(inner)));
    return;
  }
  c.set_output(0, lit(x, 0.5) * x * (lit(x, 1) + erf(x * lit(x, M_SQRT1_2))));
}
void is_inf(C& c) {
  const Tensor& x = c.input(0);
  const bool pos = c.attr_int("detect_positive", 1) != 0;
  const bool neg = c.attr_int("detect_negative", 1) != 0;
  const Tensor inf = lit(x, std::numeric_limits<double>::infinity());
  Tensor out = logical_and(equal(x, inf), constant(pos, DType::kBool));
  out = logical_or(out, logical_and(equal(x, negative(inf)), constant(neg, DType::kBool)));
  c.set_output(0, out);
}
void pow_rule(C& c) {
  Tensor y = c.input(1);
  if (y.dtype() != c.input(0).dtype()) y = cast(y, c.input(0).dtype());
  c.set_output(0, call_op1(OpId::Pow, {c.input(0), y}));
}
void mod(C& c) {
  const Tensor &x = c.input(0), &y = c.input(1);
  if (c.attr_int("fmod", 0) == 0) {
    c.set_output(0, floormod(x, y));
    return;
  }
  // C's fmod: the sign of x. x - trunc(x / y) * y.
  Tensor r = floormod(x, y);
  const Tensor fix =
      logical_and(not_equal(r, lit(r, 0)), not_equal(less(x, lit(x, 0)), less(y, lit(y, 0))));
  c.set_output(0, where(fix, r - y, r));
}
// Shifts outside [0, bits) give 0, or (right shifts of negative values) -1.
void bit_shift(C& c) {
  const std::string dir = c.attr_string("direction");
  if (dir != "LEFT" && dir != "RIGHT") c.fail("direction '", dir, "' is not LEFT or RIGHT");
  const Tensor &x = c.input(0), &y = c.input(1);
  const double bits = 8.0 * static_cast<double>(dtype_size(x.dtype()));
  const Tensor valid = logical_and(greater_equal(y, lit(y, 0)), less(y, lit(y, bits)));
  const Tensor safe = clip_by_value(y, lit(y, 0), lit(y, bits - 1));
  if (dir == "LEFT") {
    c.set_output(0, where(valid, left_shift(x, safe), lit(x, 0)));
    return;
  }
  const Tensor fill =
      is_signed(x.dtype()) ? where(less(x, lit(x, 0)), lit(x, -1), lit(x, 0)) : zeros_like(x);
  c.set_output(0, where(valid, right_shift(x, safe), fill));
}
void cast_rule(C& c) {
  const DType to = from_proto(static_cast<int>(c.attr_int("to")), c.where());
  c.set_output(0, cast(c.input(0), to));
}
void cast_like(C& c) {
  c.set_output(0, cast(c.input(0), c.input(1).dtype()));
}
void where_rule(C& c) {
  c.set_output(0, where(c.input(0), c.input(1), c.input(2)));
}
void clip(C& c) {
  Tensor x = c.input(0);
  if (c.opset() < 11) {
    const double lo = c.attr_float("min", -std::numeric_limits<double>::infinity());
    const double hi = c.attr_float("max", std::numeric_limits<double>::infinity());
    c.set_output(0, minimum(maximum(x, lit(x, lo)), lit(x, hi)));
    return;
  }
  if (c.has_input(1)) x = maximum(x, c.input(1));
  if (c.has_input(2)) x = minimum(x, c.input(2));
  c.set_output(0, c.has_input(1) || c.has_input(2) ? x : identity(x));
}
void div_rule(C& c) {
  binary<OpId::Div>(c);
}
void sum_rule(C& c) {
  fold<OpId::Add>(c);
}

constexpr ImportRule kRules[] = {
    {"Abs", unary<OpId::Abs>},
    {"Neg", unary<OpId::Neg>},
    {"Sign", unary<OpId::Sign>},
    {"Sqrt", unary<OpId::Sqrt>},
    {"Exp", unary<OpId::Exp>},
    {"Log", unary<OpId::Log>},
    {"Tanh", unary<OpId::Tanh>},
    {"Sigmoid", unary<OpId::Sigmoid>},
    {"Relu", unary<OpId::Relu>},
    {"Sin", unary<OpId::Sin>},
    {"Cos", unary<OpId::Cos>},
    {"Tan", tan},
    {"Floor", unary<OpId::Floor>},
    {"Ceil", unary<OpId::Ceil>},
    {"Round", unary<OpId::Round>},
    {"Not", unary<OpId::LogicalNot>},
    {"BitwiseNot", unary<OpId::Invert>},
    {"IsNaN", unary<OpId::IsNan>},
    {"IsInf", is_inf},
    {"Identity", identity_rule},
    {"Reciprocal", reciprocal},
    {"Softplus", softplus},
    {"Softsign", softsign},
    {"LeakyRelu", leaky_relu},
    {"Elu", elu},
    {"Celu", celu},
    {"Selu", selu},
    {"ThresholdedRelu", thresholded_relu},
    {"HardSigmoid", hard_sigmoid},
    {"HardSwish", hard_swish},
    {"PRelu", prelu},
    {"Mish", mish},
    {"Gelu", gelu},
    {"Erf", unary<OpId::Erf>},
    {"Add", binary<OpId::Add>},
    {"Sub", binary<OpId::Sub>},
    {"Mul", binary<OpId::Mul>},
    {"Div", div_rule},
    {"Pow", pow_rule},
    {"Mod", mod},
    {"Max", fold<OpId::Maximum>},
    {"Min", fold<OpId::Minimum>},
    {"Sum", sum_rule},
    {"Mean", mean},
    {"Equal", binary<OpId::Equal>},
    {"Less", binary<OpId::Less>},
    {"LessOrEqual", binary<OpId::LessEqual>},
    {"Greater", binary<OpId::Greater>},
    {"GreaterOrEqual", binary<OpId::GreaterEqual>},
    {"And", binary<OpId::LogicalAnd>},
    {"Or", binary<OpId::LogicalOr>},
    {"Xor", binary<OpId::LogicalXor>},
    {"BitwiseAnd", binary<OpId::BitwiseAnd>},
    {"BitwiseOr", binary<OpId::BitwiseOr>},
    {"BitwiseXor", binary<OpId::BitwiseXor>},
    {"BitShift", bit_shift},
    {"Cast", cast_rule},
    {"CastLike", cast_like},
    {"Where", where_rule},
    {"Clip", clip},
};

}  // namespace

std::span<const ImportRule> elementwise_import_rules() {
  return kRules;
}

}  // namespace kiln::onnx::detail
