// matmul_float_weights: a bfloat16 MatMul whose y is a Cast of float32 weights
// of rank 2 (or a Reshape of one) reads the float32 value (kiln/passes.h).
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
    Attrs attrs{n->attr("adj_x"), n->attr("adj_y")};
    const TensorSpec spec = n->outputs()[0];
    n->reset(op_def(OpId::FusedMatMul), {n->inputs()[0], y}, std::move(attrs), {spec});
    r.rewritten.push_back({n->name(), str_cat("MatMul of Cast '", w.cast->name(),
                                              "' -> _FusedMatMul (float32 weights)")});
  }
  return r;
}

}  // namespace kiln
