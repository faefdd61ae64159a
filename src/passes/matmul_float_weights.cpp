// matmul_float_weights: a bfloat16 MatMul whose y is a Cast of float32 weights
// of rank 2 (or a Reshape of one) reads the float32 value (kiln/passes.h); the
// bias and relu that mixed precision computes after it in float32 between
// Casts join the product as its epilogue (read through a Reshape that
// regroups the product's rows).
#include <string>
#include <unordered_map>

#include "pass_util.h"

namespace kiln {
namespace {
using passes::spec_of;

// The Cast node behind `e` (directly, or through a Reshape used only by the
// product): the float32 value it casts, and the Reshape to move before it.
struct FloatWeights {
  const Node* cast = nullptr;
  Node* reshape = nullptr;
  Edge src;
};

bool float_weights(Edge e, const std::unordered_map<const Node*, int>& uses, FloatWeights& w) {
  Node* n = e.node;
  if (n->op().id == OpId::Reshape && n->control_inputs().empty() && uses.at(n) == 1) {
    w.reshape = n;
    n = n->inputs()[0].node;
  }
  if (n->op().id != OpId::Cast || !n->control_inputs().empty()) return false;
  w.cast = n;
  w.src = n->inputs()[0];
  const TensorSpec& s = passes::spec_of(w.src);
  const TensorSpec& y = passes::spec_of(e);
  return s.dtype == DType::kFloat32 && y.shape.rank_known() && y.shape.rank() == 2;
}

// A _FusedMatMul's float32 epilogue as mixed precision writes it:
// Cast(BiasAdd(Cast(product), bias)) (or AddV2), then optionally
// Cast(Relu(Cast(that))), becomes the product's bias input and activation.
class EpilogueAbsorber {
 public:
  explicit EpilogueAbsorber(Graph& g) : g_(g), uses_(g) {}

  // Whether nodes were added at the graph's end (reshaped biases).
  bool appended() const { return appended_; }

  void absorb(Node* mm, PassResult& r) {
    if (mm->inputs().size() != 2) return;
    const Shape& out = mm->outputs()[0].shape;
    if (!out.rank_known() || out.rank() < 1 || out.dim(out.rank() - 1) < 0) return;
    Node* rows = rows_reshape(mm);  // TensorFlow's Dense on rank 3 (tensordot) writes one
    Node* up = cast_user(rows ? rows : mm, DType::kBFloat16, DType::kFloat32);
    Node* add = up ? sole_user(up) : nullptr;
    Edge bias;
    if (!add || !bias_of(add, up, out.dim(out.rank() - 1), bias)) return;
    Node* root = cast_user(add, DType::kFloat32, DType::kBFloat16);
    if (!root) return;
    if (spec_of(bias).shape.rank() > 1) bias = flat_bias(bias);  // only once it is taken
    std::string act;
    Node* up2 = cast_user(root, DType::kBFloat16, DType::kFloat32);
    Node* relu = up2 ? sole_user(up2) : nullptr;
    if (relu && relu->op().id == OpId::Relu) {
      if (Node* down = cast_user(relu, DType::kFloat32, DType::kBFloat16)) {
        root = down;
        act = "relu";
      }
    }
    const TensorSpec spec = root->outputs()[0];
    Attrs attrs{mm->attr("adj_x"), mm->attr("adj_y"), act};
    if (rows) {  // the product computes the epilogue, root regroups its rows
      mm->reset(op_def(OpId::FusedMatMul), {mm->inputs()[0], mm->inputs()[1], bias},
                std::move(attrs), {mm->outputs()[0]});
      root->reset(rows->op(), {{mm, 0}, rows->inputs()[1]}, rows->attrs(), {spec});
    } else {
      root->reset(op_def(OpId::FusedMatMul), {mm->inputs()[0], mm->inputs()[1], bias},
                  std::move(attrs), {spec});
    }
    r.rewritten.push_back({root->name(), str_cat("bias", act.empty() ? "" : " and relu", " of '",
                                                 mm->name(), "' -> its _FusedMatMul")});
  }

 private:
  // `n`'s one user (of at most two inputs and no control inputs), when `n`
  // has no other use, control edge or output.
  Node* sole_user(const Node* n) const {
    if (!uses_.interior(n)) return nullptr;
    Node* u = uses_.users(n)[0];
    return u->control_inputs().empty() && u->inputs().size() <= 2 ? u : nullptr;
  }
  // `n`'s one user when it is a Reshape that regroups its rows and may split
  // its last dim (EinsumDense's heads): fully known shapes, and trailing dims
  // of the output that hold exactly the last dim (a bias over those dims and
  // a relu commute with it).
  Node* rows_reshape(const Node* n) const {
    Node* u = sole_user(n);
    if (!u || u->op().id != OpId::Reshape) return nullptr;
    const Shape& in = n->outputs()[0].shape;
    const Shape& out = u->outputs()[0].shape;
    if (!in.is_fully_defined() || !out.is_fully_defined() || out.rank() < 1) return nullptr;
    int64_t tail = 1;
    for (int64_t d = out.rank() - 1; d >= 0 && tail < in.dim(in.rank() - 1); --d)
      tail *= out.dim(d);
    return tail == in.dim(in.rank() - 1) ? u : nullptr;
  }
  // A bias of rank > 1 as the [n] vector it is over the product's last dim.
  Edge flat_bias(Edge bias) {
    const Shape& s = spec_of(bias).shape;
    const Tensor n = Tensor::from_vector<int64_t>({s.num_elements()}, Shape({1}));
    Node* c = g_.add_node(op_def(OpId::Const), {}, Attrs{n}, {{DType::kInt64, n.shape()}},
                          str_cat(bias.node->name(), "/flat_shape"));
    Node* rs = g_.add_node(op_def(OpId::Reshape), {bias, Edge{c, 0}}, Attrs{},
                           {{DType::kFloat32, Shape({s.num_elements()})}},
                           str_cat(bias.node->name(), "/flat"));
    appended_ = true;
    return {rs, 0};
  }
  // `n`'s one user when it is a Cast from `from` to `to`.
  Node* cast_user(const Node* n, DType from, DType to) const {
    Node* u = sole_user(n);
    return u && u->op().id == OpId::Cast && n->outputs()[0].dtype == from &&
                   u->outputs()[0].dtype == to
               ? u
               : nullptr;
  }
  // `add` adds a float32 [n] to `x` over its last dim (BiasAdd, or AddV2 of a
  // value of `x`'s shape), or (AddV2) a value of x's trailing dims that hold
  // n values (a Reshape split the product's last dim): that value in `bias`.
  static bool bias_of(const Node* add, const Node* x, int64_t n, Edge& bias) {
    const OpId id = add->op().id;
    if (id != OpId::BiasAdd && id != OpId::Add) return false;
    if (add->inputs().size() != 2 || add->outputs()[0].shape != x->outputs()[0].shape) return false;
    const int i = add->inputs()[0].node == x ? 1 : 0;
    if (add->inputs()[static_cast<size_t>(1 - i)].node != x || (id == OpId::BiasAdd && i != 1))
      return false;
    bias = add->inputs()[static_cast<size_t>(i)];
    const TensorSpec& b = passes::spec_of(bias);
    if (b.dtype != DType::kFloat32 || !b.shape.is_fully_defined() || b.shape.rank() < 1 ||
        b.shape.num_elements() != n)
      return false;
    if (b.shape.rank() == 1) return b.shape.dim(0) == n;
    const Shape& xs = x->outputs()[0].shape;
    if (id != OpId::Add || !xs.rank_known() || xs.rank() < b.shape.rank()) return false;
    for (int64_t d = 1; d <= b.shape.rank(); ++d)
      if (b.shape.dim(b.shape.rank() - d) != xs.dim(xs.rank() - d)) return false;
    return true;
  }

  Graph& g_;
  passes::NodeUses uses_;
  bool appended_ = false;
};

}  // namespace

PassResult matmul_float_weights(Graph& g) {
  PassResult r;
  r.pass = "matmul_float_weights";
  std::unordered_map<const Node*, int> uses;  // data uses and graph outputs per node
  for (const auto& n : g.nodes())
    for (const Edge& e : n->inputs()) ++uses[e.node];
  for (const Edge& e : g.outputs()) ++uses[e.node];
  for (const auto& n : g.nodes()) uses.try_emplace(n.get(), 0);
  for (Node* n : passes::node_list(g)) {
    if (n->op().id != OpId::MatMul || n->outputs()[0].dtype != DType::kBFloat16) continue;
    FloatWeights w;
    if (!float_weights(n->inputs()[1], uses, w)) continue;
    const Shape& x = passes::spec_of(n->inputs()[0]).shape;
    if (std::get<bool>(n->attr("adj_x")) && (!x.rank_known() || x.rank() != 2))
      continue;  // rows must fold
    Edge y = w.src;
    if (w.reshape) {  // reshape the float32 value instead (a view of its buffer)
      w.reshape->reset(w.reshape->op(), {w.src, w.reshape->inputs()[1]}, w.reshape->attrs(),
                       {TensorSpec{DType::kFloat32, w.reshape->outputs()[0].shape}});
      y = {w.reshape, 0};
    }
    Attrs attrs{n->attr("adj_x"), n->attr("adj_y"), std::string()};
    const TensorSpec spec = n->outputs()[0];
    n->reset(op_def(OpId::FusedMatMul), {n->inputs()[0], y}, std::move(attrs), {spec});
    r.rewritten.push_back({n->name(), str_cat("MatMul of Cast '", w.cast->name(),
                                              "' -> _FusedMatMul (float32 weights)")});
  }
  if (r.rewritten.empty()) return r;  // no product to give an epilogue
  EpilogueAbsorber epilogues(g);
  for (Node* n : passes::node_list(g))
    if (n->op().id == OpId::FusedMatMul) epilogues.absorb(n, r);
  if (epilogues.appended()) g.sort_topologically();
  return r;
}

}  // namespace kiln
