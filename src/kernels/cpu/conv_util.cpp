// Convolution geometry and oneDNN plumbing shared by the convolution kernels.
#include "conv_util.h"

#include <algorithm>

#include "ops/window.h"
#include "threading.h"

namespace kiln::cpu {

ConvGeom conv_geometry(const KernelContext& c, const Shape& in, const Shape& f, bool depthwise) {
  window::Hw st, dil;
  window::Padding pad = window::Padding::kValid;
  window::parse_hw(c.attr_ints("strides"), "strides", st);  // validated by inference
  window::parse_padding(c.attr_string("padding"), pad);
  window::parse_hw(c.attr_ints("dilations"), "dilations", dil);
  window::Dim dh, dw;
  window::out_dim(in.dim(1), f.dim(0), st.h, dil.h, pad, "height", dh);
  window::out_dim(in.dim(2), f.dim(1), st.w, dil.w, pad, "width", dw);
  ConvGeom g;
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

size_t ConvKeyHash::operator()(const ConvKey& k) const {
  size_t h = 0;
  auto mix = [&](int64_t v) { h = (h ^ static_cast<size_t>(v)) * 0x100000001b3ull; };
  for (int64_t v : k.geom) mix(v);
  for (int64_t v : k.extra) mix(v);
  return h;
}

ConvKey conv_key(const ConvGeom& g) {
  return {{g.n,      g.h,    g.w,          g.c,         g.kh,
           g.kw,     g.oc,   g.mult,       g.oh,        g.ow,
           g.sh,     g.sw,   g.dh,         g.dw,        g.pt,
           g.pl,     g.pb,   g.pr,         g.depthwise, library_threads(),
           g.wei_ld, g.bf16, g.f32_filter, g.winograd},
          {}};
}

ConvDescs conv_descs(const ConvGeom& g) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  using dims = dnnl::memory::dims;
  ConvDescs d;
  const dt t = g.bf16 ? dt::bf16 : dt::f32;
  d.src = dnnl::memory::desc({g.n, g.c, g.h, g.w}, t, tag::nhwc);
  d.dst = dnnl::memory::desc({g.n, g.oc, g.oh, g.ow}, t, tag::nhwc);
  if (g.depthwise) {
    // Groups = channels; TF's [kh, kw, c, mult] as (g, o, i, h, w) strides.
    const dims wdims = {g.c, g.mult, 1, g.kh, g.kw};
    d.user_wei = dnnl::memory::desc(wdims, g.f32_filter ? dt::f32 : t,
                                    dims{g.mult, 1, 1, g.kw * g.c * g.mult, g.c * g.mult});
    d.any_wei = dnnl::memory::desc(wdims, t, tag::any);
  } else {
    const dims wdims = {g.oc, g.c, g.kh, g.kw};
    const int64_t ld = g.wei_ld ? g.wei_ld : g.oc;  // HWIO: o, i, h, w strides
    d.user_wei = dnnl::memory::desc(wdims, g.f32_filter ? dt::f32 : t,
                                    dims{1, ld, g.kw * g.c * ld, g.c * ld});
    d.any_wei = dnnl::memory::desc(wdims, t, tag::any);
  }
  return d;
}

double conv_macs(const ConvGeom& g) {
  return static_cast<double>(g.n * g.oh * g.ow) * static_cast<double>(g.oc) *
         static_cast<double>(g.kh * g.kw) * (g.depthwise ? 1.0 : static_cast<double>(g.c));
}

ConvGeom conv_row_block(const ConvGeom& g, int64_t r0, int64_t r1, int64_t& in_row) {
  ConvGeom b = g;
  b.n = 1;
  b.oh = r1 - r0;
  const int64_t lo = r0 * g.sh - g.pt, hi = (r1 - 1) * g.sh - g.pt + (g.kh - 1) * g.dh + 1;
  in_row = std::max<int64_t>(0, lo);
  b.h = std::min(g.h, hi) - in_row;
  b.pt = in_row - lo;
  b.pb = hi - std::min(g.h, hi);
  return b;
}

dnnl::engine& dnnl_engine() {
  library_threads();  // primitives are created for this thread's share of the budget
  static dnnl::engine& e = *new dnnl::engine(dnnl::engine::kind::cpu, 0);  // never destroyed
  return e;
}
dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream s(dnnl_engine());
  library_threads();
  return s;
}

void* dnnl_scratch(Tensor& holder, size_t bytes) {
  if (bytes == 0) return nullptr;
  holder = Tensor::empty(DType::kUInt8, Shape{static_cast<int64_t>(bytes)});
  return holder.mutable_raw_data();
}

dnnl::memory dnnl_scratch_memory(Tensor& holder, size_t bytes) {
  return dnnl::memory(
      {{static_cast<int64_t>(bytes)}, dnnl::memory::data_type::u8, dnnl::memory::format_tag::x},
      dnnl_engine(), dnnl_scratch(holder, bytes));
}

}  // namespace kiln::cpu
