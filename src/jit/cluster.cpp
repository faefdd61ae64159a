#include "cluster.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "emit_cpp.h"
#include "fold.h"
#include "node_rules.h"
#include "passes/pass_util.h"
#include "siblings.h"

namespace kiln::jit {
namespace {

using passes::spec_of;

// A view as Python indexing of its source ("[1, :, 2:8]"), then the order the
// value walks the source's dims when it is not theirs ("(1, 0, 2)").
std::string describe(const View& v) {
  std::string s = "[", order;
  bool sorted = true;
  int64_t last = -1;
  for (size_t d = 0; d < v.start.size(); ++d) {
    const auto j = std::find_if(v.dims.begin(), v.dims.end(),
                                [&](const ViewDim& x) { return x.src == static_cast<int64_t>(d); });
    s += d ? ", " : "";
    if (j == v.dims.end()) {
      s += str_cat(v.start[d]);
    } else if (j->size == -1) {
      s += ":";
    } else if (is_rest(j->size)) {
      const int64_t trim = -2 - j->size;
      s += str_cat(v.start[d], ":", trim ? str_cat(-trim) : "");
    } else {
      const int64_t end = v.start[d] + j->size * j->step;  // -1 (before 0) needs no end
      s += end < 0 ? str_cat(v.start[d], ":") : str_cat(v.start[d], ":", end);
      if (j->step != 1) s += str_cat(":", j->step);
    }
  }
  for (const ViewDim& x : v.dims) {
    if (x.src < 0) continue;
    order += str_cat(order.empty() ? "" : ", ", x.src);
    sorted &= x.src > last;
    last = x.src;
  }
  return s + "]" + (sorted ? "" : str_cat(" (", order, ")"));
}

// A view's strides per dim aligned to `rank`, over `src` with unknown dims
// taken as 2 (the emitter's layout prediction).
std::vector<int64_t> predicted_strides(const View& v, const Shape& src, int rank) {
  std::vector<int64_t> d;
  for (int i = 0; i < src.rank(); ++i) d.push_back(src.dim(i) < 0 ? 2 : src.dim(i));
  ViewRefs refs;
  const std::vector<int64_t> maps = encode_input_maps({v});
  std::vector<int64_t> st(static_cast<size_t>(rank), 0);
  if (!parse_input_maps(maps, 1, refs) || refs[0].rank > rank) return {};
  view_strides(refs[0], Shape(d), st.data() + (rank - refs[0].rank));
  return st;
}

// A cluster's iteration space: its shape, the trailing dims its reductions
// fold (0: none), and whether a reshape relabelled it.
struct Space {
  Shape shape;
  int reduced = 0;
  bool relabelled = false;
  bool mapped = false;  ///< a member reads an outside value through a view
  /// The most trailing dims every view read reads as one run of values (a
  /// row kernel's rows must be contiguous).
  int view_rows = 16;
  /// Views read in place that graph mode would copy out (not one run of
  /// values): each counts as an op, as a product or a fold does.
  int copies = 0;
};

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
  explicit Former(Graph& g) : g_(g), nodes_(passes::node_list(g)), outs_(passes::output_nodes(g)) {
    for (size_t i = 0; i < nodes_.size(); ++i) order_[nodes_[i]] = i;
    for (Node* n : nodes_) {
      for (const Edge& e : n->inputs()) users_[e.node].push_back(n);
      for (const Node* c : n->control_inputs()) control_targets_.insert(c);
    }
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
      return n->op().jit == lower_identity && n->inputs().size() == 1 &&
             users_[n->inputs()[0].node].size() > 1;
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
      for (const Node* m : members) work += m->op().jit && m->op().jit != lower_identity;
      Node* product = work > 0 ? product_for(members, space) : nullptr;
      // A reduction of the root's value that will fold into the kernel
      // (fold.h) counts as an op, as a product does.
      Fold fold;
      const bool folds = work > 0 && space.reduced == 0 &&
                         std::any_of(users_[root].begin(), users_[root].end(),
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
      groups.push_back(Sibling{clusters[i], s.shape,
                               s.reduced == 0 && !s.relabelled && products[i] == nullptr,
                               fold_key(clusters[i])});
    }
    for (Node* n : nodes_)
      if (!cluster_of_.count(n) && lone_op(n))
        groups.push_back(Sibling{{n}, n->outputs()[0].shape, true, fold_key({n})});
    std::vector<std::vector<Node*>> out;
    std::vector<Space> out_spaces;
    std::vector<Node*> out_products;
    for (const std::vector<size_t>& part : merge_siblings(nodes_, groups)) {
      const size_t first = part[0];
      if (first >= clusters.size() && part.size() < std::max<size_t>(min_ops, 2)) continue;
      Space sp;
      sp.shape = groups[first].shape;
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

  // A lowerable op on its own that computes (not a reduction, a view, a
  // relabelling or a pass-through).
  bool lone_op(const Node* n) {
    return lowerable(n) && reduces_.at(n) == 0 && n->op().jit != lower_identity &&
           !reads_in_place(n) && !is_relabel(n) && n->outputs()[0].shape.rank_known();
  }

  // The fold the reductions of `members`' values ask for (Sibling::fold).
  int64_t fold_key(const std::vector<Node*>& members) {
    int64_t key = 0;
    for (const Node* m : members)
      for (const Node* u : users_[m]) {
        Fold f;
        if (!fold_of(u, f)) continue;
        const int64_t k = 1 + f.dims * 32 + f.outer;
        if (key != 0 && key != k) return -1;
        key = k;
      }
    return key;
  }

  // A product (OpDef::jit_product) the cluster can compute itself: only
  // members read it, each as it is, and it has the space's shape (its rows
  // are the kernel's rows; at most the last dim reduced).
  Node* product_for(const std::vector<Node*>& members, const Space& space) {
    if (space.reduced > 1) return nullptr;
    const std::unordered_set<const Node*> set(members.begin(), members.end());
    for (const Node* m : members)
      for (const Edge& e : m->inputs()) {
        Node* p = e.node;
        Product how;
        if (set.count(p) || outs_.count(p) || control_targets_.count(p) ||
            !p->control_inputs().empty() || !product_of(p, how))
          continue;
        bool ok = p->outputs()[0].shape == space.shape;
        for (const Node* u : users_[p]) ok &= set.count(u) && !reads_in_place(u) && !is_relabel(u);
        if (ok) return p;
      }
    return nullptr;
  }

  bool lowerable(const Node* n) {
    auto it = lowerable_.find(n);
    if (it != lowerable_.end()) return it->second;
    return lowerable_[n] = check(n);
  }

 private:
  bool check(const Node* n) {
    const OpDef& op = n->op();
    if (!op.jit || op.has(kStateful) || n->outputs().size() != 1 || !n->control_inputs().empty() ||
        control_targets_.count(n))
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
      bool ok = true;
      for (Node* x : users_[p])
        if (!members.count(x) && reaches(x, members)) ok = false;
      if (!ok) continue;
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
    if (outs_.count(p) || !p->control_inputs().empty() || control_targets_.count(p) ||
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
    for (Node* u : users_[p])
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
        const bool ok = plain_view(q) && users_[q].size() == 1 && users_[q][0] == last;
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
           !control_targets_.count(q) && !q->inputs().empty();
  }

  static bool recompute_ok(const Shape& small, const Shape& big) {
    if (!small.is_fully_defined() || !big.is_fully_defined() || small.rank() > big.rank())
      return false;
    return big.num_elements() <= 4 * small.num_elements();
  }

  bool only_members(Node* p, const std::unordered_set<const Node*>& members) {
    for (Node* u : users_[p])
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
      for (Node* u : users_[n]) visit(u);
      for (Node* u : control_users(n)) visit(u);
      if (auto c = cluster_of_.find(n); c != cluster_of_.end() && clusters_)
        for (Node* m : (*clusters_)[c->second]) visit(m);
    }
    return false;
  }

  std::vector<Node*> control_users(Node* n) {
    if (control_users_.empty() && !control_targets_.empty())
      for (Node* u : nodes_)
        for (Node* c : u->control_inputs()) control_users_[c].push_back(u);
    auto it = control_users_.find(n);
    return it == control_users_.end() ? std::vector<Node*>{} : it->second;
  }

  Graph& g_;
  std::vector<Node*> nodes_;
  std::unordered_set<const Node*> outs_;
  std::unordered_map<const Node*, size_t> order_;
  std::unordered_map<const Node*, std::vector<Node*>> users_;
  std::unordered_map<const Node*, std::vector<Node*>> control_users_;
  std::unordered_set<const Node*> control_targets_;
  std::unordered_map<const Node*, bool> lowerable_;
  std::unordered_map<const Node*, int> reduces_;  // lowerable nodes' reduced dims
  std::unordered_set<const Node*> row_op_;        // reduce rows, then write every point
  std::unordered_map<const Node*, size_t> cluster_of_;
  const std::vector<std::vector<Node*>>* clusters_ = nullptr;

 public:
  std::vector<Space> spaces;    ///< per cluster from run(): its iteration space
  std::vector<Node*> products;  ///< per cluster: the product it computes, or nullptr

  bool used_outside(const Node* m, const std::unordered_set<const Node*>& members) {
    if (outs_.count(m)) return true;
    for (Node* u : users_[m])
      if (!members.count(u)) return true;
    return false;
  }
};

std::vector<int64_t> aligned_dims(const Shape& s, int rank) {
  std::vector<int64_t> d(static_cast<size_t>(rank) - static_cast<size_t>(s.rank()), 1);
  for (int i = 0; i < s.rank(); ++i) d.push_back(s.dim(i));
  return d;
}

// Per output: the inputs its value depends on.
std::vector<std::vector<int64_t>> output_deps(const Kernel& k) {
  std::vector<std::vector<bool>> dep(k.body.size(), std::vector<bool>(k.inputs.size()));
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Instr& in = k.body[i];
    if (in.kind == Instr::kLoad) {
      dep[i][static_cast<size_t>(in.a)] = true;
      continue;
    }
    for (int32_t a : {in.a, in.b, in.c})
      if (a >= 0)
        for (size_t j = 0; j < k.inputs.size(); ++j)
          if (dep[static_cast<size_t>(a)][j]) dep[i][j] = true;
  }
  std::vector<std::vector<int64_t>> out;
  for (int32_t o : k.outputs) {
    std::vector<int64_t> d;
    for (size_t j = 0; j < k.inputs.size(); ++j)
      if (dep[static_cast<size_t>(o)][j]) d.push_back(static_cast<int64_t>(j));
    out.push_back(std::move(d));
  }
  return out;
}

// The JitKernel node's signature attribute (see infer_jit_kernel): rank,
// reduced dims (then their product when > 0), outputs, inner pattern.
std::vector<int64_t> signature(const Kernel& k, const Space& sp, std::span<const TensorSpec> outs) {
  std::vector<int64_t> sig{k.rank, k.reduced};
  if (k.reduced > 0) {  // the points per row, or -1 when a reduced dim is unknown
    int64_t n = 1;
    for (int d = k.rank - k.reduced; d < k.rank; ++d)
      n = n < 0 || sp.shape.dim(d) < 0 ? -1 : n * sp.shape.dim(d);
    sig.push_back(n);
  }
  sig.push_back(static_cast<int64_t>(k.outputs.size()));
  const auto deps = output_deps(k);
  const std::vector<uint8_t> row = k.per_row();
  for (size_t o = 0; o < outs.size(); ++o) {
    sig.push_back(static_cast<int64_t>(outs[o].dtype));
    const Shape& os = outs[o].shape;
    if (row[static_cast<size_t>(k.outputs[o])]) {
      // One value per row: the reduced dims 1 or gone.
      sig.push_back(-2);
      sig.push_back(os.rank() == k.rank);
      sig.push_back(static_cast<int64_t>(deps[o].size()));
      sig.insert(sig.end(), deps[o].begin(), deps[o].end());
    } else if (sp.relabelled || os.rank() != k.rank) {
      // Relabelled: the output's static shape, written in the space's order.
      sig.push_back(-1);
      sig.push_back(os.rank());
      for (int d = 0; d < os.rank(); ++d) sig.push_back(os.dim(d));
    } else {
      sig.push_back(static_cast<int64_t>(deps[o].size()));
      sig.insert(sig.end(), deps[o].begin(), deps[o].end());
    }
  }
  for (uint8_t b : predicted_pattern(k)) sig.push_back(b);
  return sig;
}

// The instructions that compute at each point (not loads or constants).
int64_t work_per_point(const Kernel& k) {
  int64_t n = 0;
  for (const Instr& in : k.body) n += in.kind != Instr::kLoad && in.kind != Instr::kConst;
  return std::max<int64_t>(1, n);
}

// Makes the kernel compute product `p` (an input it loads) itself: the node
// reads p's operands instead (the first in p's place, the second last) and
// the loads say so. Returns the `product` attribute.
std::vector<int64_t> take_product(const Node* p, std::vector<Edge>& ext, Kernel& k, Kernel& opt) {
  Product how;
  const auto it = std::find(ext.begin(), ext.end(), Edge{const_cast<Node*>(p), 0});
  if (!product_of(p, how) || it == ext.end())
    throw InternalError(str_cat("jit: the product '", p->name(), "' changed"));
  const auto slot = static_cast<int32_t>(it - ext.begin());
  const Edge a = p->inputs()[0], b = p->inputs()[1];
  const std::string note =
      str_cat(" = ", p->op().type_name, " '", p->name(), "' of ", a.node->tensor_name(a.index),
              how.transpose_a ? " (transposed)" : "", " and ", b.node->tensor_name(b.index),
              how.transpose_b ? " (transposed)" : "", ", computed here by blocks of rows");
  for (Kernel* kk : {&k, &opt})
    for (size_t i = 0; i < kk->body.size(); ++i)
      if (kk->body[i].kind == Instr::kLoad && kk->body[i].a == slot) kk->origin[i] += note;
  *it = a;
  ext.push_back(b);
  return {slot, how.transpose_a, how.transpose_b};
}

// A value of the full size of a relabelled space but not of its shape (an
// operand read before a reshape joined) as a Reshape to the space: the same
// flat index, a view of its buffer. Other edges as they are.
Edge relabelled(Graph& g, const Edge& e, const Space& sp, const std::vector<int64_t>& dims) {
  const TensorSpec& spec = spec_of(e);
  const auto rank = static_cast<int>(dims.size());
  if (!sp.relabelled || !spec.shape.is_fully_defined() ||
      spec.shape.num_elements() != sp.shape.num_elements() ||
      (spec.shape.rank() <= rank && aligned_dims(spec.shape, rank) == dims))
    return e;  // (a value of higher rank than the space is reshaped too)
  const Tensor target = Tensor::from_vector(dims, Shape({static_cast<int64_t>(dims.size())}));
  Node* c = g.add_node(op_def(OpId::Const), {}, Attrs{target}, {{DType::kInt64, target.shape()}},
                       str_cat(e.node->name(), "/jit_shape"));
  Node* r = g.add_node(op_def(OpId::Reshape), {e, Edge{c, 0}}, Attrs{}, {{spec.dtype, Shape(dims)}},
                       str_cat(e.node->name(), "/jit_reshape"));
  return Edge{r, 0};
}

}  // namespace

Clusters form_clusters(Graph& g, const std::string& prefix, size_t min_ops) {
  Former former(g);
  const std::vector<std::vector<Node*>> groups = former.run(min_ops);
  Clusters result;
  std::unordered_set<const Node*> dropped;
  for (size_t ci = 0; ci < groups.size(); ++ci) {
    const std::vector<Node*>& group = groups[ci];
    const std::unordered_set<const Node*> members(group.begin(), group.end());
    Node* root = group.back();
    Kernel k;
    k.name = str_cat(prefix, "_k", ci);
    const Space& sp = former.spaces[ci];
    k.rank = sp.shape.rank();
    k.reduced = sp.reduced;
    k.dims = aligned_dims(sp.shape, k.rank);
    std::vector<Edge> ext;
    std::vector<View> views;  // per input: the view it is read through, if any
    std::unordered_map<Edge, int32_t, passes::EdgeHash> load_of;
    std::unordered_map<const Node*, int32_t> value_of;
    std::string what;
    // Input `e` (or, for an output of a member view row, that row's input
    // read through the view; or a full-size value read before a relabelling,
    // through a Reshape to the kernel's space).
    auto add_load = [&](const Edge& in_edge) {
      const bool viewed = members.count(in_edge.node) != 0;
      const Edge e = viewed ? in_edge : relabelled(g, in_edge, sp, k.dims);
      Edge src = e;
      View view;
      auto member = [&](const Node* q) { return members.count(q) != 0; };
      if (viewed && !chained_view(e.node, static_cast<size_t>(e.index), view, src, member))
        throw InternalError(str_cat("jit: the view of '", e.node->name(), "' changed"));
      Instr load;
      load.kind = Instr::kLoad;
      load.dtype = spec_of(src).dtype;
      load.a = static_cast<int32_t>(ext.size());
      k.body.push_back(load);
      k.origin.push_back(str_cat("input ", src.node->tensor_name(src.index),
                                 viewed ? str_cat(" read through ", e.node->op().type_name, " '",
                                                  e.node->name(), "' as ", describe(view))
                                        : ""));
      k.inputs.push_back(load.dtype);
      k.input_dims.push_back(aligned_dims(spec_of(e).shape, k.rank));
      k.input_strides.push_back(viewed ? predicted_strides(view, spec_of(src).shape, k.rank)
                                       : std::vector<int64_t>{});
      ext.push_back(src);
      views.push_back(std::move(view));
      return static_cast<int32_t>(k.body.size() - 1);
    };
    for (Node* m : group) {
      if (reads_in_place(m)) continue;  // its outputs load where members read them
      std::vector<int32_t> in;
      // A relabelling reshape passes its input's value on (its shape operand
      // is not read).
      const std::span<const Edge> reads = is_relabel(m) ? m->inputs().subspan(0, 1) : m->inputs();
      for (const Edge& e : reads) {
        if (members.count(e.node) && !reads_in_place(e.node)) {
          in.push_back(value_of.at(e.node));
          continue;
        }
        auto it = load_of.find(e);
        if (it == load_of.end()) it = load_of.emplace(e, add_load(e)).first;
        in.push_back(it->second);
      }
      if (is_relabel(m)) {
        value_of[m] = in[0];
        continue;
      }
      const size_t before = k.body.size();
      std::vector<int32_t> results;
      if (!lower_node(m, in, k.body, results))
        throw InternalError(str_cat("jit: lowering '", m->name(), "' failed after a trial"));
      for (size_t i = before; i < k.body.size(); ++i)
        k.origin.push_back(str_cat(m->op().type_name, " '", m->name(), "'"));
      value_of[m] = results[0];
      what += str_cat(what.empty() ? "" : ", ", m->op().type_name);
    }
    // Outputs: the root first, then members used outside, in graph order.
    std::vector<Node*> out_nodes{root};
    for (Node* m : group)
      if (m != root && former.used_outside(m, members)) out_nodes.push_back(m);
    for (Node* m : out_nodes) k.outputs.push_back(value_of.at(m));
    Kernel opt = optimize_kernel(k);
    std::vector<TensorSpec> specs;
    for (Node* m : out_nodes) specs.push_back(m->outputs()[0]);
    std::vector<int64_t> sig = signature(opt, sp, specs);
    const bool mapped = std::any_of(views.begin(), views.end(), [](const View& v) {
      return !v.dims.empty() || !v.start.empty();
    });
    std::vector<int64_t> product;
    if (Node* p = former.products[ci]) {
      product = take_product(p, ext, k, opt);
      dropped.insert(p);
      what = str_cat(p->op().type_name, ", ", what);
    }
    root->reset(op_def(OpId::JitKernel), ext,
                Attrs{opt.encode(), std::move(sig), opt.name,
                      mapped ? encode_input_maps(views) : std::vector<int64_t>{},
                      std::move(product), work_per_point(opt), std::vector<int64_t>{}},
                specs);
    for (size_t o = 1; o < out_nodes.size(); ++o)
      out_nodes[o]->reset(op_def(OpId::Identity), {Edge{root, static_cast<int32_t>(o)}}, Attrs{},
                          {specs[o]});
    for (Node* m : group)
      if (std::find(out_nodes.begin(), out_nodes.end(), m) == out_nodes.end()) dropped.insert(m);
    result.fused.push_back(
        str_cat(group.size() + (former.products[ci] != nullptr), " ops: ", what));
    result.kernels.push_back(std::move(k));
    result.optimized.push_back(std::move(opt));
    result.kernel_nodes.push_back(root);
  }
  if (groups.empty()) return result;
  std::vector<bool> keep;
  for (const auto& n : g.nodes()) keep.push_back(!dropped.count(n.get()));
  g.remove_nodes(keep);
  g.sort_topologically();
  return result;
}

}  // namespace kiln::jit
