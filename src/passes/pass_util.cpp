#include "pass_util.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <string_view>

namespace kiln::passes {

std::vector<Node*> node_list(const Graph& g) {
  std::vector<Node*> v;
  v.reserve(g.num_nodes());
  for (const auto& n : g.nodes()) v.push_back(n.get());
  return v;
}

namespace {
// The more specific of two compatible shapes; `old` when they disagree.
Shape more_specific(const Shape& old, const Shape& now) {
  if (!now.rank_known()) return old;
  if (!old.rank_known()) return now;
  if (old.rank() != now.rank()) return old;
  Shape out = old;
  for (int64_t i = 0; i < old.rank(); ++i) {
    if (old.dim(i) >= 0) {
      if (now.dim(i) >= 0 && now.dim(i) != old.dim(i)) return old;
    } else {
      out.set_dim(i, now.dim(i));
    }
  }
  return out;
}
}  // namespace

bool refine_node(Node* n) {
  if (n->op().has(kSource)) return false;
  std::vector<Tensor> ins;
  ins.reserve(n->inputs().size());
  for (const Edge& e : n->inputs()) ins.push_back(e.node->output(e.index));
  InferContext ic(n->op(), ins, n->attrs());
  try {
    n->op().infer(ic);
  } catch (const Error&) {
    return false;  // keep what tracing inferred
  }
  if (ic.outputs().size() != n->outputs().size()) return false;
  std::vector<TensorSpec> specs(n->outputs().begin(), n->outputs().end());
  bool changed = false;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (ic.outputs()[i].dtype != specs[i].dtype) continue;
    Shape s = more_specific(specs[i].shape, ic.outputs()[i].shape);
    if (s == specs[i].shape) continue;
    specs[i].shape = std::move(s);
    changed = true;
  }
  if (!changed) return false;
  n->reset(n->op(), {n->inputs().begin(), n->inputs().end()}, n->attrs(), std::move(specs));
  return true;
}

size_t refine_shapes(Graph& g) {
  size_t refined = 0;
  for (Node* n : node_list(g)) refined += refine_node(n) ? 1 : 0;
  return refined;
}

std::unordered_set<const Node*> output_nodes(const Graph& g) {
  std::unordered_set<const Node*> s;
  for (const Edge& e : g.outputs()) s.insert(e.node);
  return s;
}

NodeUses::NodeUses(const Graph& g) : outs_(output_nodes(g)) {
  for (const auto& n : g.nodes()) {
    for (const Edge& e : n->inputs()) users_[e.node].push_back(n.get());
    for (const Node* c : n->control_inputs()) control_targets_.insert(c);
  }
}

const std::vector<Node*>& NodeUses::users(const Node* n) const {
  static const std::vector<Node*> kNone;
  auto it = users_.find(n);
  return it == users_.end() ? kNone : it->second;
}

bool NodeUses::interior(const Node* n) const {
  return users(n).size() == 1 && !outs_.count(n) && !control_targets_.count(n) &&
         n->control_inputs().empty() && n->outputs().size() == 1;
}

void Rewirer::remove(Node* n, Node* control_to) {
  removed_.insert(n);
  control_map_[n] = control_to;
}

Edge Rewirer::resolve(Edge e) const {
  // Chains are rare (replacements point at already-resolved edges); bound
  // the walk anyway.
  for (size_t steps = 0; steps <= map_.size(); ++steps) {
    auto it = map_.find(e);
    if (it == map_.end()) return e;
    e = it->second;
  }
  throw InternalError("pass rewiring has a replacement cycle");
}

void Rewirer::update_inputs(Node* n) {
  if (map_.empty() && control_map_.empty()) return;
  for (size_t k = 0; k < n->inputs().size(); ++k) {
    const Edge e = n->inputs()[k];
    const Edge r = resolve(e);
    if (!(r == e)) n->set_input(k, r);
  }
  if (control_map_.empty() || n->control_inputs().empty()) return;
  bool touched = false;
  for (Node* c : n->control_inputs()) touched |= control_map_.count(c) != 0;
  if (!touched) return;
  std::vector<Node*> ctl;
  for (Node* c : n->control_inputs()) {
    auto it = control_map_.find(c);
    Node* to = c;
    // Follow moves (a removed node's control target may itself be removed).
    for (size_t steps = 0; it != control_map_.end() && to && steps <= control_map_.size();
         ++steps) {
      to = it->second;
      it = control_map_.find(to);
    }
    if (to && to != n && std::find(ctl.begin(), ctl.end(), to) == ctl.end()) ctl.push_back(to);
  }
  n->set_control_inputs(std::move(ctl));
}

void Rewirer::finish(PassResult& r) {
  for (Edge& e : g_.outputs()) e = resolve(e);
  if (removed_.empty()) return;
  std::vector<bool> keep;
  keep.reserve(g_.num_nodes());
  for (const auto& n : g_.nodes()) {
    const bool gone = removed_.count(n.get()) != 0;
    keep.push_back(!gone);
    if (gone) r.removed.emplace_back(n->name(), n->op().type_name);
  }
  g_.remove_nodes(keep);
}

bool tensor_equal(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return true;
  if (!a.defined() || !b.defined() || a.is_symbolic() || b.is_symbolic()) return false;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.buffer() == b.buffer() && a.byte_offset() == b.byte_offset()) return true;
  if (a.num_elements() > kSmallTensorElements) return false;
  if (a.dtype() == DType::kString) {
    const std::string* x = a.data<std::string>();
    const std::string* y = b.data<std::string>();
    return std::equal(x, x + a.num_elements(), y);
  }
  // Numbers compare by bytes (so -0.0 != 0.0 and NaN == the same NaN);
  // resources by handle pointer.
  return std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

size_t tensor_hash(const Tensor& t) {
  if (!t.defined()) return 0;
  if (t.is_symbolic()) return std::hash<const void*>()(t.impl());
  size_t h = static_cast<size_t>(t.dtype());
  for (int64_t d : t.shape().dims()) h = hash_combine(h, static_cast<size_t>(d));
  if (t.num_elements() > kSmallTensorElements)
    return hash_combine(hash_combine(h, std::hash<const void*>()(t.buffer())), t.byte_offset());
  if (t.dtype() == DType::kString) {
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.num_elements(); ++i)
      h = hash_combine(h, std::hash<std::string>()(s[i]));
    return h;
  }
  return hash_combine(h, std::hash<std::string_view>()(
                             std::string_view(static_cast<const char*>(t.raw_data()), t.nbytes())));
}

bool attr_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a))
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return true;
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return tensor_equal(x, std::get<Tensor>(b));
        } else {
          return x == std::get<T>(b);
        }
      },
      a);
}

size_t attr_hash(const AttrValue& a) {
  size_t h = a.index();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, double>) {
          h = hash_combine(h, std::hash<uint64_t>()(std::bit_cast<uint64_t>(v)));
        } else if constexpr (std::is_same_v<T, DType>) {
          h = hash_combine(h, static_cast<size_t>(v));
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t x : v) h = hash_combine(h, std::hash<int64_t>()(x));
        } else if constexpr (std::is_same_v<T, Tensor>) {
          h = hash_combine(h, tensor_hash(v));
        } else if constexpr (std::is_same_v<T, Ref<Subgraph>>) {
          h = hash_combine(h, std::hash<const void*>()(v.get()));
        } else {
          h = hash_combine(h, std::hash<T>()(v));
        }
      },
      a);
  return h;
}

}  // namespace kiln::passes
