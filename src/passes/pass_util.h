// Shared machinery for the passes: edge replacement with one linear sweep,
// and value/attribute comparison for constants.
#pragma once
#include <cstddef>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/passes.h"

namespace kiln::passes {

struct EdgeHash {
  size_t operator()(const Edge& e) const {
    return std::hash<const void*>()(e.node) * 31u + static_cast<size_t>(e.index);
  }
};

/// Collects replacements while a pass walks the nodes in order. Every pass
/// calls update_inputs(n) on each node (in graph order) before looking at it,
/// so a node always sees its inputs' final replacements; finish() then fixes
/// the graph outputs and removes the replaced nodes. Linear in graph size.
class Rewirer {
 public:
  explicit Rewirer(Graph& g) : g_(g) {}

  /// Uses of `from` become uses of `to` (an earlier node or a new Const).
  void replace(Edge from, Edge to) { map_[from] = to; }
  /// `n` leaves the graph once all its uses are replaced; control edges on it
  /// move to `control_to` (nullptr drops them).
  void remove(Node* n, Node* control_to);
  bool removed(const Node* n) const { return removed_.count(n) != 0; }

  Edge resolve(Edge e) const;
  /// Points n's data and control inputs at their replacements.
  void update_inputs(Node* n);
  /// Rewires graph outputs and removes the replaced nodes, recording them.
  void finish(PassResult& r);

 private:
  Graph& g_;
  std::unordered_map<Edge, Edge, EdgeHash> map_;
  std::unordered_map<const Node*, Node*> control_map_;
  std::unordered_set<const Node*> removed_;
};

/// The graph's nodes as plain pointers (stable while a pass appends nodes).
std::vector<Node*> node_list(const Graph& g);

/// Nodes referenced by graph outputs. Rewriting passes never remove them
/// (the function layer names its results by them, as grappler's
/// nodes_to_preserve); they may still be the target of a replacement.
std::unordered_set<const Node*> output_nodes(const Graph& g);

/// Who reads each node of a graph, as it stood when made: data users (one
/// entry per input edge reading it), graph outputs and control edges.
class NodeUses {
 public:
  explicit NodeUses(const Graph& g);
  /// The nodes reading `n`, once per input edge (empty when none).
  const std::vector<Node*>& users(const Node* n) const;
  /// `n` has one output, read by exactly one input edge, and is no graph
  /// output, no control input of a node and has no control inputs: a step
  /// inside a pattern that a fusion may take.
  bool interior(const Node* n) const;
  /// `n` is a graph output.
  bool output(const Node* n) const { return outs_.count(n) != 0; }
  /// `n` is a control input of some node.
  bool control_target(const Node* n) const { return control_targets_.count(n) != 0; }

 private:
  std::unordered_set<const Node*> outs_;
  std::unordered_map<const Node*, std::vector<Node*>> users_;
  std::unordered_set<const Node*> control_targets_;
};

/// Re-runs shape inference over the graph in order; a node's output shapes
/// become the more specific of what they were and what its inputs give now
/// (after inlining, a callee traced for [None] called with [3]). Returns
/// the number of nodes refined.
size_t refine_shapes(Graph& g);
/// refine_shapes for one node (its inputs' specs and constants as they are
/// now); true when an output shape became more specific.
bool refine_node(Node* n);

/// The static spec of an edge's value.
inline const TensorSpec& spec_of(Edge e) {
  return e.node->outputs()[static_cast<size_t>(e.index)];
}
/// The constant value behind an edge, or nullptr.
inline const Tensor* const_of(Edge e) {
  return e.node->constant_value(e.index);
}

/// Attribute equality and hashing as CSE needs them: doubles compare by bits,
/// tensors equal when they are the same tensor/buffer or small and
/// byte-equal (strings by value).
bool attr_equal(const AttrValue& a, const AttrValue& b);
size_t attr_hash(const AttrValue& a);
bool tensor_equal(const Tensor& a, const Tensor& b);
size_t tensor_hash(const Tensor& t);
/// Tensors up to this many elements are compared by value.
inline constexpr int64_t kSmallTensorElements = 1024;

inline size_t hash_combine(size_t h, size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

}  // namespace kiln::passes
