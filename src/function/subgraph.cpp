#include "subgraph.h"

#include "compile.h"
#include "kiln/control_flow.h"

namespace kiln {
namespace detail {

namespace {
// Written once while the op table is assembled, before any subgraph exists.
AutodiffHooks g_autodiff;

Backward backward_of(const TracedSubgraph& body) {
  if (!g_autodiff.backward)
    throw InternalError(
        str_cat("the gradient of '", body.name(), "' needs autodiff, not installed"));
  return g_autodiff.backward(body);
}

}  // namespace

void set_autodiff_hooks(const AutodiffHooks& hooks) {
  g_autodiff = hooks;
}
const AutodiffHooks& autodiff_hooks() {
  return g_autodiff;
}

Ref<GraphSubgraph> GraphSubgraph::create(std::unique_ptr<Graph> graph, bool jit) {
  Ref<GraphSubgraph> s = Ref<GraphSubgraph>::adopt(new GraphSubgraph());
  s->traced_ = graph->clone();
  CompileOptions co;
  co.jit = jit;
  CompiledGraph c = compile_graph(std::move(graph), co);
  if (!c.jit.warning.empty()) warn("JitWarning", c.jit.warning);
  if (jit) s->jit_ = std::make_shared<const jit::JitResult>(std::move(c.jit));
  for (const Node* n : c.graph->inputs()) s->inputs_.push_back(n->outputs()[0]);
  for (const Edge& e : c.graph->outputs())
    s->outputs_.push_back(e.node->outputs()[static_cast<size_t>(e.index)]);
  for (const auto& n : c.graph->nodes()) s->stateful_ |= n->op().has(kStateful);
  s->plan_ = std::move(c.plan);
  s->graph_ = std::move(c.graph);
  return s;
}

size_t GraphSubgraph::jit_kernels() const {
  return jit_ ? jit_->kernels : 0;
}

namespace {
void check_inputs(std::span<const Tensor> inputs, std::span<const TensorSpec> specs, const Graph& g,
                  const std::string& name) {
  if (inputs.size() != specs.size())
    throw InvalidArgumentError(
        str_cat("subgraph '", name, "' expects ", specs.size(), " inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const TensorSpec& s = specs[i];
    if (!t.defined() || t.dtype() != s.dtype || !s.shape.is_compatible_with(t.shape()))
      throw InvalidArgumentError(str_cat(
          "subgraph '", name, "': input ", i, " ('",
          i < g.inputs().size() ? g.inputs()[i]->name() : std::string("captured variable"),
          "') expects ", dtype_name(s.dtype), " ", s.shape, ", got ",
          t.defined() ? str_cat(dtype_name(t.dtype()), " ", t.shape()) : std::string("nothing")));
  }
}
}  // namespace

std::vector<Tensor> GraphSubgraph::run(std::span<const Tensor> inputs) const {
  check_inputs(inputs, inputs_, *graph_, name());
  return plan_->run(inputs);
}

void GraphSubgraph::run_owned(std::span<Tensor> inputs, std::vector<Tensor>& out) const {
  check_inputs(inputs, inputs_, *graph_, name());
  plan_->run_owned(inputs, out);
}

const Backward& GraphSubgraph::backward() const {
  return backward_.get([&] { return backward_of(*this); });
}

std::vector<Tensor> FunctionSubgraph::run(std::span<const Tensor> inputs) const {
  check_inputs(inputs, input_specs(), cf_->graph(), name());
  // The variable handles are baked into the plan; only the arguments go in.
  const size_t n = cf_->flat_specs_.size();
  return cf_->plan().run(inputs.first(n));
}

const Backward& FunctionSubgraph::backward() const {
  return cf_->call_->backward.get([&] { return backward_of(*this); });
}

const Residuals* FunctionSubgraph::residuals() const {
  const CallInfo& c = *cf_->call_;
  std::call_once(c.residuals_once, [&] {
    try {
      if (auto* split = autodiff_hooks().residuals) c.residuals = split(*this);
    } catch (const Error&) {
      // Not splittable (e.g. an op without a gradient rule on the path):
      // calls record the plain call, and its gradient says why if asked.
    }
  });
  return c.residuals.get();
}

}  // namespace detail

const Graph* subgraph_graph(const Subgraph& s) {
  const auto* g = dynamic_cast<const detail::GraphSubgraph*>(&s);
  return g ? &g->graph() : nullptr;
}

}  // namespace kiln
