// fuse_conv: a float32 Conv2D / DepthwiseConv2dNative followed by a chain of
// per-channel affine steps and activations becomes one _FusedConv2D /
// _FusedDepthwiseConv2dNative node, run as one oneDNN primitive with bias and
// post-ops (ops/fused_conv.h). The steps are what Keras-style layers emit:
// BiasAdd, BatchNormalization's Mul/AddV2 (or Sub) with [C] operands, Relu,
// Relu6 (Minimum(Relu(y), 6)), ClipByValue with constant bounds, Sigmoid,
// Tanh, swish (Mul(y, Sigmoid(y))), hard swish (Keras's x * relu6(x + 3) / 6),
// and the Add of a residual connection (an operand of the output's shape).
// A bfloat16 convolution's chain (mixed precision: bf16 elementwise ops trace
// as float32 ones between Casts) also runs through Casts between bfloat16 and
// float32 and ends at a bfloat16 value; its steps then compute in float32 on
// the accumulator, rounded once (XLA's excess precision: not when
// excess_precision_allowed() is false). Its residual is bfloat16, read before
// its Cast to float32 (exact; the Cast joins the chain).
// Operands stay runtime inputs (they come from variables); the kernel folds the leading affine
// steps (a batch norm's scale and shift) into the filter as it packs it (kernels/cpu/conv.cpp).
#include <algorithm>
#include <unordered_set>

#include "core/env.h"
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

bool float_or_bf16(DType t) {
  return t == DType::kFloat32 || t == DType::kBFloat16;
}

// A Cast without control inputs between float32 and bfloat16 (either way).
bool float_cast(const Node* n) {
  return n->op().id == OpId::Cast && n->control_inputs().empty() &&
         float_or_bf16(spec_of(n->inputs()[0]).dtype) && float_or_bf16(n->outputs()[0].dtype);
}

// One constant float32 element, or nullptr.
const float* const_scalar(Edge e) {
  const Tensor* t = const_of(e);
  if (!t || t->dtype() != DType::kFloat32 || t->num_elements() != 1) return nullptr;
  return t->data<float>();
}

class ConvFuser {
 public:
  explicit ConvFuser(const Graph& g) : uses_(g) {}

  // Grows the chain from `conv` as far as the patterns allow, back to its
  // last member of the convolution's type.
  Chain grow(Node* conv) {
    Chain ch, kept;
    ch.conv = kept.conv = conv;
    spec_ = conv->outputs()[0];
    // Rounding once instead of after each op is XLA's excess precision.
    half_ = spec_.dtype == DType::kBFloat16 && excess_precision_allowed();
    oc_ = spec_.shape.rank_known() ? spec_.shape.dim(3) : -1;
    Node* cur = conv;
    while (ch.ops.size() < kMaxSteps && interior(cur)) {
      const auto& us = uses_.users(cur);
      if (us.size() == 1) {
        if (claimed_.count(us[0])) break;
        if (half_ && float_cast(us[0]) && same_spec(us[0])) {
          ch.members.push_back(us[0]);  // no step: the epilogue computes in float32
        } else if (!step(ch, cur, us[0])) {
          break;
        }
      } else if (!swish(ch, cur) && !hard_swish(ch, cur) && !select_relu6(ch, cur)) {
        break;
      }
      cur = ch.members.back();
      if (cur->outputs()[0].dtype == spec_.dtype) kept = ch;
    }
    claimed_.insert(kept.members.begin(), kept.members.end());
    return kept;
  }

 private:
  // A node whose only uses are inside the chain may be swallowed.
  bool interior(const Node* n) const {
    return !uses_.output(n) && !uses_.control_target(n) && n->outputs().size() == 1;
  }
  // The convolution's output shape and a type its chain computes in
  // (float32; bfloat16 or float32 after a bfloat16 convolution).
  bool same_spec(const Node* n) const {
    if (n->outputs().size() != 1 || n->outputs()[0].shape != spec_.shape) return false;
    const DType t = n->outputs()[0].dtype;
    return t == DType::kFloat32 || (half_ && t == DType::kBFloat16);
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
  // An operand of the output's (fully defined) shape and type, not produced
  // by the chain: a residual connection added where each value is written. A
  // bfloat16 chain reads a float32 one before its Cast from bfloat16 (exact)
  // when the Add is the Cast's one reader: the Cast joins the chain.
  bool residual(Edge& e, Chain& ch) const {
    const bool through = half_ && float_cast(e.node) && uses_.interior(e.node) &&
                         spec_of(e).dtype == DType::kFloat32 &&
                         spec_of(e.node->inputs()[0]).dtype == DType::kBFloat16;
    const Edge r = through ? e.node->inputs()[0] : e;
    if (from_chain(e, ch) || from_chain(r, ch)) return false;
    const TensorSpec& s = spec_of(r);
    if (s.dtype != spec_.dtype || !s.shape.is_fully_defined() || s.shape != spec_.shape ||
        !fused_conv::whole_tensor(s.shape))
      return false;
    if (through) ch.members.push_back(e.node);  // before the Add: the root stays last
    e = r;
    return true;
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

  // Two consumers: swish, Mul(y, Sigmoid(y)) in either operand order (in a
  // bfloat16 chain the sigmoid may reach the Mul through Casts).
  bool swish(Chain& ch, Node* cur) {
    const auto& us = uses_.users(cur);
    if (us.size() != 2) return false;
    auto is = [](const Node* n, Epilogue e) { return n->op().epilogue == e; };
    Node* sig = is(us[0], Epilogue::kSigmoid) ? us[0] : us[1];
    Node* mul = sig == us[0] ? us[1] : us[0];
    if (claimed_.count(sig) || claimed_.count(mul)) return false;
    if (!is(sig, Epilogue::kSigmoid) || !is(mul, Epilogue::kMul) || !same_spec(sig) ||
        !same_spec(mul))
      return false;
    std::vector<Node*> path = {sig};  // the sigmoid, then Casts
    Node* last = sig;
    if (next_op(sig, path, last) != mul) return false;
    const auto& in = mul->inputs();
    if (!((in[0].node == cur && in[1].node == last) || (in[0].node == last && in[1].node == cur)))
      return false;
    ch.members.insert(ch.members.end(), path.begin(), path.end());
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

  // The step after `n`: its one user (next_step), past Casts in a bfloat16
  // chain (added to `path`); `prev` becomes the node the step reads.
  Node* next_op(Node* n, std::vector<Node*>& path, Node*& prev) {
    prev = n;
    Node* u = next_step(n);
    for (; u && half_ && float_cast(u); u = next_step(u)) path.push_back(prev = u);
    return u;
  }

  // Two consumers: hard swish as Keras writes it, Mul(y, RealDiv(relu6(
  // AddV2(y, 3)), 6)) (relu6_of's forms; the divide may be a Mul by 1/6;
  // operands either way; Casts between the steps in a bfloat16 chain).
  bool hard_swish(Chain& ch, Node* cur) {
    const auto& us = uses_.users(cur);
    if (us.size() != 2) return false;
    for (int k = 0; k < 2; ++k) {
      Node* add = us[static_cast<size_t>(k)];
      Node* mul = us[static_cast<size_t>(1 - k)];
      if (claimed_.count(add) || claimed_.count(mul) || !same_spec(add) || !same_spec(mul) ||
          add->op().epilogue != Epilogue::kAdd || !scalar_operand(add, cur, 3.f))
        continue;
      std::vector<Node*> path = {add};
      Node* six = relu6_of(add, path);
      if (!six) continue;
      path.push_back(six);
      Node* prev = six;
      Node* div = next_op(six, path, prev);
      const bool by_six = div && div->op().id == OpId::Div && div->inputs()[0].node == prev &&
                          scalar_operand(div, prev, 6.f);
      const bool by_sixth = div && div->op().epilogue == Epilogue::kMul &&
                            scalar_operand(div, prev, static_cast<float>(1.0 / 6.0));
      if (!(by_six || by_sixth)) continue;
      path.push_back(div);
      if (next_op(div, path, prev) != mul) continue;
      const auto& in = mul->inputs();
      if (mul->op().epilogue != Epilogue::kMul ||
          !((in[0].node == cur && in[1].node == prev) || (in[0].node == prev && in[1].node == cur)))
        continue;
      ch.members.insert(ch.members.end(), path.begin(), path.end());
      take(ch, mul, PostOp::kHardSwish);
      return true;
    }
    return false;
  }

  // SelectV2(Less(a, c), Relu(a), c), c >= 0 (Casts after the Relu in a
  // bfloat16 chain): relu6 as Keras 3's ReLU(max_value=c) writes it in
  // TensorFlow, Clip(0, c) but for NaN (c, not NaN). Its SelectV2 (the other
  // members added to `path`) and `c`, or nullptr.
  Node* select_of(Node* a, std::vector<Node*>& path, float& c) {
    const auto& us = uses_.users(a);
    if (us.size() != 2) return nullptr;
    for (int k = 0; k < 2; ++k) {
      Node* less = us[static_cast<size_t>(k)];
      Node* relu = us[static_cast<size_t>(1 - k)];
      if (claimed_.count(less) || claimed_.count(relu) || less->op().id != OpId::Less ||
          less->inputs()[0].node != a || relu->op().epilogue != Epilogue::kRelu ||
          !same_spec(relu) || !interior(less) || uses_.users(less).size() != 1)
        continue;
      const float* lim = const_scalar(less->inputs()[1]);
      Node* sel = uses_.users(less)[0];
      std::vector<Node*> p = {less, relu};
      Node* prev = relu;
      if (!lim || !(*lim >= 0.f) || next_op(relu, p, prev) != sel || sel->op().id != OpId::Select ||
          !same_spec(sel) || sel->inputs()[0].node != less || sel->inputs()[1].node != prev)
        continue;
      const float* lim2 = const_scalar(sel->inputs()[2]);
      if (!lim2 || *lim2 != *lim) continue;
      path.insert(path.end(), p.begin(), p.end());
      c = *lim;
      return sel;
    }
    return nullptr;
  }

  // Two consumers: relu6 in its select form (select_of).
  bool select_relu6(Chain& ch, Node* cur) {
    float c = 0;
    if (ch.has_clip) return false;
    Node* sel = select_of(cur, ch.members, c);
    if (!sel) return false;
    take(ch, sel, PostOp::kClip);
    set_clip(ch, 0.0, c);
    return true;
  }

  // relu6 of `n`'s value, Minimum(Relu(n), 6) or the select form (Casts
  // between the steps in a bfloat16 chain): its last node, the others added to
  // `path`; nullptr when neither.
  Node* relu6_of(Node* n, std::vector<Node*>& path) {
    Node* a = n;
    for (Node* u = next_step(a); u && half_ && float_cast(u); u = next_step(a))
      path.push_back(a = u);
    float c = 0;
    std::vector<Node*> p;
    if (Node* sel = select_of(a, p, c); sel && c == 6.f) {
      path.insert(path.end(), p.begin(), p.end());
      return sel;
    }
    Node* relu = next_step(a);
    if (!relu || relu->op().epilogue != Epilogue::kRelu) return nullptr;
    p = {relu};
    Node* prev = relu;
    Node* six = next_op(relu, p, prev);
    if (!six || six->op().id != OpId::Minimum || !scalar_operand(six, prev, 6.f)) return nullptr;
    path.insert(path.end(), p.begin(), p.end());
    return six;
  }

  passes::NodeUses uses_;
  bool half_ = false;  // the chain of a bfloat16 convolution
  // Nodes an earlier chain took: one-pixel outputs of two convolutions meet in
  // an Add that each chain could take as its step (the other as its operand).
  std::unordered_set<const Node*> claimed_;
  TensorSpec spec_;
  int64_t oc_ = -1;
};

// A convolution with a float32 or bfloat16 output, or (conv_float_filters) a
// bfloat16 one on a float32 filter with no epilogue yet.
bool fusable_conv(const Node* n) {
  const OpId id = n->op().id;
  const TensorSpec& out = n->outputs()[0];
  const bool fused = id == OpId::FusedConv2D || id == OpId::FusedDepthwiseConv2D;
  if (fused ? out.dtype != DType::kBFloat16 || n->inputs().size() != 2 ||
                  !std::get<std::string>(n->attr("fused_ops")).empty()
            : (id != OpId::Conv2D && id != OpId::DepthwiseConv2D) || !float_or_bf16(out.dtype))
    return false;
  return out.shape.rank_known() && out.shape.rank() == 4 && out.shape.dim(3) >= 0;
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
    const OpId id = n->op().id == OpId::Conv2D || n->op().id == OpId::FusedConv2D
                        ? OpId::FusedConv2D
                        : OpId::FusedDepthwiseConv2D;
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
