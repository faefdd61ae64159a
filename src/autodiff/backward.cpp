// Gradients of ops with subgraph bodies: function calls (PartitionedCall /
// StatefulPartitionedCall) and If. A body's backward function is traced once
// (cached with the body): it takes the body's inputs and its output
// gradients, recomputes the forward values it needs (rematerialization) and
// returns input gradients; inside a traced train step CSE merges the
// recomputation with the forward once inlined. Function calls recorded by a
// tape instead return what the backward reads (build_residuals) and use the
// backward that takes those values; the recomputing one remains for If and
// for gradients that another tape records (higher orders).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/autodiff.h"
#include "backward_trace.h"
#include "kiln/context.h"
#include "kiln/gradient_tape.h"
#include "kiln/ops.h"
#include "kiln/trace.h"

namespace kiln::detail {
namespace {

// A stateful op the backward function cannot run again: one without a
// gradient rule (assignments, prints, host callbacks, random draws). Stateful
// ops with a rule (variable reads, calls, control flow) replay as values.
bool unrepeatable(const OpDef& op) {
  return op.has(kStateful) && !op.grad;
}

const TracedSubgraph& traced(const AttrValue& a, const OpDef& op) {
  const Subgraph* s = std::get<Ref<Subgraph>>(a).get();
  const auto* t = dynamic_cast<const TracedSubgraph*>(s);
  if (!t)
    throw UnimplementedError(
        str_cat(op.type_name, ": subgraph '", s->name(), "' has no traced graph to differentiate"));
  return *t;
}

// Outputs whose gradients a backward function takes: floats, and TensorArray
// handles (whose gradients are lists).
bool differentiable(DType d) {
  return is_floating(d) || d == DType::kResource;
}

}  // namespace

std::vector<Tensor> replay(const TracedSubgraph& body, std::span<const Tensor> inputs,
                           ReplayValues* values_out) {
  const Graph& g = body.traced_graph();
  ReplayValues local;
  ReplayValues& values = values_out ? *values_out : local;
  size_t k = 0;
  for (const Node* in : g.inputs()) values[in] = {inputs[k++]};
  for (const Node* h : body.hoisted()) values[h] = {inputs[k++]};

  std::unordered_set<const Node*> needed;
  std::vector<const Node*> work;
  for (const Edge& e : g.outputs())
    if (needed.insert(e.node).second) work.push_back(e.node);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Edge& e : n->inputs())
      if (needed.insert(e.node).second) work.push_back(e.node);
  }

  for (const auto& ref : g.nodes()) {
    const Node* n = ref.get();
    if (!needed.count(n) || values.count(n)) continue;
    const OpDef& op = n->op();
    if (op.id == OpId::Placeholder)
      throw InternalError(str_cat("gradient of '", g.function_name(), "': placeholder '", n->name(),
                                  "' is not an input"));
    if (op.id == OpId::Const) {
      values[n] = {std::get<Tensor>(n->attr("value"))};
      continue;
    }
    // Split backwards cut replayed nodes off before they ever run; the value
    // of such an op then comes from the forward call as a residual.
    if (unrepeatable(op) && !values_out)
      throw UnimplementedError(str_cat(
          "gradient of '", g.function_name(), "': its result depends on ", op.type_name, " op '",
          n->name(), "', which the backward function would have to run again (",
          op.has(kRandom) ? "drawing different random numbers" : "repeating its side effect",
          "). Differentiate the ops directly (call it outside a nested function or cond) or "
          "pass the random values in as arguments"));
    std::vector<Tensor> ins;
    ins.reserve(n->inputs().size());
    for (const Edge& e : n->inputs()) ins.push_back(values.at(e.node).at(e.index));
    std::vector<Tensor> outs;
    execute_op(op, ins, n->attrs(), outs);
    values[n] = std::move(outs);
  }
  std::vector<Tensor> outs;
  for (const Edge& e : g.outputs()) outs.push_back(values.at(e.node).at(e.index));
  return outs;
}

BackwardTrace trace_backward(const TracedSubgraph& body, const std::vector<size_t>* force,
                             const std::vector<TensorSpec>* force_specs,
                             const std::vector<TensorSpec>* grad_specs, bool split) {
  const Graph& fwd = body.traced_graph();
  const auto in_specs = body.input_specs();
  const auto out_specs = body.output_specs();
  auto g = std::make_unique<Graph>(fwd.function_name() + "_grad");
  BackwardTrace b;
  {
    TracingContext tc(*g);
    ContextScope scope(tc);
    std::vector<Tensor> ins, grads_in;
    for (size_t i = 0; i < in_specs.size(); ++i)
      ins.push_back(tc.add_input(i < fwd.inputs().size() ? fwd.inputs()[i]->name() : "resource",
                                 in_specs[i].dtype, in_specs[i].shape));
    // Outputs without gradients (integers) take any value of their dtype.
    for (size_t j = 0; j < out_specs.size(); ++j)
      grads_in.push_back(tc.add_input(str_cat("grad_", j), out_specs[j].dtype,
                                      grad_specs ? (*grad_specs)[j].shape
                                      : differentiable(out_specs[j].dtype)
                                          ? out_specs[j].shape
                                          : Shape::unknown_rank()));

    std::vector<Tensor> result;
    {
      GradientTape tape(/*persistent=*/false, /*watch_accessed_variables=*/false);
      std::vector<GradSource> sources;
      std::vector<size_t> source_input;
      for (size_t i = 0; i < ins.size(); ++i) {
        const DType d = in_specs[i].dtype;
        if (!is_floating(d) && d != DType::kResource) continue;
        tape.watch(ins[i]);
        sources.emplace_back(ins[i]);
        source_input.push_back(i);
      }
      ReplayValues values;
      const std::vector<Tensor> outs = replay(body, ins, split ? &values : nullptr);
      b.replay_end = g->num_nodes();
      if (split) b.replayed = replayed_edges(values, tc);
      tape.stop();
      std::vector<Tensor> targets, target_grads;
      for (size_t j = 0; j < outs.size(); ++j) {
        if (!differentiable(outs[j].dtype())) continue;
        targets.push_back(outs[j]);
        target_grads.push_back(grads_in[j]);
      }
      std::vector<Tensor> grads(sources.size());
      if (!targets.empty() && !sources.empty())
        grads = tape.gradient(targets, sources, target_grads, UnconnectedGradients::kNone);
      auto grad_of = [&](size_t input) -> Tensor {
        for (size_t p = 0; p < source_input.size(); ++p)
          if (source_input[p] == input) return grads[p];
        return Tensor();
      };
      if (force) {
        for (size_t k = 0; k < force->size(); ++k) {
          const size_t i = (*force)[k];
          Tensor gr = grad_of(i);
          if (!gr.defined())
            gr = is_floating(in_specs[i].dtype) ? zeros_like(ins[i])
                 : (*force_specs)[k].dtype == DType::kResource  // a TensorArray's
                     ? call_op1(OpId::TensorListZerosLike, {ins[i]})
                     : zeros((*force_specs)[k].shape, (*force_specs)[k].dtype);
          result.push_back(gr);
          b.input_index.push_back(i);
        }
      } else {
        for (size_t p = 0; p < sources.size(); ++p) {
          if (!grads[p].defined()) continue;
          result.push_back(grads[p]);
          b.input_index.push_back(source_input[p]);
        }
      }
    }
    for (const Tensor& t : result) g->outputs().push_back(tc.edge_for(t));
    if (split) split_residuals(*g, tc, b);
  }
  b.graph = std::move(g);
  return b;
}

Backward build_backward(const TracedSubgraph& body, const std::vector<size_t>* force,
                        const std::vector<TensorSpec>* force_specs,
                        const std::vector<TensorSpec>* grad_specs) {
  BackwardTrace t = trace_backward(body, force, force_specs, grad_specs, /*split=*/false);
  Ref<GraphSubgraph> sg = GraphSubgraph::create(std::move(t.graph), body.jit_compiled());
  Backward b;
  b.input_index = std::move(t.input_index);
  b.stateful = sg->stateful();
  b.graph = Ref<Subgraph>(sg);
  return b;
}

const Backward& GraphSubgraph::if_backward(const GraphSubgraph& other) const {
  return if_backward_.get([&] {
    const Backward& a = backward();
    const Backward& b = other.backward();
    std::vector<size_t> all = a.input_index;
    all.insert(all.end(), b.input_index.begin(), b.input_index.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    std::vector<TensorSpec> specs;
    for (size_t i : all) {
      auto pa = std::find(a.input_index.begin(), a.input_index.end(), i);
      specs.push_back(
          pa != a.input_index.end()
              ? a.graph->output_specs()[pa - a.input_index.begin()]
              : b.graph->output_specs()[std::find(b.input_index.begin(), b.input_index.end(), i) -
                                        b.input_index.begin()]);
    }
    std::vector<TensorSpec> joined;
    const auto mine = output_specs(), theirs = other.output_specs();
    for (size_t j = 0; j < mine.size(); ++j)
      joined.push_back({mine[j].dtype, mine[j].shape.most_specific_common(theirs[j].shape)});
    return build_backward(*this, &all, &specs, &joined);
  });
}

// The gradient of a function call: a call of its backward function. An
// eager call recorded with its residuals (attrs after `f`) uses the backward
// that reads them, unless a tape records this gradient: then the recomputing
// backward, whose result depends on the call's inputs only through values
// tapes see, so higher-order gradients stay right.
void call_grad(const OpDef& op, std::span<const Tensor> in, std::span<const Tensor>,
               std::span<const Tensor> g, const Attrs& attrs, std::vector<Tensor>& gi) {
  const TracedSubgraph& body = traced(attr_of(op, attrs, "f"), op);
  const Residuals* r = nullptr;
  if (attrs.size() > 1 && !any_tape_recording())
    if (const auto* fs = dynamic_cast<const FunctionSubgraph*>(&body)) r = fs->residuals();
  const Backward& b = r ? r->backward : body.backward();
  if (b.input_index.empty()) return;
  std::vector<Tensor> args(in.begin(), in.end());
  args.insert(args.end(), g.begin(), g.end());
  if (r)
    for (size_t k = 1; k < attrs.size(); ++k) args.push_back(std::get<Tensor>(attrs[k]));
  std::vector<Tensor> outs;
  execute_op(op_def(b.stateful ? OpId::StatefulPartitionedCall : OpId::PartitionedCall), args,
             Attrs{b.graph}, outs);
  for (size_t k = 0; k < b.input_index.size(); ++k) gi[b.input_index[k]] = outs[k];
}

// The gradient of If: an If over the branches' backward functions, both
// returning the gradients of the same inputs (zeros where a branch does not
// use one).
void if_grad(const OpDef& op, std::span<const Tensor> in, std::span<const Tensor>,
             std::span<const Tensor> g, const Attrs& attrs, std::vector<Tensor>& gi) {
  const TracedSubgraph& t = traced(attr_of(op, attrs, "then_branch"), op);
  const TracedSubgraph& e = traced(attr_of(op, attrs, "else_branch"), op);
  const auto* tg = dynamic_cast<const GraphSubgraph*>(&t);
  const auto* eg = dynamic_cast<const GraphSubgraph*>(&e);
  if (!tg || !eg) throw UnimplementedError("If gradient: branches are not traced bodies");
  const Backward& both = tg->if_backward(*eg);
  const Backward& other = eg->if_backward(*tg);
  if (both.input_index.empty()) return;
  std::vector<Tensor> args(in.begin(), in.end());  // pred, inputs...
  args.insert(args.end(), g.begin(), g.end());
  std::vector<Tensor> outs;
  execute_op(op, args, Attrs{both.graph, other.graph}, outs);
  for (size_t k = 0; k < both.input_index.size(); ++k) gi[1 + both.input_index[k]] = outs[k];
}

void define_subgraph_grads(OpTableBuilder& t) {
  t.def(OpId::PartitionedCall).grad(call_grad);
  t.def(OpId::StatefulPartitionedCall).grad(call_grad);
  t.def(OpId::If).grad(if_grad);
  t.def(OpId::StatelessIf).grad(if_grad);
  t.def(OpId::While).grad(while_grad);
}

void install_autodiff() {
  AutodiffHooks h;
  h.backward = [](const TracedSubgraph& body) { return build_backward(body); };
  h.residuals = build_residuals;
  h.would_record = tapes_would_record;
  set_autodiff_hooks(h);
}

}  // namespace kiln::detail
