// fuse_rnn: the While loop of a Keras LSTM, GRU or SimpleRNN layer as one
// _FusedLSTM, _FusedGRU or _FusedSimpleRNN node (ops/rnn.cpp; kiln/passes.h
// says which loops). The loop's body
// and cond are read from their traced graphs; every node of the body must
// belong to the step, so a loop that does anything else (masks, other
// activations, peepholes, extra outputs for a gradient) stays a loop.
#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/subgraph.h"
#include "pass_util.h"

namespace kiln {
namespace {
using passes::const_of;
using passes::spec_of;

// Identity nodes (a traced body's pass-throughs) read through.
Edge skip(Edge e) {
  while (e.node->op().id == OpId::Identity && e.node->inputs().size() == 1 &&
         e.node->control_inputs().empty())
    e = e.node->inputs()[0];
  return e;
}

// The value of an integer scalar constant `t` (null: none).
bool int_scalar(const Tensor* t, int64_t& v) {
  if (!t || t->num_elements() != 1) return false;
  if (t->dtype() == DType::kInt32) {
    v = *t->data<int32_t>();
  } else if (t->dtype() == DType::kInt64) {
    v = *t->data<int64_t>();
  } else {
    return false;
  }
  return true;
}
bool int_scalar(Edge e, int64_t& v) {
  return int_scalar(const_of(e), v);
}

// A loop-invariant value of the body: a capture (arg) or constant (value),
// through ReadVariableOp and StridedSlice nodes with constant other inputs.
struct Invariant {
  int arg = -1;
  const Tensor* value = nullptr;
  std::vector<const Node*> chain;  // from the source out
};

enum class Cell { kLstm, kGru, kSimple };

// The loop's pieces once matched: loop-variable and capture positions.
struct Loop {
  Cell cell = Cell::kLstm;
  int t = -1, list = -1, c = -1, h = -1, x = -1, w = -1, n = -1;
  const Tensor* n_value = nullptr;  // the cond's constant bound, when n < 0
  const Tensor* w_value = nullptr;  // the body's constant kernel, when w < 0
  std::vector<int> hs;              // every variable the body sets to the new h
  bool writes = false;              // the body writes h to the list at t
  const Node* read = nullptr;       // the body's ReadVariableOp of the kernel, if any
  bool has_bias = false;            // a recurrent bias added to the product (GRU, SimpleRNN)
  Invariant bias;
};

// Matches one body's step; `taken` collects its nodes.
class BodyMatcher {
 public:
  BodyMatcher(const Graph& body, size_t vars) : b_(body), vars_(vars) {
    for (size_t k = 0; k < body.inputs().size(); ++k) arg_[body.inputs()[k]] = static_cast<int>(k);
  }

  bool match(Loop& l) {
    const std::vector<Edge>& outs = b_.outputs();
    if (outs.size() != vars_ || vars_ < (l.cell == Cell::kLstm ? 4u : 3u)) return false;
    Edge h_new{}, c_new{};
    for (size_t k = 0; k < vars_; ++k) {
      const Edge e = skip(outs[k]);
      const int self = static_cast<int>(k);
      if (counter(e, self)) {
        if (l.t >= 0) return false;
        l.t = self;
      } else if (arg(e) == self && spec_of(e).dtype == DType::kResource) {
        if (l.list >= 0) return false;
        l.list = self;  // a list passed through (return_sequences=False)
      } else if (e.node->op().id == OpId::TensorListSetItem) {
        if (l.list >= 0 || arg(e.node->inputs()[0]) != self) return false;
        l.list = self;
        l.writes = true;
        take(e.node);
      } else if (!h_new.node && new_h(l.cell, e, c_new)) {
        h_new = e;
        l.hs.push_back(self);
      } else if (h_new.node && e == h_new) {
        l.hs.push_back(self);
      } else if (l.cell == Cell::kLstm && l.c < 0) {
        l.c = self;  // checked against the cell below
      } else {
        return false;
      }
    }
    if (l.t < 0 || l.list < 0 || l.hs.empty() || !h_new.node) return false;
    if (l.cell == Cell::kLstm) {
      // The c variable's result is the cell's new c, computed from itself.
      if (l.c < 0 || skip(outs[static_cast<size_t>(l.c)]) != c_new || c_prev_ != l.c) return false;
    }
    if (l.writes) {
      const Node* set = skip(outs[static_cast<size_t>(l.list)]).node;
      if (arg(set->inputs()[1]) != l.t || skip(set->inputs()[2]) != h_new) return false;
    }
    const bool gates_ok = l.cell == Cell::kLstm  ? gates(l)
                          : l.cell == Cell::kGru ? gru_gates(l)
                                                 : simple_gates(l);
    if (!gates_ok) return false;
    // Nothing else in the body: placeholders, constants and pass-throughs only.
    for (const auto& ref : b_.nodes()) {
      const Node* n = ref.get();
      const OpId id = n->op().id;
      if (taken_.count(n) || id == OpId::Placeholder || id == OpId::Const || id == OpId::Identity)
        continue;
      return false;
    }
    return true;
  }

 private:
  int arg(Edge e) const {
    e = skip(e);
    auto it = arg_.find(e.node);
    return it == arg_.end() || e.index != 0 ? -1 : it->second;
  }
  void take(const Node* n) { taken_.insert(n); }
  bool op(Edge e, OpId id) const {
    return e.node->op().id == id && e.node->control_inputs().empty();
  }

  // t + 1 of variable `self` (an int32 or int64 scalar).
  bool counter(Edge e, int self) {
    if (!op(e, OpId::Add)) return false;
    int64_t one = 0;
    const Edge a = e.node->inputs()[0], b = e.node->inputs()[1];
    const bool ok = (arg(a) == self && int_scalar(b, one) && one == 1) ||
                    (arg(b) == self && int_scalar(a, one) && one == 1);
    if (ok) take(e.node);
    return ok;
  }

  // Sigmoid of Split output `k` (the same Split for every gate).
  bool gate_sigmoid(Edge e, int k) { return op(e, OpId::Sigmoid) && split_out(e, k); }
  bool gate_tanh(Edge e, int k) { return op(e, OpId::Tanh) && split_out(e, k); }
  bool split_out(Edge act, int k) {
    const Edge s = skip(act.node->inputs()[0]);
    if (s.index != k || !op(s, OpId::Split) || s.node->outputs().size() != 4) return false;
    if (split_ && split_ != s.node) return false;
    split_ = s.node;
    take(act.node);
    return true;
  }

  // h = Mul(Sigmoid(o), Tanh(c_new)), either order: c_new's edge out.
  bool h_of(Edge e, Edge& c_new) {
    if (!op(e, OpId::Mul)) return false;
    for (int s = 0; s < 2; ++s) {
      const Edge o = skip(e.node->inputs()[s]), th = skip(e.node->inputs()[1 - s]);
      if (!op(th, OpId::Tanh) || !gate_sigmoid(o, 3)) continue;
      c_new = skip(th.node->inputs()[0]);
      if (!cell(c_new)) return false;
      take(e.node);
      take(th.node);
      return true;
    }
    return false;
  }

  // c_new = Add(Mul(Sigmoid(f), c), Mul(Sigmoid(i), Tanh(g))), any order.
  bool cell(Edge e) {
    if (!op(e, OpId::Add)) return false;
    for (int s = 0; s < 2; ++s) {
      const Edge fc = skip(e.node->inputs()[s]), ig = skip(e.node->inputs()[1 - s]);
      if (!op(fc, OpId::Mul) || !op(ig, OpId::Mul)) continue;
      int c_arg = -1;
      for (int a = 0; a < 2 && c_arg < 0; ++a)
        if (gate_sigmoid(skip(fc.node->inputs()[a]), 1)) c_arg = arg(fc.node->inputs()[1 - a]);
      if (c_arg < 0) return false;
      bool in = false;
      for (int a = 0; a < 2 && !in; ++a)
        in = gate_sigmoid(skip(ig.node->inputs()[a]), 0) &&
             gate_tanh(skip(ig.node->inputs()[1 - a]), 2);
      if (!in) return false;
      c_prev_ = c_arg;
      take(e.node);
      take(fc.node);
      take(ig.node);
      return true;
    }
    return false;
  }

  // An equal Split of a float32 [rows, G U] value along its last axis into
  // `parts` (the LSTM's four gates, the GRU's three).
  static bool equal_split(const Node* split, size_t parts) {
    if (!split || !split->control_inputs().empty() || split->outputs().size() != parts)
      return false;
    const int64_t axis = std::get<int64_t>(split->attr("axis"));
    const TensorSpec& z = spec_of(split->inputs()[0]);
    if (z.dtype != DType::kFloat32 || !z.shape.rank_known() || z.shape.rank() != 2 ||
        (axis != 1 && axis != -1))
      return false;
    const auto& sizes = std::get<std::vector<int64_t>>(split->attr("size_splits"));
    return std::all_of(sizes.begin(), sizes.end(), [&](int64_t v) { return v == sizes[0]; });
  }

  // GatherV2(x, t) along axis 0: x's capture position out.
  bool gather_x(Edge g, Loop& l) {
    if (!op(g, OpId::Gather) || std::get<int64_t>(g.node->attr("axis")) != 0 ||
        std::get<int64_t>(g.node->attr("batch_dims")) != 0 || arg(g.node->inputs()[1]) != l.t)
      return false;
    l.x = arg(g.node->inputs()[0]);
    take(g.node);
    return l.x >= static_cast<int>(vars_);  // captured, not a loop variable
  }

  // MatMul(h, kernel): h's variable and the kernel (a variable's read, a
  // capture or a constant) out.
  bool product(Edge p, Loop& l) {
    if (!op(p, OpId::MatMul) || std::get<bool>(p.node->attr("adj_x")) ||
        std::get<bool>(p.node->attr("adj_y")))
      return false;
    l.h = arg(p.node->inputs()[0]);
    Edge w = skip(p.node->inputs()[1]);
    if (op(w, OpId::ReadVariable)) {
      l.read = w.node;
      take(w.node);
      w = w.node->inputs()[0];
    }
    l.w = arg(w);
    if (l.w < 0 && !l.read && w.node->op().id == OpId::Const) l.w_value = const_of(w);
    take(p.node);
    const auto is_h = std::find(l.hs.begin(), l.hs.end(), l.h) != l.hs.end();
    const TensorSpec& ws = spec_of(p.node->inputs()[1]);
    return is_h && (l.w >= static_cast<int>(vars_) || l.w_value) && ws.dtype == DType::kFloat32 &&
           ws.shape.rank_known() && ws.shape.rank() == 2;
  }

  // The LSTM's Split of z = Add(GatherV2(x, t), MatMul(h, kernel)).
  bool gates(Loop& l) {
    if (!equal_split(split_, 4)) return false;
    const Edge z = skip(split_->inputs()[0]);
    if (!op(z, OpId::Add)) return false;
    take(split_);
    take(z.node);
    for (int s = 0; s < 2; ++s) {
      const Edge g = skip(z.node->inputs()[s]), p = skip(z.node->inputs()[1 - s]);
      if (op(g, OpId::Gather) && op(p, OpId::MatMul)) return gather_x(g, l) && product(p, l);
    }
    return false;
  }

  // The cell's new h from edge e (its nodes taken); c_new: the LSTM's new c.
  bool new_h(Cell cell, Edge e, Edge& c_new) {
    switch (cell) {
      case Cell::kLstm: return h_of(e, c_new);
      case Cell::kGru: return gru_h_of(e);
      case Cell::kSimple: return simple_h_of(e);
    }
    return false;
  }

  // MatMul(h, kernel), or that plus a loop-invariant [N] bias (l.bias).
  bool recurrent(Edge p, Loop& l) {
    if (op(p, OpId::Add)) {
      const Node* add = p.node;
      p = Edge{};
      for (int s = 0; s < 2 && !p.node; ++s)
        if (const Edge m = skip(add->inputs()[s]); op(m, OpId::MatMul) &&
                                                   row_bias(add->inputs()[1 - s], m) &&
                                                   invariant(add->inputs()[1 - s], l.bias))
          p = m;
      if (!p.node) return false;
      l.has_bias = true;
      take(add);
    }
    return product(p, l);
  }

  // ---- SimpleRNN (tanh) ----

  // h = Tanh(Add(GatherV2(x, t), recurrent)), read by simple_gates.
  bool simple_h_of(Edge e) {
    if (!op(e, OpId::Tanh) || !op(skip(e.node->inputs()[0]), OpId::Add)) return false;
    simple_add_ = skip(e.node->inputs()[0]).node;
    take(e.node);
    take(simple_add_);
    return true;
  }
  bool simple_gates(Loop& l) {
    for (int s = 0; s < 2; ++s) {
      const Edge g = skip(simple_add_->inputs()[s]), p = skip(simple_add_->inputs()[1 - s]);
      if (op(g, OpId::Gather)) return gather_x(g, l) && recurrent(p, l);
    }
    return false;
  }

  // ---- the GRU (Keras' reset_after form) ----

  // Sigmoid(Add(xs:k, rs:k)), either order: gate k of the input projection
  // and of the recurrent product.
  bool gru_gate(Edge e, int k) {
    if (!op(e, OpId::Sigmoid)) return false;
    const Edge a = skip(e.node->inputs()[0]);
    if (!op(a, OpId::Add)) return false;
    for (int s = 0; s < 2; ++s)
      if (gru_split(a.node->inputs()[s], k, xsplit_) &&
          gru_split(a.node->inputs()[1 - s], k, rsplit_)) {
        take(e.node);
        take(a.node);
        return true;
      }
    return false;
  }
  // Output k of a three-way Split, the same one (`slot`) each time: of a
  // GatherV2 for xsplit_, of a MatMul or Add for rsplit_.
  bool gru_split(Edge e, int k, const Node*& slot) {
    e = skip(e);
    if (e.index != k || !op(e, OpId::Split) || e.node->outputs().size() != 3) return false;
    if (slot) return slot == e.node;
    const OpId in = skip(e.node->inputs()[0]).node->op().id;
    if (&slot == &xsplit_ ? in != OpId::Gather : in != OpId::MatMul && in != OpId::Add)
      return false;
    slot = e.node;
    return true;
  }
  static bool is_one(Edge e) {
    const Tensor* t = const_of(e);
    return t && t->dtype() == DType::kFloat32 && t->num_elements() == 1 &&
           *t->data<float>() == 1.0f;
  }

  // h = Add(Mul(z, h_prev), Mul(Sub(1, z), Tanh(Add(xs:2, Mul(r, rs:2))))),
  // z = gate 0, r = gate 1; products and sums in either order.
  bool gru_h_of(Edge e) {
    if (!op(e, OpId::Add)) return false;
    for (int s = 0; s < 2; ++s) {
      const Edge zh = skip(e.node->inputs()[s]), og = skip(e.node->inputs()[1 - s]);
      if (!op(zh, OpId::Mul) || !op(og, OpId::Mul)) continue;
      const Node* z = nullptr;
      for (int a = 0; a < 2 && !z; ++a)
        if (const Edge ze = skip(zh.node->inputs()[a]); gru_gate(ze, 0)) {
          z = ze.node;
          h_prev_ = arg(zh.node->inputs()[1 - a]);
        }
      if (!z) continue;
      for (int a = 0; a < 2; ++a) {
        const Edge one = skip(og.node->inputs()[a]), g = skip(og.node->inputs()[1 - a]);
        if (!op(one, OpId::Sub) || !is_one(skip(one.node->inputs()[0])) ||
            skip(one.node->inputs()[1]).node != z || !gru_candidate(g))
          continue;
        for (const Node* n : {e.node, zh.node, og.node, one.node}) take(n);
        return true;
      }
      return false;
    }
    return false;
  }
  // Tanh(Add(xs:2, Mul(r, rs:2))), either order.
  bool gru_candidate(Edge g) {
    if (!op(g, OpId::Tanh)) return false;
    const Edge a = skip(g.node->inputs()[0]);
    if (!op(a, OpId::Add)) return false;
    for (int s = 0; s < 2; ++s) {
      const Edge rh = skip(a.node->inputs()[1 - s]);
      if (!gru_split(a.node->inputs()[s], 2, xsplit_) || !op(rh, OpId::Mul)) continue;
      for (int m = 0; m < 2; ++m)
        if (gru_gate(skip(rh.node->inputs()[m]), 1) &&
            gru_split(rh.node->inputs()[1 - m], 2, rsplit_)) {
          for (const Node* n : {g.node, a.node, rh.node}) take(n);
          return true;
        }
      return false;
    }
    return false;
  }

  // The GRU's splits: of GatherV2(x, t) and of MatMul(h, kernel), plus a
  // loop-invariant recurrent bias when Add-ed to it.
  bool gru_gates(Loop& l) {
    if (!equal_split(xsplit_, 3) || !equal_split(rsplit_, 3)) return false;
    take(xsplit_);
    take(rsplit_);
    return gather_x(skip(xsplit_->inputs()[0]), l) && recurrent(skip(rsplit_->inputs()[0]), l) &&
           h_prev_ == l.h;
  }
  // `b` is a float32 [N] added to every row of the [B, N] product `m`.
  static bool row_bias(Edge b, Edge m) {
    const TensorSpec &bs = spec_of(b), &ms = spec_of(m);
    return bs.dtype == DType::kFloat32 && bs.shape.rank_known() && bs.shape.rank() == 1 &&
           ms.shape.rank_known() && ms.shape.rank() == 2 && bs.shape.dim(0) >= 0 &&
           bs.shape.dim(0) == ms.shape.dim(1);
  }

  // A loop-invariant value: a capture or constant, through ReadVariableOp and
  // StridedSlice (constant begin, end, strides).
  bool invariant(Edge e, Invariant& v) {
    e = skip(e);
    std::vector<const Node*> chain;
    while (e.node->op().id == OpId::ReadVariable || e.node->op().id == OpId::StridedSlice) {
      // A read may follow other reads (the trace orders a step's reads).
      for (const Node* c : e.node->control_inputs())
        if (e.node->op().id != OpId::ReadVariable || c->op().id != OpId::ReadVariable) return false;
      if (e.index != 0) return false;
      for (size_t i = 1; i < e.node->inputs().size(); ++i)
        if (!const_of(skip(e.node->inputs()[i]))) return false;
      chain.push_back(e.node);
      e = skip(e.node->inputs()[0]);
    }
    v.arg = arg(e);
    if (v.arg < 0 && e.node->op().id == OpId::Const) v.value = const_of(e);
    if (v.arg < static_cast<int>(vars_) && !v.value) return false;
    for (const Node* n : chain) take(n);
    v.chain.assign(chain.rbegin(), chain.rend());
    return true;
  }

  const Graph& b_;
  size_t vars_;
  std::unordered_map<const Node*, int> arg_;
  std::unordered_set<const Node*> taken_;
  const Node* split_ = nullptr;
  const Node *xsplit_ = nullptr, *rsplit_ = nullptr;  // the GRU's
  const Node* simple_add_ = nullptr;                  // SimpleRNN's x[t] + product
  int c_prev_ = -1, h_prev_ = -1;
};

// The cond: Less(t, n) with n captured (its position out) or a constant
// (its value out).
bool cond_matches(const Graph& cond, int t, size_t vars, int& n, const Tensor*& n_value) {
  if (cond.outputs().size() != 1) return false;
  std::unordered_map<const Node*, int> arg;
  for (size_t k = 0; k < cond.inputs().size(); ++k) arg[cond.inputs()[k]] = static_cast<int>(k);
  const Edge less = skip(cond.outputs()[0]);
  if (less.node->op().id != OpId::Less || !less.node->control_inputs().empty()) return false;
  auto pos = [&](Edge e) {
    e = skip(e);
    auto it = arg.find(e.node);
    return it == arg.end() ? -1 : it->second;
  };
  if (pos(less.node->inputs()[0]) != t) return false;
  n = pos(less.node->inputs()[1]);
  int64_t bound = 0;
  if (n < 0 && int_scalar(skip(less.node->inputs()[1]), bound))
    n_value = const_of(skip(less.node->inputs()[1]));
  else if (n < static_cast<int>(vars))
    return false;
  for (const auto& ref : cond.nodes()) {
    const OpId id = ref->op().id;
    if (ref.get() != less.node && id != OpId::Placeholder && id != OpId::Const &&
        id != OpId::Identity)
      return false;
  }
  return true;
}

const detail::TracedSubgraph* traced(const Node* w, const char* attr) {
  const auto* s =
      dynamic_cast<const detail::TracedSubgraph*>(std::get<Ref<Subgraph>>(w->attr(attr)).get());
  return s && s->hoisted().empty() ? s : nullptr;
}

// Two equal constants (not strings).
bool same_tensor(const Tensor* x, const Tensor* y) {
  return x && y && x->dtype() == y->dtype() && x->dtype() != DType::kString &&
         x->shape() == y->shape() && x->nbytes() == y->nbytes() &&
         (x->nbytes() == 0 || std::memcmp(x->raw_data(), y->raw_data(), x->nbytes()) == 0);
}

// Two edges that give the same value: the same edge or equal constants (the
// layer's zero states, one per loop variable).
bool same_value(Edge a, Edge b) {
  return a == b || same_tensor(const_of(a), const_of(b));
}

// Matches every While first (the graph unchanged but for appended nodes, so
// `uses_` stays true), then rewires once.
class RnnFuser {
 public:
  explicit RnnFuser(Graph& g) : g_(g), uses_(g), rw_(g) {}

  void fuse(Node* w, PassResult& r) {
    Loop l;
    Node* stack = nullptr;
    if (!matches(w, l, stack)) return;
    ctl_.assign(w->control_inputs().begin(), w->control_inputs().end());
    Edge kernel =
        l.w >= 0 ? w->inputs()[static_cast<size_t>(l.w)] : constant(*l.w_value, w, "kernel");
    if (l.read) kernel = clone(l.read, {kernel}, w, "kernel");
    const Edge steps = l.n >= 0 ? w->inputs()[static_cast<size_t>(l.n)]
                                : constant(*l.n_value, w, "steps");  // the cond's bound
    const TensorSpec& hs = w->outputs()[static_cast<size_t>(l.h)];
    const TensorSpec seq =
        stack ? stack->outputs()[0]
              : TensorSpec{DType::kFloat32, Shape({-1, hs.shape.dim(0), hs.shape.dim(1)})};
    const Edge x = w->inputs()[static_cast<size_t>(l.x)], h = w->inputs()[static_cast<size_t>(l.h)];
    Node* f = nullptr;
    if (l.cell == Cell::kLstm) {
      f = g_.add_node(op_def(OpId::FusedLSTM),
                      {x, h, w->inputs()[static_cast<size_t>(l.c)], kernel, steps}, Attrs{},
                      {seq, hs, w->outputs()[static_cast<size_t>(l.c)]},
                      str_cat(w->name(), "/fused_lstm"));
      rw_.replace(Edge{w, l.c}, Edge{f, 2});
    } else {
      const Edge bias = l.has_bias
                            ? outer(l.bias, w, "bias")
                            : constant(Tensor::empty(DType::kFloat32, Shape({0})), w, "bias");
      const bool gru = l.cell == Cell::kGru;
      f = g_.add_node(op_def(gru ? OpId::FusedGRU : OpId::FusedSimpleRNN),
                      {x, h, kernel, bias, steps}, Attrs{}, {seq, hs},
                      str_cat(w->name(), gru ? "/fused_gru" : "/fused_simple_rnn"));
    }
    f->set_control_inputs(ctl_);
    for (int k : l.hs) rw_.replace(Edge{w, k}, Edge{f, 1});
    rw_.remove(w, f);
    if (stack) {
      rw_.replace(Edge{stack, 0}, Edge{f, 0});
      rw_.remove(stack, f);
    }
    r.added.push_back({f->name(), str_cat("While '", w->name(), "' -> ", f->op().type_name)});
  }

  void finish(PassResult& r) {
    if (r.added.empty()) return;
    for (Node* n : passes::node_list(g_)) rw_.update_inputs(n);
    rw_.finish(r);
    g_.sort_topologically();
  }

 private:
  Edge constant(const Tensor& value, const Node* w, const std::string& what) {
    return {g_.add_node(op_def(OpId::Const), {}, Attrs{value}, {{value.dtype(), value.shape()}},
                        str_cat(w->name(), "/", what)),
            0};
  }
  // A copy of the body's node `n` before the loop, reading `inputs` (a read
  // of a variable after the loop's control inputs, as the body's was).
  Edge clone(const Node* n, std::vector<Edge> inputs, const Node* w, const std::string& what) {
    Node* c =
        g_.add_node(op_def(n->op().id), std::move(inputs), n->attrs(),
                    {n->outputs().begin(), n->outputs().end()}, str_cat(w->name(), "/", what));
    if (n->op().id == OpId::ReadVariable) c->set_control_inputs(ctl_);
    return {c, 0};
  }
  // The body's invariant `v` computed before the loop.
  Edge outer(const Invariant& v, const Node* w, const std::string& what) {
    Edge e = v.arg >= 0 ? w->inputs()[static_cast<size_t>(v.arg)] : constant(*v.value, w, what);
    int k = 0;
    for (const Node* n : v.chain) {
      std::vector<Edge> in{e};
      for (size_t i = 1; i < n->inputs().size(); ++i)
        in.push_back(constant(*const_of(skip(n->inputs()[i])), w, str_cat(what, "/c", k, "_", i)));
      e = clone(n, std::move(in), w, str_cat(what, "/", k++));
    }
    return e;
  }
  // Input edges reading output k of `n`, plus one if `n` is a graph output
  // (any of its outputs: counted as read).
  int readers(const Node* n, int k) const {
    int count = uses_.output(n) ? 1 : 0;
    const std::vector<Node*>& us = uses_.users(n);
    for (size_t i = 0; i < us.size(); ++i)
      if (i == 0 || us[i] != us[i - 1])  // a node reading n twice is listed twice in a row
        for (const Edge& e : us[i]->inputs()) count += e.node == n && e.index == k;
    return count;
  }
  // The one node reading output k of `n`, if only one does.
  Node* sole_reader(const Node* n, int k) const {
    if (readers(n, k) != 1 || uses_.output(n)) return nullptr;
    for (Node* u : uses_.users(n))
      for (const Edge& e : u->inputs())
        if (e.node == n && e.index == k) return u;
    return nullptr;
  }

  bool matches(Node* w, Loop& l, Node*& stack) const {
    if (w->op().id != OpId::While || std::get<int64_t>(w->attr("maximum_iterations")) >= 0)
      return false;
    const auto* body = traced(w, "body");
    const auto* cond = traced(w, "cond");
    if (!body || !cond) return false;
    const size_t vars = w->outputs().size();
    if (body->traced_graph().inputs().size() != w->inputs().size() ||
        cond->traced_graph().inputs().size() != w->inputs().size())
      return false;
    bool body_ok = false;
    for (Cell cell : {Cell::kLstm, Cell::kGru, Cell::kSimple}) {
      l = Loop{};
      l.cell = cell;
      if ((body_ok = BodyMatcher(body->traced_graph(), vars).match(l))) break;
    }
    if (!body_ok) return false;
    if (!cond_matches(cond->traced_graph(), l.t, vars, l.n, l.n_value)) return false;
    // Shapes: x [T, B, 4U], h and c [B, U], the kernel [U, 4U] (or its handle).
    const TensorSpec& x = spec_of(w->inputs()[static_cast<size_t>(l.x)]);
    const TensorSpec& h = w->outputs()[static_cast<size_t>(l.h)];
    if (x.dtype != DType::kFloat32 || !x.shape.rank_known() || x.shape.rank() != 3 ||
        h.dtype != DType::kFloat32 || !h.shape.rank_known() || h.shape.rank() != 2 ||
        (l.c >= 0 && w->outputs()[static_cast<size_t>(l.c)].dtype != DType::kFloat32))
      return false;
    // Starts at t = 0; the counter's last value is not read.
    int64_t t0 = -1;
    if (!int_scalar(w->inputs()[static_cast<size_t>(l.t)], t0) || t0 != 0) return false;
    if (readers(w, l.t) != 0) return false;
    // Every variable set to h starts from h's value, unless a step surely runs.
    const Edge n_edge = l.n >= 0 ? w->inputs()[static_cast<size_t>(l.n)] : Edge{};
    int64_t n_const = 0;
    const bool runs = int_scalar(l.n >= 0 ? const_of(n_edge) : l.n_value, n_const) && n_const >= 1;
    for (int k : l.hs)
      if (!runs &&
          !same_value(w->inputs()[static_cast<size_t>(k)], w->inputs()[static_cast<size_t>(l.h)]))
        return false;
    // The list: reserved for n elements, read by one TensorListStack (or not
    // at all when the body does not write it).
    const Edge list_in = w->inputs()[static_cast<size_t>(l.list)];
    stack = nullptr;
    if (l.writes) {
      const Node* reserve = list_in.node;
      if (reserve->op().id != OpId::TensorListReserve ||
          std::get<bool>(reserve->attr("dynamic_size")) ||
          !(l.n >= 0 ? same_value(reserve->inputs()[0], n_edge)
                     : same_tensor(const_of(reserve->inputs()[0]), l.n_value)))
        return false;
      stack = sole_reader(w, l.list);
      if (!stack || stack->op().id != OpId::TensorListStack || !stack->control_inputs().empty() ||
          uses_.control_target(stack))
        return false;
    } else if (readers(w, l.list) != 0) {
      return false;
    }
    return true;
  }

  Graph& g_;
  passes::NodeUses uses_;
  passes::Rewirer rw_;
  std::vector<Node*> ctl_;  // the fused While's control inputs
};

}  // namespace

PassResult fuse_rnn(Graph& g) {
  PassResult r;
  r.pass = "fuse_rnn";
  RnnFuser fuser(g);
  for (Node* n : passes::node_list(g))
    if (n->op().id == OpId::While) fuser.fuse(n, r);
  fuser.finish(r);
  return r;
}

}  // namespace kiln
