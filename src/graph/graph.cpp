#include "kiln/graph.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace kiln {

Tensor Node::output(int32_t i) {
  if (i < 0 || static_cast<size_t>(i) >= outputs_.size())
    throw InvalidArgumentError(str_cat("node '", name_, "' has no output ", i));
  ref();  // the symbolic tensor adopts this reference
  return Tensor::symbolic(this, i, outputs_[static_cast<size_t>(i)].dtype,
                          outputs_[static_cast<size_t>(i)].shape);
}

std::string Node::tensor_name(int32_t index) const {
  return str_cat(name_, ":", index);
}

std::string Node::describe() const {
  std::string s = str_cat("node '", name_, "' (", op_->type_name, ") in function '",
                          function_name_ ? *function_name_ : std::string("?"), "'");
  if (!location_.empty()) s += str_cat(", created at ", location_);
  if (!graph_) s += ", whose trace has ended";
  return s;
}

const Tensor* Node::constant_value(int32_t index) const {
  if (op_->id != OpId::Const || index != 0 || attrs_.empty()) return nullptr;
  return std::get_if<Tensor>(&attr("value"));
}

namespace {
// Attributes are read by position (attr_of): a node holding fewer than its op
// declares would be read past their end.
void check_attr_count(const OpDef& op, const Attrs& attrs) {
  if (attrs.size() != op.attrs.size())
    throw InternalError(str_cat("a ", op.type_name, " node gets ", attrs.size(),
                                " attributes; the op has ", op.attrs.size()));
}
}  // namespace

void Node::add_control_input(Node* n) {
  if (std::find(control_inputs_.begin(), control_inputs_.end(), n) == control_inputs_.end())
    control_inputs_.push_back(n);
}

void Node::reset(const OpDef& op, std::vector<Edge> inputs, Attrs attrs,
                 std::vector<TensorSpec> outputs) {
  check_attr_count(op, attrs);
  op_ = &op;
  inputs_ = std::move(inputs);
  attrs_ = std::move(attrs);
  outputs_ = std::move(outputs);
}

Graph::Graph(std::string function_name)
    : function_name_(std::make_shared<const std::string>(std::move(function_name))) {}

Graph::~Graph() {
  for (auto& n : nodes_) {
    n->graph_ = nullptr;
    n->inputs_.clear();  // other nodes may be freed; a leaked node keeps only its name
    n->control_inputs_.clear();
  }
}

std::string Graph::unique_name(std::string_view base) {
  std::string b(base.empty() ? "node" : base);
  auto it = name_counts_.find(b);
  if (it == name_counts_.end()) {
    name_counts_.emplace(b, 0);
    return b;
  }
  for (;;) {
    std::string candidate = str_cat(b, "_", ++it->second);
    if (name_counts_.find(candidate) == name_counts_.end()) {
      name_counts_.emplace(candidate, 0);
      return candidate;
    }
  }
}

Node* Graph::add_node(const OpDef& op, std::vector<Edge> inputs, Attrs attrs,
                      std::vector<TensorSpec> outputs, std::string_view name) {
  check_attr_count(op, attrs);
  Node* n = new Node();
  n->graph_ = this;
  n->function_name_ = function_name_;
  n->id_ = next_id_++;
  n->name_ = unique_name(name.empty() ? std::string_view(op.node_name) : name);
  n->op_ = &op;
  n->attrs_ = std::move(attrs);
  n->inputs_ = std::move(inputs);
  n->outputs_ = std::move(outputs);
  nodes_.push_back(Ref<Node>::adopt(n));
  return n;
}

Node* Graph::find(std::string_view name) const {
  for (const auto& n : nodes_)
    if (n->name() == name) return n.get();
  return nullptr;
}

void Graph::remove_nodes(const std::vector<bool>& keep) {
  std::vector<Ref<Node>> kept;
  kept.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (keep[i]) {
      kept.push_back(std::move(nodes_[i]));
    } else {
      nodes_[i]->graph_ = nullptr;
      nodes_[i]->inputs_.clear();
      nodes_[i]->control_inputs_.clear();
    }
  }
  nodes_ = std::move(kept);
  std::unordered_set<Node*> alive;
  for (auto& n : nodes_) alive.insert(n.get());
  for (auto& n : nodes_) {
    auto& c = n->control_inputs_;
    c.erase(std::remove_if(c.begin(), c.end(), [&](Node* x) { return !alive.count(x); }), c.end());
  }
  inputs_.erase(
      std::remove_if(inputs_.begin(), inputs_.end(), [&](Node* x) { return !alive.count(x); }),
      inputs_.end());
}

void Graph::sort_topologically() {
  // Iterative DFS in current order, emitting each node after its inputs
  // (post-order), so already-valid stretches keep their order.
  std::unordered_map<const Node*, uint8_t> state;  // 0 new, 1 on stack, 2 done
  state.reserve(nodes_.size());
  for (const auto& n : nodes_) state.emplace(n.get(), 0);
  std::vector<Node*> sorted;  // nodes_ is only touched once this succeeded
  sorted.reserve(nodes_.size());
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position.emplace(nodes_[i].get(), i);
  std::vector<Node*> order;
  order.reserve(nodes_.size());
  for (const auto& n : nodes_) order.push_back(n.get());
  std::vector<std::pair<Node*, size_t>> stack;  // node, next dependency to visit
  for (Node* root : order) {
    if (state[root] != 0) continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [n, k] = stack.back();
      const size_t deps = n->inputs_.size() + n->control_inputs_.size();
      if (k < deps) {
        Node* d =
            k < n->inputs_.size() ? n->inputs_[k].node : n->control_inputs_[k - n->inputs_.size()];
        ++k;
        auto it = state.find(d);
        if (it == state.end())
          throw InternalError(str_cat("graph '", function_name(), "': node '", n->name(),
                                      "' has an input outside the graph"));
        if (it->second == 1)
          throw InternalError(
              str_cat("graph '", function_name(), "' has a cycle through '", d->name(), "'"));
        if (it->second == 0) {
          it->second = 1;
          stack.push_back({d, 0});
        }
        continue;
      }
      state[n] = 2;
      sorted.push_back(n);
      stack.pop_back();
    }
  }
  std::vector<Ref<Node>> reordered;
  reordered.reserve(nodes_.size());
  for (Node* n : sorted) reordered.push_back(std::move(nodes_[position.at(n)]));
  nodes_ = std::move(reordered);
}

void Graph::reorder(std::span<Node* const> order) {
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position.emplace(nodes_[i].get(), i);
  if (order.size() != nodes_.size())
    throw InternalError(str_cat("graph '", function_name(), "': reorder got ", order.size(),
                                " nodes for ", nodes_.size()));
  std::vector<Ref<Node>> reordered;
  reordered.reserve(nodes_.size());
  for (Node* n : order) {
    auto it = position.find(n);
    if (it == position.end() || !nodes_[it->second])
      throw InternalError(str_cat("graph '", function_name(), "': reorder names node '",
                                  n ? n->name() : "(null)", "' twice or from elsewhere"));
    reordered.push_back(std::move(nodes_[it->second]));
  }
  nodes_ = std::move(reordered);
}

std::vector<std::vector<std::pair<Node*, size_t>>> Graph::consumers() const {
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].get()] = i;
  std::vector<std::vector<std::pair<Node*, size_t>>> out(nodes_.size());
  for (const auto& n : nodes_)
    for (size_t k = 0; k < n->inputs_.size(); ++k)
      out[index.at(n->inputs_[k].node)].push_back({n.get(), k});
  return out;
}

void Graph::verify() const {
  std::unordered_set<const Node*> seen;
  std::unordered_set<std::string> names;
  auto bad = [&](const Node* n, const std::string& what) {
    throw InternalError(str_cat("graph '", function_name(), "' is invalid at node '",
                                n ? n->name() : std::string("?"), "': ", what));
  };
  for (const auto& ref : nodes_) {
    const Node* n = ref.get();
    if (n->graph_ != this) bad(n, "node belongs to another graph");
    if (!names.insert(n->name()).second) bad(n, "duplicate node name");
    for (size_t k = 0; k < n->inputs_.size(); ++k) {
      const Edge& e = n->inputs_[k];
      if (!e.node || !seen.count(e.node))
        bad(n, str_cat("input ", k, " does not come from an earlier node of this graph"));
      if (e.index < 0 || static_cast<size_t>(e.index) >= e.node->outputs_.size())
        bad(n, str_cat("input ", k, " uses output ", e.index, " of '", e.node->name(), "'"));
    }
    for (const Node* c : n->control_inputs_)
      if (!seen.count(c)) bad(n, "control input does not come from an earlier node");
    // Re-run inference on symbolic stand-ins to check dtypes and shapes agree.
    if (n->op_->infer && n->op_->id != OpId::Const) {
      std::vector<Tensor> ins;
      for (const Edge& e : n->inputs_) ins.push_back(e.node->output(e.index));
      InferContext ic(*n->op_, ins, n->attrs_);
      try {
        n->op_->infer(ic);
      } catch (const Error& err) {
        bad(n, str_cat("inference fails: ", err.what()));
      }
      if (ic.num_outputs() != n->outputs_.size()) bad(n, "output count differs from inference");
      for (size_t i = 0; i < n->outputs_.size(); ++i) {
        if (ic.output(i).dtype != n->outputs_[i].dtype)
          bad(n, str_cat("output ", i, " dtype ", dtype_name(n->outputs_[i].dtype),
                         " differs from inferred ", dtype_name(ic.output(i).dtype)));
        if (!ic.output(i).shape.is_compatible_with(n->outputs_[i].shape))
          bad(n, str_cat("output ", i, " shape ", n->outputs_[i].shape,
                         " is incompatible with inferred ", ic.output(i).shape));
      }
    }
    seen.insert(n);
  }
  for (const Edge& e : outputs_)
    if (!seen.count(e.node)) bad(e.node, "graph output refers to a node not in the graph");
  for (const Node* in : inputs_)
    if (!seen.count(in)) bad(in, "graph input is not in the graph");
}

std::string Graph::listing() const {
  std::string s;
  for (const auto& n : nodes_) {
    s += '[';
    bool first = true;
    for (const Edge& e : n->inputs_) {
      if (!first) s += ", ";
      first = false;
      s += '\'';
      s += e.index == 0 ? e.node->name() : str_cat(e.node->name(), ":", e.index);
      s += '\'';
    }
    for (const Node* c : n->control_inputs_) {
      if (!first) s += ", ";
      first = false;
      s += str_cat("'^", c->name(), "'");
    }
    s += "] -> ";
    s += n->name();
    s += '\n';
  }
  return s;
}

std::string Graph::debug_listing() const {
  std::string s = str_cat("graph ", function_name(), " (", nodes_.size(), " nodes)\n");
  for (const auto& n : nodes_) {
    s += str_cat("  ", n->name(), " = ", n->op_->type_name, "(");
    for (size_t k = 0; k < n->inputs_.size(); ++k)
      s += str_cat(k ? ", " : "", n->inputs_[k].node->tensor_name(n->inputs_[k].index));
    bool first = n->inputs_.empty();
    for (const Node* c : n->control_inputs_) {
      s += str_cat(first ? "^" : ", ^", c->name());
      first = false;
    }
    s += ") -> ";
    for (size_t i = 0; i < n->outputs_.size(); ++i)
      s += str_cat(i ? ", " : "", dtype_name(n->outputs_[i].dtype),
                   n->outputs_[i].shape.debug_string());
    if (n->outputs_.empty()) s += "()";
    s += '\n';
  }
  s += "  return (";
  for (size_t i = 0; i < outputs_.size(); ++i)
    s += str_cat(i ? ", " : "", outputs_[i].node->tensor_name(outputs_[i].index));
  s += ")\n";
  return s;
}

namespace {
std::string dot_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}
}  // namespace

std::string Graph::to_dot() const {
  std::string s = str_cat("digraph \"", dot_escape(function_name()), "\" {\n  rankdir=TB;\n");
  for (const auto& n : nodes_) {
    std::string shapes;
    for (size_t i = 0; i < n->outputs_.size(); ++i)
      shapes += str_cat(i ? ", " : "", dtype_name(n->outputs_[i].dtype),
                        n->outputs_[i].shape.debug_string());
    s += str_cat("  n", n->id(), " [label=\"", dot_escape(n->name()), "\\n", n->op_->type_name,
                 "\\n", shapes, "\"",
                 n->op_->has(kStateful) ? ", style=filled, fillcolor=\"#f6d7a7\"" : "", "];\n");
  }
  for (const auto& n : nodes_) {
    for (const Edge& e : n->inputs_) s += str_cat("  n", e.node->id(), " -> n", n->id(), ";\n");
    for (const Node* c : n->control_inputs_)
      s += str_cat("  n", c->id(), " -> n", n->id(), " [style=dashed];\n");
  }
  return s + "}\n";
}

std::unique_ptr<Graph> Graph::clone() const {
  auto out = std::make_unique<Graph>(function_name());
  std::unordered_map<const Node*, Node*> map;
  for (const auto& ref : nodes()) {
    const Node* n = ref.get();
    std::vector<Edge> ins;
    for (const Edge& e : n->inputs()) ins.push_back({map.at(e.node), e.index});
    Node* c = out->add_node(n->op(), std::move(ins), n->attrs(),
                            {n->outputs().begin(), n->outputs().end()}, n->name());
    for (const Node* ci : n->control_inputs()) c->add_control_input(map.at(ci));
    c->set_location(n->location());
    map[n] = c;
  }
  for (const Node* in : inputs()) out->inputs().push_back(map.at(in));
  for (const Edge& e : outputs()) out->outputs().push_back({map.at(e.node), e.index});
  return out;
}

}  // namespace kiln
