// prune: keep what the outputs and the stateful ops need.
#include <unordered_set>

#include "pass_util.h"

namespace kiln {

PassResult prune(Graph& g) {
  PassResult r;
  r.pass = "prune";
  std::unordered_set<const Node*> live;
  live.reserve(g.num_nodes() * 2);
  std::vector<const Node*> work;
  auto mark = [&](const Node* n) {
    if (live.insert(n).second) work.push_back(n);
  };
  for (const Edge& e : g.outputs()) mark(e.node);
  for (const Node* n : g.inputs()) mark(n);
  // Stateful ops run for their effects; placeholders are the signature
  // (captures included, which are not listed in g.inputs()).
  for (const auto& n : g.nodes())
    if (n->op().has(kStateful) || n->op().id == OpId::Placeholder) mark(n.get());
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Edge& e : n->inputs()) mark(e.node);
    for (const Node* c : n->control_inputs()) mark(c);
  }
  if (live.size() == g.num_nodes()) return r;
  std::vector<bool> keep;
  keep.reserve(g.num_nodes());
  for (const auto& n : g.nodes()) {
    const bool k = live.count(n.get()) != 0;
    keep.push_back(k);
    if (!k) r.removed.emplace_back(n->name(), n->op().type_name);
  }
  g.remove_nodes(keep);
  return r;
}

}  // namespace kiln
