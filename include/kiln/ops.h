// All op front functions. Each runs eagerly or is recorded while tracing.
#pragma once
#include "kiln/ops/array.h"
#include "kiln/ops/binary.h"
#include "kiln/ops/collective.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/select_cast.h"
#include "kiln/ops/state.h"
#include "kiln/ops/strings.h"
#include "kiln/ops/unary.h"

// ---- backward ops ----
// The ops that gradient rules build (TensorFlow's names); they are graph ops
// like any other, so gradients run eagerly and inside traced functions.
// Window arguments and padding as for conv2d/max_pool2d (kiln/ops/nn.h).
namespace kiln {

/// Conv2DBackpropInput: the gradient of conv2d with respect to its input.
/// `input_sizes` is the input's shape (int32/int64 4-vector); `filter` [kh, kw,
/// in_channels, out_channels]; `out_backprop` the gradient of conv2d's output.
Tensor conv2d_backprop_input(const Tensor& input_sizes, const Tensor& filter,
                             const Tensor& out_backprop, const std::vector<int64_t>& strides,
                             const std::string& padding,
                             const std::vector<int64_t>& dilations = {1, 1});
/// Conv2DBackpropFilter: the gradient of conv2d with respect to its filter,
/// whose shape is `filter_sizes` (int32/int64 4-vector).
Tensor conv2d_backprop_filter(const Tensor& input, const Tensor& filter_sizes,
                              const Tensor& out_backprop, const std::vector<int64_t>& strides,
                              const std::string& padding,
                              const std::vector<int64_t>& dilations = {1, 1});
/// DepthwiseConv2dNativeBackpropInput: the input gradient of depthwise_conv2d.
Tensor depthwise_conv2d_backprop_input(const Tensor& input_sizes, const Tensor& filter,
                                       const Tensor& out_backprop,
                                       const std::vector<int64_t>& strides,
                                       const std::string& padding,
                                       const std::vector<int64_t>& dilations = {1, 1});
/// DepthwiseConv2dNativeBackpropFilter: the filter gradient of depthwise_conv2d.
Tensor depthwise_conv2d_backprop_filter(const Tensor& input, const Tensor& filter_sizes,
                                        const Tensor& out_backprop,
                                        const std::vector<int64_t>& strides,
                                        const std::string& padding,
                                        const std::vector<int64_t>& dilations = {1, 1});

/// MaxPoolGrad: the gradient of max_pool2d with respect to its input. Each
/// window's `grad` goes to the window's maximum in `orig_input` (the first
/// one on ties, a NaN if any); `orig_output` is max_pool2d's result.
Tensor max_pool_grad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad,
                     const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                     const std::string& padding);
/// MaxPoolGradGrad: the gradient of max_pool_grad with respect to its `grad`:
/// each window takes `grad` (shaped like orig_input) at the window's maximum.
Tensor max_pool_grad_grad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad,
                          const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                          const std::string& padding);
/// AvgPoolGrad: the gradient of avg_pool2d with respect to its input, whose
/// shape is `orig_input_shape` (int32/int64 4-vector).
Tensor avg_pool_grad(const Tensor& orig_input_shape, const Tensor& grad,
                     const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                     const std::string& padding);

/// UnsortedSegmentSum: output[k, ...] = sum of data[i..., ...] over the
/// index tuples i with segment_ids[i...] == k. `segment_ids` (int32/int64)
/// has a prefix of data's shape; the output is [num_segments] + the rest of
/// data's shape (numeric dtypes). Negative ids are dropped (as TensorFlow);
/// ids >= num_segments are InvalidArgument.
Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids,
                            const Tensor& num_segments);
Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids, int64_t num_segments);
/// UnsortedSegmentMax / Min / Prod: the same with max, min or product. Empty
/// segments hold the dtype's lowest value (max), highest value (min) or 1
/// (prod), as TensorFlow; NaN propagates through max and min.
Tensor unsorted_segment_max(const Tensor& data, const Tensor& segment_ids,
                            const Tensor& num_segments);
Tensor unsorted_segment_min(const Tensor& data, const Tensor& segment_ids,
                            const Tensor& num_segments);
Tensor unsorted_segment_prod(const Tensor& data, const Tensor& segment_ids,
                             const Tensor& num_segments);

}  // namespace kiln
