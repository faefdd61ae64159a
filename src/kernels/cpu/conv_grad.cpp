// CPU kernels for the convolution backward ops: Conv2DBackpropInput/Filter and
// DepthwiseConv2dNativeBackpropInput/Filter (NHWC).
// float32 (and bfloat16: oneDNN's bf16 kernels, float32 accumulation, each
// gradient rounded once) runs on oneDNN's backward-data / backward-weights primitives
// (cached by geometry; the HWIO filter is reordered to and from the layout
// oneDNN prefers on every call). Large convolutions run as parts on kiln's
// pool, each a single-threaded primitive (see "parts on kiln's pool").
// float64 and geometries oneDNN rejects use direct loops written race-free:
// the input gradient gathers, per input pixel, the output positions its
// window hits; the filter gradient is split by filter row.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "conv_util.h"
#include "kernel_util.h"
#include "threading.h"

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
  // bfloat16 backward weights sum their products in a float32 gradient (parts
  // summed, rounded once by the kernel); g.f32_filter made user_wei float32.
  const dnnl::memory::desc any_wei =
      weights && g.bf16 ? dnnl::memory::desc(descs.any_wei.dims(), dnnl::memory::data_type::f32,
                                             dnnl::memory::format_tag::any)
                        : descs.any_wei;
  const dims strides{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad_l{g.pt, g.pl}, pad_r{g.pb, g.pr};
  dnnl::primitive_attr attr, reorder_attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  reorder_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::convolution_forward::primitive_desc hint(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, p->src_md, descs.any_wei,
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

// Enough for a CNN's distinct geometries, the parts of split ones included
// (up to four per large convolution).
constexpr size_t kBwdCacheSize = 1024;

// Primitives by geometry and kind.
std::shared_ptr<BwdPrim> cached_bwd(const ConvGeom& g, bool weights) {
  static auto& cache = *new PrimCache<BwdPrim>(kBwdCacheSize);
  ConvKey k = conv_key(g);
  k.extra.push_back(weights);
  return cache.get(std::move(k), [&]() -> std::shared_ptr<BwdPrim> {
    try {
      return create_bwd(g, weights);
    } catch (const dnnl::error&) {
      return nullptr;  // callers fall back to the loops
    }
  });
}

// Runs `prim` with `args` and a scratchpad of `scratch_bytes` on this thread's stream.
void execute(const dnnl::primitive& prim, size_t scratch_bytes,
             std::unordered_map<int, dnnl::memory> args) {
  Tensor scratch;
  if (scratch_bytes) args.emplace(DNNL_ARG_SCRATCHPAD, dnnl_scratch_memory(scratch, scratch_bytes));
  dnnl::stream& s = dnnl_stream();
  prim.execute(s, args);
  s.wait();
}

dnnl::memory mem(const dnnl::memory::desc& md, const void* data) {
  return dnnl::memory(md, dnnl_engine(), const_cast<void*>(data));
}

// Bytes of one element of x, dy and dx (bfloat16 or float32).
int64_t elem_bytes(const ConvGeom& g) {
  return g.bf16 ? 2 : 4;
}

// ---- parts on kiln's pool ----
// A large backward convolution runs as parts, each a single-threaded primitive
// taken dynamically by kiln's pool (as the forward's row blocks, conv.cpp): no
// OpenMP team spins on a busy machine. Backward data splits dx: whole-image
// blocks when the batch has two images per thread, else blocks of dx rows
// (each reads the dy rows whose windows touch it), four parts per thread.
// Backward weights splits the sum over dy: whole-image blocks, else the
// forward's row blocks, each into its own partial filter gradient (two per
// thread, fewer for large filters), summed in parallel and reordered once.
// Small ones run one single-threaded primitive; OpenMP is the last resort (a
// part oneDNN rejects, or parts that disagree on the weights layout).
// Why (bench_grad BM_ConvBackprop, 2 cores): idle as fast as one OpenMP
// primitive; beside two busy processes, 1x56x56x64 3x3 dx 16 -> 5 ms and df
// 19 -> 8 ms (row parts), depthwise 8x56x56x64 dx 8 -> 2.5 ms (image parts).

constexpr int kDataPartsPerThread = 4;
constexpr int kWeightPartsPerThread = 2;
// Partial filter gradients cost a pass over the filter each: at most
// macs / (filter elements * kMacsPerSummed) of them.
constexpr double kMacsPerSummed = 128;

// One part: its convolution, where its rows start in x (or dx) and dy
// (elements), and its primitive.
struct Part {
  ConvGeom g;
  int64_t x_off = 0, dy_off = 0;
  std::shared_ptr<BwdPrim> prim;
};

double filter_elements(const ConvGeom& g) {
  return static_cast<double>(g.kh * g.kw * g.c * (g.depthwise ? g.mult : g.oc));
}

// Blocks of whole images, at most `count`.
std::vector<Part> image_parts(const ConvGeom& g, int64_t count) {
  const int64_t per = (g.n + count - 1) / count;
  std::vector<Part> parts;
  for (int64_t i = 0; i < g.n; i += per) {
    Part& q = parts.emplace_back(Part{g, i * g.h * g.w * g.c, i * g.oh * g.ow * g.oc, nullptr});
    q.g.n = std::min(per, g.n - i);
  }
  return parts;
}

// Blocks of dy rows of single images (as the forward's, of even sizes), at
// most `count`; each reads the x rows its windows touch.
std::vector<Part> output_row_parts(const ConvGeom& g, int64_t count) {
  const int64_t per_image = std::min(g.oh, std::max<int64_t>(1, count / g.n));
  std::vector<Part> parts;
  for (int64_t i = 0; i < g.n; ++i)
    for (int64_t k = 0; k < per_image; ++k) {
      const int64_t r0 = k * g.oh / per_image, r1 = (k + 1) * g.oh / per_image;
      int64_t x_row;
      const ConvGeom b = conv_row_block(g, r0, r1, x_row);
      if (b.h <= 0) return {};
      parts.push_back(
          Part{b, (i * g.h + x_row) * g.w * g.c, (i * g.oh + r0) * g.ow * g.oc, nullptr});
    }
  return parts;
}

// The first dy row whose window reaches x row `h`.
int64_t first_dy_row(const ConvGeom& g, int64_t h) {
  const int64_t reach = (g.kh - 1) * g.dh;  // a window's rows past its first
  return std::max<int64_t>(0, (h + g.pt - reach + g.sh - 1) / g.sh);
}

// dx rows [h0, h1) of one image as a convolution of their own: the dy rows
// whose windows touch them, from `dy_row`, with the padding that places those
// windows (never negative when h0 is 0 or a window's first row).
ConvGeom data_rows(const ConvGeom& g, int64_t h0, int64_t h1, int64_t& dy_row) {
  ConvGeom b = g;
  b.n = 1;
  dy_row = first_dy_row(g, h0);
  b.h = h1 - h0;
  b.oh = std::min(g.oh, (h1 - 1 + g.pt) / g.sh + 1) - dy_row;
  b.pt = g.pt + h0 - dy_row * g.sh;
  b.pb = std::max<int64_t>(0, (b.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1 - b.h - b.pt);
  return b;
}

// Blocks of dx rows of single images, about `count`, of even sizes: every
// block but the first starts at a window's first row (a stride multiple past -pt).
std::vector<Part> input_row_parts(const ConvGeom& g, int64_t count) {
  const int64_t per_image = (count + g.n - 1) / g.n;
  const int64_t starts = (g.h + g.pt + g.sh - 1) / g.sh;  // window starts before row h
  std::vector<Part> parts;
  for (int64_t i = 0; i < g.n; ++i)
    for (int64_t k = 1, h0 = 0, h1; h0 < g.h; ++k, h0 = h1) {
      h1 = k >= per_image ? g.h : std::clamp(k * starts / per_image * g.sh - g.pt, h0, g.h);
      if (h1 == h0) continue;
      if (first_dy_row(g, h1) >= g.oh) h1 = g.h;  // rows no window reads join this block
      int64_t dy_row;
      const ConvGeom b = data_rows(g, h0, h1, dy_row);
      parts.push_back(
          Part{b, (i * g.h + h0) * g.w * g.c, (i * g.oh + dy_row) * g.ow * g.oc, nullptr});
    }
  return parts;
}

// The parts of g's backward data (or weights); empty when too small to split.
std::vector<Part> split(const ConvGeom& g, bool weights) {
  const double macs = conv_macs(g);
  if (macs < kMinSplitMacs) return {};
  const int threads = ThreadPool::global().num_threads();  // large work starts the pool
  double want = threads * (weights ? kWeightPartsPerThread : kDataPartsPerThread);
  want = std::min(want, macs / kMinBlockMacs);
  if (weights) want = std::min(want, macs / (filter_elements(g) * kMacsPerSummed));
  const auto count = static_cast<int64_t>(want);
  if (threads <= 1 || count < 2) return {};
  std::vector<Part> parts = g.n >= std::min<int64_t>(2 * threads, count) ? image_parts(g, count)
                            : weights ? output_row_parts(g, count)
                                      : input_row_parts(g, count);
  if (parts.size() < 2) parts.clear();
  return parts;
}

// Looks up each part's primitive; false when one has none or the parts
// disagree on the weights layout.
bool find_prims(std::vector<Part>& parts, bool weights) {
  for (size_t i = 0; i < parts.size(); ++i) {
    Part& q = parts[i];
    q.prim = i && q.g == parts[i - 1].g ? parts[i - 1].prim : cached_bwd(q.g, weights);
    if (!q.prim || q.prim->wei_md != parts[0].prim->wei_md) return false;
  }
  return true;
}

// fn(i) for each of n parts: on this thread when one, else on kiln's pool
// with oneDNN single-threaded.
template <typename F>
void for_parts(size_t n, F fn) {
  if (n == 1) return fn(0);
  parallel_for(static_cast<int64_t>(n), 1, [&](int64_t t0, int64_t t1) {
    LibrariesSingleThreaded single;
    for (int64_t t = t0; t < t1; ++t) fn(t);
  });
}

// Runs g's backward data (or weights) as run(parts): split on kiln's pool, or
// one single-threaded primitive when small, or one on oneDNN's OpenMP team as
// the last resort; false when oneDNN has no implementation.
template <typename Run>
bool run_onednn(const ConvGeom& g, bool weights, Run run) {
  {
    LibrariesSingleThreaded single;  // primitives created for single-threaded parts
    std::vector<Part> parts = split(g, weights);
    const bool small = parts.empty();
    if (small) parts.push_back(Part{g, 0, 0, nullptr});
    if (find_prims(parts, weights)) {
      run(parts);
      return true;
    }
    if (small) return false;
  }
  std::vector<Part> whole{Part{g, 0, 0, nullptr}};
  if (!find_prims(whole, weights)) return false;
  run(whole);
  return true;
}

// dx from (filter, dy); false when oneDNN has no implementation.
bool backprop_input_onednn(const ConvGeom& g, const void* f, const void* dy_data, void* dx_data) {
  const auto* dy = static_cast<const char*>(dy_data);
  auto* dx = static_cast<char*>(dx_data);
  const int64_t es = elem_bytes(g);
  return run_onednn(g, false, [&](const std::vector<Part>& parts) {
    const BwdPrim& p0 = *parts[0].prim;
    Tensor packed;
    const void* wei = f;
    if (p0.reorder) {
      wei = dnnl_scratch(packed, p0.wei_md.get_size());
      execute(*p0.reorder, p0.reorder_scratch_bytes,
              {{DNNL_ARG_FROM, mem(p0.user_wei_md, f)}, {DNNL_ARG_TO, mem(p0.wei_md, wei)}});
    }
    for_parts(parts.size(), [&](int64_t i) {
      const Part& q = parts[i];
      execute(q.prim->prim, q.prim->scratch_bytes,
              {{DNNL_ARG_DIFF_DST, mem(q.prim->dst_md, dy + q.dy_off * es)},
               {DNNL_ARG_WEIGHTS, mem(q.prim->wei_md, wei)},
               {DNNL_ARG_DIFF_SRC, mem(q.prim->src_md, dx + q.x_off * es)}});
    });
  });
}

// out[i] = the sum over j < n of partial[j * stride + i], for i < size, in
// parallel over i (out may be partial).
void sum_partials(const float* partial, int64_t n, int64_t stride, int64_t size, float* out) {
  parallel_for(size, 1 << 14, [&](int64_t i0, int64_t i1) {
    if (out != partial) std::copy(partial + i0, partial + i1, out + i0);
    for (int64_t j = 1; j < n; ++j) {
      const float* p = partial + j * stride;
      for (int64_t i = i0; i < i1; ++i) out[i] += p[i];
    }
  });
}

// df from (x, dy); false when oneDNN has no implementation.
// (bfloat16 x and dy: df is float32, the kernel rounds it.)
bool backprop_filter_onednn(const ConvGeom& g, const void* x_data, const void* dy_data, float* df) {
  const auto* x = static_cast<const char*>(x_data);
  const auto* dy = static_cast<const char*>(dy_data);
  const int64_t es = elem_bytes(g);
  return run_onednn(g, true, [&](const std::vector<Part>& parts) {
    const BwdPrim& p0 = *parts[0].prim;
    const auto n = static_cast<int64_t>(parts.size());
    const auto size = static_cast<int64_t>(p0.wei_md.get_size() / sizeof(float));
    const int64_t stride = (size + 15) / 16 * 16;  // 64-byte aligned partials
    Tensor buf;
    float* partial = n == 1 && !p0.reorder
                         ? df
                         : static_cast<float*>(
                               dnnl_scratch(buf, static_cast<size_t>(n * stride) * sizeof(float)));
    for_parts(parts.size(), [&](int64_t i) {
      const Part& q = parts[i];
      execute(q.prim->prim, q.prim->scratch_bytes,
              {{DNNL_ARG_SRC, mem(q.prim->src_md, x + q.x_off * es)},
               {DNNL_ARG_DIFF_DST, mem(q.prim->dst_md, dy + q.dy_off * es)},
               {DNNL_ARG_DIFF_WEIGHTS, mem(q.prim->wei_md, partial + i * stride)}});
    });
    if (n > 1) sum_partials(partial, n, stride, size, p0.reorder ? partial : df);
    if (p0.reorder)
      execute(*p0.reorder, p0.reorder_scratch_bytes,
              {{DNNL_ARG_FROM, mem(p0.wei_md, partial)}, {DNNL_ARG_TO, mem(p0.user_wei_md, df)}});
  });
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

// run() (a *_onednn call); false also when oneDNN throws (no implementation).
template <typename Run>
bool try_onednn(Run run) {
  try {
    return run();
  } catch (const dnnl::error&) {
    return false;
  }
}

// dx from (filter, dy) in float32: oneDNN, else the loops.
void backprop_input_f32(const ConvGeom& g, const float* f, const float* dy, float* dx) {
  if (!try_onednn([&] { return backprop_input_onednn(g, f, dy, dx); }))
    backprop_input_loop<float>(g, f, dy, dx);
}

// df from (x, dy) in float32: oneDNN, else the loops.
void backprop_filter_f32(const ConvGeom& g, const float* x, const float* dy, float* df) {
  if (!try_onednn([&] { return backprop_filter_onednn(g, x, dy, df); }))
    backprop_filter_loop<float>(g, x, dy, df);
}

// bfloat16 dx: oneDNN's bf16 kernels (float32 accumulation, dx rounded once);
// where it has none (CPUs without AVX512_BF16), float32 copies rounded once,
// as the kHalfInFloat path computed it.
void backprop_input_bf16(ConvGeom g, const Tensor& f, const Tensor& dy, Tensor& dx) {
  g.bf16 = true;
  if (try_onednn([&] {
        return backprop_input_onednn(g, f.raw_data(), dy.raw_data(), dx.mutable_raw_data());
      }))
    return;
  g.bf16 = false;
  const Tensor ff = as_float32(f, "Conv2DBackpropInput");
  const Tensor dyf = as_float32(dy, "Conv2DBackpropInput");
  Tensor dxf = Tensor::empty(DType::kFloat32, dx.shape());
  backprop_input_f32(g, ff.data<float>(), dyf.data<float>(), dxf.mutable_data<float>());
  round_to_half(dxf.data<float>(), dx);
}

// bfloat16 df: oneDNN's bf16 kernels summing into a float32 gradient, rounded
// once; else float32 copies.
void backprop_filter_bf16(ConvGeom g, const Tensor& x, const Tensor& dy, Tensor& df) {
  Tensor dff = Tensor::empty(DType::kFloat32, df.shape());
  g.bf16 = g.f32_filter = true;
  if (!try_onednn([&] {
        return backprop_filter_onednn(g, x.raw_data(), dy.raw_data(), dff.mutable_data<float>());
      })) {
    g.bf16 = g.f32_filter = false;
    const Tensor xf = as_float32(x, "Conv2DBackpropFilter");
    const Tensor dyf = as_float32(dy, "Conv2DBackpropFilter");
    backprop_filter_f32(g, xf.data<float>(), dyf.data<float>(), dff.mutable_data<float>());
  }
  round_to_half(dff.data<float>(), df);
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
  if (dx.dtype() == DType::kFloat32)
    backprop_input_f32(g, f.data<float>(), dy.data<float>(), dx.mutable_data<float>());
  else if (dx.dtype() == DType::kBFloat16)
    backprop_input_bf16(g, f, dy, dx);
  else
    backprop_input_loop<double>(g, f.data<double>(), dy.data<double>(), dx.mutable_data<double>());
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
  if (df.dtype() == DType::kFloat32)
    backprop_filter_f32(g, x.data<float>(), dy.data<float>(), df.mutable_data<float>());
  else if (df.dtype() == DType::kBFloat16)
    backprop_filter_bf16(g, x, dy, df);
  else
    backprop_filter_loop<double>(g, x.data<double>(), dy.data<double>(), df.mutable_data<double>());
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
