// Control-flow ops with subgraph bodies: If / StatelessIf (tf.cond) and
// While (tf.while_loop). Front functions: src/function/control_flow.cpp.
#include "families.h"
#include "grad_util.h"
#include "onnx_export.h"

namespace kiln {
namespace {

std::string spec_str(DType d, const Shape& s) {
  return str_cat(dtype_name(d), " ", s);
}

// Checks that inputs [first, n) match the subgraph's inputs.
void check_body_inputs(const InferContext& c, size_t first, const char* attr, const Subgraph& g) {
  const size_t n = c.num_inputs() - first;
  const auto specs = g.input_specs();
  if (specs.size() != n) c.fail(attr, " '", g.name(), "' takes ", specs.size(), " inputs, got ", n);
  for (size_t i = 0; i < n; ++i) {
    const size_t k = first + i;
    if (c.dtype(k) != specs[i].dtype || !specs[i].shape.is_compatible_with(c.shape(k)))
      c.fail(c.input_name(k), " is ", spec_str(c.dtype(k), c.shape(k)), " but ", attr, " '",
             g.name(), "' input ", i, " expects ", spec_str(specs[i].dtype, specs[i].shape));
  }
}

void check_bool_scalar(const InferContext& c, DType d, const Shape& s, const char* what) {
  if (d != DType::kBool || (s.rank_known() && s.rank() != 0))
    c.fail(what, " must be a bool scalar, got ", spec_str(d, s));
}

// inputs: cond, input...; attrs: then_branch, else_branch.
void infer_if(InferContext& c) {
  check_bool_scalar(c, c.dtype(0), c.shape(0), "cond");
  const Subgraph& t = c.attr_subgraph("then_branch");
  const Subgraph& e = c.attr_subgraph("else_branch");
  check_body_inputs(c, 1, "then_branch", t);
  check_body_inputs(c, 1, "else_branch", e);
  const auto to = t.output_specs(), eo = e.output_specs();
  if (to.size() != eo.size())
    c.fail("then_branch '", t.name(), "' returns ", to.size(), " outputs but else_branch '",
           e.name(), "' returns ", eo.size());
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i].dtype != eo[i].dtype)
      c.fail("output ", i, " is ", dtype_name(to[i].dtype), " in then_branch '", t.name(), "' but ",
             dtype_name(eo[i].dtype), " in else_branch '", e.name(), "'");
    c.set_output(i, to[i].dtype, to[i].shape.most_specific_common(eo[i].shape));
  }
}

// inputs: input... (loop variables, then captures); attrs: cond, body,
// maximum_iterations. Outputs: the loop variables, with the body's input
// (invariant) shapes.
void infer_while(InferContext& c) {
  const Subgraph& cg = c.attr_subgraph("cond");
  const Subgraph& bg = c.attr_subgraph("body");
  if (c.attr_int("maximum_iterations") < -1)
    c.fail("maximum_iterations must be >= 0 (or -1: no limit), got ",
           c.attr_int("maximum_iterations"));
  check_body_inputs(c, 0, "cond", cg);
  check_body_inputs(c, 0, "body", bg);
  const auto co = cg.output_specs();
  if (co.size() != 1)
    c.fail("cond '", cg.name(), "' must return one bool scalar, returns ", co.size(), " outputs");
  check_bool_scalar(c, co[0].dtype, co[0].shape, "the result of cond");
  const auto bi = bg.input_specs(), bo = bg.output_specs();
  if (bo.size() > bi.size())
    c.fail("body '", bg.name(), "' returns ", bo.size(), " outputs for ", bi.size(), " inputs");
  for (size_t i = 0; i < bo.size(); ++i) {
    if (bo[i].dtype != bi[i].dtype || !bi[i].shape.is_compatible_with(bo[i].shape))
      c.fail("body '", bg.name(), "' output ", i, " is ", spec_str(bo[i].dtype, bo[i].shape),
             " but loop variable ", i, " is ", spec_str(bi[i].dtype, bi[i].shape));
    c.set_output(i, bi[i].dtype, bi[i].shape);
  }
}

// inputs: input...; attrs: func (a host callback wrapped as a Subgraph
// whose output specs are the declared result dtypes and shapes).
void infer_py_function(InferContext& c) {
  const auto outs = c.attr_subgraph("func").output_specs();
  for (size_t i = 0; i < outs.size(); ++i) c.set_output(i, outs[i].dtype, outs[i].shape);
}

// inputs: the num_args arguments, then the values; outputs: the values.
void infer_custom_gradient(InferContext& c) {
  const int64_t n = c.attr_int("num_args");
  if (n < 0 || static_cast<size_t>(n) > c.num_inputs())
    c.fail("num_args ", n, " is not in [0, ", c.num_inputs(), "]");
  for (size_t i = static_cast<size_t>(n); i < c.num_inputs(); ++i)
    c.set_output(i - static_cast<size_t>(n), c.dtype(i), c.shape(i));
}

// The gradient is the user's function (tf.custom_gradient): it maps the
// values' gradients to one gradient per argument (called with symbolic
// tensors while a function is traced, so its ops join the trace).
void custom_gradient_grad(KILN_GRAD_ARGS) {
  const size_t n = static_cast<size_t>(attr_value<int64_t>(op, attrs, "num_args"));
  const Subgraph& fn = *attr_value<Ref<Subgraph>>(op, attrs, "grad_fn");
  std::vector<Tensor> r = fn.run(g);
  if (r.size() != n)
    throw InvalidArgumentError(str_cat("custom_gradient '", fn.name(), "' returned ", r.size(),
                                       " gradients for ", n, " arguments"));
  for (size_t i = 0; i < n; ++i) gi[i] = std::move(r[i]);
}

// inputs: args...; attrs: f (a ConcreteFunction or traced body).
void infer_call(InferContext& c) {
  const Subgraph& f = c.attr_subgraph("f");
  check_body_inputs(c, 0, "f", f);
  const auto outs = f.output_specs();
  for (size_t i = 0; i < outs.size(); ++i) c.set_output(i, outs[i].dtype, outs[i].shape);
}

// ONNX export: If with both branches as nested graphs (reading the If's
// inputs from the enclosing graph).
std::shared_ptr<const onnx::GraphValue> onnx_branch(onnx::ExportContext& c, const char* attr,
                                                    const std::vector<std::string>& ins,
                                                    std::vector<std::string>& outs) {
  c.begin_graph({});
  const auto body_outs = c.inline_body(c.attr_subgraph(attr), ins);
  std::vector<std::pair<std::string, TensorSpec>> g;
  outs.clear();
  for (size_t i = 0; i < body_outs.size(); ++i) {
    outs.push_back(c.node1("Identity", {body_outs[i]}));
    g.emplace_back(outs.back(), c.output_spec(i));
  }
  return c.end_graph(g);
}
// Outputs that are TensorLists are sequences like the matching values.
void onnx_pass_sequences(onnx::ExportContext& c, const std::vector<std::string>& values) {
  for (size_t i = 0; i < c.num_outputs() && i < values.size(); ++i)
    if (const TensorSpec* e = c.sequence(values[i])) c.set_sequence(c.out(i), *e);
}
void onnx_if(onnx::ExportContext& c) {
  std::vector<std::string> ins, then_outs, else_outs;
  for (size_t i = 1; i < c.num_inputs(); ++i) ins.push_back(c.in(i));
  const auto then_g = onnx_branch(c, "then_branch", ins, then_outs);
  const auto else_g = onnx_branch(c, "else_branch", ins, else_outs);
  c.emit("If", {c.in(0)}, {{"then_branch", then_g}, {"else_branch", else_g}});
  onnx_pass_sequences(c, then_outs);
}
// While -> Loop: the condition is inlined before the loop (its first value)
// and at the end of the loop body; captures (inputs after the loop
// variables) are read from the enclosing graph.
void onnx_while(onnx::ExportContext& c) {
  const Subgraph& cond = c.attr_subgraph("cond");
  const Subgraph& body = c.attr_subgraph("body");
  const size_t nv = c.num_outputs();
  std::vector<std::string> all, captures;
  for (size_t i = 0; i < c.num_inputs(); ++i) all.push_back(c.in(i));
  captures.assign(all.begin() + static_cast<std::ptrdiff_t>(nv), all.end());
  const std::string first = c.inline_body(cond, all).at(0);
  const int64_t max = c.attr_int("maximum_iterations");
  const std::string m = max >= 0 ? c.constant(Tensor(max)) : std::string();
  std::vector<std::pair<std::string, TensorSpec>> gin = {{"iteration", {DType::kInt64, Shape{}}},
                                                         {"condition", {DType::kBool, Shape{}}}};
  for (size_t i = 0; i < nv; ++i) gin.emplace_back(c.in(i), c.output_spec(i));
  const auto names = c.begin_graph(gin);
  std::vector<std::string> vars(names.begin() + 2, names.end());
  vars.insert(vars.end(), captures.begin(), captures.end());
  std::vector<std::string> next = c.inline_body(body, vars);
  next.resize(nv);
  std::vector<std::string> next_all = next;
  next_all.insert(next_all.end(), captures.begin(), captures.end());
  const std::string again = c.inline_body(cond, next_all).at(0);
  std::vector<std::pair<std::string, TensorSpec>> gout = {
      {c.node1("Identity", {again}), {DType::kBool, Shape{}}}};
  for (size_t i = 0; i < nv; ++i)
    gout.emplace_back(c.node1("Identity", {next[i]}), c.output_spec(i));
  const auto g = c.end_graph(gout);
  std::vector<std::string> ins = {m, first};
  ins.insert(ins.end(), all.begin(), all.begin() + static_cast<std::ptrdiff_t>(nv));
  c.emit("Loop", ins, {{"body", g}});
  onnx_pass_sequences(c, all);
}

}  // namespace

void define_tensor_array_ops(OpTableBuilder& t);  // tensor_array_ops.cpp

void define_control_flow_ops(OpTableBuilder& t) {
  define_tensor_array_ops(t);
  for (OpId id : {OpId::If, OpId::StatelessIf}) {
    t.def(id)
        .inputs({"cond", "input"})
        .outputs({"output"})
        .attr("then_branch", AttrType::kSubgraph)
        .attr("else_branch", AttrType::kSubgraph)
        .traits(kVariadicInput | kGraphOnly | (id == OpId::If ? kStateful : 0u))
        .body_input_offset(1)
        .infer(infer_if)
        .onnx(onnx_if);
  }
  t.def(OpId::While)
      .inputs({"input"})
      .outputs({"output"})
      .attr("cond", AttrType::kSubgraph)
      .attr("body", AttrType::kSubgraph)
      .attr("maximum_iterations", AttrType::kInt, int64_t{-1})
      .traits(kVariadicInput | kStateful | kGraphOnly)
      .infer(infer_while)
      .onnx(onnx_while);
  // Always stateful: the callback may have side effects, so it is never
  // pruned, folded or merged, and runs in program order.
  t.def(OpId::PyFunction)
      .inputs({"input"})
      .outputs({"output"})
      .attr("func", AttrType::kSubgraph)
      .traits(kVariadicInput | kStateful | kNoGradient | kNoJit)
      .infer(infer_py_function);
  // tf.custom_gradient: the values pass through; the gradient is grad_fn's.
  t.def(OpId::CustomGradient)
      .inputs({"input"})
      .outputs({"output"})
      .attr("grad_fn", AttrType::kSubgraph)
      .attr("num_args", AttrType::kInt)
      .traits(kVariadicInput | kGraphOnly)
      .infer(infer_custom_gradient)
      .grad(custom_gradient_grad);
  // Function calls. StatefulPartitionedCall (what calling a Function while
  // tracing records, as in TensorFlow) keeps program order; PartitionedCall
  // (backward functions without state) may be pruned and reordered. The
  // gradient rules of the ops with bodies are autodiff's (src/autodiff/).
  for (OpId id : {OpId::PartitionedCall, OpId::StatefulPartitionedCall}) {
    t.def(id)
        .inputs({"args"})
        .outputs({"output"})
        .attr("f", AttrType::kSubgraph)
        .traits(kVariadicInput | kCall | (id == OpId::StatefulPartitionedCall ? kStateful : 0u))
        .infer(infer_call);
  }
}

}  // namespace kiln
