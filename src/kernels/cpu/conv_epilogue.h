// Internal: the epilogue of a fused convolution call (conv.cpp): its steps and
// inputs, applied by kiln to computed rows where oneDNN does not take them, split
// at a residual, and its leading affine steps folded into the filter.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/tensor.h"
#include "ops/fused_conv.h"

namespace kiln::cpu {

using fused_conv::PostOp;

/// The epilogue of one fused call: steps, their extra inputs, clip bounds.
struct EpilogueCall {
  std::vector<PostOp> ops;
  std::vector<const Tensor*> args;  // one per step that takes an input
  float clip_min = 0, clip_max = 6;
};

/// How an epilogue input broadcasts: along the channels, one element, or not
/// at all (a residual of the output's shape).
enum class ArgKind : int64_t { kChannels, kScalar, kWhole };
inline ArgKind arg_kind(const Tensor& t) {
  if (fused_conv::whole_tensor(t.shape())) return ArgKind::kWhole;
  return t.num_elements() == 1 ? ArgKind::kScalar : ArgKind::kChannels;
}

/// The epilogue's steps on `width` computed channels of one output pixel from
/// channel `ch0` on; `at`: the pixel's first value's offset in the whole output
/// (where it reads a residual).
void epilogue_row(const EpilogueCall& ep, float* y, int64_t ch0, int64_t width, int64_t at);

/// The epilogue on a computed NHWC float32 output (fallback paths), one
/// output pixel of `oc` channels at a time.
void apply_epilogue(const EpilogueCall& ep, int64_t oc, float* out, int64_t n);

/// `ep` as `head` (the steps before its first residual Add) and `tail` (the
/// rest); false (both untouched) when it has no residual.
bool split_at_residual(const EpilogueCall& ep, EpilogueCall& head, EpilogueCall& tail);

/// The epilogue's leading affine steps (BiasAdd, Mul, Add, Sub before the first
/// other step: a BatchNorm at inference) as a factor per output channel folded
/// into the filter and one bias: conv(x, f) * s + b = conv(x, f * s) + b, with
/// the bias the primitive's own. `folded` gets the bias step (when a step adds)
/// and the steps after the run, `scale` the factors (empty when no step
/// multiplies). False, `folded` untouched, when the run is at most a BiasAdd.
/// A residual's Add ends the run (its operand varies over the pixels).
bool fold_affine(const EpilogueCall& ep, int64_t oc, EpilogueCall& folded,
                 std::vector<float>& scale, Tensor& bias);

/// Where the output took over a residual and the convolution is to be computed
/// otherwise than by oneDNN's sum (a fallback), that residual is first copied
/// into `kept` (the output is about to be overwritten).
void keep_residual(EpilogueCall& ep, const float* y, Tensor& kept);

/// Whether the output `y` took over a residual of `ep`.
bool took_residual(const EpilogueCall& ep, const void* y);

}  // namespace kiln::cpu
