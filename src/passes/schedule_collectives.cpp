// schedule_collectives: starts of non-blocking all-reduces early, their
// dones late. A list schedule over the graph's dependencies: what the first
// start needs, then the start, then what the second needs, ...; then the
// rest; the dones as late as their users allow.
#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>

#include "kiln/passes.h"

namespace kiln {
namespace {

bool is_start(const Node& n) {
  return n.op().id == OpId::CollectiveAllReduceStart;
}
bool is_done(const Node& n) {
  return n.op().id == OpId::CollectiveAllReduceDone;
}

// Each node's predecessors by index: data and control inputs, plus the
// order of side effects (every stateful node but a done after the previous
// one of its chain: starts form one chain, the other stateful nodes another).
std::vector<std::vector<size_t>> predecessors(const Graph& g,
                                              const std::unordered_map<const Node*, size_t>& at) {
  std::vector<std::vector<size_t>> preds(g.num_nodes());
  int64_t last_start = -1, last_effect = -1;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = *g.nodes()[i];
    for (const Edge& e : n.inputs()) preds[i].push_back(at.at(e.node));
    for (const Node* c : n.control_inputs()) preds[i].push_back(at.at(c));
    if (!n.op().has(kStateful) || is_done(n)) continue;
    int64_t& last = is_start(n) ? last_start : last_effect;
    if (last >= 0) preds[i].push_back(static_cast<size_t>(last));
    last = static_cast<int64_t>(i);
  }
  return preds;
}

// The k-th start and what it waits for (not waited for by an earlier start)
// get priority k; the rest comes after every start, the dones last.
std::vector<size_t> priorities(const Graph& g, const std::vector<std::vector<size_t>>& preds) {
  constexpr size_t kUnset = SIZE_MAX;
  std::vector<size_t> p(g.num_nodes(), kUnset);
  size_t k = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    if (!is_start(*g.nodes()[i])) continue;
    std::vector<size_t> work = {i};
    p[i] = k;
    while (!work.empty()) {
      const size_t j = work.back();
      work.pop_back();
      for (size_t d : preds[j])
        if (p[d] == kUnset) p[d] = k, work.push_back(d);
    }
    ++k;
  }
  for (size_t i = 0; i < g.num_nodes(); ++i)
    if (p[i] == kUnset) p[i] = is_done(*g.nodes()[i]) ? k + 1 : k;
  return p;
}

}  // namespace

PassResult schedule_collectives(Graph& g) {
  PassResult r;
  r.pass = "schedule_collectives";
  bool any = false;
  for (const auto& n : g.nodes()) any = any || is_start(*n);
  if (!any) return r;
  std::unordered_map<const Node*, size_t> at;
  for (size_t i = 0; i < g.num_nodes(); ++i) at.emplace(g.nodes()[i].get(), i);
  const auto preds = predecessors(g, at);
  const auto prio = priorities(g, preds);
  std::vector<std::vector<size_t>> succs(g.num_nodes());
  std::vector<size_t> waiting(g.num_nodes());
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    waiting[i] = preds[i].size();
    for (size_t d : preds[i]) succs[d].push_back(i);
  }
  // Ready nodes by (priority, original position): a deterministic order.
  using Key = std::pair<size_t, size_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  for (size_t i = 0; i < g.num_nodes(); ++i)
    if (waiting[i] == 0) ready.push({prio[i], i});
  std::vector<Node*> order;
  order.reserve(g.num_nodes());
  while (!ready.empty()) {
    const size_t i = ready.top().second;
    ready.pop();
    Node* n = g.nodes()[i].get();
    if (order.size() != i && (is_start(*n) || is_done(*n)))
      r.rewritten.push_back(
          {n->name(), str_cat(n->op().type_name, " moved from ", i, " to ", order.size())});
    order.push_back(n);
    for (size_t s : succs[i])
      if (--waiting[s] == 0) ready.push({prio[s], s});
  }
  if (order.size() != g.num_nodes())
    throw InternalError(
        str_cat("schedule_collectives: graph '", g.function_name(), "' has a cycle"));
  g.reorder(order);
  return r;
}

}  // namespace kiln
