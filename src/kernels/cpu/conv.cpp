// CPU kernels for Conv2D and DepthwiseConv2dNative (NHWC).
// float32 runs on oneDNN: primitives are cached by geometry (an LRU of
// kCacheSize entries), activations stay in NHWC, and the HWIO filter is
// reordered into the weights layout oneDNN prefers. The reordered filter is
// kept with its primitive and reused while the filter bytes are unchanged
// (checked with memcmp, far cheaper than a reorder). float64 uses a direct loop.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "kernel_util.h"
#include "ops/window.h"

namespace kiln::cpu {
namespace {

struct Geom {
  int64_t n, h, w, c, kh, kw, oc, mult, oh, ow, sh, sw, dh, dw, pt, pl, pb, pr;
  bool depthwise;
};

Geom geometry(const KernelContext& c, bool depthwise) {
  const Shape& in = c.input(0).shape();
  const Shape& f = c.input(1).shape();
  window::Hw st, dil;
  window::Padding pad = window::Padding::kValid;
  window::parse_hw(c.attr_ints(0), "strides", st);  // validated by inference
  window::parse_padding(c.attr_string(1), pad);
  window::parse_hw(c.attr_ints(2), "dilations", dil);
  window::Dim dh, dw;
  window::out_dim(in.dim(1), f.dim(0), st.h, dil.h, pad, "height", dh);
  window::out_dim(in.dim(2), f.dim(1), st.w, dil.w, pad, "width", dw);
  Geom g;
  g.n = in.dim(0);
  g.h = in.dim(1);
  g.w = in.dim(2);
  g.c = in.dim(3);
  g.kh = f.dim(0);
  g.kw = f.dim(1);
  g.mult = depthwise ? f.dim(3) : 1;
  g.oc = depthwise ? g.c * g.mult : f.dim(3);
  g.oh = dh.out;
  g.ow = dw.out;
  g.sh = st.h;
  g.sw = st.w;
  g.dh = dil.h;
  g.dw = dil.w;
  g.pt = dh.pad_before;
  g.pb = dh.pad_after;
  g.pl = dw.pad_before;
  g.pr = dw.pad_after;
  g.depthwise = depthwise;
  return g;
}

// ---- oneDNN ----

dnnl::engine& engine() {
  static dnnl::engine& e = *new dnnl::engine(dnnl::engine::kind::cpu, 0);  // never destroyed
  return e;
}
dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

using Key = std::array<int64_t, 19>;
Key key_of(const Geom& g) {
  return {g.n,  g.h,  g.w,  g.c,  g.kh, g.kw, g.oc, g.mult, g.oh,       g.ow,
          g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, g.pb, g.pr,   g.depthwise};
}

// Bytes held by all PackedWeights; new ones are not kept past the budget.
std::atomic<int64_t> g_packed_bytes{0};
constexpr int64_t kPackedBudget = int64_t{256} << 20;

// A filter reordered into the primitive's weights layout, with a copy of the
// filter bytes it came from: reused only while the filter is bit-identical,
// so a recycled or rewritten buffer can never give stale weights.
struct PackedWeights {
  std::vector<char> user;
  Tensor packed;
  int64_t bytes = 0;  // counted in g_packed_bytes
  ~PackedWeights() { g_packed_bytes -= bytes; }
};

struct ConvPrim {
  dnnl::convolution_forward conv;
  dnnl::memory::desc src_md, dst_md, user_wei_md, wei_md;
  size_t scratch_bytes = 0;
  std::optional<dnnl::reorder> wei_reorder;  // absent when layouts agree
  size_t reorder_scratch_bytes = 0;
  std::mutex weights_mu;
  std::shared_ptr<const PackedWeights> weights;  // last packed filter
};

std::shared_ptr<ConvPrim> create_prim(const Geom& g) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  using dims = dnnl::memory::dims;
  auto p = std::make_shared<ConvPrim>();
  p->src_md = dnnl::memory::desc({g.n, g.c, g.h, g.w}, dt::f32, tag::nhwc);
  p->dst_md = dnnl::memory::desc({g.n, g.oc, g.oh, g.ow}, dt::f32, tag::nhwc);
  dnnl::memory::desc any_wei;
  if (g.depthwise) {
    // Groups = channels; TF's [kh, kw, c, mult] as (g, o, i, h, w) strides.
    const dims wdims = {g.c, g.mult, 1, g.kh, g.kw};
    p->user_wei_md =
        dnnl::memory::desc(wdims, dt::f32, dims{g.mult, 1, 1, g.kw * g.c * g.mult, g.c * g.mult});
    any_wei = dnnl::memory::desc(wdims, dt::f32, tag::any);
  } else {
    const dims wdims = {g.oc, g.c, g.kh, g.kw};
    p->user_wei_md = dnnl::memory::desc(wdims, dt::f32, tag::hwio);
    any_wei = dnnl::memory::desc(wdims, dt::f32, tag::any);
  }
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, p->src_md, any_wei,
      p->dst_md, dims{g.sh, g.sw}, dims{g.dh - 1, g.dw - 1}, dims{g.pt, g.pl}, dims{g.pb, g.pr});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
  p->wei_md = pd.weights_desc();
  p->scratch_bytes = pd.scratchpad_desc().get_size();
  p->conv = dnnl::convolution_forward(pd);
  if (p->wei_md != p->user_wei_md) {
    dnnl::reorder::primitive_desc rpd(engine(), p->user_wei_md, engine(), p->wei_md, attr);
    p->reorder_scratch_bytes = rpd.scratchpad_desc().get_size();
    p->wei_reorder = dnnl::reorder(rpd);
  }
  return p;
}

constexpr size_t kCacheSize = 64;

// A small thread-safe LRU of primitives keyed by geometry.
std::shared_ptr<ConvPrim> cached_prim(const Geom& g) {
  static std::mutex mu;
  // Leaked on purpose: outlives every static, so exit order never matters.
  static auto& lru = *new std::list<std::pair<Key, std::shared_ptr<ConvPrim>>>;
  const Key k = key_of(g);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = lru.begin(); it != lru.end(); ++it)
      if (it->first == k) {
        lru.splice(lru.begin(), lru, it);
        return lru.front().second;
      }
  }
  std::shared_ptr<ConvPrim> p = create_prim(g);
  std::lock_guard<std::mutex> lock(mu);
  lru.emplace_front(k, p);
  if (lru.size() > kCacheSize) lru.pop_back();
  return p;
}

// Scratch bytes from kiln's pooled allocator.
void* scratch(Tensor& holder, size_t bytes) {
  if (bytes == 0) return nullptr;
  holder = Tensor::empty(DType::kUInt8, Shape{static_cast<int64_t>(bytes)});
  return holder.mutable_raw_data();
}

void conv_onednn(const Geom& g, const float* in, const float* filter, size_t filter_bytes,
                 float* out) {
  const std::shared_ptr<ConvPrim> p = cached_prim(g);
  dnnl::stream& s = stream();
  const dnnl::engine& e = engine();
  dnnl::memory wei(p->user_wei_md, e, const_cast<float*>(filter));
  Tensor wei_buf, scratch_buf, reorder_scratch_buf;
  std::shared_ptr<const PackedWeights> packed;
  if (p->wei_reorder) {
    std::lock_guard<std::mutex> lock(p->weights_mu);
    packed = p->weights;
  }
  if (packed && std::memcmp(packed->user.data(), filter, filter_bytes) == 0) {
    wei = dnnl::memory(p->wei_md, e, const_cast<void*>(packed->packed.raw_data()));
  } else if (p->wei_reorder) {
    dnnl::memory user = wei;
    wei = dnnl::memory(p->wei_md, e, scratch(wei_buf, p->wei_md.get_size()));
    std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, wei}};
    if (p->reorder_scratch_bytes)
      args.emplace(DNNL_ARG_SCRATCHPAD,
                   dnnl::memory({{static_cast<int64_t>(p->reorder_scratch_bytes)},
                                 dnnl::memory::data_type::u8,
                                 dnnl::memory::format_tag::x},
                                e, scratch(reorder_scratch_buf, p->reorder_scratch_bytes)));
    p->wei_reorder->execute(s, args);
    const int64_t bytes = static_cast<int64_t>(filter_bytes + wei_buf.nbytes());
    if (g_packed_bytes.load() + bytes <= kPackedBudget) {  // a soft budget
      auto w = std::make_shared<PackedWeights>();
      w->user.assign(reinterpret_cast<const char*>(filter),
                     reinterpret_cast<const char*>(filter) + filter_bytes);
      s.wait();
      w->packed = wei_buf;
      w->bytes = bytes;
      g_packed_bytes += bytes;
      std::lock_guard<std::mutex> lock(p->weights_mu);
      p->weights = std::move(w);
    }
  }
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, dnnl::memory(p->src_md, e, const_cast<float*>(in))},
      {DNNL_ARG_WEIGHTS, wei},
      {DNNL_ARG_DST, dnnl::memory(p->dst_md, e, out)}};
  if (p->scratch_bytes)
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory({{static_cast<int64_t>(p->scratch_bytes)},
                                                    dnnl::memory::data_type::u8,
                                                    dnnl::memory::format_tag::x},
                                                   e, scratch(scratch_buf, p->scratch_bytes)));
  p->conv.execute(s, args);
  s.wait();
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
  if (x.dtype() == DType::kFloat32) {
    try {
      conv_onednn(g, x.data<float>(), f.data<float>(), f.nbytes(), out.mutable_data<float>());
    } catch (const dnnl::error&) {
      // A geometry oneDNN rejects still gets a correct (slower) result.
      conv_direct<float>(g, x.data<float>(), f.data<float>(), out.mutable_data<float>());
    }
  } else {
    conv_direct<double>(g, x.data<double>(), f.data<double>(), out.mutable_data<double>());
  }
}

}  // namespace

void bind_conv_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Conv2D, conv_kernel<false>);
  t.kernel(OpId::DepthwiseConv2D, conv_kernel<true>);
}

}  // namespace kiln::cpu
