// inline: replaces function call nodes (PartitionedCall,
// StatefulPartitionedCall) by the called function's traced graph, so the
// later passes optimize across the call boundary. Nested calls inside an
// inlined body are inlined in the next round.
#include <algorithm>
#include <unordered_map>

#include "graph/subgraph.h"
#include "pass_util.h"

namespace kiln {
namespace {

bool is_call(const Node* n) {
  return n->op().has(kCall);
}

// A call nested deeper than this is recursion that cannot end.
constexpr int kMaxDepth = 64;

}  // namespace

PassResult inline_calls(Graph& g) {
  PassResult r;
  r.pass = "inline";
  for (int round = 0;; ++round) {
    std::vector<Node*> calls;
    for (Node* n : passes::node_list(g))
      if (is_call(n) &&
          dynamic_cast<const detail::TracedSubgraph*>(std::get<Ref<Subgraph>>(n->attr("f")).get()))
        calls.push_back(n);
    if (calls.empty()) break;
    if (round == kMaxDepth)
      throw InvalidArgumentError(str_cat("inline: function calls nested more than ", kMaxDepth,
                                         " deep in '", g.function_name(), "' (via '",
                                         calls[0]->name(), "')"));
    std::unordered_map<Edge, Edge, passes::EdgeHash> repl;
    std::unordered_map<const Node*, std::vector<Node*>> control_repl;
    for (Node* call : calls) {
      const auto& sub =
          dynamic_cast<const detail::TracedSubgraph&>(*std::get<Ref<Subgraph>>(call->attr("f")));
      const Graph& body = sub.traced_graph();
      std::unordered_map<const Node*, Edge> given;  // placeholders, hoisted handles
      size_t k = 0;
      for (const Node* p : body.inputs()) given[p] = call->inputs()[k++];
      for (const Node* h : sub.hoisted()) given[h] = call->inputs()[k++];
      std::unordered_map<const Node*, Node*> map;
      auto resolve = [&](Edge e) -> Edge {
        auto it = given.find(e.node);
        return it != given.end() ? it->second : Edge{map.at(e.node), e.index};
      };
      std::vector<Node*> stateful;
      for (const auto& ref : body.nodes()) {
        const Node* n = ref.get();
        if (given.count(n)) continue;
        if (n->op().id == OpId::Placeholder)
          throw InternalError(str_cat("inline: placeholder '", n->name(), "' of '",
                                      body.function_name(), "' is not an input"));
        std::vector<Edge> ins;
        for (const Edge& e : n->inputs()) ins.push_back(resolve(e));
        Node* c =
            g.add_node(n->op(), std::move(ins), n->attrs(),
                       {n->outputs().begin(), n->outputs().end()}, call->name() + "/" + n->name());
        for (const Node* ci : n->control_inputs())
          if (auto it = map.find(ci); it != map.end()) c->add_control_input(it->second);
        if (n->op().has(kStateful)) {
          // The call's place in program order passes to its stateful ops.
          for (Node* ci : call->control_inputs()) c->add_control_input(ci);
          stateful.push_back(c);
        }
        c->set_location(n->location().empty() ? call->location() : n->location());
        map[n] = c;
        r.added.push_back({c->name(), c->op().type_name});
      }
      for (size_t j = 0; j < body.outputs().size(); ++j)
        repl[{call, static_cast<int32_t>(j)}] = resolve(body.outputs()[j]);
      control_repl[call] = std::move(stateful);
      r.removed.push_back({call->name(), call->op().type_name});
    }
    auto final_edge = [&](Edge e) {
      for (auto it = repl.find(e); it != repl.end(); it = repl.find(e)) e = it->second;
      return e;
    };
    std::vector<bool> keep;
    keep.reserve(g.num_nodes());
    for (const auto& ref : g.nodes()) {
      Node* n = ref.get();
      keep.push_back(!control_repl.count(n));
      for (size_t i = 0; i < n->inputs().size(); ++i) n->set_input(i, final_edge(n->inputs()[i]));
      bool touched = false;
      for (const Node* c : n->control_inputs()) touched |= control_repl.count(c) > 0;
      if (!touched) continue;
      std::vector<Node*> controls;
      std::vector<Node*> work(n->control_inputs().begin(), n->control_inputs().end());
      while (!work.empty()) {
        Node* c = work.back();
        work.pop_back();
        auto it = control_repl.find(c);
        if (it == control_repl.end()) {
          if (std::find(controls.begin(), controls.end(), c) == controls.end())
            controls.push_back(c);
        } else {
          work.insert(work.end(), it->second.begin(), it->second.end());
        }
      }
      n->set_control_inputs(std::move(controls));
    }
    for (Edge& e : g.outputs()) e = final_edge(e);
    g.remove_nodes(keep);
    g.sort_topologically();
  }
  // Callee nodes carry the callee trace's shapes; the caller may know more.
  if (!r.removed.empty()) passes::refine_shapes(g);
  return r;
}

}  // namespace kiln
