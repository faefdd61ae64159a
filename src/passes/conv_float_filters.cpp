// conv_float_filters: a bfloat16 convolution whose filter is a Cast of a
// float32 value reads the float32 value (kiln/passes.h).
#include "pass_util.h"

namespace kiln {

PassResult conv_float_filters(Graph& g) {
  PassResult r;
  r.pass = "conv_float_filters";
  for (Node* n : passes::node_list(g)) {
    const OpId id = n->op().id;
    if ((id != OpId::Conv2D && id != OpId::DepthwiseConv2D) ||
        n->outputs()[0].dtype != DType::kBFloat16)
      continue;
    const Node* cast = n->inputs()[1].node;
    if (cast->op().id != OpId::Cast || !cast->control_inputs().empty()) continue;
    const Edge src = cast->inputs()[0];
    if (src.node->outputs()[static_cast<size_t>(src.index)].dtype != DType::kFloat32) continue;
    const OpId fused = id == OpId::Conv2D ? OpId::FusedConv2D : OpId::FusedDepthwiseConv2D;
    Attrs attrs{
        n->attr("strides"), n->attr("padding"), n->attr("dilations"), std::string(), 0.0, 6.0};
    const TensorSpec spec = n->outputs()[0];
    n->reset(op_def(fused), {n->inputs()[0], src}, std::move(attrs), {spec});
    r.rewritten.push_back(
        {n->name(), str_cat(op_def(id).type_name, " of Cast '", cast->name(), "' -> ",
                            op_def(fused).type_name, " (float32 filter)")});
  }
  return r;
}

}  // namespace kiln
