// The gradient of While (tf.while_loop), TensorFlow's while_v2 design built
// from while_loops inside the rule. While nodes exist only in traces, so
// the rule runs while tracing (a gradient tape's gradient() inside a
// function, or the backward function of a call or cond around the loop).
//
// 1. Forward again, with accumulators: a new While runs the same cond and
//    body (replayed from their traced graphs) and also counts the
//    iterations and pushes each iteration's loop-variable values (the
//    body's inputs) onto lists. The original While cannot be changed once
//    recorded (its outputs are already used), so the forward runs twice:
//    once there and once here. Replaying only the nodes the outputs need
//    keeps the body's side effects (print, assign) from repeating; random
//    ops in that part are an error (they would draw new numbers).
// 2. Backward: a While over the counted iterations in reverse reads
//    iteration i's inputs back and calls the body's backward function
//    (cached with the body) on them and the carried loop-variable
//    gradients, giving the next carried gradients and the gradients of the
//    captures, which add up over iterations (a captured variable's too).
// Integer loop variables (counters) carry no gradient. TensorArray handles
// carry list gradients (src/ops/tensor_array_ops.cpp).
#include <algorithm>
#include <optional>
#include <unordered_set>

#include "autodiff/autodiff.h"
#include "backward_trace.h"
#include "kiln/context.h"
#include "kiln/control_flow.h"
#include "kiln/ops.h"
#include "kiln/trace.h"

namespace kiln::detail {

namespace {

// What a loop variable or capture carries back.
enum class Kind {
  kNone,      // no gradient (integers, bools, strings)
  kFloat,     // a tensor of its shape
  kList,      // a TensorArray handle: a list gradient
  kVariable,  // a variable's handle: a tensor of the variable's shape
};

const VariableResource* variable_of(const Tensor& t) {
  if (t.is_symbolic() || t.dtype() != DType::kResource) return nullptr;
  return dynamic_cast<const VariableResource*>(t.resource());
}

// The value spec of a variable whose handle is `ph` (a placeholder of `g`),
// found at a read of it, following the handle into call, If and While
// bodies; nothing when `g` never reads it as a variable.
std::optional<TensorSpec> read_spec(const Graph& g, const Node* ph, int depth = 0) {
  if (depth > 16) return std::nullopt;
  auto inner = [&](const AttrValue& a, size_t i) -> std::optional<TensorSpec> {
    const auto* t = dynamic_cast<const TracedSubgraph*>(std::get<Ref<Subgraph>>(a).get());
    if (!t) return std::nullopt;
    const Graph& b = t->traced_graph();
    const size_t np = b.inputs().size();
    const Node* p = i < np                         ? b.inputs()[i]
                    : i - np < t->hoisted().size() ? t->hoisted()[i - np]
                                                   : nullptr;
    return p ? read_spec(b, p, depth + 1) : std::nullopt;
  };
  for (const auto& ref : g.nodes()) {
    const Node* n = ref.get();
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      if (n->inputs()[i].node != ph) continue;
      if (n->op().id == OpId::ReadVariable) return n->outputs()[0];
      // Into every body the op runs (call, If branches, While cond and body).
      const size_t off = n->op().body_input_offset;
      for (size_t a = 0; i >= off && a < n->op().attrs.size(); ++a)
        if (n->op().attrs[a].type == AttrType::kSubgraph)
          if (std::optional<TensorSpec> s = inner(n->attrs()[a], i - off)) return s;
    }
  }
  return std::nullopt;
}

// `t` is input `i` of the loop (whose body is `body`). A symbolic handle (a
// nested function's captured variable, a list built in the trace) is a
// variable when the body reads it as one; `spec` gets the variable's value.
Kind kind_of(const Tensor& t, const TracedSubgraph& body, size_t i, TensorSpec* spec) {
  if (is_floating(t.dtype())) return Kind::kFloat;
  if (t.dtype() != DType::kResource) return Kind::kNone;
  if (const VariableResource* v = variable_of(t)) {
    *spec = {v->dtype(), v->shape()};
    return Kind::kVariable;
  }
  const Graph& g = body.traced_graph();
  if (t.is_symbolic() && i < g.inputs().size())
    if (std::optional<TensorSpec> s = read_spec(g, g.inputs()[i])) {
      *spec = *s;
      return Kind::kVariable;
    }
  return Kind::kList;
}

Tensor list_zeros_like(const Tensor& handle) {
  return call_op1(OpId::TensorListZerosLike, {handle});
}

Attrs shape_attrs(DType d, const Shape& s) {
  return Attrs{d, s.rank_known() ? s.to_vector() : std::vector<int64_t>{}, !s.rank_known()};
}

const TracedSubgraph& traced(const Attrs& attrs, size_t i) {
  const Subgraph* s = std::get<Ref<Subgraph>>(attrs[i]).get();
  const auto* t = dynamic_cast<const TracedSubgraph*>(s);
  if (!t)
    throw UnimplementedError(
        str_cat("While: subgraph '", s->name(), "' has no traced graph to differentiate"));
  return *t;
}

// `g` (a gradient of `like`'s shape) with a static shape within `inv`: the
// loop variables of the backward loop need it, and gradient rules may lose
// static dims.
Tensor fit(const Tensor& g, const Shape& inv, const Tensor& like) {
  if (g.shape().fits(inv)) return g;
  std::vector<int64_t> dims = inv.to_vector();
  if (std::count(dims.begin(), dims.end(), Shape::kUnknownDim) <= 1) return reshape(g, dims);
  return reshape(g, shape(like));
}

// Which of the first `count` inputs the (optimized) graph of `s` reads.
std::vector<bool> used_inputs(const Subgraph& s, size_t count) {
  std::vector<bool> used(count, true);
  const auto* gs = dynamic_cast<const GraphSubgraph*>(&s);
  if (!gs) return used;
  const Graph& g = gs->graph();
  std::unordered_set<const Node*> read;
  for (const auto& n : g.nodes())
    for (const Edge& e : n->inputs()) read.insert(e.node);
  for (const Edge& e : g.outputs()) read.insert(e.node);
  for (size_t k = 0; k < count && k < g.inputs().size(); ++k) used[k] = read.count(g.inputs()[k]);
  return used;
}

void traced_while_grad(std::span<const Tensor> in, std::span<const Tensor> out,
                       std::span<const Tensor> g, const Attrs& attrs, std::vector<Tensor>& gi) {
  const TracedSubgraph& cond = traced(attrs, 0);
  const TracedSubgraph& body = traced(attrs, 1);
  const size_t n = out.size();
  const std::vector<Tensor> caps(in.begin() + static_cast<ptrdiff_t>(n), in.end());
  const size_t m = caps.size();
  const std::vector<TensorSpec> inv(body.input_specs().begin(), body.input_specs().end());
  const std::vector<TensorSpec> out_specs(body.output_specs().begin(), body.output_specs().end());

  std::vector<Kind> vk(n), ck(m);
  std::vector<TensorSpec> cspec(m);  // captured variables' values
  for (size_t k = 0; k < n; ++k) {
    TensorSpec unused;
    vk[k] = kind_of(in[k], body, k, &unused);
    if (vk[k] == Kind::kVariable)
      throw UnimplementedError(
          str_cat("While gradient: loop variable ", k, " is the handle of ",
                  in[k].is_symbolic() ? std::string("a variable") : in[k].resource()->debug_name(),
                  "; use the variable inside the loop body instead (it is captured), not as a "
                  "loop variable"));
  }
  for (size_t j = 0; j < m; ++j) ck[j] = kind_of(caps[j], body, n + j, &cspec[j]);

  const Backward& bw = body.backward();
  std::vector<size_t> dv, dc;  // differentiable loop variables, captures
  auto grad_pos = [&](size_t input) -> std::optional<size_t> {
    auto it = std::find(bw.input_index.begin(), bw.input_index.end(), input);
    if (it == bw.input_index.end()) return std::nullopt;
    return static_cast<size_t>(it - bw.input_index.begin());
  };
  for (size_t k = 0; k < n; ++k)
    if (vk[k] != Kind::kNone) dv.push_back(k);
  for (size_t j = 0; j < m; ++j)
    if (ck[j] != Kind::kNone && grad_pos(n + j)) dc.push_back(j);
  if (dv.empty() && dc.empty()) return;

  // The loop variables whose per-iteration values the backward needs: those
  // its function reads, and those whose gradient may take their shape (a
  // zero gradient, or one whose static shape needs fixing, see fit()).
  std::vector<bool> need = used_inputs(*bw.graph, n);
  for (size_t k = 0; k < n; ++k)
    if ((vk[k] == Kind::kList && !grad_pos(k)) ||
        (vk[k] == Kind::kFloat && !inv[k].shape.is_fully_defined()))
      need[k] = true;
  std::vector<size_t> acc_var;  // loop variable of each accumulator
  for (size_t k = 0; k < n; ++k)
    if (need[k]) acc_var.push_back(k);
  auto body_args = [&](const std::vector<Tensor>& s) {  // s = [count, vars..., ...]
    std::vector<Tensor> a(s.begin() + 1, s.begin() + 1 + static_cast<ptrdiff_t>(n));
    a.insert(a.end(), caps.begin(), caps.end());
    return a;
  };

  // 1. The forward loop again, pushing each iteration's inputs.
  std::vector<Tensor> init{Tensor(int32_t{0})};
  init.insert(init.end(), in.begin(), in.begin() + static_cast<ptrdiff_t>(n));
  WhileOptions fo;
  fo.name = "while_acc";
  fo.maximum_iterations = attr_value<int64_t>(op_def(OpId::While), attrs, "maximum_iterations");
  fo.shape_invariants.resize(1 + n + acc_var.size());
  for (size_t k = 0; k < n; ++k) fo.shape_invariants[1 + k] = inv[k].shape;
  for (size_t k : acc_var) {
    const Shape& s = inv[k].shape;
    // dynamic_size, and no infer_shape: items may differ in shape.
    const Attrs ra{inv[k].dtype, s.rank_known() ? s.to_vector() : std::vector<int64_t>{},
                   !s.rank_known(), true, false};
    init.push_back(call_op1(OpId::TensorListReserve, {Tensor(int32_t{0})}, ra));
  }
  const std::vector<Tensor> fwd = while_loop(
      [&](const std::vector<Tensor>& s) { return replay(cond, body_args(s))[0]; },
      [&](const std::vector<Tensor>& s) {
        std::vector<Tensor> next{s[0] + 1};
        const std::vector<Tensor> vars = replay(body, body_args(s));
        next.insert(next.end(), vars.begin(), vars.end());
        for (size_t a = 0; a < acc_var.size(); ++a)
          next.push_back(call_op1(OpId::TensorListSetItem, {s[1 + n + a], s[0], s[1 + acc_var[a]]},
                                  {inv[acc_var[a]].dtype}));
        return next;
      },
      init, fo);

  // 2. The backward loop: t from count - 1 down to 0.
  std::vector<Tensor> binit{fwd[0] - 1};
  for (size_t k : dv)
    binit.push_back(g[k].defined()         ? g[k]
                    : vk[k] == Kind::kList ? list_zeros_like(out[k])
                                           : zeros_like(out[k]));
  for (size_t j : dc) {
    const Tensor& c = caps[j];
    if (ck[j] == Kind::kVariable) {
      if (!cspec[j].shape.is_fully_defined())
        throw UnimplementedError(str_cat("While gradient: captured variable ", j,
                                         " has no static shape (", cspec[j].shape, ")"));
      binit.push_back(zeros(cspec[j].shape, cspec[j].dtype));
    } else {
      binit.push_back(ck[j] == Kind::kList ? list_zeros_like(c) : zeros_like(c));
    }
  }
  WhileOptions bo;
  bo.name = "while_grad";
  bo.shape_invariants.resize(binit.size());
  for (size_t a = 0; a < dv.size(); ++a) bo.shape_invariants[1 + a] = inv[dv[a]].shape;
  const OpDef& call = op_def(bw.stateful ? OpId::StatefulPartitionedCall : OpId::PartitionedCall);
  const std::vector<Tensor> res = while_loop(
      [](const std::vector<Tensor>& s) { return s[0] >= 0; },
      [&](const std::vector<Tensor>& s) {
        const Tensor& t = s[0];
        std::vector<Tensor> x(in.begin(), in.begin() + static_cast<ptrdiff_t>(n));
        for (size_t a = 0; a < acc_var.size(); ++a) {
          const size_t k = acc_var[a];
          x[k] = call_op1(OpId::TensorListGetItem, {fwd[1 + n + a], t},
                          shape_attrs(inv[k].dtype, inv[k].shape));
        }
        std::vector<Tensor> args = x;
        args.insert(args.end(), caps.begin(), caps.end());
        for (size_t j = 0; j < n; ++j) {
          auto it = std::find(dv.begin(), dv.end(), j);
          args.push_back(it != dv.end() ? s[1 + static_cast<size_t>(it - dv.begin())]
                                        : zeros(std::vector<int64_t>{}, out_specs[j].dtype));
        }
        std::vector<Tensor> outs;
        execute_op(call, args, Attrs{bw.graph}, outs);
        std::vector<Tensor> next{t - 1};
        for (size_t k : dv) {
          const std::optional<size_t> p = grad_pos(k);
          if (vk[k] == Kind::kList)
            next.push_back(p ? outs[*p] : list_zeros_like(x[k]));
          else
            next.push_back(p ? fit(outs[*p], inv[k].shape, x[k]) : zeros_like(x[k]));
        }
        for (size_t a = 0; a < dc.size(); ++a) {
          const size_t j = dc[a];
          const Tensor& sum = s[1 + dv.size() + a];
          const Tensor& gj = outs[*grad_pos(n + j)];
          next.push_back(ck[j] == Kind::kList ? call_op1(OpId::TensorListAdd, {sum, gj})
                                              : fit(sum + gj, sum.shape(), sum));
        }
        return next;
      },
      binit, bo);
  for (size_t a = 0; a < dv.size(); ++a) gi[dv[a]] = res[1 + a];
  for (size_t a = 0; a < dc.size(); ++a) gi[n + dc[a]] = res[1 + dv.size() + a];
}

}  // namespace

// The gradient rule of While (attached by define_subgraph_grads, backward.cpp).
void while_grad(const OpDef&, std::span<const Tensor> in, std::span<const Tensor> out,
                std::span<const Tensor> g, const Attrs& attrs, std::vector<Tensor>& gi) {
  if (TracingContext::current()) {
    traced_while_grad(in, out, g, attrs, gi);
    return;
  }
  // A While run eagerly (not made by the public API, which loops in C++
  // eagerly): build the same gradient as a graph over the values and run it.
  auto graph = std::make_unique<Graph>("while_grad");
  std::vector<size_t> which;
  {
    TracingContext tc(*graph);
    ContextScope scope(tc);
    std::vector<Tensor> sym(gi.size());
    traced_while_grad(in, out, g, attrs, sym);
    for (size_t k = 0; k < sym.size(); ++k) {
      if (!sym[k].defined()) continue;
      graph->outputs().push_back(tc.edge_for(sym[k]));
      which.push_back(k);
    }
  }
  const std::vector<Tensor> r = GraphSubgraph::create(std::move(graph))->run({});
  for (size_t i = 0; i < which.size(); ++i) gi[which[i]] = r[i];
}

}  // namespace kiln::detail
