// fold_pad: a zero Pad of the spatial dims read by a VALID convolution that
// pads exactly what SAME padding would becomes that convolution's SAME padding
// (kiln/passes.h).
#include <string_view>

#include "ops/window.h"
#include "pass_util.h"

namespace kiln {
namespace {

using passes::const_of;
using passes::spec_of;

// The [4, 2] paddings of a Pad node, if constant.
bool paddings_of(const Node* pad, int64_t (&p)[4][2]) {
  const Tensor* t = const_of(pad->inputs()[1]);
  if (!t || t->shape() != Shape{4, 2}) return false;
  for (int64_t i = 0; i < 8; ++i) {
    const int64_t v = t->dtype() == DType::kInt32   ? t->data<int32_t>()[i]
                      : t->dtype() == DType::kInt64 ? t->data<int64_t>()[i]
                                                    : -1;
    if (v < 0) return false;
    p[i / 2][i % 2] = v;
  }
  return true;
}

// Whether the Pad's fill is a constant +0 (all bytes zero, any dtype).
bool pads_zeros(const Node* pad) {
  const Tensor* t = const_of(pad->inputs()[2]);
  if (!t || t->num_elements() != 1 || t->dtype() == DType::kString) return false;
  const char* b = static_cast<const char*>(t->raw_data());
  for (size_t i = 0; i < t->nbytes(); ++i)
    if (b[i]) return false;
  return true;
}

// Whether SAME padding of a conv over input dims [h, w] pads as `p` does.
bool same_pads(const Node* conv, int64_t h, int64_t w, const int64_t (&p)[4][2]) {
  if (p[0][0] || p[0][1] || p[3][0] || p[3][1]) return false;  // batch, channels
  const Shape& f = spec_of(conv->inputs()[1]).shape;
  if (!f.rank_known() || f.rank() != 4 || f.dim(0) <= 0 || f.dim(1) <= 0) return false;
  window::Hw stride, dilation;
  if (!window::parse_hw(std::get<std::vector<int64_t>>(conv->attr("strides")), "strides", stride)
           .empty() ||
      !window::parse_hw(std::get<std::vector<int64_t>>(conv->attr("dilations")), "dilations",
                        dilation)
           .empty())
    return false;
  window::Dim dh, dw;
  if (!window::out_dim(h, f.dim(0), stride.h, dilation.h, window::Padding::kSame, "height", dh)
           .empty() ||
      !window::out_dim(w, f.dim(1), stride.w, dilation.w, window::Padding::kSame, "width", dw)
           .empty())
    return false;
  return dh.pad_before == p[1][0] && dh.pad_after == p[1][1] && dw.pad_before == p[2][0] &&
         dw.pad_after == p[2][1];
}

}  // namespace

PassResult fold_pad(Graph& g) {
  PassResult r;
  r.pass = "fold_pad";
  for (Node* n : passes::node_list(g)) {
    const OpId id = n->op().id;
    if ((id != OpId::Conv2D && id != OpId::DepthwiseConv2D) ||
        std::get<std::string>(n->attr("padding")) != "VALID")
      continue;
    const Node* pad = n->inputs()[0].node;
    if (pad->op().id != OpId::Pad || !pad->control_inputs().empty()) continue;
    const Edge x = pad->inputs()[0];
    const Shape& s = spec_of(x).shape;
    int64_t p[4][2];
    if (!s.rank_known() || s.rank() != 4 || s.dim(1) < 0 || s.dim(2) < 0 || !pads_zeros(pad) ||
        !paddings_of(pad, p) || !same_pads(n, s.dim(1), s.dim(2), p))
      continue;
    Attrs attrs = n->attrs();
    for (size_t i = 0; i < n->op().attrs.size(); ++i)
      if (std::string_view(n->op().attrs[i].name) == "padding") attrs[i] = std::string("SAME");
    n->set_attrs(std::move(attrs));
    n->set_input(0, x);
    r.rewritten.push_back({n->name(), str_cat(n->op().type_name, " of zero ", pad->op().type_name,
                                              " '", pad->name(), "' -> SAME padding")});
  }
  return r;
}

}  // namespace kiln
