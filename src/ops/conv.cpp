// Convolution and pooling ops (NHWC): definitions, inference, front functions.
#include "families.h"
#include "kiln/context.h"
#include "kiln/ops/nn.h"
#include "window.h"

namespace kiln {
namespace {

using window::Dim;
using window::Hw;
using window::Padding;

struct Window {
  Hw stride, dilation, ksize;
  Padding padding = Padding::kValid;
};

void parse_or_fail(InferContext& c, size_t attr, const char* what, Hw& out) {
  const std::string err = window::parse_hw(c.attr_ints(attr), what, out);
  if (!err.empty()) c.fail(err);
}

Padding padding_or_fail(InferContext& c, size_t attr) {
  Padding p;
  if (!window::parse_padding(c.attr_string(attr), p))
    c.fail("padding must be one of 'SAME', 'VALID', got '", c.attr_string(attr), "'");
  return p;
}

// Output spatial dims; `context` is appended to window errors.
void spatial_out(InferContext& c, const Shape& in, const Window& w, const std::string& context,
                 int64_t& oh, int64_t& ow) {
  Dim dh, dw;
  std::string err =
      window::out_dim(in.dim(1), w.ksize.h, w.stride.h, w.dilation.h, w.padding, "height", dh);
  if (err.empty())
    err = window::out_dim(in.dim(2), w.ksize.w, w.stride.w, w.dilation.w, w.padding, "width", dw);
  if (!err.empty()) c.fail(err, " (", context, ")");
  oh = dh.out;
  ow = dw.out;
}

void expect_float(InferContext& c, size_t i) {
  if (!is_floating(c.dtype(i)))
    c.fail(c.input_name(i), " must be float32 or float64, got ", dtype_name(c.dtype(i)));
}

// Conv2D / DepthwiseConv2dNative. Attrs: strides, padding, dilations.
template <bool kDepthwise>
void infer_conv(InferContext& c) {
  expect_float(c, 0);
  c.expect_same_dtype(0, 1);
  Window w;
  parse_or_fail(c, 0, "strides", w.stride);
  w.padding = padding_or_fail(c, 1);
  parse_or_fail(c, 2, "dilations", w.dilation);
  const Shape& in = c.shape(0);
  const Shape& f = c.shape(1);
  if (in.rank_known() && in.rank() != 4)
    c.fail("input must be 4-D [batch, height, width, channels], got shape ", in.debug_string());
  if (f.rank_known() && f.rank() != 4)
    c.fail("filter must be 4-D [filter_height, filter_width, ",
           kDepthwise ? "channels, multiplier" : "in_channels, out_channels", "], got shape ",
           f.debug_string());
  if (!in.rank_known() || !f.rank_known()) {
    c.set_output(0, c.dtype(0), Shape{-1, -1, -1, -1});
    return;
  }
  const std::string ctx =
      str_cat("input shape ", in.debug_string(), ", filter shape ", f.debug_string());
  if (f.dim(0) == 0 || f.dim(1) == 0)
    c.fail("filter height and width must be positive (", ctx, ")");
  const int64_t ch = in.dim(3), fch = f.dim(2);
  if (ch >= 0 && fch >= 0 && ch != fch)
    c.fail("input channels ", ch, " do not match filter ",
           kDepthwise ? "channels " : "in_channels ", fch, " (", ctx, ")");
  w.ksize = {f.dim(0), f.dim(1)};
  int64_t oh, ow;
  spatial_out(c, in, w, ctx, oh, ow);
  int64_t oc = f.dim(3);
  if (kDepthwise) {
    const int64_t cc = ch >= 0 ? ch : fch;
    oc = cc >= 0 && oc >= 0 ? cc * oc : -1;
  }
  c.set_output(0, c.dtype(0), Shape{in.dim(0), oh, ow, oc});
}

// MaxPool / AvgPool. Attrs: ksize, strides, padding.
template <bool kAvg>
void infer_pool(InferContext& c) {
  if (kAvg)
    expect_float(c, 0);
  else if (!is_numeric(c.dtype(0)))
    c.fail("input must have a numeric dtype, got ", dtype_name(c.dtype(0)));
  Window w;
  parse_or_fail(c, 0, "ksize", w.ksize);
  parse_or_fail(c, 1, "strides", w.stride);
  w.padding = padding_or_fail(c, 2);
  const Shape& in = c.shape(0);
  if (!in.rank_known()) {
    c.set_output(0, c.dtype(0), Shape{-1, -1, -1, -1});
    return;
  }
  if (in.rank() != 4)
    c.fail("input must be 4-D [batch, height, width, channels], got shape ", in.debug_string());
  int64_t oh, ow;
  spatial_out(c, in, w, str_cat("input shape ", in.debug_string()), oh, ow);
  c.set_output(0, c.dtype(0), Shape{in.dim(0), oh, ow, in.dim(3)});
}

}  // namespace

void define_conv_ops(OpTableBuilder& t) {
  const std::vector<int64_t> ones = {1, 1, 1, 1};
  t.def(OpId::Conv2D)
      .inputs({"input", "filter"})
      .outputs({"output"})
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .attr("dilations", AttrType::kInts, ones)
      .infer(infer_conv<false>);
  t.def(OpId::DepthwiseConv2D)
      .inputs({"input", "filter"})
      .outputs({"output"})
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .attr("dilations", AttrType::kInts, ones)
      .infer(infer_conv<true>);
  t.def(OpId::MaxPool)
      .inputs({"input"})
      .outputs({"output"})
      .attr("ksize", AttrType::kInts)
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .infer(infer_pool<false>);
  t.def(OpId::AvgPool)
      .inputs({"value"})
      .outputs({"output"})
      .attr("ksize", AttrType::kInts)
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .infer(infer_pool<true>);
}

Tensor conv2d(const Tensor& input, const Tensor& filter, const std::vector<int64_t>& strides,
              const std::string& padding, const std::vector<int64_t>& dilations) {
  return call_op1(OpId::Conv2D, {input, filter}, {strides, padding, dilations});
}
Tensor depthwise_conv2d(const Tensor& input, const Tensor& filter,
                        const std::vector<int64_t>& strides, const std::string& padding,
                        const std::vector<int64_t>& dilations) {
  return call_op1(OpId::DepthwiseConv2D, {input, filter}, {strides, padding, dilations});
}
Tensor max_pool2d(const Tensor& input, const std::vector<int64_t>& ksize,
                  const std::vector<int64_t>& strides, const std::string& padding) {
  return call_op1(OpId::MaxPool, {input}, {ksize, strides, padding});
}
Tensor avg_pool2d(const Tensor& input, const std::vector<int64_t>& ksize,
                  const std::vector<int64_t>& strides, const std::string& padding) {
  return call_op1(OpId::AvgPool, {input}, {ksize, strides, padding});
}

}  // namespace kiln
