#include "sink_views.h"

#include <unordered_map>
#include <unordered_set>

#include "kiln/passes.h"
#include "node_rules.h"
#include "passes/pass_util.h"

namespace kiln::jit {
namespace {

using passes::spec_of;

// One sweep over the graph; the caller repeats it while views move.
class Sinker {
 public:
  explicit Sinker(Graph& g) : g_(g), outs_(passes::output_nodes(g)) {
    for (Node* n : passes::node_list(g)) {
      for (const Edge& e : n->inputs()) users_[e.node].push_back(n);
      for (const Node* c : n->control_inputs()) control_targets_.insert(c);
    }
  }

  size_t run() {
    size_t moved = 0;
    for (Node* v : passes::node_list(g_)) {
      if (done_.count(v) || !movable_view(v)) continue;
      Node* p = v->inputs()[0].node;
      if (done_.count(p) || !movable_op(p, v)) continue;
      std::vector<size_t> read = outputs_read(v);
      if (read.empty() || !operands_fit(p, v, read)) continue;
      move(v, p, read);
      done_.insert(v);
      done_.insert(p);
      ++moved;
    }
    return moved;
  }

 private:
  const std::vector<Node*>& users(const Node* n) const {
    static const std::vector<Node*> none;
    auto it = users_.find(n);
    return it == users_.end() ? none : it->second;
  }

  bool plain(const Node* n) const {
    return !outs_.count(n) && n->control_inputs().empty() && !control_targets_.count(n);
  }

  bool movable_view(const Node* v) const {
    return reads_in_place(v) && plain(v) && !v->inputs().empty() && v->inputs()[0].index == 0;
  }

  // Elementwise with a lowering, one output, read by `v` alone (as its input 0).
  bool movable_op(const Node* p, const Node* v) const {
    const OpDef& op = p->op();
    if (!op.jit || !op.has(kElementwise) || op.has(kStateful) || p->outputs().size() != 1 ||
        !plain(p) || !supported_dtype(p->outputs()[0].dtype))
      return false;
    for (const Node* u : users(p))
      if (u != v) return false;
    for (size_t i = 1; i < v->inputs().size(); ++i)
      if (v->inputs()[i].node == p) return false;
    std::vector<Instr> body;
    std::vector<int32_t> in, results;
    for (const Edge& e : p->inputs()) {
      if (!supported_dtype(spec_of(e).dtype)) return false;
      in.push_back(static_cast<int32_t>(body.size()));
      Instr load;
      load.dtype = spec_of(e).dtype;
      load.a = in.back();
      body.push_back(load);
    }
    int reduced = 0;
    return lower_node(p, in, body, results, &reduced) && reduced == 0;
  }

  std::vector<size_t> outputs_read(const Node* v) const {
    std::vector<bool> read(v->outputs().size());
    for (const Node* u : users(v))
      for (const Edge& e : u->inputs())
        if (e.node == v) read[static_cast<size_t>(e.index)] = true;
    std::vector<size_t> r;
    for (size_t i = 0; i < read.size(); ++i)
      if (read[i]) r.push_back(i);
    return r;
  }

  // Each operand of `p` is of p's shape (its dims of unknown size read whole
  // by every view) or a single value of no higher rank than the views; each
  // view read must read well in place.
  bool operands_fit(const Node* p, const Node* v, const std::vector<size_t>& read) const {
    const Shape& shape = p->outputs()[0].shape;
    if (!shape.rank_known() || shape.rank() > 16) return false;
    std::vector<View> views;
    for (size_t i : read) {
      View w;
      if (!view_of(v, i, w) || w.start.size() != static_cast<size_t>(shape.rank()) ||
          !reads_well(w, shape))
        return false;
      views.push_back(std::move(w));
    }
    for (const Edge& e : p->inputs()) {
      const Shape& s = spec_of(e).shape;
      if (!s.rank_known()) return false;
      if (s == shape) {
        for (const View& w : views)
          if (!unknown_dims_whole(w, s)) return false;
        continue;
      }
      if (!s.is_fully_defined() || s.num_elements() != 1) return false;
      for (size_t i : read)
        if (s.rank() > v->outputs()[i].shape.rank()) return false;
    }
    return true;
  }

  // A dim of unknown size may broadcast at run time (1 where `p`'s is not):
  // the view must then read it whole, from 0 in steps of 1.
  static bool unknown_dims_whole(const View& w, const Shape& s) {
    for (int d = 0; d < s.rank(); ++d) {
      if (s.dim(d) >= 0) continue;
      if (w.start[static_cast<size_t>(d)] != 0) return false;
      for (const ViewDim& x : w.dims)
        if (x.src == d && (x.size >= 0 || x.step != 1)) return false;
    }
    return true;
  }

  void move(Node* v, Node* p, const std::vector<size_t>& read) {
    // The view of each operand of p's shape; single values as they are.
    std::vector<Node*> views;
    for (const Edge& e : p->inputs()) {
      if (!(spec_of(e).shape == p->outputs()[0].shape)) {
        views.push_back(nullptr);
        continue;
      }
      std::vector<Edge> in(v->inputs().begin(), v->inputs().end());
      in[0] = e;
      std::vector<TensorSpec> outs(v->outputs().begin(), v->outputs().end());
      for (TensorSpec& o : outs) o.dtype = spec_of(e).dtype;
      Node* w = g_.add_node(v->op(), std::move(in), v->attrs(), std::move(outs), v->name());
      w->set_location(v->location());
      views.push_back(w);
    }
    for (size_t i : read) {
      std::vector<Edge> in;
      for (size_t j = 0; j < views.size(); ++j)
        in.push_back(views[j] ? Edge{views[j], static_cast<int32_t>(i)} : p->inputs()[j]);
      Node* q = g_.add_node(p->op(), std::move(in), p->attrs(),
                            {{p->outputs()[0].dtype, v->outputs()[i].shape}}, p->name());
      q->set_location(p->location());
      const Edge from{v, static_cast<int32_t>(i)};
      for (Node* u : users(v))
        for (size_t k = 0; k < u->inputs().size(); ++k)
          if (u->inputs()[k] == from) u->set_input(k, Edge{q, 0});
    }
  }

  Graph& g_;
  std::unordered_set<const Node*> outs_;
  std::unordered_map<const Node*, std::vector<Node*>> users_;
  std::unordered_set<const Node*> control_targets_;
  std::unordered_set<const Node*> done_;
};

}  // namespace

size_t sink_views(Graph& g) {
  size_t moved = 0;
  for (int sweep = 0; sweep < 64; ++sweep) {
    const size_t n = Sinker(g).run();
    if (n == 0) break;
    moved += n;
    g.sort_topologically();
    prune(g);
  }
  return moved;
}

}  // namespace kiln::jit
