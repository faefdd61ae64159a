// CPU kernels for the convolution backward ops: Conv2DBackpropInput/Filter and
// DepthwiseConv2dNativeBackpropInput/Filter (NHWC).
// float32 runs on oneDNN's backward-data / backward-weights primitives
// (cached by geometry; the HWIO filter is reordered to and from the layout
// oneDNN prefers on every call). float64 and geometries oneDNN rejects use
// direct loops written race-free: the input gradient gathers, per input
// pixel, the output positions its window hits; the filter gradient is split
// by filter row.
#include <algorithm>
#include <array>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "conv_util.h"
#include "kernel_util.h"

namespace kiln::cpu {
void bind_pool_grad_kernels(OpTableBuilder& t);  // pool_grad.cpp
void bind_segment_kernels(OpTableBuilder& t);    // segment.cpp

namespace {

// ---- oneDNN ----

// One backward primitive. For backward data the user filter is reordered
// into wei_md; for backward weights the result in wei_md is reordered into
// the user filter layout.
struct BwdPrim {
  dnnl::primitive prim;
  dnnl::memory::desc src_md, dst_md, user_wei_md, wei_md;
  size_t scratch_bytes = 0;
  std::optional<dnnl::reorder> reorder;  // absent when layouts agree
  size_t reorder_scratch_bytes = 0;
};

std::shared_ptr<BwdPrim> create_bwd(const ConvGeom& g, bool weights) {
  using dims = dnnl::memory::dims;
  dnnl::engine& e = dnnl_engine();
  auto p = std::make_shared<BwdPrim>();
  const ConvDescs descs = conv_descs(g);
  p->src_md = descs.src;
  p->dst_md = descs.dst;
  p->user_wei_md = descs.user_wei;
  const dnnl::memory::desc& any_wei = descs.any_wei;
  const dims strides{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad_l{g.pt, g.pl}, pad_r{g.pb, g.pr};
  dnnl::primitive_attr attr, reorder_attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  reorder_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::convolution_forward::primitive_desc hint(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, p->src_md, any_wei,
                                      p->dst_md, strides, dil, pad_l, pad_r),
      e);
  if (weights) {
    const dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, p->src_md,
                                                 any_wei, p->dst_md, strides, dil, pad_l, pad_r),
        attr, e, hint);
    p->wei_md = pd.diff_weights_desc();
    p->scratch_bytes = pd.scratchpad_desc().get_size();
    p->prim = dnnl::convolution_backward_weights(pd);
  } else {
    const dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, p->src_md,
                                              any_wei, p->dst_md, strides, dil, pad_l, pad_r),
        attr, e, hint);
    p->wei_md = pd.weights_desc();
    p->scratch_bytes = pd.scratchpad_desc().get_size();
    p->prim = dnnl::convolution_backward_data(pd);
  }
  if (p->wei_md != p->user_wei_md) {
    const dnnl::reorder::primitive_desc rpd =
        weights ? dnnl::reorder::primitive_desc(e, p->wei_md, e, p->user_wei_md, reorder_attr)
                : dnnl::reorder::primitive_desc(e, p->user_wei_md, e, p->wei_md, reorder_attr);
    p->reorder_scratch_bytes = rpd.scratchpad_desc().get_size();
    p->reorder = dnnl::reorder(rpd);
  }
  return p;
}

struct BwdKey {
  std::array<int64_t, 20> v;
  bool operator==(const BwdKey&) const = default;
};

constexpr size_t kBwdCacheSize = 128;

// A small thread-safe LRU; nullptr (also cached) marks a configuration
// oneDNN does not implement.
std::shared_ptr<BwdPrim> cached_bwd(const ConvGeom& g, bool weights) {
  static std::mutex mu;
  // Leaked on purpose: outlives every static, so exit order never matters.
  static auto& lru = *new std::list<std::pair<BwdKey, std::shared_ptr<BwdPrim>>>;
  const BwdKey k{{g.n,  g.h,  g.w,  g.c,  g.kh, g.kw, g.oc, g.mult, g.oh,        g.ow,
                  g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, g.pb, g.pr,   g.depthwise, weights}};
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = lru.begin(); it != lru.end(); ++it)
      if (it->first == k) {
        lru.splice(lru.begin(), lru, it);
        return lru.front().second;
      }
  }
  std::shared_ptr<BwdPrim> p;
  try {
    p = create_bwd(g, weights);
  } catch (const dnnl::error&) {
    // Left null: callers fall back to the loops.
  }
  std::lock_guard<std::mutex> lock(mu);
  lru.emplace_front(k, p);
  if (lru.size() > kBwdCacheSize) lru.pop_back();
  return p;
}

void run_reorder(const BwdPrim& p, const dnnl::memory& from, const dnnl::memory& to) {
  Tensor scratch;
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  if (p.reorder_scratch_bytes)
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl_scratch_memory(scratch, p.reorder_scratch_bytes));
  p.reorder->execute(dnnl_stream(), args);
}

// dx from (filter, dy); false when oneDNN has no implementation.
bool backprop_input_onednn(const ConvGeom& g, const float* f, const float* dy, float* dx) {
  const std::shared_ptr<BwdPrim> p = cached_bwd(g, false);
  if (!p) return false;
  const dnnl::engine& e = dnnl_engine();
  dnnl::stream& s = dnnl_stream();
  dnnl::memory wei(p->user_wei_md, e, const_cast<float*>(f));
  Tensor wei_buf, scratch;
  if (p->reorder) {
    dnnl::memory packed(p->wei_md, e, dnnl_scratch(wei_buf, p->wei_md.get_size()));
    run_reorder(*p, wei, packed);
    wei = packed;
  }
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_DIFF_DST, dnnl::memory(p->dst_md, e, const_cast<float*>(dy))},
      {DNNL_ARG_WEIGHTS, wei},
      {DNNL_ARG_DIFF_SRC, dnnl::memory(p->src_md, e, dx)}};
  if (p->scratch_bytes)
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl_scratch_memory(scratch, p->scratch_bytes));
  p->prim.execute(s, args);
  s.wait();
  return true;
}

// df from (x, dy); false when oneDNN has no implementation.
bool backprop_filter_onednn(const ConvGeom& g, const float* x, const float* dy, float* df) {
  const std::shared_ptr<BwdPrim> p = cached_bwd(g, true);
  if (!p) return false;
  const dnnl::engine& e = dnnl_engine();
  dnnl::stream& s = dnnl_stream();
  const dnnl::memory user(p->user_wei_md, e, df);
  Tensor wei_buf, scratch;
  const dnnl::memory wei =
      p->reorder ? dnnl::memory(p->wei_md, e, dnnl_scratch(wei_buf, p->wei_md.get_size())) : user;
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, dnnl::memory(p->src_md, e, const_cast<float*>(x))},
      {DNNL_ARG_DIFF_DST, dnnl::memory(p->dst_md, e, const_cast<float*>(dy))},
      {DNNL_ARG_DIFF_WEIGHTS, wei}};
  if (p->scratch_bytes)
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl_scratch_memory(scratch, p->scratch_bytes));
  p->prim.execute(s, args);
  if (p->reorder) run_reorder(*p, wei, user);
  s.wait();
  return true;
}

// ---- direct loops ----

int64_t grain_for(double work_per_item) {
  return static_cast<int64_t>(
      std::max(1.0, static_cast<double>(config().parallel_grain) / std::max(1.0, work_per_item)));
}

// dx[n, ih, iw, :]: the windows that read input pixel (ih, iw) are those with
// ih = oh * sh - pt + kh * dh (and the same along w).
template <typename T>
void backprop_input_loop(const ConvGeom& g, const T* f, const T* dy, T* dx) {
  const int64_t per = g.depthwise ? g.mult : g.oc;  // filter values per input channel
  const double row_work = static_cast<double>(g.w) * static_cast<double>(g.kh * g.kw) *
                          static_cast<double>(g.c * per) / static_cast<double>(g.sh * g.sw);
  parallel_for(g.n * g.h, grain_for(row_work), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.h, ih = r % g.h;
      for (int64_t iw = 0; iw < g.w; ++iw) {
        T* o = dx + (r * g.w + iw) * g.c;
        std::fill(o, o + g.c, T(0));
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t t = ih + g.pt - kh * g.dh;
          if (t < 0) break;
          if (t % g.sh || t / g.sh >= g.oh) continue;
          const int64_t oh = t / g.sh;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const int64_t u = iw + g.pl - kw * g.dw;
            if (u < 0) break;
            if (u % g.sw || u / g.sw >= g.ow) continue;
            const int64_t ow = u / g.sw;
            const T* d = dy + ((n * g.oh + oh) * g.ow + ow) * g.oc;
            const T* fr = f + (kh * g.kw + kw) * g.c * per;
            for (int64_t ci = 0; ci < g.c; ++ci) {
              const T* fc = fr + ci * per;
              const T* dc = g.depthwise ? d + ci * per : d;
              T acc = 0;
              for (int64_t j = 0; j < per; ++j) acc += fc[j] * dc[j];
              o[ci] += acc;
            }
          }
        }
      }
    }
  });
}

// df[kh, kw, ci, :] = sum over n, oh, ow of x[n, ih, iw, ci] * dy[n, oh, ow, :]
// (the channel's slice of dy when depthwise), one filter row per task.
template <typename T>
void backprop_filter_loop(const ConvGeom& g, const T* x, const T* dy, T* df) {
  const int64_t per = g.depthwise ? g.mult : g.oc;
  const double row_work = static_cast<double>(g.n * g.oh * g.ow) * static_cast<double>(per);
  parallel_for(g.kh * g.kw * g.c, grain_for(row_work), [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t kh = q / (g.kw * g.c), kw = (q / g.c) % g.kw, ci = q % g.c;
      const int64_t dy_off = g.depthwise ? ci * per : 0;
      T* o = df + q * per;
      std::fill(o, o + per, T(0));
      for (int64_t n = 0; n < g.n; ++n)
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          const int64_t ih = oh * g.sh - g.pt + kh * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            const int64_t iw = ow * g.sw - g.pl + kw * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            const T xv = x[((n * g.h + ih) * g.w + iw) * g.c + ci];
            const T* d = dy + ((n * g.oh + oh) * g.ow + ow) * g.oc + dy_off;
            for (int64_t j = 0; j < per; ++j) o[j] += xv * d[j];
          }
        }
    }
  });
}

// (input_sizes, filter, out_backprop) -> dx.
template <bool kDepthwise>
void backprop_input_kernel(KernelContext& c) {
  const Tensor& f = c.input(1);
  const Tensor& dy = c.input(2);
  Tensor& dx = c.allocate_output(0);
  if (dx.num_elements() == 0) return;
  if (f.num_elements() == 0 || dy.num_elements() == 0) {
    std::memset(dx.mutable_raw_data(), 0, dx.nbytes());
    return;
  }
  const ConvGeom g = conv_geometry(c, dx.shape(), f.shape(), kDepthwise);
  if (dx.dtype() == DType::kFloat32) {
    bool done = false;
    try {
      done = backprop_input_onednn(g, f.data<float>(), dy.data<float>(), dx.mutable_data<float>());
    } catch (const dnnl::error&) {
    }
    if (!done)
      backprop_input_loop<float>(g, f.data<float>(), dy.data<float>(), dx.mutable_data<float>());
  } else {
    backprop_input_loop<double>(g, f.data<double>(), dy.data<double>(), dx.mutable_data<double>());
  }
}

// (input, filter_sizes, out_backprop) -> df.
template <bool kDepthwise>
void backprop_filter_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& dy = c.input(2);
  Tensor& df = c.allocate_output(0);
  if (df.num_elements() == 0) return;
  if (x.num_elements() == 0 || dy.num_elements() == 0) {
    std::memset(df.mutable_raw_data(), 0, df.nbytes());
    return;
  }
  const ConvGeom g = conv_geometry(c, x.shape(), df.shape(), kDepthwise);
  if (df.dtype() == DType::kFloat32) {
    bool done = false;
    try {
      done = backprop_filter_onednn(g, x.data<float>(), dy.data<float>(), df.mutable_data<float>());
    } catch (const dnnl::error&) {
    }
    if (!done)
      backprop_filter_loop<float>(g, x.data<float>(), dy.data<float>(), df.mutable_data<float>());
  } else {
    backprop_filter_loop<double>(g, x.data<double>(), dy.data<double>(), df.mutable_data<double>());
  }
}

}  // namespace

// Also binds the other backward kernels (pool_grad.cpp, segment.cpp): the
// NN family's binder calls bind_conv_kernels only.
void bind_conv_grad_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Conv2DBackpropInput, backprop_input_kernel<false>);
  t.kernel(OpId::Conv2DBackpropFilter, backprop_filter_kernel<false>);
  t.kernel(OpId::DepthwiseConv2DBackpropInput, backprop_input_kernel<true>);
  t.kernel(OpId::DepthwiseConv2DBackpropFilter, backprop_filter_kernel<true>);
  bind_pool_grad_kernels(t);
  bind_segment_kernels(t);
}

}  // namespace kiln::cpu
