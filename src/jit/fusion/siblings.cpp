#include "siblings.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph/uses.h"
#include "jit/fusion/node_rules.h"
#include "passes/pass_util.h"

namespace kiln::jit {
namespace {

class Merger {
 public:
  Merger(std::span<Node* const> nodes, const std::vector<Sibling>& groups)
      : groups_(groups), parts_(groups.size()), uses_(nodes) {
    for (size_t i = 0; i < groups.size(); ++i) {
      parts_[i] = {i};
      members_.push_back(groups[i].members);
      fold_.push_back(groups[i].fold);
      outputs_.push_back(groups[i].outputs);
      points_.push_back(groups[i].writes_points);
      for (Node* m : groups[i].members) group_[m] = i;
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      inputs_.emplace_back();
      for (const Node* m : groups[i].members)
        for (const Edge& e : m->inputs())
          if (group_.at(m) != group_of(e.node)) inputs_[i].insert(e);
    }
  }

  std::vector<std::vector<size_t>> run(std::span<Node* const> nodes) {
    for (Node* v : nodes)
      for (size_t o = 0; o < v->outputs().size(); ++o) merge_readers(v, static_cast<int32_t>(o));
    std::vector<std::vector<size_t>> out;
    for (std::vector<size_t>& p : parts_)
      if (!p.empty()) {
        std::sort(p.begin(), p.end());
        out.push_back(std::move(p));
      }
    return out;
  }

 private:
  // The open groups that read output `o` of `v` directly, in its shape.
  void merge_readers(Node* v, int32_t o) {
    const Shape& shape = v->outputs()[static_cast<size_t>(o)].shape;
    const auto own = group_.find(v);
    std::vector<size_t> readers;
    for (Node* u : uses_.all_readers(v)) {
      const auto it = group_.find(u);
      if (it == group_.end() || (own != group_.end() && own->second == it->second)) continue;
      const size_t g = it->second;
      const Sibling& s = groups_[g];
      const bool reads = std::any_of(u->inputs().begin(), u->inputs().end(),
                                     [&](const Edge& e) { return e.node == v && e.index == o; });
      if (reads && s.open && !reads_in_place(u) && !is_relabel(u) && s.shape == shape &&
          std::find(readers.begin(), readers.end(), g) == readers.end())
        readers.push_back(g);
    }
    // Each reader joins the first kernel so far it can join, else starts one.
    std::vector<size_t> bases;
    for (const size_t b : readers) {
      const auto fit =
          std::find_if(bases.begin(), bases.end(), [&](size_t a) { return joins(a, b, false); });
      if (fit == bases.end())
        bases.push_back(b);
      else
        merge(*fit, b);
    }
    // A consumer of a value a kernel computes joins that kernel (the value is
    // then read where it is computed), unless a path through other nodes
    // leads from the kernel to it.
    if (own == group_.end()) return;
    const size_t g = own->second;
    if (!groups_[g].open || !(groups_[g].shape == shape)) return;
    for (const size_t b : bases)
      if (joins(g, b, true)) merge(g, b);
  }

  void merge(size_t a, size_t b) {
    outputs_[a] += outputs_[b];
    points_[a] = points_[a] || points_[b];
    inputs_[a].insert(inputs_[b].begin(), inputs_[b].end());
    inputs_[b].clear();
    for (Node* m : members_[b]) group_[m] = a;
    for (auto it = inputs_[a].begin(); it != inputs_[a].end();)
      it = group_of(it->node) == a ? inputs_[a].erase(it) : std::next(it);
    members_[a].insert(members_[a].end(), members_[b].begin(), members_[b].end());
    members_[b].clear();
    parts_[a].insert(parts_[a].end(), parts_[b].begin(), parts_[b].end());
    parts_[b].clear();
    if (fold_[a] == 0) fold_[a] = fold_[b];
  }

  // Whether group `b` can join group `a`: as a sibling, or as a consumer of
  // values `a` computes.
  bool joins(size_t a, size_t b, bool consumer) {
    if (groups_[a].reduced != groups_[b].reduced || (points_[a] && points_[b]) ||
        !folds_agree(a, b) || outputs_[a] + outputs_[b] > kMaxSiblingOutputs)
      return false;
    size_t inputs = inputs_[a].size();
    for (const Edge& e : inputs_[b]) inputs += !inputs_[a].count(e) && group_of(e.node) != a;
    if (inputs + outputs_[a] + outputs_[b] > kMaxSiblingOperands) return false;
    // A view in `b` reads its source as a tensor: not one `a` computes.
    if (consumer)
      for (const Node* m : members_[b])
        if (reads_in_place(m) && group_of(m->inputs()[0].node) == a) return false;
    return !reaches(a, b, consumer) && !reaches(b, a, false);
  }

  size_t group_of(const Node* n) const {
    const auto it = group_.find(n);
    return it == group_.end() ? SIZE_MAX : it->second;
  }

  bool folds_agree(size_t a, size_t b) const {
    return fold_[a] == 0 || fold_[b] == 0 || (fold_[a] == fold_[b] && fold_[a] > 0);
  }

  // Whether a path leads from group `a` to group `b`, through data and
  // control edges, each other group taken as one node; with `skip_direct`,
  // not counting edges from `a` straight into `b`.
  bool reaches(size_t a, size_t b, bool skip_direct) {
    std::unordered_map<const Node*, bool> seen;
    std::vector<bool> entered(members_.size());
    entered[a] = true;
    std::vector<Node*> stack(members_[a].begin(), members_[a].end());
    for (Node* m : stack) seen[m] = true;
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (Node* u : uses_.all_readers(n)) {
        if (seen[u]) continue;
        const auto g = group_.find(u);
        if (skip_direct && g != group_.end() && g->second == b && group_of(n) == a) continue;
        seen[u] = true;
        if (g == group_.end()) {
          stack.push_back(u);
          continue;
        }
        if (g->second == b) return true;
        if (entered[g->second]) continue;
        entered[g->second] = true;  // a kernel: all its outputs are reached
        for (Node* m : members_[g->second]) {
          seen[m] = true;
          stack.push_back(m);
        }
      }
    }
    return false;
  }

  const std::vector<Sibling>& groups_;
  std::vector<std::vector<size_t>> parts_;
  std::vector<std::vector<Node*>> members_;
  std::vector<int64_t> fold_;
  std::vector<size_t> outputs_;
  std::vector<bool> points_;
  std::vector<std::unordered_set<Edge, passes::EdgeHash>> inputs_;  // read from outside
  std::unordered_map<const Node*, size_t> group_;
  Uses uses_;  // data and control readers
};

}  // namespace

std::vector<std::vector<size_t>> merge_siblings(std::span<Node* const> nodes,
                                                const std::vector<Sibling>& groups) {
  return Merger(nodes, groups).run(nodes);
}

}  // namespace kiln::jit
