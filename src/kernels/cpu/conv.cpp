// CPU kernels for Conv2D, DepthwiseConv2dNative and their fused forms
// (_FusedConv2D, _FusedDepthwiseConv2dNative: the convolution plus an
// epilogue, see ops/fused_conv.h), NHWC.
// float32 runs on oneDNN: primitives are cached by geometry and epilogue (an
// LRU of kCacheSize entries), activations stay in NHWC, and the HWIO filter is
// reordered into the weights layout oneDNN prefers. Reordered filters are
// kept per pair of layouts (shared by the primitives that have them: layers of
// one geometry, one layer's epilogues) and reused while the filter's buffer
// keeps the version it had when packed (Buffer::version, renewed by every
// write); wrapped memory (no version) keeps a copy of its bytes and is reused
// while they match (memcmp, far cheaper than a reorder; other buffers with
// those bytes share it). An epilogue becomes the primitive's bias and post-ops
// (per-channel binary mul/add/sub, eltwise relu/clip/logistic/tanh/swish), so
// the output is written once; its leading affine steps (a batch norm) are
// folded into the packed filter and the bias first (fused_conv_onednn), so they
// cost nothing per pixel. 3x3 stride-1 convolutions with settled filters run as
// Winograd's algorithm while Config::tensor_float_32 allows (on oneDNN's
// blocked layout, reordered per block). float64 and
// geometries oneDNN rejects use a direct loop (epilogue applied after it).
// bfloat16 inputs: conv_bf16.cpp.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>
#include <vector>

#include "conv_epilogue.h"
#include "conv_forward.h"
#include "conv_split.h"
#include "conv_util.h"
#include "functors.h"
#include "gemv.h"
#include "kernel_util.h"
#include "kiln/config.h"
#include "ops/fused_conv.h"
#include "ops/window.h"
#include "packed_weights.h"
#include "threading.h"

namespace kiln::cpu {
namespace {

using Geom = ConvGeom;

std::atomic<int64_t> g_winograd_blocks{0};

Geom geometry(const KernelContext& c, bool depthwise) {
  return conv_geometry(c, c.input(0).shape(), c.input(1).shape(), depthwise);
}

// ---- oneDNN ----

// Primitive cache key: geometry plus the epilogue's shape (steps, whether
// each input is per-channel or one element, clip bounds).
ConvKey key_of(const Geom& g, const EpilogueCall* ep) {
  ConvKey k = conv_key(g);
  if (!ep) return k;
  size_t a = 0;
  for (PostOp op : ep->ops) {
    k.extra.push_back(static_cast<int64_t>(op));
    if (fused_conv::takes_arg(op))
      k.extra.push_back(static_cast<int64_t>(arg_kind(*ep->args[a++])));
    if (op == PostOp::kClip) {
      k.extra.push_back(std::bit_cast<int32_t>(ep->clip_min));
      k.extra.push_back(std::bit_cast<int32_t>(ep->clip_max));
    }
  }
  return k;
}

struct ConvPrim {
  dnnl::convolution_forward conv;
  dnnl::memory::desc src_md, dst_md;
  bool bias = false;  // the epilogue's BiasAdd is the primitive's bias
  dnnl::memory::desc bias_md;
  std::vector<int> arg_post_index;  // post-op index of each binary post-op's input
  std::vector<dnnl::memory::desc> arg_md;
  std::vector<size_t> arg_of;  // its epilogue input
  // The epilogue input added as oneDNN's sum post-op (a residual of the output's
  // shape, copied into the destination first), or -1.
  int sum_arg = -1;
  size_t scratch_bytes = 0;
  // Winograd (Geom::winograd): src_md and dst_md are oneDNN's blocked layouts,
  // the NHWC data reordered into and out of them around the convolution.
  std::optional<dnnl::reorder> to_blocked, from_blocked;
  dnnl::memory::desc user_src_md, user_dst_md;
  std::vector<dnnl::eltwise_forward> after;  // activations oneDNN's Winograd does not fuse
  // The filter's layouts and its kept packings, shared by the primitives of
  // these layouts (layers sharing one geometry, a CNN's repeated blocks, each
  // keep theirs; a layer's other epilogues find its packing).
  std::shared_ptr<WeightPacks> wei;
};

dnnl::algorithm dnnl_alg(PostOp op) {
  switch (op) {
    case PostOp::kRelu: return dnnl::algorithm::eltwise_relu;
    case PostOp::kClip: return dnnl::algorithm::eltwise_clip;
    case PostOp::kSigmoid: return dnnl::algorithm::eltwise_logistic;
    case PostOp::kTanh: return dnnl::algorithm::eltwise_tanh;
    case PostOp::kSwish: return dnnl::algorithm::eltwise_swish;
    case PostOp::kHardSwish: return dnnl::algorithm::eltwise_hardswish;
    case PostOp::kMul: return dnnl::algorithm::binary_mul;
    case PostOp::kAdd:
    case PostOp::kBiasAdd: return dnnl::algorithm::binary_add;
    case PostOp::kSub: return dnnl::algorithm::binary_sub;
    case PostOp::kNone: break;
  }
  return dnnl::algorithm::undef;
}

// The epilogue as oneDNN attributes: bias, then post-ops in order.
dnnl::post_ops make_post_ops(const Geom& g, const EpilogueCall& ep, ConvPrim& p) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::post_ops po;
  size_t a = 0;
  for (size_t i = 0; i < ep.ops.size(); ++i) {
    const PostOp op = ep.ops[i];
    if (i == 0 && op == PostOp::kBiasAdd) {
      p.bias = true;
      p.bias_md = dnnl::memory::desc({g.oc}, dt::f32, tag::x);
      ++a;
    } else if (fused_conv::takes_arg(op)) {
      const ArgKind kind = arg_kind(*ep.args[a]);
      if (kind == ArgKind::kWhole) {
        // A residual: oneDNN's sum post-op on a destination that holds it (a binary
        // post-op of the output's shape keeps oneDNN off its brgemm kernels, 1.5x
        // slower; a channel block's buffer gets its part first). Winograd's blocked
        // destination holds no residual: conv_blocks adds it itself.
        if (p.sum_arg >= 0 || g.winograd) throw dnnl::error(dnnl_unimplemented, "residual post-op");
        p.sum_arg = static_cast<int>(a++);
        po.append_sum(1.f);
        continue;
      }
      p.arg_post_index.push_back(po.len());
      p.arg_of.push_back(a++);
      const int64_t n = kind == ArgKind::kScalar ? 1 : g.oc;
      p.arg_md.emplace_back(dnnl::memory::dims{1, n, 1, 1}, dt::f32, tag::nchw);
      po.append_binary(dnnl_alg(op), p.arg_md.back());
    } else {
      const float alpha = op == PostOp::kClip ? ep.clip_min : op == PostOp::kSwish ? 1.f : 0.f;
      const float beta = op == PostOp::kClip ? ep.clip_max : 0.f;
      po.append_eltwise(1.f, dnnl_alg(op), alpha, beta);
    }
  }
  return po;
}

// The primitive of `g` with `ep` as its bias and post-ops (`p`'s epilogue fields).
dnnl::convolution_forward::primitive_desc conv_pd(const Geom& g, const EpilogueCall* ep,
                                                  const dnnl::memory::desc& wei, ConvPrim& p) {
  using dims = dnnl::memory::dims;
  const auto alg =
      g.winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (ep) attr.set_post_ops(make_post_ops(g, *ep, p));
  const auto d =
      p.bias ? dnnl::convolution_forward::desc(
                   dnnl::prop_kind::forward_inference, alg, p.src_md, wei, p.bias_md, p.dst_md,
                   dims{g.sh, g.sw}, dims{g.dh - 1, g.dw - 1}, dims{g.pt, g.pl}, dims{g.pb, g.pr})
             : dnnl::convolution_forward::desc(
                   dnnl::prop_kind::forward_inference, alg, p.src_md, wei, p.dst_md,
                   dims{g.sh, g.sw}, dims{g.dh - 1, g.dw - 1}, dims{g.pt, g.pl}, dims{g.pb, g.pr});
  dnnl::convolution_forward::primitive_desc pd(d, attr, dnnl_engine());
  // A residual oneDNN's kernels do not take picks its reference loop: refused
  // (the caller adds it after the convolution instead).
  if (p.sum_arg >= 0 && std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
    throw dnnl::error(dnnl_unimplemented, "residual post-op");
  return pd;
}

// Winograd's primitive for `ep`: its post-ops, or (oneDNN's Winograd takes ReLU
// alone) the bias as the primitive's and each activation an in-place eltwise
// primitive on the blocked output. Throws dnnl::error when neither exists.
dnnl::convolution_forward::primitive_desc winograd_pd(const Geom& g, const EpilogueCall* ep,
                                                      const dnnl::memory::desc& wei, ConvPrim& p) {
  const dnnl::memory::desc src = p.src_md, dst = p.dst_md;
  try {
    return conv_pd(g, ep, wei, p);
  } catch (const dnnl::error&) {
    if (!ep) throw;
  }
  p = ConvPrim{};
  p.src_md = src;
  p.dst_md = dst;
  EpilogueCall bias;  // the leading BiasAdd, when there is one
  size_t i = 0;
  if (!ep->ops.empty() && ep->ops[0] == PostOp::kBiasAdd) {
    bias.ops.push_back(PostOp::kBiasAdd);
    bias.args.push_back(ep->args[0]);
    i = 1;
  }
  auto pd = conv_pd(g, bias.ops.empty() ? nullptr : &bias, wei, p);
  for (; i < ep->ops.size(); ++i) {
    const PostOp op = ep->ops[i];
    if (fused_conv::takes_arg(op)) throw dnnl::error(dnnl_unimplemented, "Winograd epilogue");
    const float alpha = op == PostOp::kClip ? ep->clip_min : op == PostOp::kSwish ? 1.f : 0.f;
    const float beta = op == PostOp::kClip ? ep->clip_max : 0.f;
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, dnnl_alg(op), pd.dst_desc(),
                                  alpha, beta);
    dnnl::eltwise_forward::primitive_desc epd(d, dnnl_engine());
    if (epd.scratchpad_desc().get_size()) throw dnnl::error(dnnl_unimplemented, "eltwise");
    p.after.emplace_back(epd);
  }
  return pd;
}

std::shared_ptr<ConvPrim> create_prim(const Geom& g, const EpilogueCall* ep) {
  using tag = dnnl::memory::format_tag;
  auto p = std::make_shared<ConvPrim>();
  const ConvDescs descs = conv_descs(g);
  // Winograd runs on a blocked layout oneDNN picks (nChw16c), never on NHWC.
  p->src_md = g.winograd ? dnnl::memory::desc(descs.src.dims(), descs.src.data_type(), tag::any)
                         : descs.src;
  p->dst_md = g.winograd ? dnnl::memory::desc(descs.dst.dims(), descs.dst.data_type(), tag::any)
                         : descs.dst;
  const auto pd =
      g.winograd ? winograd_pd(g, ep, descs.any_wei, *p) : conv_pd(g, ep, descs.any_wei, *p);
  p->scratch_bytes = pd.scratchpad_desc().get_size();
  p->conv = dnnl::convolution_forward(pd);
  if (g.winograd) {
    p->src_md = pd.src_desc();
    p->dst_md = pd.dst_desc();
    p->user_src_md = descs.src;
    p->user_dst_md = descs.dst;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::reorder::primitive_desc in(dnnl_engine(), descs.src, dnnl_engine(), p->src_md, attr);
    dnnl::reorder::primitive_desc out(dnnl_engine(), p->dst_md, dnnl_engine(), descs.dst, attr);
    // Layout reorders need no scratchpad; one that did would run unprovided.
    if (in.scratchpad_desc().get_size() || out.scratchpad_desc().get_size()) return nullptr;
    p->to_blocked = dnnl::reorder(in);
    p->from_blocked = dnnl::reorder(out);
  }
  p->wei = weight_packs(descs.user_wei, pd.weights_desc());
  return p;
}

// Enough for the distinct (geometry, epilogue) pairs of a few large CNNs, row
// blocks included (up to three per large convolution, two when the last channel
// block is narrower): EfficientNetV2-S run both as a function and under
// jit_compile (different epilogues) passed 1024, and each call then re-created
// primitives evicted by the other (its convolutions 20-40 % slower).
constexpr size_t kCacheSize = 4096;

// Primitives by geometry and epilogue.
std::shared_ptr<ConvPrim> cached_prim(const Geom& g, const EpilogueCall* ep) {
  static auto& cache = *new PrimCache<ConvPrim>(kCacheSize);
  return cache.get(key_of(g, ep), [&]() -> std::shared_ptr<ConvPrim> {
    try {
      return create_prim(g, ep);
    } catch (const dnnl::error&) {
      return nullptr;  // callers fall back
    }
  });
}

// An epilogue input from channel `ch0` on (one element: itself).
dnnl::memory user_memory(const dnnl::memory::desc& md, const Tensor& t, int64_t ch0) {
  const float* v = t.data<float>() + (t.num_elements() == 1 ? 0 : ch0);
  return dnnl::memory(md, dnnl_engine(), const_cast<float*>(v));
}

// Bytes rounded up to a cache line (parts of one scratch buffer).
size_t line_round(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

// Executes one convolution primitive on this thread.
// `ch0`: the first output channel of `p` (a channel block reads its part of the
// epilogue's per-channel inputs); `at`: the offset of its first output value in
// the whole output (where it reads a residual; -1: `out` holds it already).
void run_prim(ConvPrim& p, const void* in, const dnnl::memory& wei, void* out,
              const EpilogueCall* ep, int64_t ch0, int64_t at) {
  dnnl::stream& s = dnnl_stream();
  const dnnl::engine& e = dnnl_engine();
  // One scratch buffer: the primitive's scratchpad, then (Winograd) the
  // blocked source and destination.
  const size_t blocked_src = p.to_blocked ? line_round(p.src_md.get_size()) : 0;
  const size_t blocked_dst = p.to_blocked ? line_round(p.dst_md.get_size()) : 0;
  const size_t pad = line_round(p.scratch_bytes);
  Tensor scratch_buf;
  char* scratch = static_cast<char*>(dnnl_scratch(scratch_buf, pad + blocked_src + blocked_dst));
  void* src = const_cast<void*>(in);
  void* dst = out;
  if (p.to_blocked) {
    ++g_winograd_blocks;
    src = scratch + pad;
    dst = scratch + pad + blocked_src;
    p.to_blocked->execute(s,
                          {{DNNL_ARG_FROM, dnnl::memory(p.user_src_md, e, const_cast<void*>(in))},
                           {DNNL_ARG_TO, dnnl::memory(p.src_md, e, src)}});
  }
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, dnnl::memory(p.src_md, e, src)},
                                                {DNNL_ARG_WEIGHTS, wei},
                                                {DNNL_ARG_DST, dnnl::memory(p.dst_md, e, dst)}};
  if (ep) {
    if (p.bias) args.emplace(DNNL_ARG_BIAS, user_memory(p.bias_md, *ep->args[0], ch0));
    for (size_t j = 0; j < p.arg_md.size(); ++j)
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.arg_post_index[j]) | DNNL_ARG_SRC_1,
                   user_memory(p.arg_md[j], *ep->args[p.arg_of[j]], ch0));
    if (p.sum_arg >= 0 && at >= 0) {  // the residual's part into the destination (dense NHWC)
      const size_t es = p.dst_md.data_type() == dnnl::memory::data_type::bf16 ? 2 : 4;
      const char* r =
          static_cast<const char*>(ep->args[static_cast<size_t>(p.sum_arg)]->raw_data()) +
          static_cast<size_t>(at) * es;
      if (r != out) std::memcpy(out, r, p.dst_md.get_size());
    }
  }
  if (p.scratch_bytes)
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory({{static_cast<int64_t>(p.scratch_bytes)},
                                                    dnnl::memory::data_type::u8,
                                                    dnnl::memory::format_tag::x},
                                                   e, scratch));
  p.conv.execute(s, args);
  for (dnnl::eltwise_forward& a : p.after) {
    const dnnl::memory y(p.dst_md, e, dst);
    a.execute(s, {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, y}});
  }
  if (p.from_blocked)
    p.from_blocked->execute(s, {{DNNL_ARG_FROM, dnnl::memory(p.dst_md, e, dst)},
                                {DNNL_ARG_TO, dnnl::memory(p.user_dst_md, e, out)}});
  s.wait();
}

// ---- blocks on kiln's pool (conv_split.h) ----

// Runs `g` as the blocks of `sp` (rows x channels); false (nothing written) when a
// block has no primitive or channel blocks of one width disagree on the weights
// layout.
bool conv_blocks(const Geom& g, const Split& sp, const char* in, const FilterRef& filter, char* out,
                 const EpilogueCall* ep) {
  // Each block's primitive (created single-threaded; blocks of one shape share the
  // cached one), per row block and channel width (full blocks, the last one). Row
  // blocks differ where padding reaches into them: the first and last, and more of
  // them when a block is shorter than the padding.
  LibrariesSingleThreaded single;
  const int64_t es = g.bf16 ? 2 : 4;                          // element bytes
  const int64_t filter_es = g.bf16 && !g.f32_filter ? 2 : 4;  // the filter's
  const bool by_channel = sp.oc_block > 0;
  const int64_t ocb = by_channel ? sp.oc_block : g.oc, oc_blocks = ceil_div(g.oc, ocb);
  // Winograd's blocked output holds no residual for oneDNN's sum: the steps from
  // the residual's on run on the block's rows in the output.
  EpilogueCall head, tail;
  if (g.winograd && ep && split_at_residual(*ep, head, tail))
    ep = head.ops.empty() ? nullptr : &head;
  else
    tail.ops.clear();
  if (g.bf16 && !tail.ops.empty()) return false;  // the tail's steps read float32 rows
  const int64_t last = g.oc - (oc_blocks - 1) * ocb;
  // prims[2k]: row block k's full-width blocks; prims[2k + 1]: its last channel
  // block, looked up only when narrower (else the same primitive).
  std::vector<std::shared_ptr<ConvPrim>> prims(static_cast<size_t>(sp.per_image) * 2);
  for (int64_t k = 0; k < sp.per_image; ++k)
    for (int narrow = 0; narrow < 2; ++narrow) {
      auto& p = prims[static_cast<size_t>(k * 2 + narrow)];
      if (narrow && last == ocb) {
        p = prims[static_cast<size_t>(k * 2)];
        continue;
      }
      int64_t in_row;
      Geom bg = conv_row_block(g, k * sp.rows, std::min(g.oh, (k + 1) * sp.rows), in_row);
      if (bg.h <= 0) return false;
      bg.oc = narrow ? last : ocb;
      if (by_channel) bg.wei_ld = g.oc;
      p = cached_prim(bg, ep);
      // Row blocks may disagree on the weights layout (Winograd's tiles
      // differ with their height): each then packs its own.
      if (!p || (by_channel && p->wei->md != prims[static_cast<size_t>(narrow)]->wei->md))
        return false;
    }
  // The filter (each channel block's slice) in the blocks' weights layout.
  std::vector<Tensor> holders(static_cast<size_t>(oc_blocks));
  std::vector<std::shared_ptr<const PackedWeights>> packed(static_cast<size_t>(oc_blocks));
  std::vector<dnnl::memory> weis;
  const auto part = [&](int64_t b) {
    return FilterRef{filter.data + b * ocb * filter_es,
                     by_channel ? 0 : filter.bytes,
                     filter.version,
                     filter.scale ? filter.scale + b * ocb : nullptr,
                     g.oc,
                     b == oc_blocks - 1 ? last : ocb};
  };
  for (int64_t b = 0; b < oc_blocks; ++b)
    weis.push_back(packed_weights(prims[b == oc_blocks - 1 ? 1 : 0]->wei, part(b),
                                  holders[static_cast<size_t>(b)], packed[static_cast<size_t>(b)]));
  // Row blocks (one channel block) in a layout of their own.
  std::vector<dnnl::memory> row_weis(static_cast<size_t>(by_channel ? 0 : sp.per_image), weis[0]);
  std::vector<Tensor> row_holders(row_weis.size());
  std::vector<std::shared_ptr<const PackedWeights>> row_packed(row_weis.size());
  for (size_t k = 1; k < row_weis.size(); ++k)
    if (const auto& w = prims[2 * k]->wei; w->md != prims[0]->wei->md)
      row_weis[k] = packed_weights(w, part(0), row_holders[k], row_packed[k]);
  parallel_for(g.n * sp.per_image * oc_blocks, 1, [&](int64_t t0, int64_t t1) {
    LibrariesSingleThreaded task_single;
    Tensor tmp;
    char* buf = nullptr;
    if (by_channel)
      buf = static_cast<char*>(dnnl_scratch(tmp, static_cast<size_t>(sp.rows * g.ow * ocb * es)));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t % oc_blocks, k = t / oc_blocks % sp.per_image;
      const int64_t img = t / oc_blocks / sp.per_image, r0 = k * sp.rows;
      const int64_t r1 = std::min(g.oh, r0 + sp.rows), width = b == oc_blocks - 1 ? last : ocb;
      int64_t in_row;
      conv_row_block(g, r0, r1, in_row);
      const char* x = in + (img * g.h + in_row) * g.w * g.c * es;
      const int64_t at = (img * g.oh + r0) * g.ow * g.oc + b * ocb;
      char* y = out + at * es;
      ConvPrim& p = *prims[static_cast<size_t>(k * 2 + (width == ocb ? 0 : 1))];
      const bool sum_in_buf = by_channel && ep && p.sum_arg >= 0;
      if (sum_in_buf) {  // the block's part of the residual, for oneDNN's sum
        const char* r =
            static_cast<const char*>(ep->args[static_cast<size_t>(p.sum_arg)]->raw_data());
        for (int64_t m = 0; m < (r1 - r0) * g.ow; ++m)
          std::memcpy(buf + m * width * es, r + (at + m * g.oc) * es,
                      static_cast<size_t>(width * es));
      }
      run_prim(p, x, by_channel ? weis[static_cast<size_t>(b)] : row_weis[static_cast<size_t>(k)],
               by_channel ? buf : y, ep, b * ocb, sum_in_buf ? -1 : at);
      if (!by_channel) {
        for (int64_t m = 0; !tail.ops.empty() && m < (r1 - r0) * g.ow; ++m)
          epilogue_row(tail, reinterpret_cast<float*>(y) + m * g.oc, 0, g.oc, at + m * g.oc);
        continue;
      }
      for (int64_t m = 0; m < (r1 - r0) * g.ow; ++m) {
        std::memcpy(y + m * g.oc * es, buf + m * width * es, static_cast<size_t>(width * es));
        if (!tail.ops.empty())  // Winograd's (float32)
          epilogue_row(tail, reinterpret_cast<float*>(y) + m * g.oc, b * ocb, width, at + m * g.oc);
      }
    }
  });
  return true;
}

// ---- Winograd ----
// A float32 3x3 stride-1 convolution of enough work runs as Winograd's
// F(4x4, 3x3) or F(2x2, 3x3) on oneDNN's blocked layout (nChw16c), the blocks'
// rows reordered into it and out again: 0.35-0.8x the direct convolution's time
// on ResNet's and EfficientNet's shapes, reorders included, with errors about
// 1e-5 of the output's scale (direct: 1e-6). Config::tensor_float_32 allows it.
// oneDNN 2.6 implements it on AVX-512 only (winograd_available).

bool winograd_pays(const Geom& g) {
  return config().tensor_float_32 && winograd_available() && !g.bf16 && !g.depthwise && g.kh == 3 &&
         g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.c >= 16 && g.oc >= 16 &&
         conv_macs(g) >= kMinSplitMacs;
}

// Whether filter `f` had this version at its previous call: Winograd's filter
// is repacked (a transform, slower than a reorder) whenever the filter changes,
// which a training step does every call: 2x the direct step's time on a 7x7x512
// layer. Such filters stay direct; a settled one (inference, from its second
// call) runs as Winograd. Filters without a version (wrapped constants) are
// settled.
bool filter_settled(const FilterRef& f) {
  if (!f.version) return true;
  static std::mutex mu;
  static auto& last = *new std::unordered_map<const void*, uint64_t>;  // data -> version
  std::lock_guard<std::mutex> lock(mu);
  if (last.size() >= 4096) last.clear();  // models' filters come back in one call
  const auto [it, added] = last.try_emplace(f.data, f.version);
  if (added || it->second != f.version) {
    it->second = f.version;
    return false;
  }
  return true;
}

// Runs the convolution (and `ep`, when given) on oneDNN; false when oneDNN
// has no implementation for this configuration.
bool conv_onednn(const Geom& g, const void* in, const FilterRef& filter, void* out,
                 const EpilogueCall* ep = nullptr) {
  if (winograd_pays(g) && filter_settled(filter)) {
    Geom wg = g;
    wg.winograd = true;
    const Split sp = winograd_split(wg, filter.version != 0);
    if (sp.rows &&
        conv_blocks(wg, sp, static_cast<const char*>(in), filter, static_cast<char*>(out), ep))
      return true;
  }
  const Split sp = split_of(g, filter.version != 0);
  if (sp.rows &&
      conv_blocks(g, sp, static_cast<const char*>(in), filter, static_cast<char*>(out), ep))
    return true;
  // Too small to split: one thread (an OpenMP team would cost more than it saves).
  std::optional<LibrariesSingleThreaded> single;
  if (!sp.rows) single.emplace();
  const std::shared_ptr<ConvPrim> p = cached_prim(g, ep);
  if (!p) return false;
  Tensor holder;
  std::shared_ptr<const PackedWeights> packed;
  run_prim(*p, in, packed_weights(p->wei, filter, holder, packed), out, ep, 0, 0);
  return true;
}

// ---- direct loop (float64) ----

template <typename T>
void conv_direct(const Geom& g, const T* in, const T* filter, T* out) {
  const double row_work = static_cast<double>(g.ow) * static_cast<double>(g.oc) *
                          static_cast<double>(g.kh * g.kw) * static_cast<double>(g.c);
  const int64_t grain = static_cast<int64_t>(
      std::max(1.0, static_cast<double>(config().parallel_grain) / std::max(1.0, row_work)));
  parallel_for(g.n * g.oh, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.oh, oh = r % g.oh;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        T* o = out + (r * g.ow + ow) * g.oc;
        std::fill(o, o + g.oc, T(0));
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t ih = oh * g.sh - g.pt + kh * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const int64_t iw = ow * g.sw - g.pl + kw * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            const T* x = in + ((n * g.h + ih) * g.w + iw) * g.c;
            const T* f = filter + (kh * g.kw + kw) * g.c * (g.depthwise ? g.mult : g.oc);
            if (g.depthwise) {
              for (int64_t ci = 0; ci < g.c; ++ci) {
                const T xv = x[ci];
                const T* fr = f + ci * g.mult;
                T* orow = o + ci * g.mult;
                for (int64_t m = 0; m < g.mult; ++m) orow[m] += xv * fr[m];
              }
            } else {
              for (int64_t ci = 0; ci < g.c; ++ci) {
                const T xv = x[ci];
                const T* fr = f + ci * g.oc;
                for (int64_t co = 0; co < g.oc; ++co) o[co] += xv * fr[co];
              }
            }
          }
        }
      }
    }
  });
}

// A 1x1 convolution of one-pixel images (squeeze-and-excitation, a classifier
// head at batch 1) as a product of few rows (gemv.h) reading the HWIO filter in
// place: bound by the filter's read, which oneDNN's blocked kernels and packing
// took twice as long over. False when `g` is not one.
bool one_pixel_product(const Geom& g, const float* x, const float* f, float* y) {
  if (g.depthwise || g.kh != 1 || g.kw != 1 || g.h != 1 || g.w != 1 || g.oh != 1 || g.ow != 1 ||
      g.pt || g.pl || g.pb || g.pr || g.n > kGemvMaxRows || g.wei_ld)
    return false;
  gemv_rows(g.n, g.oc, g.c, x, g.c, f, g.oc, y, g.oc);
  return true;
}

template <bool kDepthwise>
void conv_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& f = c.input(1);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  if (x.num_elements() == 0 || f.num_elements() == 0) {  // no input channels
    std::memset(out.mutable_raw_data(), 0, out.nbytes());
    return;
  }
  const Geom g = geometry(c, kDepthwise);
  if (x.dtype() == DType::kBFloat16) {
    conv_bf16(g, x, f, EpilogueCall{}, out, c.op().type_name);
  } else if (x.dtype() == DType::kFloat32) {
    bool done = one_pixel_product(g, x.data<float>(), f.data<float>(), out.mutable_data<float>());
    try {
      if (!done) done = conv_onednn(g, x.data<float>(), filter_ref(f), out.mutable_data<float>());
    } catch (const dnnl::error&) {
    }
    // A geometry oneDNN rejects still gets a correct (slower) result.
    if (!done) conv_direct<float>(g, x.data<float>(), f.data<float>(), out.mutable_data<float>());
  } else {
    conv_direct<double>(g, x.data<double>(), f.data<double>(), out.mutable_data<double>());
  }
}

}  // namespace

bool fused_conv_onednn(const Geom& g, const void* x, const Tensor& f, void* y,
                       const EpilogueCall& ep) {
  if (ep.ops.empty()) return conv_onednn(g, x, filter_ref(f), y);
  EpilogueCall folded;
  std::vector<float> scale;
  Tensor bias;
  // The factors fold into a float32 filter (a bfloat16 one keeps its post-ops).
  if (f.dtype() != DType::kFloat32 || !fold_affine(ep, g.oc, folded, scale, bias))
    return conv_onednn(g, x, filter_ref(f), y, &ep);
  FilterRef filter = filter_ref(f);
  if (!scale.empty()) {
    filter.scale = scale.data();
    filter.scale_ld = filter.scale_n = g.oc;
  }
  return conv_onednn(g, x, filter, y, folded.ops.empty() ? nullptr : &folded);
}

void fused_conv_f32(const Geom& g, const Tensor& x, const Tensor& f, EpilogueCall& ep, float* y,
                    int64_t n, const char* op) {
  if (x.num_elements() == 0 || f.num_elements() == 0) {  // no input channels
    std::memset(y, 0, static_cast<size_t>(n) * 4);
    apply_epilogue(ep, g.oc, y, n);
    return;
  }
  if (one_pixel_product(g, x.data<float>(), f.data<float>(), y)) {  // never took a residual
    apply_epilogue(ep, g.oc, y, n);
    return;
  }
  bool done = false;
  Tensor kept;
  try {
    done = fused_conv_onednn(g, x.data<float>(), f, y, ep);
    if (!done) keep_residual(ep, y, kept);
    // No primitive takes the residual: the steps before it fused, the rest after.
    EpilogueCall head, tail;
    if (!done && split_at_residual(ep, head, tail) &&
        fused_conv_onednn(g, x.data<float>(), f, y, head)) {
      apply_epilogue(tail, g.oc, y, n);
      done = true;
    }
    // No fused implementation: oneDNN's plain convolution, then the epilogue.
    if (!done && conv_onednn(g, x.data<float>(), filter_ref(f), y)) {
      apply_epilogue(ep, g.oc, y, n);
      done = true;
    }
  } catch (const dnnl::error& e) {
    // oneDNN failed while running (its primitives were made): the residual the
    // output took over may be overwritten already.
    if (took_residual(ep, y))
      throw InternalError(str_cat(op, ": oneDNN failed (", e.what(),
                                  ") after the output took over its residual input"));
  }
  if (!done) {
    conv_direct<float>(g, x.data<float>(), f.data<float>(), y);
    apply_epilogue(ep, g.oc, y, n);
  }
}

namespace {

// The input a fused convolution's output may take over: its first residual,
// when oneDNN's sum will add it in place (a dense destination: no one-pixel
// product, Winograd or channel blocks); else -1.
int residual_to_reuse(const Geom& g, const EpilogueCall& ep, const FilterRef& filter) {
  size_t a = 0;
  for (PostOp op : ep.ops) {
    if (!fused_conv::takes_arg(op)) continue;
    if (arg_kind(*ep.args[a]) == ArgKind::kWhole) {
      const bool dense = !(g.kh == 1 && g.kw == 1 && g.h == 1 && g.w == 1) && !winograd_pays(g) &&
                         split_of(g, filter.version != 0).oc_block == 0;
      return dense ? static_cast<int>(2 + a) : -1;
    }
    ++a;
  }
  return -1;
}

// _FusedConv2D / _FusedDepthwiseConv2dNative: float32, or a bfloat16 input
// (conv_bf16.cpp) with its epilogue computed on the float32 accumulator.
template <bool kDepthwise>
void fused_conv_kernel(KernelContext& c) {
  using namespace fused_conv;
  const Tensor& x = c.input(0);
  const Tensor& f = c.input(1);
  EpilogueCall ep;
  parse_post_ops(c.attr_string("fused_ops"), ep.ops);  // validated by inference
  for (size_t i = 2; i < c.num_inputs(); ++i) ep.args.push_back(&c.input(i));
  ep.clip_min = static_cast<float>(c.attr_float("clip_min"));
  ep.clip_max = static_cast<float>(c.attr_float("clip_max"));
  const bool empty = x.num_elements() == 0 || f.num_elements() == 0;  // no input channels
  Geom g = geometry(c, kDepthwise);
  g.bf16 = x.dtype() == DType::kBFloat16;
  g.f32_filter = g.bf16 && f.dtype() == DType::kFloat32;
  // A bfloat16 output takes a residual over only where oneDNN's bf16 sum adds it.
  const bool reuse = !empty && (!g.bf16 || conv_bf16_native());
  Tensor& out = c.allocate_output(0, reuse ? residual_to_reuse(g, ep, filter_ref(f)) : -1);
  if (out.num_elements() == 0) return;
  if (g.bf16)
    conv_bf16(g, x, f, ep, out, c.op().type_name);
  else
    fused_conv_f32(g, x, f, ep, out.mutable_data<float>(), out.num_elements(), c.op().type_name);
}

}  // namespace

namespace {
// Whether oneDNN implements a 3x3 SAME convolution of 16 channels on 16x16
// in `g`'s way (Winograd, bf16).
bool implemented(void (*way)(Geom&)) {
  Geom g{1, 16, 16, 16, 3, 3, 16, 1, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1, false};
  way(g);
  LibrariesSingleThreaded single;
  try {
    return create_prim(g, nullptr) != nullptr;
  } catch (const dnnl::error&) {
    return false;
  }
}
}  // namespace

bool winograd_available() {
  static const bool available = implemented([](Geom& g) { g.winograd = true; });
  return available;
}

bool conv_bf16_native() {
  static const bool native = implemented([](Geom& g) { g.bf16 = true; });
  return native;
}

int64_t winograd_blocks() {
  return g_winograd_blocks.load();
}

void bind_conv_grad_kernels(OpTableBuilder& t);  // conv_grad.cpp: the backward ops

void bind_conv_kernels(OpTableBuilder& t) {
  bind_conv_grad_kernels(t);
  t.kernel(OpId::Conv2D, conv_kernel<false>);
  t.kernel(OpId::DepthwiseConv2D, conv_kernel<true>);
  t.kernel(OpId::FusedConv2D, fused_conv_kernel<false>);
  t.kernel(OpId::FusedDepthwiseConv2D, fused_conv_kernel<true>);
}

}  // namespace kiln::cpu
