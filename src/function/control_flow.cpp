// cond and while_loop: C++ control flow eagerly; If / While nodes with
// traced subgraph bodies while tracing.
#include "kiln/control_flow.h"

#include "kiln/context.h"
#include "kiln/trace.h"
#include "subgraph.h"

namespace kiln {
namespace {

std::string spec_str(DType d, const Shape& s) {
  return str_cat(dtype_name(d), " ", s);
}
std::string spec_str(const Tensor& t) {
  return t.defined() ? spec_str(t.dtype(), t.shape()) : std::string("an undefined tensor");
}

bool is_bool_scalar(DType d, const Shape& s) {
  return d == DType::kBool && (!s.rank_known() || s.rank() == 0);
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (!a.is_symbolic() || !b.is_symbolic()) return a.impl() == b.impl();  // captured variables
  return a.symbol() == b.symbol() && a.output_index() == b.output_index();
}

// One traced body: its graph (explicit placeholders in graph.inputs()) and
// the outer tensors it captured with their inner placeholders.
struct Body {
  std::unique_ptr<Graph> graph;
  std::vector<std::pair<Tensor, Node*>> captures;
  std::vector<TensorSpec> outputs;
  bool jit = false;  // traced inside a jit_compile function
};

template <typename F>
Body trace_body(std::string name, TracingContext& outer, const std::vector<TensorSpec>& args,
                const char* arg_name, F&& fn) {
  Body b;
  b.graph = std::make_unique<Graph>(std::move(name));
  TracingContext tc(*b.graph, &outer);
  ContextScope scope(tc);
  std::vector<Tensor> ins;
  for (const TensorSpec& s : args) ins.push_back(tc.add_input(arg_name, s.dtype, s.shape));
  std::vector<Tensor> outs = fn(ins);
  for (const Tensor& t : outs) {
    if (!t.defined())
      throw InvalidArgumentError(
          str_cat("'", b.graph->function_name(), "' returned an undefined tensor"));
    Edge e = tc.edge_for(t);
    b.graph->outputs().push_back(e);
    b.outputs.push_back(e.node->outputs()[static_cast<size_t>(e.index)]);
  }
  b.captures = tc.captures();
  b.jit = tc.jit();
  return b;
}

// The outer tensors captured by any of `bodies`, first use first.
std::vector<Tensor> union_captures(std::initializer_list<const Body*> bodies) {
  std::vector<Tensor> u;
  for (const Body* b : bodies)
    for (const auto& [t, ph] : b->captures) {
      bool seen = false;
      for (const Tensor& x : u) seen |= same_tensor(x, t);
      if (!seen) u.push_back(t);
    }
  return u;
}

// Appends one graph input per captured tensor of `all`, in that order (a
// placeholder the body does not use where it did not capture it), and
// builds the subgraph.
Ref<detail::GraphSubgraph> finish(Body& b, const std::vector<Tensor>& all) {
  for (const Tensor& t : all) {
    Node* ph = nullptr;
    for (const auto& [x, p] : b.captures)
      if (same_tensor(x, t)) ph = p;
    if (!ph) {
      const Shape& s = t.shape();
      ph = b.graph->add_node(
          op_def(OpId::Placeholder), {},
          Attrs{t.dtype(), s.rank_known() ? s.to_vector() : std::vector<int64_t>{},
                !s.rank_known()},
          {TensorSpec{t.dtype(), s}}, "unused_capture");
    }
    b.graph->inputs().push_back(ph);
  }
  return detail::GraphSubgraph::create(std::move(b.graph), b.jit);
}

}  // namespace

// ---- cond ----

std::vector<Tensor> cond(const Tensor& pred, const std::function<std::vector<Tensor>()>& true_fn,
                         const std::function<std::vector<Tensor>()>& false_fn, std::string name) {
  if (!pred.defined() || !is_bool_scalar(pred.dtype(), pred.shape()))
    throw InvalidArgumentError(str_cat("cond: pred must be a bool scalar, got ", spec_str(pred)));
  if (!true_fn || !false_fn) throw InvalidArgumentError("cond: true_fn and false_fn must be set");
  TracingContext* tc = TracingContext::current();
  if (!tc) {
    if (pred.is_symbolic())
      throw InvalidArgumentError(
          str_cat("cond: pred is symbolic tensor ", pred.symbol()->tensor_name(pred.output_index()),
                  " (", pred.symbol()->describe(), "), used outside the function being traced"));
    if (pred.rank() != 0)
      throw InvalidArgumentError(str_cat("cond: pred must be a bool scalar, got ", spec_str(pred)));
    return pred.item<bool>() ? true_fn() : false_fn();
  }

  Body t = trace_body(name + "_true", *tc, {}, "",
                      [&](const std::vector<Tensor>&) { return true_fn(); });
  Body f = trace_body(name + "_false", *tc, {}, "",
                      [&](const std::vector<Tensor>&) { return false_fn(); });
  if (t.outputs.size() != f.outputs.size())
    throw InvalidArgumentError(
        str_cat("cond: true_fn and false_fn must return the same structure: true_fn returned ",
                t.outputs.size(), " tensors, false_fn returned ", f.outputs.size()));
  for (size_t i = 0; i < t.outputs.size(); ++i)
    if (t.outputs[i].dtype != f.outputs[i].dtype)
      throw InvalidArgumentError(str_cat(
          "cond: output ", i, " of true_fn is ", spec_str(t.outputs[i].dtype, t.outputs[i].shape),
          " but output ", i, " of false_fn is ", spec_str(f.outputs[i].dtype, f.outputs[i].shape),
          "; both branches must return the same dtypes"));
  const std::vector<Tensor> captured = union_captures({&t, &f});
  Ref<detail::GraphSubgraph> tg = finish(t, captured), fg = finish(f, captured);
  const OpId id = tg->stateful() || fg->stateful() ? OpId::If : OpId::StatelessIf;
  std::vector<Tensor> inputs{pred};
  inputs.insert(inputs.end(), captured.begin(), captured.end());
  return call_op(id, inputs, Attrs{Ref<Subgraph>(tg), Ref<Subgraph>(fg)});
}

// ---- while_loop ----

namespace {

std::string var_name(size_t i) {
  return str_cat("loop variable ", i, " (loop_vars[", i, "])");
}

// Checks the body's results against the loop variables' specs.
void check_body_outputs(const std::vector<TensorSpec>& out, const std::vector<TensorSpec>& vars,
                        const std::vector<bool>& explicit_inv) {
  if (out.size() != vars.size())
    throw InvalidArgumentError(str_cat("while_loop: body returned ", out.size(), " tensors for ",
                                       vars.size(), " loop variables"));
  for (size_t i = 0; i < vars.size(); ++i) {
    if (out[i].dtype != vars[i].dtype)
      throw InvalidArgumentError(
          str_cat("while_loop: ", var_name(i), " enters the loop as ", dtype_name(vars[i].dtype),
                  " but the body returns ", dtype_name(out[i].dtype),
                  "; a loop variable's dtype cannot change (cast it in the body)"));
    if (!out[i].shape.fits(vars[i].shape)) {
      if (explicit_inv[i])
        throw InvalidArgumentError(str_cat("while_loop: ", var_name(i), " has shape ", out[i].shape,
                                           " after one iteration, which does not "
                                           "fit its shape invariant ",
                                           vars[i].shape));
      throw InvalidArgumentError(
          str_cat("while_loop: ", var_name(i), " enters the loop with shape ", vars[i].shape,
                  ", but has shape ", out[i].shape,
                  " after one iteration. To allow the shape to vary across iterations, pass "
                  "shape_invariants with a less specific shape (-1 for dims that change) for it"));
    }
  }
}

}  // namespace

std::vector<Tensor> while_loop(
    const std::function<Tensor(const std::vector<Tensor>&)>& cond,
    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& body,
    std::vector<Tensor> loop_vars, WhileOptions opts) {
  if (!cond || !body) throw InvalidArgumentError("while_loop: cond and body must be set");
  if (loop_vars.empty()) throw InvalidArgumentError("while_loop: loop_vars must not be empty");
  if (!opts.shape_invariants.empty() && opts.shape_invariants.size() != loop_vars.size())
    throw InvalidArgumentError(str_cat("while_loop: shape_invariants has ",
                                       opts.shape_invariants.size(), " entries for ",
                                       loop_vars.size(), " loop variables"));
  if (opts.maximum_iterations < -1)
    throw InvalidArgumentError(
        str_cat("while_loop: maximum_iterations must be >= 0 (or -1: no limit), got ",
                opts.maximum_iterations));
  std::vector<TensorSpec> specs;
  std::vector<bool> explicit_inv;
  for (size_t i = 0; i < loop_vars.size(); ++i) {
    const Tensor& v = loop_vars[i];
    if (!v.defined())
      throw InvalidArgumentError(str_cat("while_loop: ", var_name(i), " is undefined"));
    const bool has_inv = i < opts.shape_invariants.size() && opts.shape_invariants[i];
    const Shape inv = has_inv ? *opts.shape_invariants[i] : v.shape();
    if (!inv.is_compatible_with(v.shape()))
      throw InvalidArgumentError(str_cat("while_loop: ", var_name(i), " has shape ", v.shape(),
                                         ", which is not compatible with its shape invariant ",
                                         inv));
    specs.push_back({v.dtype(), inv});
    explicit_inv.push_back(has_inv);
  }

  TracingContext* tc = TracingContext::current();
  if (!tc) {
    const int64_t max_iter = opts.maximum_iterations;
    std::vector<TensorSpec> out_specs(specs.size());
    for (int64_t it = 0; max_iter < 0 || it < max_iter; ++it) {
      Tensor p = cond(loop_vars);
      if (!p.defined() || p.is_symbolic() || p.dtype() != DType::kBool || p.rank() != 0)
        throw InvalidArgumentError(
            str_cat("while_loop: cond must return a bool scalar, got ", spec_str(p)));
      if (!p.item<bool>()) break;
      std::vector<Tensor> next = body(loop_vars);
      out_specs.resize(next.size());
      for (size_t i = 0; i < next.size(); ++i) {
        if (!next[i].defined())
          throw InvalidArgumentError(
              str_cat("while_loop: body returned an undefined tensor for ", var_name(i)));
        out_specs[i] = {next[i].dtype(), next[i].shape()};
      }
      check_body_outputs(out_specs, specs, explicit_inv);
      loop_vars = std::move(next);
    }
    return loop_vars;
  }

  Body c = trace_body(opts.name + "_cond", *tc, specs, "loop_var",
                      [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{cond(v)}; });
  if (!is_bool_scalar(c.outputs[0].dtype, c.outputs[0].shape))
    throw InvalidArgumentError(str_cat("while_loop: cond must return a bool scalar, got ",
                                       spec_str(c.outputs[0].dtype, c.outputs[0].shape)));
  Body b = trace_body(opts.name + "_body", *tc, specs, "loop_var", body);
  check_body_outputs(b.outputs, specs, explicit_inv);
  const std::vector<Tensor> captured = union_captures({&c, &b});
  Ref<detail::GraphSubgraph> cg = finish(c, captured), bg = finish(b, captured);
  std::vector<Tensor> inputs = loop_vars;
  inputs.insert(inputs.end(), captured.begin(), captured.end());
  return call_op(OpId::While, inputs,
                 Attrs{Ref<Subgraph>(cg), Ref<Subgraph>(bg), opts.maximum_iterations});
}

}  // namespace kiln
