#include <atomic>

#include "kiln/trace.h"

namespace kiln {
namespace {
std::atomic<TracingContext::LocationProvider>& location_provider() {
  static std::atomic<TracingContext::LocationProvider> p{nullptr};
  return p;
}

Node* node_of(const Tensor& t) {
  Node* n = dynamic_cast<Node*>(t.symbol());
  if (!n) throw InternalError("symbolic tensor does not come from a graph node");
  return n;
}
}  // namespace

TracingContext::TracingContext(Graph& graph, TracingContext* outer) : graph_(graph), outer_(outer) {
  // A nested trace (a body, or a function called while tracing) inherits.
  const TracingContext* enclosing = outer ? outer : current();
  jit_ = enclosing && enclosing->jit_;
}

TracingContext::~TracingContext() = default;

void TracingContext::set_location_provider(LocationProvider p) {
  location_provider().store(p, std::memory_order_relaxed);
}

TracingContext* TracingContext::current() {
  ExecutionContext& c = current_context();
  return c.is_tracing() ? dynamic_cast<TracingContext*>(&c) : nullptr;
}

Tensor TracingContext::add_input(std::string_view name, DType dtype, const Shape& shape) {
  Attrs attrs{dtype, shape.rank_known() ? shape.to_vector() : std::vector<int64_t>{},
              !shape.rank_known()};
  Node* n = graph_.add_node(op_def(OpId::Placeholder), {}, std::move(attrs),
                            {TensorSpec{dtype, shape}}, name);
  graph_.inputs().push_back(n);
  return n->output(0);
}

Edge TracingContext::edge_for(const Tensor& t) {
  if (!t.defined()) throw InvalidArgumentError("an undefined tensor was passed to an op");
  if (!t.is_symbolic() && t.dtype() == DType::kResource && outer_) {
    // A variable used in a control-flow body is an explicit input of the
    // body (as a capture), so gradient tapes see the If/While read it.
    for (const auto& [outer_t, ph] : captures_)
      if (outer_t.impl() == t.impl()) return {ph, 0};
    Node* ph = graph_.add_node(op_def(OpId::Placeholder), {},
                               Attrs{t.dtype(), std::vector<int64_t>{}, false},
                               {TensorSpec{t.dtype(), t.shape()}}, "resource_capture");
    captures_.emplace_back(t, ph);
    return {ph, 0};
  }
  if (!t.is_symbolic()) {
    auto it = constants_.find(t.impl());
    if (it != constants_.end()) return {it->second, 0};
    Node* n =
        graph_.add_node(op_def(OpId::Const), {}, Attrs{t}, {TensorSpec{t.dtype(), t.shape()}});
    constants_.emplace(t.impl(), n);
    constant_keepalive_.push_back(t);
    return {n, 0};
  }
  Node* n = node_of(t);
  if (n->graph() == &graph_) return {n, t.output_index()};
  // A value of an enclosing trace: capture it as an extra input of this graph.
  for (TracingContext* o = outer_; o; o = o->outer_) {
    if (n->graph() != &o->graph_) continue;
    for (const auto& [outer_t, ph] : captures_)
      if (outer_t.symbol() == t.symbol() && outer_t.output_index() == t.output_index())
        return {ph, 0};
    Node* ph = graph_.add_node(
        op_def(OpId::Placeholder), {},
        Attrs{t.dtype(), t.shape().rank_known() ? t.shape().to_vector() : std::vector<int64_t>{},
              !t.shape().rank_known()},
        {TensorSpec{t.dtype(), t.shape()}}, n->name() + "_capture");
    captures_.emplace_back(t, ph);
    return {ph, 0};
  }
  throw InvalidArgumentError(str_cat(
      "function '", graph_.function_name(), "' captured an external symbolic tensor ",
      n->tensor_name(t.output_index()), " (", n->describe(),
      "). A symbolic tensor only exists inside the trace that created it; return it from that "
      "function, or pass it in as an argument"));
}

void TracingContext::execute(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
                             std::vector<Tensor>& outputs) {
  check_op_inputs(op, inputs);
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs) edges.push_back(edge_for(t));
  // Inference sees concrete values where known (so a constant shape argument
  // gives a static output shape) and this graph's nodes otherwise.
  std::vector<Tensor> symbolic;
  symbolic.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    symbolic.push_back(inputs[i].is_symbolic() ? edges[i].node->output(edges[i].index) : inputs[i]);
  InferContext ic(op, symbolic, attrs);
  op.infer(ic);
  std::vector<TensorSpec> specs(ic.outputs().begin(), ic.outputs().end());
  Node* n = name_scope_.empty() ? graph_.add_node(op, std::move(edges), attrs, std::move(specs))
                                : graph_.add_node(op, std::move(edges), attrs, std::move(specs),
                                                  name_scope_ + op.node_name);
  if (!location_.empty())
    n->set_location(location_);
  else if (jit_)
    if (LocationProvider p = location_provider().load(std::memory_order_relaxed))
      n->set_location(p());
  if (op.has(kStateful)) {
    if (last_stateful_) n->add_control_input(last_stateful_);
    last_stateful_ = n;
  }
  outputs.clear();
  for (size_t i = 0; i < n->outputs().size(); ++i)
    outputs.push_back(n->output(static_cast<int32_t>(i)));
}

NameScope::NameScope(std::string_view name) : tc_(TracingContext::current()) {
  if (!tc_) return;
  saved_ = tc_->name_scope();
  std::string base = saved_;
  base += name.empty() ? std::string_view("scope") : name;
  scope_ = tc_->graph().unique_name(base) + "/";
  tc_->set_name_scope(scope_);
}

NameScope::~NameScope() {
  if (tc_) tc_->set_name_scope(std::move(saved_));
}

}  // namespace kiln
