// cse: merge nodes that compute the same value.
#include <algorithm>
#include <unordered_map>

#include "pass_util.h"

namespace kiln {
namespace {
using passes::hash_combine;

bool mergeable(const Node* n) {
  const OpDef& op = n->op();
  return !op.has(kStateful) && !op.has(kRandom) && op.id != OpId::Placeholder &&
         !n->outputs().empty();
}

// Inputs in a canonical order: commutative binary ops sort their two inputs.
std::vector<Edge> canonical_inputs(const Node* n) {
  std::vector<Edge> in(n->inputs().begin(), n->inputs().end());
  if (n->op().has(kCommutative) && in.size() == 2) {
    auto key = [](const Edge& e) { return std::pair(e.node->id(), e.index); };
    if (key(in[1]) < key(in[0])) std::swap(in[0], in[1]);
  }
  return in;
}

std::vector<Node*> sorted_controls(const Node* n) {
  std::vector<Node*> c(n->control_inputs().begin(), n->control_inputs().end());
  std::sort(c.begin(), c.end(), [](const Node* a, const Node* b) { return a->id() < b->id(); });
  return c;
}

size_t node_hash(const Node* n, const std::vector<Edge>& in) {
  size_t h = static_cast<size_t>(n->op().id);
  for (const Edge& e : in) h = hash_combine(h, passes::EdgeHash()(e));
  for (const Node* c : n->control_inputs())  // order-independent
    h += std::hash<const void*>()(c) * 0x9e3779b97f4a7c15ull;
  for (const AttrValue& a : n->attrs()) h = hash_combine(h, passes::attr_hash(a));
  return h;
}

bool same_value(const Node* a, const std::vector<Edge>& ain, const Node* b,
                const std::vector<Edge>& bin) {
  if (&a->op() != &b->op() || ain != bin || a->attrs().size() != b->attrs().size() ||
      a->outputs().size() != b->outputs().size())
    return false;
  for (size_t i = 0; i < a->attrs().size(); ++i)
    if (!passes::attr_equal(a->attrs()[i], b->attrs()[i])) return false;
  // Merging must not change a static shape someone relies on.
  for (size_t i = 0; i < a->outputs().size(); ++i)
    if (a->outputs()[i].dtype != b->outputs()[i].dtype ||
        a->outputs()[i].shape != b->outputs()[i].shape)
      return false;
  return a->control_inputs().size() == b->control_inputs().size() &&
         (a->control_inputs().empty() || sorted_controls(a) == sorted_controls(b));
}

}  // namespace

PassResult cse(Graph& g) {
  PassResult r;
  r.pass = "cse";
  passes::Rewirer rw(g);
  struct Seen {
    Node* node;
    std::vector<Edge> inputs;
  };
  std::unordered_map<size_t, std::vector<Seen>> table;
  table.reserve(g.num_nodes());
  const auto preserved = passes::output_nodes(g);
  for (Node* n : passes::node_list(g)) {
    rw.update_inputs(n);
    if (!mergeable(n)) continue;
    std::vector<Edge> in = canonical_inputs(n);
    auto& bucket = table[node_hash(n, in)];
    Node* match = nullptr;
    for (const Seen& s : bucket)
      if (same_value(s.node, s.inputs, n, in)) {
        match = s.node;
        break;
      }
    if (!match || preserved.count(n)) {
      bucket.push_back({n, std::move(in)});
      continue;
    }
    for (size_t i = 0; i < n->outputs().size(); ++i)
      rw.replace({n, static_cast<int32_t>(i)}, {match, static_cast<int32_t>(i)});
    rw.remove(n, match);
  }
  rw.finish(r);
  return r;
}

}  // namespace kiln
