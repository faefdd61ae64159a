// Graph IR: nodes recorded while a function is traced, the edges between
// them, and the graph's inputs, outputs and captures. Passes rewrite it; the
// executor compiles it into a flat plan.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/op.h"
#include "kiln/tensor.h"

namespace kiln {

class Graph;
class Node;

/// One output of a node: the source end of a data edge.
struct Edge {
  Node* node = nullptr;
  int32_t index = 0;
  bool operator==(const Edge& o) const { return node == o.node && index == o.index; }
};

/// A node: an op call recorded in a graph. Symbolic tensors point at nodes
/// (Node is the graph layer's Symbol), which keeps a node alive after its
/// graph is gone so that error messages can still name it.
class Node final : public Symbol {
 public:
  int64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  const OpDef& op() const { return *op_; }
  const Attrs& attrs() const { return attrs_; }
  /// An attribute by name (the op's AttrDef names).
  const AttrValue& attr(std::string_view name) const { return attr_of(*op_, attrs_, name); }
  std::span<const Edge> inputs() const { return inputs_; }
  std::span<Node* const> control_inputs() const { return control_inputs_; }
  std::span<const TensorSpec> outputs() const { return outputs_; }
  /// The owning graph; nullptr once the graph has been destroyed.
  Graph* graph() const { return graph_; }
  /// Where in user code the node was created ("file:line"), if known.
  const std::string& location() const { return location_; }

  /// A symbolic tensor for output i.
  Tensor output(int32_t i);

  std::string tensor_name(int32_t index) const override;
  std::string describe() const override;
  const Tensor* constant_value(int32_t index) const override;

  // Mutation (graph builder and passes).
  void set_input(size_t i, Edge e) { inputs_[i] = e; }
  void add_control_input(Node* n);
  void set_attrs(Attrs a) { attrs_ = std::move(a); }
  void set_location(std::string loc) { location_ = std::move(loc); }
  /// Replaces the control inputs (passes forwarding or dropping them).
  void set_control_inputs(std::vector<Node*> c) { control_inputs_ = std::move(c); }
  /// Rewrites the node in place as another op call, keeping its name, id and
  /// control inputs (constant folding turns a node into a Const this way, as
  /// TensorFlow's grappler does). Consumers keep pointing at this node.
  void reset(const OpDef& op, std::vector<Edge> inputs, Attrs attrs,
             std::vector<TensorSpec> outputs);

 private:
  friend class Graph;
  Node() = default;

  Graph* graph_ = nullptr;
  std::shared_ptr<const std::string> function_name_;
  int64_t id_ = 0;
  std::string name_;
  const OpDef* op_ = nullptr;
  Attrs attrs_;
  std::vector<Edge> inputs_;
  std::vector<Node*> control_inputs_;
  std::vector<TensorSpec> outputs_;
  std::string location_;
};

/// A dataflow graph. Owns its nodes; node order is creation order, which is a
/// topological order for graphs built by tracing (passes keep it so).
class Graph {
 public:
  explicit Graph(std::string function_name);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& function_name() const { return *function_name_; }

  /// Adds a node; `name` is made unique TensorFlow-style (add, add_1, ...)
  /// and defaults to the op's node name. Outputs are given (from inference).
  Node* add_node(const OpDef& op, std::vector<Edge> inputs, Attrs attrs,
                 std::vector<TensorSpec> outputs, std::string_view name = {});

  /// A copy with the same node names, attrs, specs, edges, inputs, outputs.
  std::unique_ptr<Graph> clone() const;

  /// A name not yet used in this graph, derived from `base`.
  std::string unique_name(std::string_view base);

  std::span<const Ref<Node>> nodes() const { return nodes_; }
  Node* find(std::string_view name) const;
  size_t num_nodes() const { return nodes_.size(); }

  /// Graph inputs (placeholder nodes, in argument order) and outputs.
  std::vector<Node*>& inputs() { return inputs_; }
  const std::vector<Node*>& inputs() const { return inputs_; }
  std::vector<Edge>& outputs() { return outputs_; }
  const std::vector<Edge>& outputs() const { return outputs_; }

  /// Removes the nodes for which keep[id-order index] is false. Callers must
  /// have rewired every edge into removed nodes.
  void remove_nodes(const std::vector<bool>& keep);

  /// Re-sorts nodes topologically (data and control inputs first), keeping
  /// the current order wherever it is already valid: a node that comes too
  /// late (e.g. a Const appended by a pass) moves to just before its first
  /// user. Throws InternalError on a cycle or an input outside the graph.
  void sort_topologically();

  /// Puts the nodes in `order`, a permutation of nodes() (InternalError
  /// otherwise); the caller keeps it topological (verify() checks).
  void reorder(std::span<Node* const> order);

  /// Consumers of each node output, computed on demand.
  std::vector<std::vector<std::pair<Node*, size_t>>> consumers() const;

  /// Checks structural invariants (inputs precede users, edges in range,
  /// dtypes match the consumer's inference, unique names, outputs valid).
  /// Throws InternalError describing the first violation.
  void verify() const;

  /// One line per node: "['a', 'a'] -> add" (as TensorFlow's graph_def loop).
  std::string listing() const;
  /// Readable listing with ops, dtypes and shapes.
  std::string debug_listing() const;
  /// Graphviz DOT text.
  std::string to_dot() const;

 private:
  std::shared_ptr<const std::string> function_name_;
  std::vector<Ref<Node>> nodes_;
  std::unordered_map<std::string, int64_t> name_counts_;
  std::vector<Node*> inputs_;
  std::vector<Edge> outputs_;
  int64_t next_id_ = 0;
};

}  // namespace kiln
