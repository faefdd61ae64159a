#include "sink_views.h"

#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "graph/uses.h"
#include "jit/fusion/node_rules.h"
#include "jit/ir/program.h"
#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln::jit {
namespace {

using passes::spec_of;

// How an operand of the op a view moves over is read afterwards.
struct Operand {
  enum Kind { kClone, kAsIs, kViewed } kind = kClone;
  std::vector<View> views;  ///< kViewed: per view read, the operand's view
};

// The op a moved copy of `p` runs: p's own, or for a row whose epilogue is a
// bias add (BiasAdd: value + bias over the last dim, lowered as an Add) the
// broadcasting Add, since its bias is then a view of another rank.
const OpDef& moved_op(const Node* p) {
  return p->op().epilogue == Epilogue::kBiasAdd ? op_def(OpId::Add) : p->op();
}

// One sweep over the graph; the caller repeats it while views move.
class Sinker {
 public:
  explicit Sinker(Graph& g) : g_(g), outs_(passes::output_nodes(g)), uses_(g) {}

  size_t run() {
    size_t moved = 0;
    for (Node* v : passes::node_list(g_)) {
      if (done_.count(v) || !movable_view(v)) continue;
      Node* p = v->inputs()[0].node;
      if (done_.count(p) || !movable_op(p, v)) continue;
      std::vector<size_t> read = outputs_read(v);
      std::vector<Operand> how;
      if (read.empty() || !plan(p, v, read, how)) continue;
      move(v, p, read, how);
      done_.insert(v);
      done_.insert(p);
      ++moved;
    }
    return moved;
  }

 private:
  std::span<Node* const> users(const Node* n) const { return uses_.readers(n); }

  bool plain(const Node* n) const {
    return !outs_.count(n) && n->control_inputs().empty() && uses_.control_readers(n).empty();
  }

  bool movable_view(const Node* v) const {
    return reads_in_place(v) && plain(v) && !v->inputs().empty() && v->inputs()[0].index == 0;
  }

  // Elementwise with a lowering, one output, read by `v` alone (as its input 0).
  bool movable_op(const Node* p, const Node* v) const {
    const OpDef& op = p->op();
    if (!op.jit_lower || !(op.has(kElementwise) || op.epilogue == Epilogue::kBiasAdd) ||
        op.has(kStateful) || p->outputs().size() != 1 || !plain(p) ||
        !supported_dtype(p->outputs()[0].dtype))
      return false;
    for (const Node* u : users(p))
      if (u != v) return false;
    for (size_t i = 1; i < v->inputs().size(); ++i)
      if (v->inputs()[i].node == p) return false;
    for (const Edge& e : p->inputs())
      if (!supported_dtype(spec_of(e).dtype)) return false;
    std::vector<Instr> body;
    std::vector<int32_t> results;
    int reduced = 0;
    return trial_lower(p, body, results, reduced) && reduced == 0;
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

  // How each operand of `p` is read once the view moves: p's shape gets a
  // copy of the view node (its dims of unknown size read whole by every
  // view), a single value of no higher rank than the views is read as it is,
  // and an operand that broadcasts to p's shape (a bias) gets a JitView node
  // per view read. Each view must read well in place.
  bool plan(const Node* p, const Node* v, const std::vector<size_t>& read,
            std::vector<Operand>& how) const {
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
      Operand o;
      if (s == shape) {
        // (operand_view only checks the unknown dims here: nothing broadcasts.)
        View unused;
        for (const View& w : views)
          if (!operand_view(w, shape, s, unused)) return false;
        how.push_back(std::move(o));  // kClone
        continue;
      }
      bool as_is = s.is_fully_defined() && s.num_elements() == 1;
      for (size_t i : read) as_is &= s.rank() <= v->outputs()[i].shape.rank();
      if (as_is) {
        o.kind = Operand::kAsIs;
        how.push_back(std::move(o));
        continue;
      }
      o.kind = Operand::kViewed;
      for (const View& w : views)
        if (!operand_view(w, shape, s, o.views.emplace_back()) || !reads_well(o.views.back(), s))
          return false;
      how.push_back(std::move(o));
    }
    return true;
  }

  // View `w` of p's value (shape `ps`) as an operand of shape `bs` that
  // broadcasts to it reads it: the dims `bs` lacks, or has as 1 where `ps`
  // has more, become new dims of one value. A dim of unknown size may
  // broadcast at run time: `w` must then read it whole, from 0 in steps of 1.
  static bool operand_view(const View& w, const Shape& ps, const Shape& bs, View& out) {
    const int rank = ps.rank(), off = rank - bs.rank();
    if (off < 0) return false;
    auto broadcast = [&](int64_t d) {
      return d < off ||
             (bs.dim(static_cast<int>(d) - off) == 1 && ps.dim(static_cast<int>(d)) != 1);
    };
    for (int d = off; d < rank; ++d) {
      const int64_t b = bs.dim(d - off), n = ps.dim(d);
      if (b >= 0) {
        if (b != 1 && n >= 0 && b != n) return false;
        continue;
      }
      if (w.start[static_cast<size_t>(d)] != 0) return false;
      for (const ViewDim& x : w.dims)
        if (x.src == d && (x.size != -1 || x.step != 1)) return false;
    }
    out.start.assign(static_cast<size_t>(bs.rank()), 0);
    for (int d = off; d < rank; ++d)
      if (!broadcast(d)) out.start[static_cast<size_t>(d - off)] = w.start[static_cast<size_t>(d)];
    out.dims.clear();
    for (const ViewDim& x : w.dims)
      out.dims.push_back(x.src < 0 || broadcast(x.src) ? ViewDim{-1, 1, 1}
                                                       : ViewDim{x.src - off, x.step, x.size});
    return true;
  }

  // A JitView node reading `e` through `w`.
  Node* view_node(const Edge& e, const View& w, const Node* v) {
    const Shape& s = spec_of(e).shape;
    std::vector<int64_t> dims;
    for (const ViewDim& x : w.dims)
      dims.push_back(x.src < 0 ? 1 : x.size >= 0 ? x.size : s.dim(static_cast<int>(x.src)));
    Node* n =
        g_.add_node(op_def(OpId::JitView), {e}, Attrs{AttrObjectRef(std::make_shared<ViewAttr>(w))},
                    {{spec_of(e).dtype, Shape(dims)}}, str_cat(v->name(), "/operand"));
    n->set_location(v->location());
    return n;
  }

  void move(Node* v, Node* p, const std::vector<size_t>& read, const std::vector<Operand>& how) {
    // A copy of the view for each operand of p's shape.
    std::vector<Node*> views;
    for (size_t j = 0; j < how.size(); ++j) {
      const Edge& e = p->inputs()[j];
      if (how[j].kind != Operand::kClone) {
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
    for (size_t r = 0; r < read.size(); ++r) {
      const size_t i = read[r];
      std::vector<Edge> in;
      for (size_t j = 0; j < how.size(); ++j) {
        const Edge& e = p->inputs()[j];
        if (how[j].kind == Operand::kClone)
          in.push_back(Edge{views[j], static_cast<int32_t>(i)});
        else if (how[j].kind == Operand::kAsIs)
          in.push_back(e);
        else
          in.push_back(Edge{view_node(e, how[j].views[r], v), 0});
      }
      const OpDef& op = moved_op(p);
      Node* q = g_.add_node(op, std::move(in), &op == &p->op() ? p->attrs() : Attrs{},
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
  Uses uses_;  // a snapshot from the sweep's start
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
