// Linear algebra and neural-network ops: matmul, 2-D convolution and pooling
// (NHWC), bias_add, softmax.
//
// Window arguments (strides, dilations, ksize) take 1, 2 or 4 values: {s}
// (both spatial dims), {sh, sw}, or TensorFlow's {1, sh, sw, 1}. `padding` is
// "SAME" or "VALID" with TensorFlow's arithmetic: VALID gives
// ceil((in - (k - 1) * d) / s) outputs and is an error when the window does
// not fit; SAME gives ceil(in / s) outputs padded with
// pad_total = max((out - 1) * s + (k - 1) * d + 1 - in, 0), pad_before =
// pad_total / 2.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

/// Matrix product of the last two dims, batched over the leading dims with
/// broadcasting (TensorFlow's BatchMatMulV2): [..., m, k] x [..., k, n].
/// `transpose_a`/`transpose_b` transpose the last two dims of the operand
/// first. Both operands need rank >= 2 and the same numeric dtype (not bool).
/// float32/float64 run on OpenBLAS; integer products wrap on overflow.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);
/// Einstein summation (tf.einsum): "ij,jk->ik", implicit outputs ("ij,jk"),
/// "..." broadcasting, repeated letters within a term (diagonals). A
/// contraction of two floating operands is one batched matmul.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& inputs);

/// 2-D convolution: input [batch, height, width, in_channels], filter
/// [filter_height, filter_width, in_channels, out_channels], output
/// [batch, out_height, out_width, out_channels]. float32 runs on oneDNN (3x3
/// stride-1 ones as Winograd's algorithm while Config::tensor_float_32 allows);
/// float64 uses a direct loop.
Tensor conv2d(const Tensor& input, const Tensor& filter, const std::vector<int64_t>& strides,
              const std::string& padding, const std::vector<int64_t>& dilations = {1, 1});

/// Depthwise 2-D convolution: input [batch, height, width, channels], filter
/// [filter_height, filter_width, channels, multiplier], output channel
/// c * multiplier + m convolves input channel c with filter[:, :, c, m].
/// float32 on oneDNN (grouped convolution), float64 on a direct loop.
Tensor depthwise_conv2d(const Tensor& input, const Tensor& filter,
                        const std::vector<int64_t>& strides, const std::string& padding,
                        const std::vector<int64_t>& dilations = {1, 1});

/// value + bias, where bias is 1-D with the length of value's last dim and
/// value has rank >= 2 (numeric dtypes; same dtype).
Tensor bias_add(const Tensor& value, const Tensor& bias);

/// Max pooling over NHWC windows (numeric dtypes; NaN propagates). Padding
/// positions never win.
Tensor max_pool2d(const Tensor& input, const std::vector<int64_t>& ksize,
                  const std::vector<int64_t>& strides, const std::string& padding);

/// Average pooling over NHWC windows (float32/float64). With SAME padding the
/// average is over the elements inside the input only (as TensorFlow).
Tensor avg_pool2d(const Tensor& input, const std::vector<int64_t>& ksize,
                  const std::vector<int64_t>& strides, const std::string& padding);

/// exp(x) / sum(exp(x)) over the last axis, computed stably (max subtracted).
/// float32/float64, rank >= 1.
Tensor softmax(const Tensor& logits);

/// x - log(sum(exp(x))) over the last axis, computed stably.
Tensor log_softmax(const Tensor& logits);

}  // namespace kiln
