#include "cluster.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "core/env.h"
#include "jit/codegen/emit_cpp.h"
#include "jit/codegen/stages.h"
#include "jit/fusion/cluster_plan.h"
#include "jit/fusion/node_rules.h"
#include "passes/pass_util.h"

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
      const int64_t trim = rest_trim(j->size);
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
  std::vector<int64_t> st(static_cast<size_t>(rank), 0);
  const auto r = static_cast<int>(v.dims.size());
  if (!view_problem(v).empty() || r > rank) return {};
  view_strides(v, Shape(d), st.data() + (rank - r));
  return st;
}

std::vector<int64_t> aligned_dims(const Shape& s, int rank) {
  std::vector<int64_t> d(static_cast<size_t>(rank) - static_cast<size_t>(s.rank()), 1);
  for (int i = 0; i < s.rank(); ++i) d.push_back(s.dim(i));
  return d;
}

// Per output: the inputs its value depends on.
std::vector<std::vector<int32_t>> output_deps(const Kernel& k) {
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
  std::vector<std::vector<int32_t>> out;
  for (int32_t o : k.outputs) {
    std::vector<int32_t> d;
    for (size_t j = 0; j < k.inputs.size(); ++j)
      if (dep[static_cast<size_t>(o)][j]) d.push_back(static_cast<int32_t>(j));
    out.push_back(std::move(d));
  }
  return out;
}

// The program's facts about its space and outputs: the points per row of a
// row kernel, each output's shape rule, the inner-loop pattern.
void describe_outputs(Program& p, const Space& sp, std::span<const TensorSpec> outs) {
  const Kernel& k = p.kernel;
  if (k.reduced > 0) {  // the points per row, or -1 when a reduced dim is unknown
    int64_t n = 1;
    for (int d = k.rank - k.reduced; d < k.rank; ++d)
      n = n < 0 || sp.shape.dim(d) < 0 ? -1 : n * sp.shape.dim(d);
    p.row_points = n;
  }
  const auto deps = output_deps(k);
  const std::vector<uint8_t> row = k.per_row();
  for (size_t o = 0; o < outs.size(); ++o) {
    OutputRule r;
    r.dtype = outs[o].dtype;
    const Shape& os = outs[o].shape;
    if (row[static_cast<size_t>(k.outputs[o])]) {
      r.form = OutputRule::kRow;  // one value per row: the reduced dims 1 or gone
      r.keepdims = os.rank() == k.rank;
      r.deps = deps[o];
    } else if (sp.relabelled || os.rank() != k.rank) {
      r.form = OutputRule::kFixed;  // relabelled: the output's static shape
      r.dims = std::vector<int64_t>(os.dims().begin(), os.dims().end());
    } else {
      r.deps = deps[o];
    }
    p.outputs.push_back(std::move(r));
  }
  p.pattern = predicted_pattern(k);
}

// What computing one point costs (stages.h), which scales the pool's grain.
int64_t work_per_point(const Kernel& k) {
  return std::max<int64_t>(1, body_cost(k.body));
}

// Makes the kernel compute product `p` (an input it loads) itself: the node
// reads p's operands instead (the first in p's place, the second last) and
// the loads say so.
ProductInput take_product(const Node* p, std::vector<Edge>& ext, Kernel& k, Kernel& opt) {
  Product how;
  ProductInput in;
  in.slot = -1;
  const Edge a = p->inputs()[0], b = p->inputs()[1];
  for (size_t i = 0; i < ext.size(); ++i) {
    if (!(ext[i] == Edge{const_cast<Node*>(p), 0})) continue;
    if (in.slot < 0)
      in.slot = static_cast<int32_t>(i);
    else
      in.also.push_back(static_cast<int32_t>(i));
    ext[i] = a;  // (unread in the `also` slots)
  }
  if (!product_of(p, how) || in.slot < 0)
    throw InternalError(str_cat("jit: the product '", p->name(), "' changed"));
  in.how = how;
  const std::string note =
      str_cat(" = ", p->op().type_name, " '", p->name(), "' of ", a.node->tensor_name(a.index),
              how.transpose_a ? " (transposed)" : "", " and ", b.node->tensor_name(b.index),
              how.transpose_b ? " (transposed)" : "", ", computed here by blocks of rows");
  for (Kernel* kk : {&k, &opt})
    for (size_t i = 0; i < kk->body.size(); ++i)
      if (kk->body[i].kind == Instr::kLoad && in.reads(static_cast<size_t>(kk->body[i].a)))
        kk->origin[i] += note;
  ext.push_back(b);
  return in;
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

std::vector<Kernel> compiled_kernels(const Clusters& cl) {
  std::vector<Kernel> out;
  for (const Node* n : cl.kernel_nodes)
    out.push_back(attr_object<Program>(n->op(), n->attrs(), "program")->kernel);
  return out;
}

Clusters form_clusters(Graph& g, const std::string& prefix, size_t min_ops) {
  const ClusterPlan plan = plan_clusters(g, min_ops);
  const std::vector<std::vector<Node*>>& groups = plan.groups;
  Clusters result;
  std::unordered_set<const Node*> dropped;
  for (size_t ci = 0; ci < groups.size(); ++ci) {
    const std::vector<Node*>& group = groups[ci];
    const std::unordered_set<const Node*> members(group.begin(), group.end());
    Node* root = group.back();
    Kernel k;
    k.name = str_cat(prefix, "_k", ci);
    const Space& sp = plan.spaces[ci];
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
    out_nodes.insert(out_nodes.end(), plan.outputs[ci].begin(), plan.outputs[ci].end());
    for (Node* m : out_nodes) k.outputs.push_back(value_of.at(m));
    auto prog = std::make_shared<Program>();
    prog->kernel = optimize_kernel(k, excess_precision_allowed());
    Kernel& opt = prog->kernel;
    std::vector<TensorSpec> specs;
    for (Node* m : out_nodes) specs.push_back(m->outputs()[0]);
    describe_outputs(*prog, sp, specs);
    if (std::any_of(views.begin(), views.end(),
                    [](const View& v) { return !v.dims.empty() || !v.start.empty(); }))
      prog->views = std::move(views);
    if (Node* p = plan.products[ci]) {
      prog->product = take_product(p, ext, k, opt);
      dropped.insert(p);
      what = str_cat(p->op().type_name, ", ", what);
    }
    prog->work = work_per_point(opt);
    root->reset(op_def(OpId::JitKernel), ext, Attrs{AttrObjectRef(std::move(prog))}, specs);
    for (size_t o = 1; o < out_nodes.size(); ++o)
      out_nodes[o]->reset(op_def(OpId::Identity), {Edge{root, static_cast<int32_t>(o)}}, Attrs{},
                          {specs[o]});
    for (Node* m : group)
      if (std::find(out_nodes.begin(), out_nodes.end(), m) == out_nodes.end()) dropped.insert(m);
    result.fused.push_back(str_cat(group.size() + (plan.products[ci] != nullptr), " ops: ", what));
    result.kernels.push_back(std::move(k));
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
