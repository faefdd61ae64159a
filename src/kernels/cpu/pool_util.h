// Internal: pooling geometry shared by the pooling kernels and their
// gradients (pool.cpp, pool_grad.cpp).
#pragma once
#include <cstdint>

#include "kiln/op.h"
#include "ops/window.h"

namespace kiln::cpu {

/// One NHWC pooling window: input [n, h, w, c], window kh x kw, strides,
/// output [n, oh, ow, c], leading pads (top, left).
struct PoolGeom {
  int64_t n, h, w, c, kh, kw, sh, sw, oh, ow, pt, pl;
};

/// The geometry of input shape `in` under the ksize/strides/padding
/// attributes (indices 0, 1, 2) of `c`, which inference has validated.
inline PoolGeom pool_geometry(const KernelContext& c, const Shape& in) {
  window::Hw k, st;
  window::Padding pad = window::Padding::kValid;
  window::parse_hw(c.attr_ints("ksize"), "ksize", k);
  window::parse_hw(c.attr_ints("strides"), "strides", st);
  window::parse_padding(c.attr_string("padding"), pad);
  window::Dim dh, dw;
  window::out_dim(in.dim(1), k.h, st.h, 1, pad, "height", dh);
  window::out_dim(in.dim(2), k.w, st.w, 1, pad, "width", dw);
  return {in.dim(0), in.dim(1), in.dim(2), in.dim(3), k.h,           k.w,
          st.h,      st.w,      dh.out,    dw.out,    dh.pad_before, dw.pad_before};
}

}  // namespace kiln::cpu
