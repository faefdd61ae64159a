#include "cluster_plan.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "graph/uses.h"
#include "jit/codegen/stages.h"
#include "jit/fusion/fold.h"
#include "jit/fusion/node_rules.h"
#include "jit/fusion/siblings.h"
#include "passes/pass_util.h"

namespace kiln::jit {
namespace {

using passes::spec_of;

// Point work (stages.h) times points a row kernel over short rows may take
// in beside its root; kShortRowWork (cheap ops) it may always take.
constexpr int64_t kShortRowBudget = 16384, kShortRowWork = 16, kGuessedDim = 64;

// Whether `s` (right-aligned to the space) has all of the space's reduced
// dims or none of them (1s), so a row kernel can walk it.
bool fits(const Shape& s, const Space& sp) {
  if (sp.reduced == 0) return true;
  if (!s.rank_known() || s.rank() > sp.shape.rank()) return false;
  bool all = true, none = true;
  for (int d = sp.shape.rank() - sp.reduced; d < sp.shape.rank(); ++d) {
    const int j = d - (sp.shape.rank() - s.rank());
    const int64_t x = j < 0 ? 1 : s.dim(j);
    all &= x == sp.shape.dim(d);
    none &= x == 1;
  }
  return all || none;
}

// Whether `s` is constant over the reduced dims (a per-row value).
bool per_row(const Shape& s, const Space& sp) {
  for (int d = sp.shape.rank() - sp.reduced; d < sp.shape.rank(); ++d) {
    const int j = d - (sp.shape.rank() - s.rank());
    if (j >= 0 && s.dim(j) != 1) return false;
  }
  return true;
}

// The space with its reduced dims set to 1 (a keepdims reduction's shape).
Shape row_shape(const Space& sp) {
  std::vector<int64_t> d;
  for (int i = 0; i < sp.shape.rank(); ++i)
    d.push_back(i >= sp.shape.rank() - sp.reduced ? 1 : sp.shape.dim(i));
  return Shape(d);
}

bool node_fits(const Node* n, const Space& sp) {
  for (const Edge& e : n->inputs())
    if (!fits(spec_of(e).shape, sp)) return false;
  return fits(n->outputs()[0].shape, sp);
}

class Former {
 public:
  explicit Former(Graph& g)
      : g_(g), nodes_(passes::node_list(g)), outs_(passes::output_nodes(g)), uses_(g) {
    for (size_t i = 0; i < nodes_.size(); ++i) order_[nodes_[i]] = i;
  }

  // Clusters as member lists in graph order, latest roots first.
  std::vector<std::vector<Node*>> run(size_t min_ops) {
    std::vector<std::vector<Node*>> clusters;
    spaces.clear();
    products.clear();
    clusters_ = &clusters;
    // A pass-through (Identity) of a value other ops read too (a returned
    // intermediate) roots no cluster before those ops do: the value then
    // joins their cluster as an extra output instead of ending it.
    auto deferred = [&](const Node* n) {
      return n->op().jit_lower == lower_identity && n->inputs().size() == 1 &&
             uses_.readers(n->inputs()[0].node).size() > 1;
    };
    std::vector<Node*> roots;
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it)
      if (!deferred(*it)) roots.push_back(*it);
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it)
      if (deferred(*it)) roots.push_back(*it);
    for (Node* root : roots) {
      if (cluster_of_.count(root) || !lowerable(root)) continue;
      Space start;
      start.shape = root->outputs()[0].shape;
      if (const int k = reduces_.at(root); k > 0) {
        start.shape = spec_of(root->inputs()[0]).shape;
        start.reduced = k;
        if (!worth_rows(start)) continue;
      }
      // Per-row values may join before a reduction does; when none does, they
      // would be recomputed at every point, so the cluster grows again
      // without them.
      Space space = start;
      bool tentative = false;
      std::vector<Node*> members = grow(root, space, true, tentative);
      if (tentative && space.reduced == 0) {
        space = start;
        members = grow(root, space, false, tentative);
      }
      // Pass-throughs (Identity) cost nothing: a lone op stays a kernel call.
      size_t work = 0;
      for (const Node* m : members)
        work += m->op().jit_lower && m->op().jit_lower != lower_identity;
      Node* product = work > 0 ? product_for(members, space) : nullptr;
      // A reduction of the root's value that will fold into the kernel
      // (fold.h) counts as an op, as a product does.
      Fold fold;
      const bool folds = work > 0 && space.reduced == 0 &&
                         std::any_of(uses_.readers(root).begin(), uses_.readers(root).end(),
                                     [&](const Node* u) { return fold_of(u, fold); });
      // A lone op that reduces rows and then writes every point (softmax,
      // log-softmax) runs in several passes: compiled, its rows pipeline, and
      // it beats its hand kernel (BENCHMARKS.md), so it counts as two.
      if (work == 1 && row_op_.count(root)) work = 2;
      work += static_cast<size_t>(space.copies);
      if (work + (product != nullptr) + folds < min_ops) continue;
      for (Node* m : members) cluster_of_[m] = clusters.size();
      std::sort(members.begin(), members.end(),
                [&](Node* a, Node* b) { return order_[a] < order_[b]; });
      clusters.push_back(std::move(members));
      spaces.push_back(space);
      products.push_back(product);
    }
    clusters_ = nullptr;
    return merged(clusters, min_ops);
  }

  // Sibling fusion (siblings.h) over the clusters and the lone ops.
  std::vector<std::vector<Node*>> merged(const std::vector<std::vector<Node*>>& clusters,
                                         size_t min_ops) {
    std::vector<Sibling> groups;
    for (size_t i = 0; i < clusters.size(); ++i) {
      const Space& s = spaces[i];
      const std::unordered_set<const Node*> members(clusters[i].begin(), clusters[i].end());
      size_t outs = 0;
      bool points = false;
      for (const Node* m : clusters[i])
        if (used_outside(m, members)) {
          ++outs;
          points |= s.reduced > 0 && m->outputs()[0].shape == s.shape;  // not per row
        }
      groups.push_back(Sibling{clusters[i], s.shape, !s.relabelled && products[i] == nullptr,
                               fold_key(clusters[i]), std::max<size_t>(outs, 1), s.reduced,
                               points});
    }
    for (Node* n : nodes_) {
      if (cluster_of_.count(n) || !lone_op(n)) continue;
      // A lone reduction's space is its input's, over the rows it reduces.
      const int k = reduces_.at(n);
      const Shape& shape = k > 0 ? spec_of(n->inputs()[0]).shape : n->outputs()[0].shape;
      groups.push_back(Sibling{{n}, shape, true, fold_key({n}), 1, k});
    }
    std::vector<std::vector<Node*>> out;
    std::vector<Space> out_spaces;
    std::vector<Node*> out_products;
    for (const std::vector<size_t>& part : merge_siblings(nodes_, groups)) {
      const size_t first = part[0];
      if (first >= clusters.size() && part.size() < std::max<size_t>(min_ops, 2)) continue;
      Space sp;
      sp.shape = groups[first].shape;
      sp.reduced = groups[first].reduced;
      if (first < clusters.size()) sp = spaces[first];
      std::vector<Node*> members;
      for (size_t i : part) {
        members.insert(members.end(), groups[i].members.begin(), groups[i].members.end());
        if (i == first || i >= clusters.size()) continue;
        sp.mapped |= spaces[i].mapped;
        sp.copies += spaces[i].copies;
        sp.view_rows = std::min(sp.view_rows, spaces[i].view_rows);
      }
      std::sort(members.begin(), members.end(),
                [&](Node* a, Node* b) { return order_[a] < order_[b]; });
      out.push_back(std::move(members));
      out_spaces.push_back(sp);
      out_products.push_back(part.size() == 1 && first < clusters.size() ? products[first]
                                                                         : nullptr);
    }
    spaces = std::move(out_spaces);
    products = std::move(out_products);
    return out;
  }

  // A lowerable op on its own that computes (not a view, a relabelling or a
  // pass-through); a reduction whose rows a row kernel would split.
  bool lone_op(const Node* n) {
    if (!lowerable(n) || n->op().jit_lower == lower_identity || reads_in_place(n) ||
        is_relabel(n) || !n->outputs()[0].shape.rank_known())
      return false;
    const int k = reduces_.at(n);
    return k == 0 || worth_rows(Space{spec_of(n->inputs()[0]).shape, k});
  }

  // The fold the reductions of `members`' values ask for (Sibling::fold).
  int64_t fold_key(const std::vector<Node*>& members) {
    int64_t key = 0;
    for (const Node* m : members)
      for (const Node* u : uses_.readers(m)) {
        Fold f;
        if (!fold_of(u, f)) continue;
        const int64_t k = 1 + f.dims * 32 + f.outer;
        if (key != 0 && key != k) return -1;
        key = k;
      }
    return key;
  }

  // A product (OpDef::jit_product) the cluster can compute itself: only
  // members read it, each as it is (then it has the space's shape) or through
  // views of column runs of its rows (an LSTM's gates: reads_columns) whose
  // values members read; its rows are the kernel's rows (at most the last
  // dim reduced).
  Node* product_for(const std::vector<Node*>& members, const Space& space) {
    if (space.reduced > 1) return nullptr;
    const std::unordered_set<const Node*> set(members.begin(), members.end());
    for (const Node* m : members)
      for (const Edge& e : m->inputs()) {
        Node* p = e.node;
        Product how;
        if (set.count(p) || outs_.count(p) || !uses_.control_readers(p).empty() ||
            !p->control_inputs().empty() || !product_of(p, how))
          continue;
        bool ok = true;
        for (const Node* u : uses_.readers(p))
          ok &= set.count(u) && !is_relabel(u) &&
                (reads_in_place(u) ? reads_columns_of(u, p, set)
                                   : p->outputs()[0].shape == space.shape);
        if (ok) return p;
      }
    return nullptr;
  }

  // Whether every output of view row `u` reads column runs of whole rows of
  // product `p` (reads_columns), read as it is by members only.
  bool reads_columns_of(const Node* u, const Node* p, const std::unordered_set<const Node*>& set) {
    const Shape& ps = p->outputs()[0].shape;
    if (!ps.rank_known() || ps.rank() < 1 || u->inputs()[0].node != p) return false;
    const std::vector<int64_t> dims(ps.dims().begin(), ps.dims().end());
    for (const Node* w : uses_.readers(u))
      if (!set.count(w) || reads_in_place(w) || is_relabel(w)) return false;
    for (size_t i = 0; i < u->outputs().size(); ++i) {
      View v;
      if (!view_of(u, i, v) || !reads_columns(v, dims)) return false;
    }
    return true;
  }

  bool lowerable(const Node* n) {
    auto it = lowerable_.find(n);
    if (it != lowerable_.end()) return it->second;
    return lowerable_[n] = check(n);
  }

 private:
  bool check(const Node* n) {
    const OpDef& op = n->op();
    if (!op.jit_lower || op.has(kStateful) || n->outputs().size() != 1 ||
        !n->control_inputs().empty() || !uses_.control_readers(n).empty())
      return false;
    const TensorSpec& out = n->outputs()[0];
    if (!supported_dtype(out.dtype) || !out.shape.rank_known()) return false;
    int64_t rank = out.shape.rank();
    for (const Edge& e : n->inputs()) {
      const TensorSpec& s = spec_of(e);
      if (!supported_dtype(s.dtype) || !s.shape.rank_known()) return false;
      rank = std::max(rank, s.shape.rank());
    }
    std::vector<Instr> body;
    std::vector<int32_t> results;
    int k = 0;
    if (!trial_lower(n, body, results, k)) return false;
    reduces_[n] = k;
    cost_[n] = body_cost(body);
    if (k > 0 && !results.empty() && body[static_cast<size_t>(results[0])].kind != Instr::kReduce)
      row_op_.insert(n);
    // The node's space: its output's, or for a reduction its input's.
    // Generated code keeps a fixed index array of 16 dims.
    const int64_t space = k > 0 ? spec_of(n->inputs()[0]).shape.rank() : out.shape.rank();
    return rank <= space && space <= 16;
  }

  // A row kernel runs rows in parallel: a reduction to a few values over
  // many elements stays the (block-parallel) reduce kernel.
  static bool worth_rows(const Space& sp) {
    int64_t rows = 1, n = 1;
    for (int d = 0; d < sp.shape.rank(); ++d) {
      const int64_t x = sp.shape.dim(d);
      if (d >= sp.shape.rank() - sp.reduced)
        n *= x;
      else if (x < 0)
        return true;
      else
        rows *= x;
    }
    return rows >= 2 || n <= (1 << 16);
  }

  // The point work a row kernel over rows shorter than a vector may take in
  // beside its root (none: no limit). Such a kernel runs one row at a time
  // without vector code, where graph mode's elementwise ops vectorize across
  // rows: 20 tanh and a softmax over [1000, 3] took 1030 us as one row
  // kernel, 200 us in graph mode. So its extra work times its points stays
  // under kShortRowBudget (a few microseconds of scalar work, what a kernel
  // call of its own would cost): a train step's classifier, [32, 10] with
  // an exp beside its softmax, stays one kernel. Unknown dims count as
  // kGuessedDim values.
  static std::optional<int64_t> short_row_work(const Space& sp) {
    if (sp.reduced == 0) return std::nullopt;
    int64_t n = 1, points = 1;
    for (int d = 0; d < sp.shape.rank(); ++d) {
      const int64_t x = sp.shape.dim(d);
      const bool row = d >= sp.shape.rank() - sp.reduced;
      if (row && x < 0) return std::nullopt;  // N known at run time
      if (row) n *= x;
      points *= x < 0 ? kGuessedDim : x;
    }
    if (n >= kVectorPoints) return std::nullopt;
    return kShortRowBudget / std::max<int64_t>(points, 1);
  }

  // Whether reducing `p` can join a cluster in `sp` (and set its reduced dims).
  bool reduction_joins(Node* p, int k, const Space& sp, const std::vector<Node*>& list) {
    if (sp.relabelled || k > sp.view_rows || (sp.reduced != 0 && sp.reduced != k) ||
        !(spec_of(p->inputs()[0]).shape == sp.shape) ||
        p->outputs()[0].shape.rank() != sp.shape.rank())
      return false;
    Space next = sp;
    next.reduced = k;
    if (!worth_rows(next) || !node_fits(p, next)) return false;
    for (const Node* m : list)
      if (!node_fits(m, next)) return false;
    return true;
  }

  // Whether elementwise `p`, of another shape than the space, can join;
  // `tentative` is set when it joins as a per-row value before any reduction.
  bool other_shape_joins(Node* p, const Space& sp, const std::unordered_set<const Node*>& members,
                         bool tentative_ok, bool& tentative) {
    const Shape& s = p->outputs()[0].shape;
    const bool inside = !outs_.count(p) && only_members(p, members);
    if (sp.reduced > 0 && per_row(s, sp))  // computed once per row
      return inside || s == row_shape(sp);
    // A value of another shape joins when only members read it and it is at
    // least a quarter of the cluster's size: it is then evaluated at each
    // point of the cluster's space (its broadcast). Smaller values (a batch
    // norm's per-channel scale) get their own kernel instead of being
    // recomputed per element.
    if (inside && recompute_ok(s, sp.shape)) return true;
    if (inside && tentative_ok && sp.reduced == 0 && !sp.relabelled &&
        per_row(s, Space{sp.shape, 1, false}) && sp.shape.rank() > 0 &&
        sp.shape.dim(sp.shape.rank() - 1) != 1) {
      tentative = true;
      return true;
    }
    return false;
  }

  std::vector<Node*> grow(Node* root, Space& sp, bool tentative_ok, bool& tentative) {
    Shape& shape = sp.shape;
    std::unordered_set<const Node*> members{root}, mapped_src;
    std::vector<Node*> list{root};
    int64_t point_work = 0;  // elementwise members' work but the root's (short_row_work)
    auto later = [&](Node* a, Node* b) { return order_[a] < order_[b]; };
    std::priority_queue<Node*, std::vector<Node*>, decltype(later)> work(later);
    for (const Edge& e : root->inputs()) work.push(e.node);
    while (!work.empty()) {
      Node* p = work.top();
      work.pop();
      if (members.count(p) || cluster_of_.count(p)) continue;
      if (sp.reduced == 0 && !sp.mapped && relabels(p, members, shape)) {
        // The cluster now iterates in the reshape's input shape: the same
        // points in the same (row-major) order, relabelled.
        shape = spec_of(p->inputs()[0]).shape;
        sp.relabelled = true;
        members.insert(p);
        list.push_back(p);
        work.push(p->inputs()[0].node);
        continue;
      }
      if (mapped_src.count(p)) continue;  // a read in place needs its value as a tensor
      std::vector<Node*> chain;           // view rows p reads through
      if (!sp.relabelled && views_outside_value(p, members, sp, chain)) {
        // Its source stays outside: the kernel reads it through the view.
        sp.mapped = true;
        for (Node* q : chain) {
          members.insert(q);
          list.push_back(q);
        }
        mapped_src.insert(chain.empty() ? p->inputs()[0].node : chain.back()->inputs()[0].node);
        members.insert(p);
        list.push_back(p);
        continue;
      }
      if (!lowerable(p)) continue;
      const int k = reduces_.at(p);
      if (k > 0 ? !reduction_joins(p, k, sp, list)
                : (!(p->outputs()[0].shape == shape) &&
                   !other_shape_joins(p, sp, members, tentative_ok, tentative)) ||
                      !node_fits(p, sp))
        continue;
      Space next = sp;
      if (k > 0) next.reduced = k;
      // (Reductions and softmaxes are the row kernel's own work.)
      const int64_t extra = k > 0 ? 0 : cost_.at(p);
      const std::optional<int64_t> room = short_row_work(next);
      if (room && point_work + extra > std::max(*room, kShortRowWork)) continue;
      bool ok = true;
      for (Node* x : uses_.readers(p))
        if (!members.count(x) && reaches(x, members)) ok = false;
      if (!ok) continue;
      point_work += extra;
      if (k > 0) sp.reduced = k;
      members.insert(p);
      list.push_back(p);
      for (const Edge& e : p->inputs()) work.push(e.node);
    }
    return list;
  }

  // Whether reshape-like `p` (Reshape, ExpandDims, Squeeze) can join: its
  // output is the cluster's space, only members read it, its input has the
  // same element count, and every member so far reads only members, single
  // values and values of the space's full size (read at the same flat index:
  // the kernel reads them reshaped to its space, a free view).
  bool relabels(Node* p, const std::unordered_set<const Node*>& members, const Shape& shape) {
    if (!is_relabel(p)) return false;
    if (outs_.count(p) || !p->control_inputs().empty() || !uses_.control_readers(p).empty() ||
        !only_members(p, members))
      return false;
    const Shape& in = spec_of(p->inputs()[0]).shape;
    if (!(p->outputs()[0].shape == shape) || !shape.is_fully_defined() || !in.is_fully_defined() ||
        in.rank() > 16 || in.num_elements() != shape.num_elements() ||
        !supported_dtype(spec_of(p->inputs()[0]).dtype))
      return false;
    for (const Node* m : members)
      for (size_t i = 0; i < m->inputs().size(); ++i) {
        const Edge& e = m->inputs()[i];
        if (members.count(e.node) || e.node == p) continue;
        if (is_relabel(m) && i > 0) continue;  // a shape operand
        const Shape& s = spec_of(e).shape;
        if (!s.is_fully_defined() ||
            (s.num_elements() != 1 && s.num_elements() != shape.num_elements()))
          return false;
      }
    return true;
  }

  // Whether `p` (a view row: Transpose, a slice, Split) can join as strided
  // reads of its source: only members read it, the cluster does not compute
  // the source (a member's value would be needed at other points), and each
  // output read walks the source's last dim innermost in steps of 1, so rows
  // stay contiguous. Outside row spaces a transpose of the inner two dims
  // (read in tiles) and views whose rows move forward through the source
  // join too (`strided_ok`). In a row space
  // each view also reads the reduced dims as one run of values (sets
  // sp.view_rows; 0 after a tiled read, so no reduction joins later). View
  // rows that only `p` reads (a transpose before a slice) are read through:
  // they join too (`chain`), and the source is their input.
  bool views_outside_value(Node* p, const std::unordered_set<const Node*>& members, Space& sp,
                           std::vector<Node*>& chain) {
    if (!reads_in_place(p) || !only_members(p, members) || p->inputs().empty() || !plain_view(p))
      return false;
    std::vector<bool> read(p->outputs().size());
    for (Node* u : uses_.readers(p))
      for (const Edge& e : u->inputs())
        if (e.node == p) read[static_cast<size_t>(e.index)] = true;
    int run = sp.view_rows, copies = 0;
    Edge src{};
    for (size_t i = 0; i < read.size(); ++i) {
      if (!read[i]) continue;
      View v;
      const Shape& out = p->outputs()[i].shape;
      const Node* last = p;
      auto through = [&](const Node* q) {
        const bool ok =
            plain_view(q) && uses_.readers(q).size() == 1 && uses_.readers(q)[0] == last;
        if (ok) last = q;
        return ok;
      };
      if (!chained_view(p, i, v, src, through) || !out.rank_known() ||
          out.rank() > sp.shape.rank() || static_cast<size_t>(out.rank()) != v.dims.size() ||
          !fits(out, sp))
        return false;
      const TensorSpec& in = spec_of(src);
      if (members.count(src.node) || !in.shape.rank_known() || in.shape.rank() > 16 ||
          !supported_dtype(in.dtype) || static_cast<size_t>(in.shape.rank()) != v.start.size())
        return false;
      const int tail = contiguous_tail(v, in.shape.rank());
      if (tail == 0 && (sp.reduced > 0 || !strided_ok(v, in.shape))) return false;
      run = std::min(run, tail);
      copies += !one_run(v, in.shape.rank());
      chain.clear();
      for (Node* q = p->inputs()[0].node; q != src.node; q = q->inputs()[0].node)
        chain.push_back(q);
    }
    if (run < sp.reduced) return false;
    sp.view_rows = run;
    sp.copies += copies;
    return true;
  }

  // A view row that is no graph output and has no control edges.
  bool plain_view(const Node* q) {
    return reads_in_place(q) && !outs_.count(q) && q->control_inputs().empty() &&
           uses_.control_readers(q).empty() && !q->inputs().empty();
  }

  static bool recompute_ok(const Shape& small, const Shape& big) {
    if (!small.is_fully_defined() || !big.is_fully_defined() || small.rank() > big.rank())
      return false;
    return big.num_elements() <= 4 * small.num_elements();
  }

  bool only_members(Node* p, const std::unordered_set<const Node*>& members) {
    for (Node* u : uses_.readers(p))
      if (!members.count(u)) return false;
    return true;
  }

  // Whether `from` reaches a member, following data and control edges, with
  // earlier clusters taken as one node each.
  bool reaches(Node* from, const std::unordered_set<const Node*>& members) {
    std::unordered_set<const Node*> seen{from};
    std::vector<Node*> stack{from};
    auto visit = [&](Node* n) {
      if (seen.insert(n).second) stack.push_back(n);
    };
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (members.count(n)) return true;
      for (Node* u : uses_.readers(n)) visit(u);
      for (Node* u : uses_.control_readers(n)) visit(u);
      if (auto c = cluster_of_.find(n); c != cluster_of_.end() && clusters_)
        for (Node* m : (*clusters_)[c->second]) visit(m);
    }
    return false;
  }

  Graph& g_;
  std::vector<Node*> nodes_;
  std::unordered_set<const Node*> outs_;
  std::unordered_map<const Node*, size_t> order_;
  Uses uses_;
  std::unordered_map<const Node*, bool> lowerable_;
  std::unordered_map<const Node*, int> reduces_;   // lowerable nodes' reduced dims
  std::unordered_map<const Node*, int64_t> cost_;  // lowerable nodes' point work
  std::unordered_set<const Node*> row_op_;         // reduce rows, then write every point
  std::unordered_map<const Node*, size_t> cluster_of_;
  const std::vector<std::vector<Node*>>* clusters_ = nullptr;

 public:
  std::vector<Space> spaces;    ///< per cluster from run(): its iteration space
  std::vector<Node*> products;  ///< per cluster: the product it computes, or nullptr

  bool used_outside(const Node* m, const std::unordered_set<const Node*>& members) {
    if (outs_.count(m)) return true;
    for (Node* u : uses_.readers(m))
      if (!members.count(u)) return true;
    return false;
  }
};

}  // namespace

ClusterPlan plan_clusters(Graph& g, size_t min_ops) {
  Former former(g);
  ClusterPlan plan;
  plan.groups = former.run(min_ops);
  plan.spaces = std::move(former.spaces);
  plan.products = std::move(former.products);
  for (const std::vector<Node*>& group : plan.groups) {
    const std::unordered_set<const Node*> members(group.begin(), group.end());
    std::vector<Node*> outs;
    for (Node* m : group)
      if (m != group.back() && former.used_outside(m, members)) outs.push_back(m);
    plan.outputs.push_back(std::move(outs));
  }
  return plan;
}

}  // namespace kiln::jit
