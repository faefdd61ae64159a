// bfloat16 convolutions: Conv2D / DepthwiseConv2dNative on a bfloat16 input
// and their fused forms (conv_float_filters gives them float32 filters,
// fuse_conv their epilogues). Where oneDNN has bf16 kernels (AVX512_BF16,
// AMX) the epilogue runs as the primitive's post-ops on its float32
// accumulator, so the output is rounded to bfloat16 once: per-channel float32
// operands, a bfloat16 residual added by oneDNN's sum in the destination.
// Elsewhere (AVX2) the convolution computes on float32 copies, the input exact
// and the filter rounded to bfloat16 first, with the epilogue fused as for
// float32, and the output is rounded once: the same values up to float32
// rounding.
#include <cstring>
#include <deque>
#include <oneapi/dnnl/dnnl.hpp>

#include "conv_forward.h"
#include "kernel_util.h"
#include "kiln/status.h"
#include "packed_weights.h"

namespace kiln::cpu {
namespace {

// The filter as float32 holding bfloat16 values (a float32 filter rounded).
Tensor filter_in_float(const Tensor& f, const char* op) {
  Tensor fb = f;
  if (f.dtype() == DType::kFloat32) {
    fb = Tensor::empty(DType::kBFloat16, f.shape());
    round_to_half(f.data<float>(), fb);
  }
  return as_float32(fb, op);
}

// `g` and `ep` on float32 copies of the input, filter and residuals, the
// output rounded to bfloat16 into `out`.
void conv_bf16_in_float(ConvGeom g, const Tensor& x, const Tensor& f, const EpilogueCall& ep,
                        Tensor& out, const char* op) {
  // Read every input before `out` (which may hold a residual) is written.
  const Tensor xf = as_float32(x, op), ff = filter_in_float(f, op);
  EpilogueCall fe = ep;
  std::deque<Tensor> held;
  for (const Tensor*& a : fe.args)
    if (a->dtype() != DType::kFloat32) a = &held.emplace_back(as_float32(*a, op));
  Tensor yf = Tensor::empty(DType::kFloat32, out.shape());
  g.bf16 = g.f32_filter = false;
  fused_conv_f32(g, xf, ff, fe, yf.mutable_data<float>(), yf.num_elements(), op);
  round_to_half(yf.data<float>(), out);
}

}  // namespace

void conv_bf16(ConvGeom g, const Tensor& x, const Tensor& f, const EpilogueCall& ep, Tensor& out,
               const char* op) {
  g.bf16 = true;
  g.f32_filter = f.dtype() == DType::kFloat32;
  if (x.num_elements() && f.num_elements() && conv_bf16_native()) {
    try {
      if (fused_conv_onednn(g, x.raw_data(), f, out.mutable_raw_data(), ep)) return;
    } catch (const dnnl::error& e) {
      // oneDNN failed while running: a residual the output took over may be
      // overwritten already.
      if (took_residual(ep, out.raw_data()))
        throw InternalError(str_cat(op, ": oneDNN failed (", e.what(),
                                    ") after the output took over its residual input"));
    }
  }
  conv_bf16_in_float(g, x, f, ep, out, op);
}

}  // namespace kiln::cpu
