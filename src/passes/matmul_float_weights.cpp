// matmul_float_weights: a bfloat16 MatMul whose y is a Cast of float32 weights
// of rank 2 (or a Reshape of one) reads the float32 value (kiln/passes.h); the
// bias and relu that mixed precision computes after it in float32 between
// Casts join the product as its epilogue.
#include <string>
#include <unordered_map>

#include "pass_util.h"

namespace kiln {
namespace {

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
  explicit EpilogueAbsorber(const Graph& g) : uses_(g) {}

  void absorb(Node* mm, PassResult& r) {
    if (mm->inputs().size() != 2) return;
    const Shape& out = mm->outputs()[0].shape;
    if (!out.rank_known() || out.rank() < 1 || out.dim(out.rank() - 1) < 0) return;
    Node* up = cast_user(mm, DType::kBFloat16, DType::kFloat32);
    Node* add = up ? sole_user(up) : nullptr;
    Edge bias;
    if (!add || !bias_of(add, up, out.dim(out.rank() - 1), bias)) return;
    Node* root = cast_user(add, DType::kFloat32, DType::kBFloat16);
    if (!root) return;
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
    root->reset(op_def(OpId::FusedMatMul), {mm->inputs()[0], mm->inputs()[1], bias},
                Attrs{mm->attr("adj_x"), mm->attr("adj_y"), act}, {spec});
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
  // `n`'s one user when it is a Cast from `from` to `to`.
  Node* cast_user(const Node* n, DType from, DType to) const {
    Node* u = sole_user(n);
    return u && u->op().id == OpId::Cast && n->outputs()[0].dtype == from &&
                   u->outputs()[0].dtype == to
               ? u
               : nullptr;
  }
  // `add` adds a float32 [n] to `x` over its last dim (BiasAdd, or AddV2 of a
  // value of `x`'s shape): that value in `bias`.
  static bool bias_of(const Node* add, const Node* x, int64_t n, Edge& bias) {
    const OpId id = add->op().id;
    if (id != OpId::BiasAdd && id != OpId::Add) return false;
    if (add->inputs().size() != 2 || add->outputs()[0].shape != x->outputs()[0].shape) return false;
    const int i = add->inputs()[0].node == x ? 1 : 0;
    if (add->inputs()[static_cast<size_t>(1 - i)].node != x || (id == OpId::BiasAdd && i != 1))
      return false;
    bias = add->inputs()[static_cast<size_t>(i)];
    const TensorSpec& b = passes::spec_of(bias);
    return b.dtype == DType::kFloat32 && b.shape.rank_known() && b.shape.rank() == 1 &&
           b.shape.dim(0) == n;
  }

  passes::NodeUses uses_;
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
  return r;
}

}  // namespace kiln
