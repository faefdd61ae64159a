// fuse_attention: attention written as ops, BatchMatMulV2(Softmax(scale *
// BatchMatMulV2(q, k)), v) of rank 4 (Keras' MultiHeadAttention, the
// TensorFlow transformer tutorial's scaled_dot_product_attention) or 3 (one
// head: Keras' Attention layer), becomes one
// _FusedAttention node (ops/attention.cpp) whose scores never leave a
// per-thread buffer. Scalar constant factors on q or on the scores (Mul,
// RealDiv) become its scale; a mask added to the scores, or Keras' masked
// softmax, its mask input; a Transpose feeding q, k or v (the heads' split) or
// taking the result (their merge) is read through instead of computed.
// bfloat16 attention (mixed_bfloat16) fuses too: its softmax, mask steps
// and scale run in float32 between Casts, read through.
#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "pass_util.h"

namespace kiln {
namespace {
using passes::const_of;
using passes::spec_of;

constexpr int kRank = 4;
using Perm = std::array<int64_t, kRank>;
constexpr Perm kIdentity{0, 1, 2, 3}, kSwapped{0, 1, 3, 2};

class AttentionFuser {
 public:
  explicit AttentionFuser(const Graph& g) : uses_(g) {}

  // Rewrites the attention whose second product is `pv`; false when `pv` is
  // not one.
  bool fuse(Node* pv, PassResult& r) {
    if (!product(pv) || std::get<bool>(pv->attr("adj_x"))) return false;
    const DType type = pv->outputs()[0].dtype;
    half_ = type == DType::kBFloat16;
    Node* softmax = through_casts(pv->inputs()[0]).node;
    MaskMatch mask;
    if (!weights_of(softmax, mask) || !interior(softmax)) return false;
    double scale = 1;
    Edge x = through_casts(softmax->inputs()[0]);
    if (!peel_mask(x, mask)) return false;
    x = through_casts(x);
    peel_scale(x, scale);
    Node* scores = through_casts(x).node;
    if (!product(scores) || !interior(scores) || scores->outputs()[0].dtype != type) return false;
    Edge q = scores->inputs()[0], k = scores->inputs()[1], v = pv->inputs()[1];
    peel_scale(q, scale);
    Perm pq = std::get<bool>(scores->attr("adj_x")) ? kSwapped : kIdentity;
    Perm pk = std::get<bool>(scores->attr("adj_y")) ? kIdentity : kSwapped;
    Perm pvv = std::get<bool>(pv->attr("adj_y")) ? kSwapped : kIdentity;
    read_through(q, pq);
    peel_scale(q, scale);  // a scale before the heads' split
    read_through(k, pk);
    read_through(v, pvv);
    for (const Perm* p : {&pk, &pvv})
      if ((*p)[2] != kRank - 1 && (*p)[3] != kRank - 1) return false;  // neither dim innermost
    const int rank = pv->outputs()[0].shape.rank();                    // every operand's
    if (scores->outputs()[0].shape.rank() != rank) return false;
    for (Edge e : {q, k, v})
      if (spec_of(e).dtype != type || !float_operand(spec_of(e)) || spec_of(e).shape.rank() != rank)
        return false;
    Node* root = pv;
    Perm po = kIdentity;
    if (Node* t = merging_transpose(pv, po)) root = t;
    std::vector<int64_t> perms;
    for (const Perm* p : {&pq, &pk, &pvv, &po}) perms.insert(perms.end(), p->begin(), p->end());
    const TensorSpec spec = root->outputs()[0];
    std::vector<Edge> in = {q, k, v};
    if (!mask.mode.empty()) in.push_back(mask.value);
    root->reset(op_def(OpId::FusedAttention), std::move(in),
                Attrs{scale, std::move(perms), std::string(mask.mode), mask.fill}, {spec});
    r.rewritten.push_back(
        {root->name(), str_cat("softmax(q k^T) v of '", softmax->name(), "' -> _FusedAttention")});
    return true;
  }

 private:
  // A node whose only use is by the next step of the pattern.
  bool interior(const Node* n) const { return uses_.interior(n); }
  struct MaskMatch {
    std::string_view mode;  // "", "add" or "keep"
    Edge value;             // the mask
    double fill = -1e9;
    const Tensor* zeroing = nullptr;  // "keep" with the cast mask folded to a constant
  };
  // The weights `w` read by the second product: a Softmax, or one times a
  // bool mask cast to float32 (Keras' masked softmax zeroing what the mask
  // hides; a constant 0/1 when the mask was one); `w` becomes that Softmax.
  bool weights_of(Node*& w, MaskMatch& m) const {
    if (w->op().id == OpId::Softmax) return true;
    if (w->op().id != OpId::Mul || !interior(w) || w->inputs().size() != 2) return false;
    for (int i = 0; i < 2; ++i) {
      Node* sm = through_casts(w->inputs()[static_cast<size_t>(i)]).node;
      const Edge z = through_casts(w->inputs()[static_cast<size_t>(1 - i)]);
      if (sm->op().id != OpId::Softmax || !same_shape(w->outputs()[0], sm->outputs()[0])) continue;
      const Tensor* c = const_of(z);
      if (c && c->dtype() == DType::kFloat32) {
        m.zeroing = c;
      } else if (z.node->op().id == OpId::Cast && z.node->control_inputs().empty() &&
                 spec_of(z.node->inputs()[0]).dtype == DType::kBool) {
        m.value = z.node->inputs()[0];
      } else {
        continue;
      }
      m.mode = "keep";
      w = sm;
      return true;
    }
    return false;
  }
  // Whether `cond` is the mask that zeroes the weights: the cast's operand,
  // or a constant whose 0/1 values the zeroing constant holds.
  static bool same_mask(Edge cond, const MaskMatch& m) {
    if (!m.zeroing) return cond == m.value;
    const Tensor* c = const_of(cond);
    if (!c || c->dtype() != DType::kBool || c->shape() != m.zeroing->shape()) return false;
    const bool* keep = c->data<bool>();
    const float* z = m.zeroing->data<float>();
    for (int64_t i = 0; i < c->num_elements(); ++i)
      if (z[i] != (keep[i] ? 1.f : 0.f)) return false;
    return true;
  }
  // The mask step before the softmax, peeled off `x`: for "keep", a SelectV2
  // of the same mask with a scalar float32 constant where it is false; else
  // an optional AddV2 of a float32 value that does not enlarge the scores.
  bool peel_mask(Edge& x, MaskMatch& m) const {
    Node* n = x.node;
    if (!interior(n)) return m.mode.empty();
    if (m.mode == "keep") {
      if (n->op().id != OpId::Select || !same_mask(n->inputs()[0], m) || !scalar(n->inputs()[2]) ||
          !same_shape(n->outputs()[0], spec_of(n->inputs()[1])))
        return false;
      m.fill = static_cast<float>(scalar_value(n->inputs()[2]));
      m.value = n->inputs()[0];
      x = n->inputs()[1];
      return true;
    }
    if (n->op().id != OpId::Add || n->inputs().size() != 2) return true;
    for (int i = 0; i < 2; ++i) {
      Edge s = n->inputs()[static_cast<size_t>(i)];
      const Edge bias = n->inputs()[static_cast<size_t>(1 - i)];
      if (!same_shape(n->outputs()[0], spec_of(s)) || spec_of(bias).dtype != DType::kFloat32 ||
          !spec_of(bias).shape.rank_known() || spec_of(bias).shape.rank() > kRank)
        continue;
      double unused = 1;
      s = through_casts(s);
      peel_scale(s, unused);
      if (!product(through_casts(s).node)) continue;
      m.mode = "add";
      m.value = bias;
      x = n->inputs()[static_cast<size_t>(i)];
      return true;
    }
    return true;
  }
  // Two float32 values of the same fully known shape.
  static bool same_shape(const TensorSpec& a, const TensorSpec& b) {
    return a.dtype == b.dtype && a.shape.is_fully_defined() && a.shape == b.shape;
  }
  // A float32 or bfloat16 BatchMatMulV2 of rank 4 or 3 without control inputs.
  static bool product(const Node* n) {
    return n->op().id == OpId::MatMul && n->control_inputs().empty() &&
           float_operand(n->outputs()[0]);
  }
  // Float32 or bfloat16 of rank 4 or 3 (one head: read as rank 4 with a unit
  // axis at 1).
  static bool float_operand(const TensorSpec& s) {
    return (s.dtype == DType::kFloat32 || s.dtype == DType::kBFloat16) && s.shape.rank_known() &&
           (s.shape.rank() == kRank || s.shape.rank() == kRank - 1);
  }
  // In bfloat16 attention, `e` read through the Casts between float32 and
  // bf16 that mixed precision puts around each step (a step's float32 value
  // rounded to bf16 and back: the fused node keeps float32 there instead).
  Edge through_casts(Edge e) const {
    auto is_float = [](DType d) { return d == DType::kFloat32 || d == DType::kBFloat16; };
    while (half_ && e.node->op().id == OpId::Cast && interior(e.node) &&
           is_float(e.node->outputs()[0].dtype) && is_float(spec_of(e.node->inputs()[0]).dtype))
      e = e.node->inputs()[0];
    return e;
  }
  // An interior Cast from `from` to `to` without control inputs.
  bool cast(const Node* n, DType from, DType to) const {
    return n->op().id == OpId::Cast && interior(n) && n->outputs()[0].dtype == to &&
           spec_of(n->inputs()[0]).dtype == from;
  }
  // Peels Mul by / RealDiv by scalar constants off `e` (used only here) into
  // `scale`; a bfloat16 one computed in float32 (Cast(Mul(Cast(x), c))) too.
  void peel_scale(Edge& e, double& scale) const {
    for (;;) {
      if (peel_factor(e, scale)) continue;
      if (!cast(e.node, DType::kFloat32, DType::kBFloat16)) return;
      Edge inner = e.node->inputs()[0];
      double s = scale;
      if (!peel_factor(inner, s) || !cast(inner.node, DType::kBFloat16, DType::kFloat32)) return;
      scale = s;
      e = inner.node->inputs()[0];
    }
  }
  // One Mul or RealDiv by a scalar constant off `e`.
  bool peel_factor(Edge& e, double& scale) const {
    if (!interior(e.node) || e.node->inputs().size() != 2) return false;
    const OpId id = e.node->op().id;
    const Edge a = e.node->inputs()[0], b = e.node->inputs()[1];
    if (id == OpId::Mul && scalar(b) && !scalar(a)) {
      scale *= scalar_value(b);
      e = a;
    } else if (id == OpId::Mul && scalar(a) && !scalar(b)) {
      scale *= scalar_value(a);
      e = b;
    } else if (id == OpId::Div && scalar(b) && !scalar(a)) {
      scale /= scalar_value(b);
      e = a;
    } else {
      return false;
    }
    return true;
  }
  static bool scalar(Edge e) {
    const Tensor* t = const_of(e);
    return t && (t->dtype() == DType::kFloat32 || t->dtype() == DType::kBFloat16) &&
           t->num_elements() == 1;
  }
  static double scalar_value(Edge e) {
    const Tensor* t = const_of(e);
    return t->dtype() == DType::kFloat32 ? *t->data<float>() : to_float(*t->data<BFloat16>());
  }
  // Whether `t` is a Transpose of a float32 value of rank 4 or 3 without
  // control inputs: its perm in `tp` (an empty perm reverses) over the rank-4
  // views (a rank-3 perm keeps the unit axis 1 in place).
  static bool transpose_of(const Node* t, Perm& tp) {
    if (t->op().id != OpId::Transpose || !t->control_inputs().empty() ||
        !float_operand(t->outputs()[0]))
      return false;
    const int rank = t->outputs()[0].shape.rank();
    std::vector<int64_t> given = std::get<std::vector<int64_t>>(t->attr("perm"));
    if (given.empty())
      for (int a = rank - 1; a >= 0; --a) given.push_back(a);
    if (given.size() != static_cast<size_t>(rank)) return false;
    if (rank == kRank) {
      std::copy(given.begin(), given.end(), tp.begin());
      return true;
    }
    auto lift = [](int64_t a) { return a == 0 ? a : a + 1; };
    tp = {lift(given[0]), 1, lift(given[1]), lift(given[2])};
    return true;
  }
  // `e` read through the Transpose that produced it (any other users keep it).
  static void read_through(Edge& e, Perm& p) {
    Perm tp;
    if (!transpose_of(e.node, tp)) return;
    for (int64_t& a : p) a = tp[static_cast<size_t>(a)];
    e = e.node->inputs()[0];
  }
  // The Transpose that is the only user of `pv`, when the fused node can
  // write its layout (Dv innermost): its place in `po`.
  Node* merging_transpose(Node* pv, Perm& po) const {
    if (!interior(pv)) return nullptr;
    Node* t = uses_.users(pv)[0];
    Perm tp;
    if (!transpose_of(t, tp) || tp[kRank - 1] != kRank - 1) return nullptr;
    for (size_t i = 0; i < kRank; ++i) po[static_cast<size_t>(tp[i])] = static_cast<int64_t>(i);
    return t;
  }

  passes::NodeUses uses_;
  bool half_ = false;  // the pattern being matched is bfloat16
};

}  // namespace

PassResult fuse_attention(Graph& g) {
  PassResult r;
  r.pass = "fuse_attention";
  AttentionFuser fuser(g);
  for (Node* n : passes::node_list(g))
    if (n->op().id == OpId::MatMul) fuser.fuse(n, r);
  return r;
}

}  // namespace kiln
