// Internal: the epilogue ("post-op") list of the fused convolution ops
// (_FusedConv2D, _FusedDepthwiseConv2dNative), shared by their inference,
// their CPU kernel and the fuse_conv pass.
//
// The `fused_ops` attr names the steps applied to the convolution's result
// in order, comma-separated, e.g. "BiasAdd,Mul,Add,Swish" (steps: BiasAdd,
// Mul, Add, Sub, Relu, Clip, Sigmoid, Tanh, Swish, HardSwish). Binary steps
// (BiasAdd, Mul, Add, Sub) each take the next extra input, a float32 tensor
// broadcast along the output channels: shape [C], [1, ..., 1, C] or a
// one-element tensor (rank <= 4); an Add may instead take a tensor of the
// output's shape and type (a residual connection, read where each value is
// written). A bfloat16 convolution computes its steps in float32 on the
// accumulator and rounds its output to bfloat16 once.
// BiasAdd must come first and take a 1-D [C] bias. Clip uses the
// clip_min/clip_max attrs (at most one Clip).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/op.h"
#include "kiln/shape.h"

namespace kiln::fused_conv {

/// The steps are the op table's epilogues (kiln/op.h; kNone never occurs);
/// Relu6 is Clip(0, 6).
using PostOp = Epilogue;

/// The name used in the fused_ops attr ("BiasAdd", "Mul", ...).
const char* post_op_name(PostOp op);
/// True for the steps that take an extra input.
inline bool takes_arg(PostOp op) {
  return op == PostOp::kBiasAdd || op == PostOp::kMul || op == PostOp::kAdd || op == PostOp::kSub;
}
/// Whether an extra input of shape `s` is a whole tensor (an Add's residual
/// of the output's shape), not one broadcast along the channels.
inline bool whole_tensor(const Shape& s) {
  return s.rank_known() && s.rank() == 4 && (s.dim(0) != 1 || s.dim(1) != 1 || s.dim(2) != 1);
}
/// Parses a fused_ops attr into `out`; returns an error message (empty on
/// success). Checks names, BiasAdd placement and the single Clip.
std::string parse_post_ops(std::string_view spec, std::vector<PostOp>& out);
/// The inverse of parse_post_ops.
std::string format_post_ops(const std::vector<PostOp>& ops);

}  // namespace kiln::fused_conv
