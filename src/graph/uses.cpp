#include "graph/uses.h"

#include <algorithm>

namespace kiln {

Uses::Uses(const Graph& g) {
  for (const Ref<Node>& n : g.nodes()) add(n.get());
}

Uses::Uses(std::span<Node* const> nodes) {
  for (Node* n : nodes) add(n);
}

void Uses::add(Node* n) {
  for (const Edge& e : n->inputs()) {
    Entry& x = by_node_[e.node];
    x.data.push_back(n);
    x.edges.push_back({n, e.index});
    x.all.push_back(n);
  }
  for (Node* c : n->control_inputs()) {
    Entry& x = by_node_[c];
    x.control.push_back(n);
    x.all.push_back(n);
  }
}

const Uses::Entry& Uses::of(const Node* n) const {
  static const Entry kNone;
  const auto it = by_node_.find(n);
  return it == by_node_.end() ? kNone : it->second;
}

std::vector<Node*> Uses::readers_of(const Node* n, int32_t index) const {
  std::vector<Node*> out;
  for (const auto& [u, i] : of(n).edges)
    if (i == index && std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
  return out;
}

}  // namespace kiln
