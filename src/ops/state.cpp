// Stateful ops: PrintV2 and the variable ops — definitions, inference, front
// functions.
#include "kiln/ops/state.h"

#include "families.h"
#include "grad_util.h"
#include "kiln/context.h"
#include "kiln/variable.h"
#include "print_template.h"

namespace kiln {
namespace {

bool valid_print_stream(std::string_view s) {
  if (s == "stderr" || s == "stdout" || s == "log(info)" || s == "log(warning)" ||
      s == "log(error)")
    return true;
  if (s.starts_with("file://")) return s.size() > 7;
  if (s.starts_with("ostream:")) {
    const std::string_view id = s.substr(8);
    if (id.empty() || id.size() > 18) return false;
    for (char ch : id)
      if (ch < '0' || ch > '9') return false;
    return true;
  }
  return false;
}

void infer_print(InferContext& c) {
  std::vector<std::string> pieces;
  std::string error;
  if (!parse_print_template(c.attr_string("template"), pieces, error))
    c.fail("malformed template: ", error);
  if (pieces.size() - 1 != c.num_inputs())
    c.fail("template has ", pieces.size() - 1, " placeholders for ", c.num_inputs(),
           " input tensors");
  const std::string& stream = c.attr_string("output_stream");
  if (!valid_print_stream(stream))
    c.fail(
        "output_stream must be \"stderr\", \"stdout\", \"log(info)\", \"log(warning)\", "
        "\"log(error)\", \"file://<path>\" or a registered \"ostream:<n>\", got \"",
        stream, "\"");
  if (c.attr_int("summarize") < -1)
    c.fail("summarize must be -1 (all) or non-negative, got ", c.attr_int("summarize"));
}

// The variable behind input 0 when the handle's value is known.
const VariableResource* known_variable(const InferContext& c) {
  if (c.dtype(0) != DType::kResource)
    c.fail("resource must be a resource handle, got ", dtype_name(c.dtype(0)));
  const Shape& s = c.shape(0);
  if (s.rank_known() && s.rank() != 0)
    c.fail("resource must be a scalar handle, got shape ", s.to_string());
  const Tensor* h = c.value(0);
  if (!h) return nullptr;
  const Resource* r = h->resource();
  if (!r) c.fail("resource handle is null");
  auto* v = dynamic_cast<const VariableResource*>(r);
  if (!v) c.fail("resource ", r->debug_name(), " is not a variable");
  return v;
}

void infer_read_variable(InferContext& c) {
  const VariableResource* v = known_variable(c);
  const DType dt = c.attr_dtype("dtype");
  const std::vector<int64_t>& dims = c.attr_ints("shape");
  for (int64_t d : dims)
    if (d < Shape::kUnknownDim) c.fail("shape attribute has invalid dim ", d);
  const Shape shape(dims);
  if (v) {
    if (dt != v->dtype())
      c.fail("dtype attribute ", dtype_name(dt), " does not match variable '", v->name(),
             "' of dtype ", dtype_name(v->dtype()));
    if (!shape.is_compatible_with(v->shape()))
      c.fail("shape attribute ", shape.to_string(), " does not match variable '", v->name(),
             "' of shape ", v->shape().to_string());
    c.set_output(0, v->dtype(), v->shape());
    return;
  }
  if (dt == DType::kInvalid || dt == DType::kResource)
    c.fail("invalid dtype attribute ", dtype_name(dt));
  c.set_output(0, dt, shape);
}

template <bool kArith>
void infer_assign(InferContext& c) {
  const VariableResource* v = known_variable(c);
  const DType vt = c.dtype(1);
  if (v) v->check_assignable(c.op().type_name, vt, c.shape(1));
  const DType dt = c.attr_dtype("dtype");
  if (vt != dt)
    c.fail("value has dtype ", dtype_name(vt), " but the dtype attribute is ", dtype_name(dt));
  if (kArith && (!is_numeric(dt)))
    c.fail("unsupported dtype ", dtype_name(dt), v ? str_cat(" of variable '", v->name(), "'") : "",
           " (needs a numeric dtype)");
  if (!kArith && dt == DType::kResource) c.fail("cannot store a resource in a variable");
}

void assign_op(OpId id, const Tensor& handle, const Tensor& value) {
  DType dt = value.defined() ? value.dtype() : DType::kInvalid;
  if (handle.defined() && !handle.is_symbolic() && handle.dtype() == DType::kResource &&
      handle.num_elements() == 1)
    if (auto* v = dynamic_cast<const VariableResource*>(handle.resource())) dt = v->dtype();
  const Tensor inputs[] = {handle, value};
  call_op(id, inputs, {dt});
}

// The gradient of a read flows to the variable (the handle input).
void read_variable_grad(KILN_GRAD_ARGS) {
  gi[0] = g[0];
}

}  // namespace

void define_state_ops(OpTableBuilder& t) {
  t.def(OpId::Print)
      .inputs({"inputs"})
      .attr("template", AttrType::kString, std::string())
      .attr("output_stream", AttrType::kString, std::string("stderr"))
      .attr("summarize", AttrType::kInt, int64_t{3})
      .attr("end", AttrType::kString, std::string("\n"))
      .traits(kStateful | kVariadicInput | kNoGradient | kNoJit)
      .infer(infer_print);
  t.def(OpId::ReadVariable)
      .inputs({"resource"})
      .outputs({"value"})
      .attr("dtype", AttrType::kDType)
      .attr("shape", AttrType::kInts)
      .traits(kStateful)
      .infer(infer_read_variable)
      .grad(read_variable_grad);
  t.def(OpId::AssignVariable)
      .inputs({"resource", "value"})
      .attr("dtype", AttrType::kDType)
      .traits(kStateful | kNoGradient)
      .infer(infer_assign<false>);
  t.def(OpId::AssignAddVariable)
      .inputs({"resource", "value"})
      .attr("dtype", AttrType::kDType)
      .traits(kStateful | kNoGradient)
      .infer(infer_assign<true>);
  t.def(OpId::AssignSubVariable)
      .inputs({"resource", "value"})
      .attr("dtype", AttrType::kDType)
      .traits(kStateful | kNoGradient)
      .infer(infer_assign<true>);
}

// ---- front functions ----

void print(const std::vector<PrintArg>& args, const PrintSettings& settings) {
  std::string tmpl;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) append_print_literal(tmpl, settings.sep);
    if (args[i].is_tensor()) {
      tmpl += "{}";
      tensors.push_back(args[i].tensor());
    } else {
      append_print_literal(tmpl, args[i].text());
    }
  }
  call_op(OpId::Print, tensors,
          {std::move(tmpl), settings.output_stream, settings.summarize, settings.end});
}

void print(const std::vector<PrintArg>& args, std::ostream& os, PrintSettings settings) {
  settings.output_stream = register_print_stream(os);
  print(args, settings);
}

Tensor read_variable(const Tensor& handle, DType dtype, const Shape& shape) {
  return call_op1(OpId::ReadVariable, {handle}, {dtype, shape.to_vector()});
}
void assign_variable(const Tensor& handle, const Tensor& value) {
  assign_op(OpId::AssignVariable, handle, value);
}
void assign_add_variable(const Tensor& handle, const Tensor& delta) {
  assign_op(OpId::AssignAddVariable, handle, delta);
}
void assign_sub_variable(const Tensor& handle, const Tensor& delta) {
  assign_op(OpId::AssignSubVariable, handle, delta);
}

}  // namespace kiln
