// Backward ops of convolution and pooling (NHWC): Conv2DBackpropInput/Filter,
// DepthwiseConv2dNativeBackpropInput/Filter, MaxPoolGrad, MaxPoolGradGrad and
// AvgPoolGrad (definitions, inference, front functions), and the gradient
// rules of the forward ops and of these ops (all linear in their gradient
// input, so their own rules are the forward ops again).
#include "front_util.h"
#include "grad_util.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "window.h"

namespace kiln {
namespace {

using window::expect_float;
using window::Hw;
using window::Padding;

std::string shape_str(const std::vector<int64_t>& v) {
  return Shape(v).debug_string();
}

// A 4-D shape from an int input (input_sizes, filter_sizes): its value when
// known, else unknown dims. Checks dtype, length and signs.
Shape sizes_input(InferContext& c, size_t i) {
  const DType dt = c.dtype(i);
  if (dt != DType::kInt32 && dt != DType::kInt64)
    c.fail(c.input_name(i), " must be int32 or int64, got ", dtype_name(dt));
  const Shape& s = c.shape(i);
  if (s.rank_known() && (s.rank() != 1 || (s.dim(0) >= 0 && s.dim(0) != 4)))
    c.fail(c.input_name(i), " must be a vector of 4 sizes (NHWC), got shape ", s.debug_string());
  std::vector<int64_t> v;
  if (!c.int_values(i, v)) return Shape{-1, -1, -1, -1};
  for (int64_t d : v)
    if (d < 0) c.fail(c.input_name(i), " must be non-negative, got ", shape_str(v));
  return Shape(v);
}

// A 4-D tensor input's shape (unknown rank gives four unknown dims).
Shape rank4(InferContext& c, size_t i, const char* layout) {
  const Shape& s = c.shape(i);
  if (!s.rank_known()) return Shape{-1, -1, -1, -1};
  if (s.rank() != 4)
    c.fail(c.input_name(i), " must be 4-D ", layout, ", got shape ", s.debug_string());
  return s;
}

// Dims a and b agree unless one is unknown.
bool agree(int64_t a, int64_t b) {
  return a < 0 || b < 0 || a == b;
}
// a where known, else b.
int64_t known_or(int64_t a, int64_t b) {
  return a >= 0 ? a : b;
}

// ---- convolution backprop ----

// Checks that input shape x, filter shape f and output gradient shape dy
// describe one convolution (unknown dims pass); fills unknown dims of x and f
// from the others where they determine them.
template <bool kDepthwise>
void check_conv(InferContext& c, Shape& x, Shape& f, const Shape& dy) {
  const Hw stride = window::hw_attr(c, "strides");
  const Padding padding = window::padding_attr(c);
  const Hw dilation = window::hw_attr(c, "dilations");
  const std::string ctx = str_cat("input shape ", x.debug_string(), ", filter shape ",
                                  f.debug_string(), ", out_backprop shape ", dy.debug_string());
  if (f.dim(0) == 0 || f.dim(1) == 0)
    c.fail("filter height and width must be positive (", ctx, ")");
  if (!agree(x.dim(3), f.dim(2)))
    c.fail("input channels ", x.dim(3), " do not match filter ",
           kDepthwise ? "channels " : "in_channels ", f.dim(2), " (", ctx, ")");
  x.set_dim(3, known_or(x.dim(3), f.dim(2)));
  f.set_dim(2, x.dim(3));
  if (!agree(x.dim(0), dy.dim(0)))
    c.fail("batch ", x.dim(0), " of the input does not match out_backprop's ", dy.dim(0), " (", ctx,
           ")");
  x.set_dim(0, known_or(x.dim(0), dy.dim(0)));
  if (kDepthwise) {
    const int64_t oc = x.dim(3) >= 0 && f.dim(3) >= 0 ? x.dim(3) * f.dim(3) : -1;
    if (!agree(oc, dy.dim(3)))
      c.fail("out_backprop has ", dy.dim(3), " channels, expected channels * multiplier = ", oc,
             " (", ctx, ")");
    if (f.dim(3) < 0 && x.dim(3) > 0 && dy.dim(3) >= 0) f.set_dim(3, dy.dim(3) / x.dim(3));
  } else {
    if (!agree(f.dim(3), dy.dim(3)))
      c.fail("out_backprop has ", dy.dim(3), " channels, filter out_channels is ", f.dim(3), " (",
             ctx, ")");
    f.set_dim(3, known_or(f.dim(3), dy.dim(3)));
  }
  const char* names[] = {"height", "width"};
  const int64_t k[] = {f.dim(0), f.dim(1)}, s[] = {stride.h, stride.w},
                d[] = {dilation.h, dilation.w};
  for (int i = 0; i < 2; ++i) {
    window::Dim out;
    const std::string err = window::out_dim(x.dim(1 + i), k[i], s[i], d[i], padding, names[i], out);
    if (!err.empty()) c.fail(err, " (", ctx, ")");
    if (!agree(out.out, dy.dim(1 + i)))
      c.fail("out_backprop ", names[i], " ", dy.dim(1 + i), " does not match the convolution's ",
             "output ", names[i], " ", out.out, " (", ctx, ")");
  }
}

// Conv2DBackpropInput / DepthwiseConv2dNativeBackpropInput:
// (input_sizes, filter, out_backprop) -> input gradient.
template <bool kDepthwise>
void infer_conv_backprop_input(InferContext& c) {
  expect_float(c, 1);
  c.expect_same_dtype(1, 2);
  Shape x = sizes_input(c, 0);
  Shape f = rank4(c, 1,
                  kDepthwise ? "[filter_height, filter_width, channels, multiplier]"
                             : "[filter_height, filter_width, in_channels, out_channels]");
  const Shape dy = rank4(c, 2, "[batch, out_height, out_width, out_channels]");
  check_conv<kDepthwise>(c, x, f, dy);
  c.set_output(0, c.dtype(1), std::move(x));
}

// Conv2DBackpropFilter / DepthwiseConv2dNativeBackpropFilter:
// (input, filter_sizes, out_backprop) -> filter gradient.
template <bool kDepthwise>
void infer_conv_backprop_filter(InferContext& c) {
  expect_float(c, 0);
  c.expect_same_dtype(0, 2);
  Shape x = rank4(c, 0, "[batch, height, width, channels]");
  Shape f = sizes_input(c, 1);
  const Shape dy = rank4(c, 2, "[batch, out_height, out_width, out_channels]");
  check_conv<kDepthwise>(c, x, f, dy);
  c.set_output(0, c.dtype(0), std::move(f));
}

// ---- pooling backprop ----

// Checks that a pooling of input shape x gives shape y (unknown dims pass).
void check_pool(InferContext& c, const Shape& x, const Shape& y, const char* y_name) {
  const Hw k = window::hw_attr(c, "ksize");
  const Hw s = window::hw_attr(c, "strides");
  const Padding p = window::padding_attr(c);
  const std::string ctx =
      str_cat("input shape ", x.debug_string(), ", ", y_name, " shape ", y.debug_string());
  if (!agree(x.dim(0), y.dim(0)) || !agree(x.dim(3), y.dim(3)))
    c.fail(y_name, " must have the input's batch and channels (", ctx, ")");
  const char* names[] = {"height", "width"};
  const int64_t ks[] = {k.h, k.w}, ss[] = {s.h, s.w};
  for (int i = 0; i < 2; ++i) {
    window::Dim out;
    const std::string err = window::out_dim(x.dim(1 + i), ks[i], ss[i], 1, p, names[i], out);
    if (!err.empty()) c.fail(err, " (", ctx, ")");
    if (!agree(out.out, y.dim(1 + i)))
      c.fail(y_name, " ", names[i], " ", y.dim(1 + i), " does not match the pooling's output ",
             names[i], " ", out.out, " (", ctx, ")");
  }
}

// Fails unless shapes a and b (rank 4) agree where known.
void expect_same_shape(InferContext& c, const Shape& a, const Shape& b, const char* a_name,
                       const char* b_name) {
  for (int64_t i = 0; i < 4; ++i)
    if (!agree(a.dim(i), b.dim(i)))
      c.fail(a_name, " shape ", a.debug_string(), " must equal ", b_name, " shape ",
             b.debug_string());
}

Shape merged(const Shape& a, const Shape& b) {
  Shape out = a;
  for (int64_t i = 0; i < 4; ++i) out.set_dim(i, known_or(a.dim(i), b.dim(i)));
  return out;
}

// MaxPoolGrad (kGradGrad = false): (orig_input, orig_output, grad[like
// orig_output]) -> [like orig_input]. MaxPoolGradGrad: grad is like
// orig_input, the result like orig_output.
template <bool kGradGrad>
void infer_max_pool_grad(InferContext& c) {
  expect_float(c, 0);
  c.expect_same_dtype(0, 1);
  c.expect_same_dtype(0, 2);
  const char* layout = "[batch, height, width, channels]";
  const Shape x = rank4(c, 0, layout), y = rank4(c, 1, layout), g = rank4(c, 2, layout);
  check_pool(c, x, y, "orig_output");
  if (kGradGrad) {
    expect_same_shape(c, g, x, "grad", "orig_input");
    c.set_output(0, c.dtype(0), merged(y, x));
  } else {
    expect_same_shape(c, g, y, "grad", "orig_output");
    c.set_output(0, c.dtype(0), merged(x, y));
  }
}

// AvgPoolGrad: (orig_input_shape, grad) -> [orig_input_shape].
void infer_avg_pool_grad(InferContext& c) {
  expect_float(c, 1);
  const Shape x = sizes_input(c, 0);
  const Shape g = rank4(c, 1, "[batch, out_height, out_width, channels]");
  check_pool(c, x, g, "grad");
  Shape out = x;
  out.set_dim(0, known_or(x.dim(0), g.dim(0)));
  out.set_dim(3, known_or(x.dim(3), g.dim(3)));
  c.set_output(0, c.dtype(1), std::move(out));
}

// ---- gradient rules ----

using Ints = std::vector<int64_t>;
const Ints& ints(const Attrs& a, size_t i) {
  return std::get<Ints>(a[i]);
}
const std::string& str(const Attrs& a, size_t i) {
  return std::get<std::string>(a[i]);
}

// Conv2D: input gradient via the backprop-input op, filter gradient via the
// backprop-filter op.
template <bool kDw>
void conv_grad(KILN_GRAD_ARGS) {
  const Ints &st = ints(attrs, 0), &dil = ints(attrs, 2);
  const std::string& pad = str(attrs, 1);
  if (kDw) {
    gi[0] = depthwise_conv2d_backprop_input(grad::shape_of(in[0]), in[1], g[0], st, pad, dil);
    gi[1] = depthwise_conv2d_backprop_filter(in[0], grad::shape_of(in[1]), g[0], st, pad, dil);
  } else {
    gi[0] = conv2d_backprop_input(grad::shape_of(in[0]), in[1], g[0], st, pad, dil);
    gi[1] = conv2d_backprop_filter(in[0], grad::shape_of(in[1]), g[0], st, pad, dil);
  }
}
// BackpropInput(sizes, f, dy) is bilinear in (f, dy): <G, out> = <conv(G, f), dy>.
template <bool kDw>
void conv_backprop_input_grad(KILN_GRAD_ARGS) {
  const Ints &st = ints(attrs, 0), &dil = ints(attrs, 2);
  const std::string& pad = str(attrs, 1);
  const Tensor &f = in[1], &dy = in[2];
  if (kDw) {
    gi[1] = depthwise_conv2d_backprop_filter(g[0], grad::shape_of(f), dy, st, pad, dil);
    gi[2] = depthwise_conv2d(g[0], f, st, pad, dil);
  } else {
    gi[1] = conv2d_backprop_filter(g[0], grad::shape_of(f), dy, st, pad, dil);
    gi[2] = conv2d(g[0], f, st, pad, dil);
  }
}
// BackpropFilter(x, sizes, dy) is bilinear in (x, dy): <G, out> = <conv(x, G), dy>.
template <bool kDw>
void conv_backprop_filter_grad(KILN_GRAD_ARGS) {
  const Ints &st = ints(attrs, 0), &dil = ints(attrs, 2);
  const std::string& pad = str(attrs, 1);
  const Tensor &x = in[0], &dy = in[2];
  if (kDw) {
    gi[0] = depthwise_conv2d_backprop_input(grad::shape_of(x), g[0], dy, st, pad, dil);
    gi[2] = depthwise_conv2d(x, g[0], st, pad, dil);
  } else {
    gi[0] = conv2d_backprop_input(grad::shape_of(x), g[0], dy, st, pad, dil);
    gi[2] = conv2d(x, g[0], st, pad, dil);
  }
}

// MaxPoolGrad and MaxPoolGradGrad route values by the (piecewise constant)
// argmax positions: zero gradient for orig_input/orig_output, and each is
// the other's transpose in `grad`.
template <bool kGradGrad>
void max_pool_grad_grad_rule(KILN_GRAD_ARGS) {
  gi[0] = zeros_like(in[0]);
  gi[1] = zeros_like(in[1]);
  const Ints &k = ints(attrs, 0), &s = ints(attrs, 1);
  gi[2] = kGradGrad ? max_pool_grad(in[0], in[1], g[0], k, s, str(attrs, 2))
                    : max_pool_grad_grad(in[0], in[1], g[0], k, s, str(attrs, 2));
}
void avg_pool_grad_grad_rule(KILN_GRAD_ARGS) {
  gi[1] = avg_pool2d(g[0], ints(attrs, 0), ints(attrs, 1), str(attrs, 2));
}

}  // namespace

void max_pool_grad_rule(KILN_GRAD_ARGS) {
  gi[0] = max_pool_grad(in[0], out[0], g[0], ints(attrs, 0), ints(attrs, 1), str(attrs, 2));
}
void avg_pool_grad_rule(KILN_GRAD_ARGS) {
  gi[0] = avg_pool_grad(grad::shape_of(in[0]), g[0], ints(attrs, 0), ints(attrs, 1), str(attrs, 2));
}

void define_conv_grad_ops(OpTableBuilder& t) {
  const Ints ones = {1, 1, 1, 1};
  auto conv_attrs = [&](OpDefBuilder b) {
    b.outputs({"output"})
        .attr("strides", AttrType::kInts)
        .attr("padding", AttrType::kString)
        .attr("dilations", AttrType::kInts, ones)
        .traits(kHalfInFloat | kNativeBFloat16);  // float16 in float32, bfloat16 on oneDNN
  };
  conv_attrs(t.def(OpId::Conv2DBackpropInput)
                 .tf()
                 .inputs({"input_sizes", "filter", "out_backprop"})
                 .infer(infer_conv_backprop_input<false>)
                 .grad(conv_backprop_input_grad<false>));
  conv_attrs(t.def(OpId::Conv2DBackpropFilter)
                 .tf()
                 .inputs({"input", "filter_sizes", "out_backprop"})
                 .infer(infer_conv_backprop_filter<false>)
                 .grad(conv_backprop_filter_grad<false>));
  conv_attrs(t.def(OpId::DepthwiseConv2DBackpropInput)
                 .tf()
                 .inputs({"input_sizes", "filter", "out_backprop"})
                 .infer(infer_conv_backprop_input<true>)
                 .grad(conv_backprop_input_grad<true>));
  conv_attrs(t.def(OpId::DepthwiseConv2DBackpropFilter)
                 .tf()
                 .inputs({"input", "filter_sizes", "out_backprop"})
                 .infer(infer_conv_backprop_filter<true>)
                 .grad(conv_backprop_filter_grad<true>));
  auto pool_attrs = [](OpDefBuilder b) {
    b.outputs({"output"})
        .attr("ksize", AttrType::kInts)
        .attr("strides", AttrType::kInts)
        .attr("padding", AttrType::kString)
        .traits(kHalfInFloat);  // float16/bfloat16 in float32
  };
  pool_attrs(t.def(OpId::MaxPoolGrad)
                 .tf()
                 .inputs({"orig_input", "orig_output", "grad"})
                 .infer(infer_max_pool_grad<false>)
                 .grad(max_pool_grad_grad_rule<false>));
  pool_attrs(t.def(OpId::MaxPoolGradGrad)
                 .tf()
                 .inputs({"orig_input", "orig_output", "grad"})
                 .infer(infer_max_pool_grad<true>)
                 .grad(max_pool_grad_grad_rule<true>));
  pool_attrs(t.def(OpId::AvgPoolGrad)
                 .tf()
                 .inputs({"orig_input_shape", "grad"})
                 .infer(infer_avg_pool_grad)
                 .grad(avg_pool_grad_grad_rule));
}

void conv2d_grad_rule(KILN_GRAD_ARGS) {
  conv_grad<false>(op, in, out, g, attrs, gi);
}
void depthwise_conv2d_grad_rule(KILN_GRAD_ARGS) {
  conv_grad<true>(op, in, out, g, attrs, gi);
}

Tensor conv2d_backprop_input(const Tensor& input_sizes, const Tensor& filter,
                             const Tensor& out_backprop, const std::vector<int64_t>& strides,
                             const std::string& padding, const std::vector<int64_t>& dilations) {
  return call_op1(OpId::Conv2DBackpropInput, {input_sizes, filter, out_backprop},
                  {strides, padding, dilations});
}
Tensor conv2d_backprop_filter(const Tensor& input, const Tensor& filter_sizes,
                              const Tensor& out_backprop, const std::vector<int64_t>& strides,
                              const std::string& padding, const std::vector<int64_t>& dilations) {
  return call_op1(OpId::Conv2DBackpropFilter, {input, filter_sizes, out_backprop},
                  {strides, padding, dilations});
}
Tensor depthwise_conv2d_backprop_input(const Tensor& input_sizes, const Tensor& filter,
                                       const Tensor& out_backprop,
                                       const std::vector<int64_t>& strides,
                                       const std::string& padding,
                                       const std::vector<int64_t>& dilations) {
  return call_op1(OpId::DepthwiseConv2DBackpropInput, {input_sizes, filter, out_backprop},
                  {strides, padding, dilations});
}
Tensor depthwise_conv2d_backprop_filter(const Tensor& input, const Tensor& filter_sizes,
                                        const Tensor& out_backprop,
                                        const std::vector<int64_t>& strides,
                                        const std::string& padding,
                                        const std::vector<int64_t>& dilations) {
  return call_op1(OpId::DepthwiseConv2DBackpropFilter, {input, filter_sizes, out_backprop},
                  {strides, padding, dilations});
}
Tensor max_pool_grad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad,
                     const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                     const std::string& padding) {
  return call_op1(OpId::MaxPoolGrad, {orig_input, orig_output, grad}, {ksize, strides, padding});
}
Tensor max_pool_grad_grad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad,
                          const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                          const std::string& padding) {
  return call_op1(OpId::MaxPoolGradGrad, {orig_input, orig_output, grad},
                  {ksize, strides, padding});
}
Tensor avg_pool_grad(const Tensor& orig_input_shape, const Tensor& grad,
                     const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                     const std::string& padding) {
  return call_op1(OpId::AvgPoolGrad, {orig_input_shape, grad}, {ksize, strides, padding});
}

}  // namespace kiln
