// fuse_conv: a float32 Conv2D / DepthwiseConv2dNative followed by a chain of
// per-channel affine steps and activations becomes one _FusedConv2D /
// _FusedDepthwiseConv2dNative node, run as one oneDNN primitive with bias and
// post-ops (ops/fused_conv.h). The steps are what Keras-style layers emit:
// BiasAdd, BatchNormalization's Mul/AddV2 (or Sub) with [C] operands, Relu,
// Relu6 (Minimum(Relu(y), 6)), ClipByValue with constant bounds, Sigmoid,
// Tanh, swish (Mul(y, Sigmoid(y))), hard swish (Keras's x * relu6(x + 3) / 6),
// and the Add of a residual connection (an operand of the output's shape).
// Operands stay runtime inputs (they come from variables); the kernel folds the leading affine
// steps (a batch norm's scale and shift) into the filter as it packs it (kernels/cpu/conv.cpp).
#include <algorithm>
#include <unordered_set>

#include "ops/fused_conv.h"
#include "pass_util.h"

namespace kiln {
namespace {
using fused_conv::PostOp;
using passes::const_of;
using passes::node_list;
using passes::spec_of;

// oneDNN allows 32 post-ops; real epilogues have 2 to 5.
constexpr size_t kMaxSteps = 16;

struct Chain {
  Node* conv = nullptr;
  std::vector<Node*> members;  // after conv, in graph order; the last is the root
  std::vector<PostOp> ops;
  std::vector<Edge> args;
  double clip_min = 0, clip_max = 6;
  bool has_clip = false;
};

// One constant float32 element, or nullptr.
const float* const_scalar(Edge e) {
  const Tensor* t = const_of(e);
  if (!t || t->dtype() != DType::kFloat32 || t->num_elements() != 1) return nullptr;
  return t->data<float>();
}

class ConvFuser {
 public:
  explicit ConvFuser(const Graph& g) : uses_(g) {}

  // Grows the chain from `conv` as far as the patterns allow.
  Chain grow(Node* conv) {
    Chain ch;
    ch.conv = conv;
    spec_ = conv->outputs()[0];
    oc_ = spec_.shape.rank_known() ? spec_.shape.dim(3) : -1;
    Node* cur = conv;
    while (ch.ops.size() < kMaxSteps && interior(cur)) {
      const auto& us = uses_.users(cur);
      if (us.size() == 1) {
        if (claimed_.count(us[0]) || !step(ch, cur, us[0])) break;
      } else if (!swish(ch, cur) && !hard_swish(ch, cur)) {
        break;
      }
      cur = ch.members.back();
    }
    claimed_.insert(ch.members.begin(), ch.members.end());
    return ch;
  }

 private:
  // A node whose only uses are inside the chain may be swallowed.
  bool interior(const Node* n) const {
    return !uses_.output(n) && !uses_.control_target(n) && n->outputs().size() == 1;
  }
  // Same dtype and shape as the convolution's output.
  bool same_spec(const Node* n) const {
    return n->outputs().size() == 1 && n->outputs()[0].dtype == DType::kFloat32 &&
           n->outputs()[0].shape == spec_.shape;
  }
  // Whether `e` is the convolution's or a chain member's output.
  static bool from_chain(Edge e, const Chain& ch) {
    return e.node == ch.conv ||
           std::find(ch.members.begin(), ch.members.end(), e.node) != ch.members.end();
  }
  // A float32 operand broadcast along the channels only ([C], [1,..,1,C] or
  // one element), not produced by the chain itself.
  bool channel_operand(Edge e, const Chain& ch, bool bias) const {
    if (from_chain(e, ch)) return false;
    const TensorSpec& s = spec_of(e);
    if (s.dtype != DType::kFloat32 || !s.shape.is_fully_defined() || s.shape.rank() > 4)
      return false;
    if (bias) return s.shape.rank() == 1 && s.shape.dim(0) == oc_;
    for (int64_t d = 0; d + 1 < s.shape.rank(); ++d)
      if (s.shape.dim(d) != 1) return false;
    const int64_t last = s.shape.rank() ? s.shape.dim(s.shape.rank() - 1) : 1;
    return last == 1 || last == oc_;
  }
  // A float32 operand of the output's (fully defined) shape, not produced by
  // the chain: a residual connection added where each value is written.
  bool residual(Edge e, const Chain& ch) const {
    if (from_chain(e, ch)) return false;
    const TensorSpec& s = spec_of(e);
    return s.dtype == DType::kFloat32 && s.shape.is_fully_defined() && s.shape == spec_.shape &&
           fused_conv::whole_tensor(s.shape);
  }
  // The input of binary node `u` that is not `cur` (u reads cur exactly once).
  static bool other_input(const Node* u, const Node* cur, Edge& other, size_t& cur_pos) {
    if (u->inputs().size() != 2) return false;
    const bool a = u->inputs()[0].node == cur, b = u->inputs()[1].node == cur;
    if (a == b) return false;
    cur_pos = a ? 0 : 1;
    other = u->inputs()[1 - cur_pos];
    return true;
  }
  void take(Chain& ch, Node* u, PostOp op) {
    ch.members.push_back(u);
    ch.ops.push_back(op);
  }

  // One consumer `u` of `cur`: a single step.
  bool step(Chain& ch, Node* cur, Node* u) {
    if (!same_spec(u)) return false;
    Edge other;
    size_t pos = 0;
    // Relu6 as kiln.nn.relu6 writes it: Minimum(Relu(y), c), c >= 0.
    if (u->op().id == OpId::Minimum) {
      if (ch.has_clip || ch.ops.empty() || ch.ops.back() != PostOp::kRelu) return false;
      if (!other_input(u, cur, other, pos)) return false;
      const float* c = const_scalar(other);
      if (!c || !(*c >= 0.f)) return false;
      ch.members.push_back(u);
      ch.ops.back() = PostOp::kClip;
      set_clip(ch, 0.0, *c);
      return true;
    }
    // Otherwise the step the row says the op is.
    const Epilogue e = u->op().epilogue;
    switch (e) {
      case Epilogue::kBiasAdd:
        if (u->inputs()[0].node != cur || u->inputs()[1].node == cur ||
            !channel_operand(u->inputs()[1], ch, true))
          return false;
        take(ch, u, ch.ops.empty() ? PostOp::kBiasAdd : PostOp::kAdd);
        ch.args.push_back(u->inputs()[1]);
        return true;
      case Epilogue::kMul:
      case Epilogue::kAdd:
      case Epilogue::kSub:
        if (!other_input(u, cur, other, pos)) return false;
        if (!channel_operand(other, ch, false) && !(e == Epilogue::kAdd && residual(other, ch)))
          return false;
        if (e == Epilogue::kSub && pos != 0) return false;  // a - y is not an epilogue
        take(ch, u, e);
        ch.args.push_back(other);
        return true;
      case Epilogue::kRelu:
      case Epilogue::kSigmoid:
      case Epilogue::kTanh: take(ch, u, e); return true;
      case Epilogue::kClip: {
        if (ch.has_clip || u->inputs()[0].node != cur) return false;
        const float* lo = const_scalar(u->inputs()[1]);
        const float* hi = const_scalar(u->inputs()[2]);
        if (!lo || !hi || !(*lo <= *hi)) return false;
        take(ch, u, PostOp::kClip);
        set_clip(ch, *lo, *hi);
        return true;
      }
      default: return false;
    }
  }
  static void set_clip(Chain& ch, double lo, double hi) {
    ch.has_clip = true;
    ch.clip_min = lo;
    ch.clip_max = hi;
  }

  // Two consumers: swish, Mul(y, Sigmoid(y)) in either operand order.
  bool swish(Chain& ch, Node* cur) {
    const auto& us = uses_.users(cur);
    if (us.size() != 2) return false;
    auto is = [](const Node* n, Epilogue e) { return n->op().epilogue == e; };
    Node* sig = is(us[0], Epilogue::kSigmoid) ? us[0] : us[1];
    Node* mul = sig == us[0] ? us[1] : us[0];
    if (claimed_.count(sig) || claimed_.count(mul)) return false;
    if (!is(sig, Epilogue::kSigmoid) || !is(mul, Epilogue::kMul) || !same_spec(sig) ||
        !same_spec(mul) || !interior(sig) || uses_.users(sig).size() != 1 ||
        uses_.users(sig)[0] != mul)
      return false;
    const auto& in = mul->inputs();
    if (!((in[0].node == cur && in[1].node == sig) || (in[0].node == sig && in[1].node == cur)))
      return false;
    ch.members.push_back(sig);
    take(ch, mul, PostOp::kSwish);
    return true;
  }

  // `n`'s operand other than `from` when it is a float32 constant scalar equal to `v`.
  static bool scalar_operand(const Node* n, const Node* from, float v) {
    Edge other;
    size_t pos = 0;
    if (!other_input(n, from, other, pos)) return false;
    const float* c = const_scalar(other);
    return c && *c == v;
  }
  // The one user of `n`, an interior node of the chain's spec; else nullptr.
  Node* next_step(Node* n) {
    const auto& us = uses_.users(n);
    if (us.size() != 1 || claimed_.count(us[0]) || !same_spec(us[0])) return nullptr;
    return interior(n) ? us[0] : nullptr;
  }

  // Two consumers: hard swish as Keras writes it, Mul(y, RealDiv(Minimum(Relu(
  // AddV2(y, 3)), 6), 6)) (the divide may be a Mul by 1/6; operands either way).
  bool hard_swish(Chain& ch, Node* cur) {
    const auto& us = uses_.users(cur);
    if (us.size() != 2) return false;
    for (int k = 0; k < 2; ++k) {
      Node* add = us[static_cast<size_t>(k)];
      Node* mul = us[static_cast<size_t>(1 - k)];
      if (claimed_.count(add) || claimed_.count(mul) || !same_spec(add) || !same_spec(mul) ||
          add->op().epilogue != Epilogue::kAdd || !scalar_operand(add, cur, 3.f))
        continue;
      Node* relu = next_step(add);
      if (!relu || relu->op().epilogue != Epilogue::kRelu) continue;
      Node* six = next_step(relu);
      if (!six || six->op().id != OpId::Minimum || !scalar_operand(six, relu, 6.f)) continue;
      Node* div = next_step(six);
      const bool by_six = div && div->op().id == OpId::Div && div->inputs()[0].node == six &&
                          scalar_operand(div, six, 6.f);
      const bool by_sixth = div && div->op().epilogue == Epilogue::kMul &&
                            scalar_operand(div, six, static_cast<float>(1.0 / 6.0));
      if (!(by_six || by_sixth) || next_step(div) != mul) continue;
      const auto& in = mul->inputs();
      if (mul->op().epilogue != Epilogue::kMul ||
          !((in[0].node == cur && in[1].node == div) || (in[0].node == div && in[1].node == cur)))
        continue;
      ch.members.insert(ch.members.end(), {add, relu, six, div});
      take(ch, mul, PostOp::kHardSwish);
      return true;
    }
    return false;
  }

  passes::NodeUses uses_;
  // Nodes an earlier chain took: one-pixel outputs of two convolutions meet in
  // an Add that each chain could take as its step (the other as its operand).
  std::unordered_set<const Node*> claimed_;
  TensorSpec spec_;
  int64_t oc_ = -1;
};

bool fusable_conv(const Node* n) {
  const OpId id = n->op().id;
  if (id != OpId::Conv2D && id != OpId::DepthwiseConv2D) return false;
  const TensorSpec& out = n->outputs()[0];
  return out.dtype == DType::kFloat32 && out.shape.rank_known() && out.shape.rank() == 4 &&
         out.shape.dim(3) >= 0;
}

}  // namespace

PassResult fuse_conv(Graph& g) {
  PassResult r;
  r.pass = "fuse_conv";
  ConvFuser fuser(g);
  std::unordered_set<const Node*> dropped;
  for (Node* n : node_list(g)) {
    if (!fusable_conv(n)) continue;
    Chain ch = fuser.grow(n);
    if (ch.ops.empty()) continue;
    Node* root = ch.members.back();
    // Control inputs of every swallowed node move to the fused node.
    std::vector<Node*> ctl(root->control_inputs().begin(), root->control_inputs().end());
    std::string what = n->op().type_name;
    auto absorb = [&](Node* m) {
      for (Node* c : m->control_inputs())
        if (std::find(ctl.begin(), ctl.end(), c) == ctl.end()) ctl.push_back(c);
      r.removed.push_back({m->name(), m->op().type_name});
      dropped.insert(m);
    };
    absorb(n);
    for (Node* m : ch.members) {
      what += str_cat(", ", m->op().type_name);
      if (m != root) absorb(m);
    }
    std::vector<Edge> inputs(n->inputs().begin(), n->inputs().end());
    inputs.insert(inputs.end(), ch.args.begin(), ch.args.end());
    Attrs attrs{n->attr("strides"),   n->attr("padding"),
                n->attr("dilations"), fused_conv::format_post_ops(ch.ops),
                ch.clip_min,          ch.clip_max};
    const OpId id = n->op().id == OpId::Conv2D ? OpId::FusedConv2D : OpId::FusedDepthwiseConv2D;
    const TensorSpec spec = root->outputs()[0];
    root->reset(op_def(id), std::move(inputs), std::move(attrs), {spec});
    root->set_control_inputs(std::move(ctl));
    r.rewritten.push_back({root->name(), str_cat(what, " -> ", op_def(id).type_name, " (",
                                                 fused_conv::format_post_ops(ch.ops), ")")});
  }
  if (dropped.empty()) return r;
  std::vector<bool> keep;
  keep.reserve(g.num_nodes());
  for (const auto& node : g.nodes()) keep.push_back(!dropped.count(node.get()));
  g.remove_nodes(keep);
  return r;
}

}  // namespace kiln
