// Internal: the forward convolution paths shared by conv.cpp (float32 and the
// kernels) and conv_bf16.cpp (bfloat16 inputs).
#pragma once
#include <cstdint>

#include "conv_epilogue.h"
#include "conv_util.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

/// Convolution `g` of `x` by filter `f` into `y` on oneDNN, `ep` its bias and
/// post-ops (its leading affine steps folded into a float32 filter's packing);
/// false, nothing written, when oneDNN has no implementation. Element types
/// follow `g` (float32, or bfloat16 with a bfloat16 or float32 filter).
bool fused_conv_onednn(const ConvGeom& g, const void* x, const Tensor& f, void* y,
                       const EpilogueCall& ep);

/// The float32 convolution `g` then `ep` (possibly empty) into `y` (`n`
/// values) by the fastest path that implements it: a one-pixel product,
/// oneDNN with the epilogue fused, oneDNN then the epilogue, a direct loop.
/// `op` names the kernel in errors.
void fused_conv_f32(const ConvGeom& g, const Tensor& x, const Tensor& f, EpilogueCall& ep, float* y,
                    int64_t n, const char* op);

/// A convolution of bfloat16 input `x` (filter bfloat16 or float32, rounded
/// to bfloat16 when packed) then `ep` (float32 per-channel operands, residuals
/// of the output's bfloat16 type) computed on the float32 accumulator into the
/// bfloat16 `out`, rounded once (conv_bf16.cpp).
void conv_bf16(ConvGeom g, const Tensor& x, const Tensor& f, const EpilogueCall& ep, Tensor& out,
               const char* op);

}  // namespace kiln::cpu
