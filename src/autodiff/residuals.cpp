// Splitting a function's backward from its forward at the values it reads.
// build_backward's graph replays the forward ops it needs, then the gradient
// ops. Cut at that boundary: every replayed value a gradient op reads
// becomes a residual, an extra output of the forward and an extra input of
// the backward. An eager call under a tape runs that forward and keeps the
// residuals with the tape entry (as TensorFlow does), instead of the
// backward computing the forward a second time.
#include <map>
#include <unordered_set>

#include "backward_trace.h"
#include "kiln/ops.h"

namespace kiln::detail {
namespace {
using EdgeKey = std::pair<const Node*, int32_t>;
EdgeKey key(const Edge& e) {
  return {e.node, e.index};
}
}  // namespace

std::vector<std::pair<Edge, Edge>> replayed_edges(const ReplayValues& values, TracingContext& tc) {
  std::vector<std::pair<Edge, Edge>> out;
  for (const auto& [node, ts] : values)
    for (size_t k = 0; k < ts.size(); ++k)
      if (ts[k].defined() && ts[k].is_symbolic())
        out.emplace_back(tc.edge_for(ts[k]),
                         Edge{const_cast<Node*>(node), static_cast<int32_t>(k)});
  return out;
}

void split_residuals(Graph& g, TracingContext& tc, BackwardTrace& b) {
  // Plain pointers: adding the residual inputs below grows the node list.
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  const size_t end = nodes.size();
  // Replayed compute nodes; inputs and constants stay in the backward.
  std::unordered_set<const Node*> cut;
  for (size_t i = 0; i < b.replay_end; ++i)
    if (!nodes[i]->op().has(kSource)) cut.insert(nodes[i]);
  std::map<EdgeKey, Edge> origin;
  for (const auto& [mine, body] : b.replayed) origin.emplace(key(mine), body);

  std::vector<Edge> read;  // replayed values read past the boundary
  std::map<EdgeKey, size_t> index;
  auto note = [&](const Edge& e) {
    if (cut.count(e.node) && index.emplace(key(e), read.size()).second) read.push_back(e);
  };
  for (size_t i = b.replay_end; i < end; ++i)
    for (const Edge& e : nodes[i]->inputs()) note(e);
  for (const Edge& e : g.outputs()) note(e);

  std::vector<Edge> inputs;
  for (size_t k = 0; k < read.size(); ++k) {
    auto it = origin.find(key(read[k]));
    if (it == origin.end())
      throw InternalError(str_cat("backward of '", g.function_name(), "': node '",
                                  read[k].node->name(), "' is not a replayed forward value"));
    b.residuals.push_back(it->second);
    const TensorSpec& s = read[k].node->outputs()[static_cast<size_t>(read[k].index)];
    inputs.push_back(tc.edge_for(tc.add_input(str_cat("residual_", k), s.dtype, s.shape)));
  }
  auto rewire = [&](Edge& e) {
    if (cut.count(e.node)) e = inputs[index.at(key(e))];
  };
  for (size_t i = b.replay_end; i < end; ++i) {
    Node* n = nodes[i];
    for (size_t j = 0; j < n->inputs().size(); ++j) {
      Edge e = n->inputs()[j];
      rewire(e);
      n->set_input(j, e);
    }
  }
  for (Edge& e : g.outputs()) rewire(e);
  std::vector<bool> keep;
  for (const auto& n : g.nodes()) keep.push_back(!cut.count(n.get()));
  g.remove_nodes(keep);  // also drops control inputs on removed nodes
  g.sort_topologically();
}

std::unique_ptr<Residuals> build_residuals(const TracedSubgraph& body) {
  BackwardTrace t = trace_backward(body, nullptr, nullptr, nullptr, /*split=*/true);
  auto r = std::make_unique<Residuals>();
  r->num_outputs = body.output_specs().size();
  std::unique_ptr<Graph> fwd = body.traced_graph().clone();
  for (const Edge& e : t.residuals) {
    Node* n = fwd->find(e.node->name());
    if (!n)
      throw InternalError(
          str_cat("forward of '", fwd->function_name(), "' lost node '", e.node->name(), "'"));
    fwd->outputs().push_back({n, e.index});
  }
  // A jit function's forward and backward compile as the function does.
  r->forward = GraphSubgraph::create(std::move(fwd), body.jit_compiled());
  Ref<GraphSubgraph> sg = GraphSubgraph::create(std::move(t.graph), body.jit_compiled());
  r->backward.input_index = std::move(t.input_index);
  r->backward.stateful = sg->stateful();
  r->backward.graph = Ref<Subgraph>(sg);
  return r;
}

}  // namespace kiln::detail
