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
#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "conv_forward.h"
#include "kernel_util.h"
#include "kiln/config.h"
#include "kiln/status.h"
#include "packed_weights.h"

namespace kiln::cpu {
namespace {

// The filter as float32 holding bfloat16 values (a float32 filter rounded).
Tensor round_filter(const Tensor& f, const char* op) {
  Tensor fb = f;
  if (f.dtype() == DType::kFloat32) {
    fb = Tensor::empty(DType::kBFloat16, f.shape());
    round_to_half(f.data<float>(), fb);
  }
  return as_float32(fb, op);
}

// round_filter's result kept per filter (its first byte) for the contents'
// Buffer::version: a model's weights are rounded once, and their float32 copy,
// the same buffer on every call, is packed once like any float32 filter
// (rounding and reordering on every call made ResNet50 under mixed_bfloat16
// 2.3x slower than float32 on AVX2). Up to Config::packed_weights_bytes of
// copies; past it the kept ones are dropped.
class RoundedFilters {
 public:
  Tensor get(const Tensor& f, const char* op) {
    const uint64_t version = f.buffer()->version();
    if (!version) return round_filter(f, op);  // contents that may change unseen
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = kept_.find(f.raw_data()); it != kept_.end() && it->second.version == version &&
                                              it->second.rounded.shape() == f.shape())
        return it->second.rounded;
    }
    Tensor r = round_filter(f, op);
    const size_t cap = static_cast<size_t>(std::max<int64_t>(0, config().packed_weights_bytes));
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = kept_.find(f.raw_data()); it != kept_.end()) {  // an older version: replaced
      bytes_ -= it->second.rounded.nbytes();
      kept_.erase(it);
    }
    if (bytes_ + r.nbytes() > cap) {
      kept_.clear();
      bytes_ = 0;
    }
    if (r.nbytes() <= cap) {
      kept_.emplace(f.raw_data(), Entry{version, r});
      bytes_ += r.nbytes();
    }
    return r;
  }

 private:
  struct Entry {
    uint64_t version;
    Tensor rounded;
  };
  std::mutex mu_;
  std::unordered_map<const void*, Entry> kept_;  // by the filter's first byte
  size_t bytes_ = 0;
};

Tensor filter_in_float(const Tensor& f, const char* op) {
  static auto& kept = *new RoundedFilters;  // never destroyed
  return kept.get(f, op);
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
