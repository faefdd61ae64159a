// Internal: convolution geometry and oneDNN plumbing shared by the forward
// (conv.cpp) and backward (conv_grad.cpp) convolution kernels.
#pragma once
#include <cstddef>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

#include "kiln/op.h"

namespace kiln::cpu {

/// One NHWC convolution: input [n, h, w, c], filter [kh, kw, c, oc] (or
/// [kh, kw, c, mult] when depthwise, oc = c * mult), output [n, oh, ow, oc];
/// strides, dilations and TensorFlow's pads (top, left, bottom, right).
struct ConvGeom {
  int64_t n, h, w, c, kh, kw, oc, mult, oh, ow, sh, sw, dh, dw, pt, pl, pb, pr;
  bool depthwise;
};

/// The geometry of input shape `in` and filter shape `f` under the
/// strides/padding/dilations attributes (indices 0, 1, 2) of `c`, which
/// inference has validated.
ConvGeom conv_geometry(const KernelContext& c, const Shape& in, const Shape& f, bool depthwise);

/// oneDNN memory descriptors of a convolution: NHWC source and destination,
/// the user's filter layout (TensorFlow's HWIO, or [kh, kw, c, mult] as
/// groups when depthwise) and the same dims with a layout oneDNN picks.
struct ConvDescs {
  dnnl::memory::desc src, dst, user_wei, any_wei;
};
ConvDescs conv_descs(const ConvGeom& g);

/// The process-wide oneDNN CPU engine and this thread's stream.
dnnl::engine& dnnl_engine();
dnnl::stream& dnnl_stream();

/// `bytes` of scratch memory from kiln's allocator, held by `holder`
/// (nullptr for 0 bytes).
void* dnnl_scratch(Tensor& holder, size_t bytes);

/// A u8 oneDNN memory of `bytes` scratch bytes held by `holder`.
dnnl::memory dnnl_scratch_memory(Tensor& holder, size_t bytes);

}  // namespace kiln::cpu
