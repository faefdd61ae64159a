// fuse: groups chains of float32 elementwise ops (rows with a block_f32
// kernel) of one static shape into FusedElementwise nodes, so a chain runs
// as one pass over the data with no intermediate tensors.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "pass_util.h"

namespace kiln {
namespace {
using passes::EdgeHash;
using passes::node_list;
using passes::spec_of;

bool is_scalar_like(const Shape& s) {
  return s.is_fully_defined() && s.rank() <= 1 && s.num_elements() == 1;
}

}  // namespace

PassResult fuse_elementwise(Graph& g) {
  PassResult r;
  r.pass = "fuse";
  std::vector<Node*> nodes = node_list(g);
  const passes::NodeUses uses(g);
  auto fusable = [&](const Node* n, const Shape& shape) {
    if (!n->op().block_f32 || n->outputs().size() != 1 || !n->control_inputs().empty() ||
        uses.control_target(n))
      return false;
    const TensorSpec& out = n->outputs()[0];
    if (out.dtype != DType::kFloat32 || !(out.shape == shape)) return false;
    for (const Edge& e : n->inputs()) {
      const TensorSpec& in = spec_of(e);
      if (in.dtype != DType::kFloat32) return false;
      if (!(in.shape == shape) && !is_scalar_like(in.shape)) return false;
    }
    return true;
  };

  std::unordered_set<const Node*> assigned;
  std::vector<std::vector<Node*>> groups;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* root = *it;
    if (assigned.count(root)) continue;
    const Shape& shape = root->outputs().empty() ? Shape() : root->outputs()[0].shape;
    if (!shape.is_fully_defined() || !fusable(root, shape)) continue;
    std::vector<Node*> group{root};
    std::vector<Node*> work{root};
    assigned.insert(root);
    while (!work.empty()) {
      Node* m = work.back();
      work.pop_back();
      for (const Edge& e : m->inputs()) {
        Node* p = e.node;
        if (assigned.count(p) || !uses.interior(p) || !fusable(p, shape)) continue;
        assigned.insert(p);
        group.push_back(p);
        work.push_back(p);
      }
    }
    if (group.size() >= 2) groups.push_back(std::move(group));
  }
  if (groups.empty()) return r;

  std::unordered_map<const Node*, size_t> order;
  for (size_t i = 0; i < nodes.size(); ++i) order[nodes[i]] = i;
  std::unordered_set<const Node*> dropped;
  for (auto& group : groups) {
    std::sort(group.begin(), group.end(),
              [&](const Node* a, const Node* b) { return order[a] < order[b]; });
    Node* root = group.back();
    std::unordered_set<const Node*> members(group.begin(), group.end());
    std::vector<Edge> ext;
    std::unordered_map<Edge, int64_t, EdgeHash> reg;
    for (Node* m : group)
      for (const Edge& e : m->inputs())
        if (!members.count(e.node) && !reg.count(e)) {
          reg[e] = static_cast<int64_t>(ext.size());
          ext.push_back(e);
        }
    std::unordered_map<const Node*, int64_t> member_reg;
    std::vector<int64_t> program;
    std::string what;
    for (size_t j = 0; j < group.size(); ++j) {
      Node* m = group[j];
      auto reg_of = [&](const Edge& e) {
        return members.count(e.node) ? member_reg.at(e.node) : reg.at(e);
      };
      program.push_back(static_cast<int64_t>(m->op().id));
      program.push_back(reg_of(m->inputs()[0]));
      program.push_back(m->inputs().size() > 1 ? reg_of(m->inputs()[1]) : -1);
      member_reg[m] = static_cast<int64_t>(ext.size() + j);
      what += str_cat(j ? ", " : "", m->op().type_name);
      if (m != root) {
        r.removed.push_back({m->name(), m->op().type_name});
        dropped.insert(m);
      }
    }
    const Shape shape = root->outputs()[0].shape;
    root->reset(op_def(OpId::FusedElementwise), std::move(ext), Attrs{std::move(program)},
                {TensorSpec{DType::kFloat32, shape}});
    r.rewritten.push_back({root->name(), str_cat("fused ", group.size(), " ops: ", what)});
  }
  std::vector<bool> keep;
  keep.reserve(g.num_nodes());
  for (const auto& n : g.nodes()) keep.push_back(!dropped.count(n.get()));
  g.remove_nodes(keep);
  return r;
}

}  // namespace kiln
