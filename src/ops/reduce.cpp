// Reductions, arg-max/min and cumsum: definitions, inference, front functions.
#include "kiln/ops/reduce.h"

#include <algorithm>
#include <limits>

#include "families.h"
#include "front_util.h"
#include "grad_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "onnx_export.h"

namespace kiln {
namespace {

std::string ints_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

void expect_numeric(InferContext& c, size_t i) {
  if (!is_numeric(c.dtype(i)))
    c.fail(c.input_name(i),
           " must have a numeric dtype (int8, uint8, int32, int64, float32, float64), got ",
           dtype_name(c.dtype(i)));
}

enum class Takes { kNumeric, kBool, kNumericOrComplex };

// Attrs: axis (list; empty = all), keepdims. Sum, Mean and Prod take complex
// values too (TensorFlow's); Max and Min do not (complex has no order).
template <Takes kTakes>
void infer_reduce(InferContext& c) {
  if constexpr (kTakes == Takes::kBool)
    c.expect_dtype(0, DType::kBool);
  else if constexpr (kTakes == Takes::kNumericOrComplex) {
    if (!is_complex(c.dtype(0))) expect_numeric(c, 0);
  } else
    expect_numeric(c, 0);
  const std::vector<int64_t>& axes = c.attr_ints("axis");
  const bool keepdims = c.attr_bool("keepdims");
  const Shape& in = c.shape(0);
  if (!in.rank_known()) {
    for (size_t i = 0; i < axes.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (axes[i] == axes[j])
          c.fail("axis contains duplicate dimension ", axes[i], " (axis ", ints_string(axes), ")");
    c.set_output(0, c.dtype(0), Shape::unknown_rank());
    return;
  }
  const int64_t rank = in.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(a, rank, c.op().type_name, "axis");
    if (reduced[static_cast<size_t>(n)])
      c.fail("axis contains duplicate dimension ", n, " (axis ", ints_string(axes),
             " for input of rank ", rank, ")");
    reduced[static_cast<size_t>(n)] = true;
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[static_cast<size_t>(d)])
      out.push_back(in.dim(d));
    else if (keepdims)
      out.push_back(1);
  }
  c.set_output(0, c.dtype(0), std::move(out));
}

// Attrs: axis, output_type.
void infer_arg(InferContext& c) {
  if (!is_numeric(c.dtype(0)) && c.dtype(0) != DType::kBool)
    c.fail("input must have a numeric or bool dtype, got ", dtype_name(c.dtype(0)));
  const DType ot = c.attr_dtype("output_type");
  if (ot != DType::kInt32 && ot != DType::kInt64)
    c.fail("output_type must be int32 or int64, got ", dtype_name(ot));
  const Shape& in = c.shape(0);
  if (!in.rank_known()) {
    c.set_output(0, ot, Shape::unknown_rank());
    return;
  }
  if (in.rank() == 0) c.fail("input must have rank >= 1, got a scalar");
  const int64_t axis = normalize_axis(c.attr_int("axis"), in.rank(), c.op().type_name, "axis");
  const int64_t n = in.dim(axis);
  if (n == 0)
    c.fail("reduction axis ", axis, " is empty in shape ", in.debug_string(),
           " (argmax/argmin need at least one element)");
  if (ot == DType::kInt32 && n > std::numeric_limits<int32_t>::max())
    c.fail("axis ", axis, " has ", n, " elements, too many for output_type int32");
  Shape out = in;
  out.erase(axis);
  c.set_output(0, ot, std::move(out));
}

// Attrs: axis, exclusive, reverse.
void infer_cumsum(InferContext& c) {
  expect_numeric(c, 0);
  const Shape& in = c.shape(0);
  if (in.rank_known()) {
    if (in.rank() == 0) c.fail("x must have rank >= 1, got a scalar");
    normalize_axis(c.attr_int("axis"), in.rank(), c.op().type_name, "axis");
  }
  c.set_output(0, c.dtype(0), in);
}

void def_reduce(OpTableBuilder& t, OpId id, InferFn f, uint32_t traits = 0) {
  t.def(id)
      .inputs({"input"})
      .outputs({"output"})
      .attr("axis", AttrType::kInts, std::vector<int64_t>{})
      .attr("keepdims", AttrType::kBool, false)
      .traits(traits)
      .infer(f);
}

Tensor reduce(OpId id, const Tensor& t, const std::vector<int64_t>& axes, bool keepdims) {
  return call_op1(id, {t}, {axes, keepdims});
}

// ---- gradient rules ----
std::vector<int64_t> reduced_axes(const OpDef& op, const Tensor& x, const Attrs& attrs) {
  if (!x.shape().rank_known())
    throw UnimplementedError(str_cat(op.type_name, " gradient: input of unknown rank"));
  return grad::reduction_axes(attr_value<std::vector<int64_t>>(op, attrs, "axis"),
                              x.shape().rank());
}
void sum_grad(KILN_GRAD_ARGS) {
  gi[0] = grad::expand_reduced(g[0], in[0], reduced_axes(op, in[0], attrs));
}
void mean_grad(KILN_GRAD_ARGS) {
  const std::vector<int64_t> axes = reduced_axes(op, in[0], attrs);
  const Tensor dx = grad::expand_reduced(g[0], in[0], axes);
  int64_t count = 1;
  bool known = true;
  for (int64_t a : axes) {
    const int64_t d = in[0].shape().dim(a);
    known &= d >= 0;
    count *= d;
  }
  if (known) {
    gi[0] = dx / Tensor(Scalar(static_cast<double>(count)), in[0].dtype());
    return;
  }
  const Tensor n = reduce_prod(gather(shape(in[0], DType::kInt64), int64_vector(axes)));
  gi[0] = dx / cast(n, in[0].dtype());
}
// Max/Min: the gradient is shared evenly among the elements equal to the
// result (as TensorFlow).
void extremum_grad(KILN_GRAD_ARGS) {
  const std::vector<int64_t> axes = reduced_axes(op, in[0], attrs);
  const Tensor y = grad::expand_reduced(out[0], in[0], axes);
  const Tensor hit = cast(equal(in[0], y), in[0].dtype());
  const Tensor count = grad::expand_reduced(reduce_sum(hit, axes), in[0], axes);
  gi[0] = grad::expand_reduced(g[0], in[0], axes) * hit / count;
}
// Prod: each element's gradient is the product of the others in its group,
// computed without dividing by zero: with no zero in the group prod / x;
// with one zero, that element gets the product of the rest and the others 0;
// with more, all 0.
void prod_grad(KILN_GRAD_ARGS) {
  const Tensor& x = in[0];
  const std::vector<int64_t> axes = reduced_axes(op, x, attrs);
  const Tensor zero = equal(x, 0);
  const Tensor nonzero = where(zero, 1, x);
  const Tensor rest = grad::expand_reduced(reduce_prod(nonzero, axes), x, axes);
  const Tensor zeros = grad::expand_reduced(reduce_sum(cast(zero, x.dtype()), axes), x, axes);
  const Tensor others =
      where(zero, where(equal(zeros, 1), rest, 0), where(equal(zeros, 0), rest / nonzero, 0));
  gi[0] = grad::expand_reduced(g[0], x, axes) * others;
}
void cumsum_grad(KILN_GRAD_ARGS) {
  gi[0] = cumsum(g[0], attr_value<int64_t>(op, attrs, "axis"),
                 attr_value<bool>(op, attrs, "exclusive"), !attr_value<bool>(op, attrs, "reverse"));
}

// TensorFlow's rule: the reverse scan of (prefix products * g) divided by x
// (0 where x is 0).
void cumprod_grad(KILN_GRAD_ARGS) {
  const int64_t axis = attr_value<int64_t>(op, attrs, "axis");
  const bool exclusive = attr_value<bool>(op, attrs, "exclusive");
  const bool reverse = attr_value<bool>(op, attrs, "reverse");
  const Tensor& x = in[0];
  const Tensor s = cumsum(out[0] * g[0], axis, exclusive, !reverse);
  const Tensor zero = equal(x, zeros_like(x));
  gi[0] = where(zero, zeros_like(x), s / where(zero, ones_like(x), x));
}

// ---- JIT lowerings: a fold over the input's last dims (a row reduction) ----
template <OpId kFold>
bool lower_fold(jit::LowerContext& c) {
  const DType dt = c.dtype(0);
  const int k = jit::trailing_axes(c.spec(0).shape, c.attr_ints("axis"));
  if (k == 0 || (dt == DType::kBool) != (kFold == OpId::LogicalOr || kFold == OpId::LogicalAnd))
    return false;
  const uint64_t init = kFold == OpId::Maximum                            ? jit::lowest_bits(dt)
                        : kFold == OpId::Minimum                          ? jit::highest_bits(dt)
                        : kFold == OpId::Mul || kFold == OpId::LogicalAnd ? jit::bits_of(1, dt)
                                                                          : jit::bits_of(0, dt);
  c.set_output(0, c.reduce(kFold, c.input(0), init, k));
  return true;
}
// The sum divided by the count (float division; C truncation for integers,
// as the kernel does). A count unknown until run time is counted in the
// same pass: a sum of ones (exact in float32 up to 2^24 values per lane).
bool lower_mean(jit::LowerContext& c) {
  if (!lower_fold<OpId::Add>(c)) return false;
  const Shape& s = c.spec(0).shape;
  const DType dt = c.dtype(0);
  int64_t n = 1;
  for (int d = s.rank() - c.reduced(); d < s.rank(); ++d) n = s.dim(d) < 0 ? -1 : n * s.dim(d);
  const int32_t count =
      n >= 0 ? c.constant(static_cast<double>(n), dt)
             : c.reduce(OpId::Add, c.constant(1, dt), jit::bits_of(0, dt), c.reduced());
  if (n != 1) c.set_output(0, c.apply(OpId::Div, dt, c.results()[0], count));
  return true;
}

// ONNX export: axes an input since opset 13 (ReduceSum) or 18 (the others),
// an attribute before; no axes reduces everything, as kiln's empty list.
// Writes to `outs`, or to a fresh value when empty; returns the value.
std::string onnx_reduce_to(onnx::ExportContext& c, const char* op, const std::string& x,
                           std::vector<std::string> outs) {
  const std::vector<int64_t>& axes = c.attr_ints("axis");
  onnx::NamedAttrs a = {{"keepdims", int64_t{c.attr_bool("keepdims")}}};
  std::vector<std::string> ins = {x};
  const bool input = c.opset() >= (std::string_view(op) == "ReduceSum" ? 13 : 18);
  if (!axes.empty() && input) ins.push_back(c.ints(axes));
  if (!axes.empty() && !input) a.emplace_back("axes", axes);
  return c.node(op, std::move(ins), std::move(a), std::move(outs))[0];
}
template <OpId kId>
void onnx_reduce(onnx::ExportContext& c) {
  constexpr const char* op = kId == OpId::ReduceSum    ? "ReduceSum"
                             : kId == OpId::ReduceMean ? "ReduceMean"
                             : kId == OpId::ReduceMax  ? "ReduceMax"
                             : kId == OpId::ReduceMin  ? "ReduceMin"
                                                       : "ReduceProd";
  onnx_reduce_to(c, op, c.in(0), {c.out(0)});
}
// Any/All: Max/Min over the values as int32, cast back to bool.
template <bool kAny>
void onnx_reduce_bool(onnx::ExportContext& c) {
  const std::string x = c.cast(c.in(0), DType::kBool, DType::kInt32);
  const std::string r = onnx_reduce_to(c, kAny ? "ReduceMax" : "ReduceMin", x, {});
  c.emit("Cast", {r}, {{"to", c.onnx_dtype(DType::kBool)}});
}
template <bool kMax>
void onnx_arg(onnx::ExportContext& c) {
  const std::string r = c.node1(kMax ? "ArgMax" : "ArgMin", {c.in(0)},
                                {{"axis", c.attr_int("axis")}, {"keepdims", int64_t{0}}});
  c.emit("Cast", {r}, {{"to", c.onnx_dtype(c.attr_dtype("output_type"))}});
}
void onnx_cumsum(onnx::ExportContext& c) {
  c.emit("CumSum", {c.in(0), c.constant(Tensor(c.attr_int("axis")))},
         {{"exclusive", int64_t{c.attr_bool("exclusive")}},
          {"reverse", int64_t{c.attr_bool("reverse")}}});
}

}  // namespace

void define_segment_ops(OpTableBuilder& t);  // segment.cpp

void define_reduce_ops(OpTableBuilder& t) {
  // One row per reduction, its facets together: inference, gradient (none:
  // not differentiable), JIT lowering, ONNX export.
  struct Row {
    OpId id;
    InferFn infer;
    GradFn grad;
    JitLowerFn jit;
    OnnxExportFn onnx;
  };
  const Row rows[] = {
      {OpId::ReduceSum, infer_reduce<Takes::kNumericOrComplex>, sum_grad, lower_fold<OpId::Add>,
       onnx_reduce<OpId::ReduceSum>},
      {OpId::ReduceMean, infer_reduce<Takes::kNumericOrComplex>, mean_grad, lower_mean,
       onnx_reduce<OpId::ReduceMean>},
      {OpId::ReduceMax, infer_reduce<Takes::kNumeric>, extremum_grad, lower_fold<OpId::Maximum>,
       onnx_reduce<OpId::ReduceMax>},
      {OpId::ReduceMin, infer_reduce<Takes::kNumeric>, extremum_grad, lower_fold<OpId::Minimum>,
       onnx_reduce<OpId::ReduceMin>},
      {OpId::ReduceProd, infer_reduce<Takes::kNumericOrComplex>, prod_grad, lower_fold<OpId::Mul>,
       onnx_reduce<OpId::ReduceProd>},
      {OpId::ReduceAny, infer_reduce<Takes::kBool>, nullptr, lower_fold<OpId::LogicalOr>,
       onnx_reduce_bool<true>},
      {OpId::ReduceAll, infer_reduce<Takes::kBool>, nullptr, lower_fold<OpId::LogicalAnd>,
       onnx_reduce_bool<false>},
  };
  for (const Row& r : rows) {
    def_reduce(t, r.id, r.infer, r.grad ? 0u : static_cast<uint32_t>(kNoGradient));
    t.def(r.id).jit_lower(r.jit).onnx(r.onnx).tf_form({{1, "axis", true}},
                                                      {{"keep_dims", "keepdims"}});
    if (r.grad) t.def(r.id).grad(r.grad);
  }
  for (OpId id : {OpId::ArgMax, OpId::ArgMin})
    t.def(id)
        .inputs({"input"})
        .outputs({"output"})
        .attr("axis", AttrType::kInt, int64_t{0})
        .attr("output_type", AttrType::kDType, DType::kInt64)
        .traits(kNoGradient)
        .infer(infer_arg)
        .onnx(id == OpId::ArgMax ? onnx_arg<true> : onnx_arg<false>)
        .tf_form({{1, "axis"}});
  for (OpId id : {OpId::Cumsum, OpId::Cumprod})
    t.def(id)
        .inputs({"x"})
        .outputs({"out"})
        .attr("axis", AttrType::kInt, int64_t{0})
        .attr("exclusive", AttrType::kBool, false)
        .attr("reverse", AttrType::kBool, false)
        .infer(infer_cumsum)
        .tf_form({{1, "axis"}});
  t.def(OpId::Cumsum).grad(cumsum_grad).onnx(onnx_cumsum);
  t.def(OpId::Cumprod).grad(cumprod_grad);
  define_segment_ops(t);
  for (OpId id : {OpId::ReduceSum, OpId::ReduceMean, OpId::ReduceMax, OpId::ReduceMin,
                  OpId::ReduceProd, OpId::ArgMax, OpId::ArgMin, OpId::Cumsum, OpId::Cumprod})
    t.def(id).traits(kHalfInFloat);  // float16/bfloat16 in float32
}

Tensor reduce_sum(const Tensor& t, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(OpId::ReduceSum, t, axes, keepdims);
}
Tensor reduce_mean(const Tensor& t, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(OpId::ReduceMean, t, axes, keepdims);
}
Tensor reduce_max(const Tensor& t, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(OpId::ReduceMax, t, axes, keepdims);
}
Tensor reduce_min(const Tensor& t, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(OpId::ReduceMin, t, axes, keepdims);
}
Tensor reduce_prod(const Tensor& t, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(OpId::ReduceProd, t, axes, keepdims);
}
Tensor reduce_any(const Tensor& t, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(OpId::ReduceAny, t, axes, keepdims);
}
Tensor reduce_all(const Tensor& t, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(OpId::ReduceAll, t, axes, keepdims);
}

Tensor argmax(const Tensor& t, int64_t axis, DType output_type) {
  return call_op1(OpId::ArgMax, {t}, {axis, output_type});
}
Tensor argmin(const Tensor& t, int64_t axis, DType output_type) {
  return call_op1(OpId::ArgMin, {t}, {axis, output_type});
}

Tensor cumsum(const Tensor& t, int64_t axis, bool exclusive, bool reverse) {
  return call_op1(OpId::Cumsum, {t}, {axis, exclusive, reverse});
}
Tensor cumprod(const Tensor& t, int64_t axis, bool exclusive, bool reverse) {
  return call_op1(OpId::Cumprod, {t}, {axis, exclusive, reverse});
}

}  // namespace kiln
