// Convolution and pooling ops (NHWC): definitions, inference, front functions.
#include "families.h"
#include "fused_conv.h"
#include "grad_util.h"
#include "kiln/context.h"
#include "kiln/ops/nn.h"
#include "onnx_export.h"
#include "window.h"

namespace kiln {
namespace {

using window::Dim;
using window::expect_float;
using window::Hw;
using window::Padding;

struct Window {
  Hw stride, dilation, ksize;
  Padding padding = Padding::kValid;
};

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

// Conv2D / DepthwiseConv2dNative. Attrs: strides, padding, dilations.
template <bool kDepthwise>
void infer_conv(InferContext& c, bool same_dtypes) {
  expect_float(c, 0);
  if (same_dtypes) c.expect_same_dtype(0, 1);
  Window w;
  w.stride = window::hw_attr(c, "strides");
  w.padding = window::padding_attr(c);
  w.dilation = window::hw_attr(c, "dilations");
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

// _FusedConv2D / _FusedDepthwiseConv2dNative: the convolution's inference,
// then the epilogue (fused_conv.h) and its extra inputs.
template <bool kDepthwise>
void infer_fused_conv(InferContext& c) {
  using namespace fused_conv;
  // float32, or a bfloat16 input with a bfloat16 or float32 filter
  // (conv_float_filters: packed to bf16 once per version).
  const bool bf16 = c.dtype(0) == DType::kBFloat16;
  if (bf16 && c.dtype(1) != DType::kFloat32) c.expect_dtype(1, DType::kBFloat16);
  if (!bf16) {
    c.expect_dtype(0, DType::kFloat32);
    c.expect_dtype(1, DType::kFloat32);
  }
  infer_conv<kDepthwise>(c, false);
  const int64_t oc = c.output(0).shape.rank_known() ? c.output(0).shape.dim(3) : -1;
  std::vector<PostOp> ops;
  const std::string err = parse_post_ops(c.attr_string("fused_ops"), ops);
  if (!err.empty()) c.fail("fused_ops: ", err);
  size_t n_args = 0;
  for (PostOp op : ops) n_args += takes_arg(op);
  if (c.num_inputs() != 2 + n_args)
    c.fail("fused_ops '", c.attr_string("fused_ops"), "' take ", n_args, " extra inputs, got ",
           c.num_inputs() - 2);
  const double lo = c.attr_float("clip_min"), hi = c.attr_float("clip_max");
  if (!(lo <= hi)) c.fail("clip_min ", lo, " must not exceed clip_max ", hi);
  size_t arg = 2;
  for (PostOp op : ops) {
    if (!takes_arg(op)) continue;
    const Shape& s = c.shape(arg);
    const std::string what = str_cat(c.input_name(arg), " (for ", post_op_name(op), ")");
    if (!s.rank_known() || s.rank() > 4)
      c.fail(what, " must have rank <= 4, got shape ", s.debug_string());
    // A residual has the output's type; the per-channel operands are float32.
    c.expect_dtype(arg, op == PostOp::kAdd && whole_tensor(s) ? c.dtype(0) : DType::kFloat32);
    if (op == PostOp::kAdd && whole_tensor(s)) {  // a residual: the output's shape
      if (!c.output(0).shape.rank_known() || !s.is_compatible_with(c.output(0).shape))
        c.fail(what, " must have the output's shape ", c.output(0).shape.debug_string(),
               " or broadcast along the output channels, got shape ", s.debug_string());
      ++arg;
      continue;
    }
    if (op == PostOp::kBiasAdd && s.rank() != 1)
      c.fail(what, " must be 1-D, got shape ", s.debug_string());
    for (int64_t d = 0; d + 1 < s.rank(); ++d)
      if (s.dim(d) != 1 && s.dim(d) != -1)
        c.fail(what, " must broadcast along the output channels only, got shape ",
               s.debug_string());
    const int64_t last = s.rank() ? s.dim(s.rank() - 1) : 1;
    const bool ok = op == PostOp::kBiasAdd ? (last == oc || last < 0 || oc < 0)
                                           : (last == 1 || last == oc || last < 0 || oc < 0);
    if (!ok)
      c.fail(what, " has ", last, " elements along the last dim, expected ",
             op == PostOp::kBiasAdd ? "" : "1 or ", oc, " (the output channels)");
    ++arg;
  }
}

// MaxPool / AvgPool. Attrs: ksize, strides, padding.
template <bool kAvg>
void infer_pool(InferContext& c) {
  if (kAvg)
    expect_float(c, 0);
  else if (!is_numeric(c.dtype(0)))
    c.fail("input must have a numeric dtype, got ", dtype_name(c.dtype(0)));
  Window w;
  w.ksize = window::hw_attr(c, "ksize");
  w.stride = window::hw_attr(c, "strides");
  w.padding = window::padding_attr(c);
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

// conv_grad.cpp: the backward ops, and the forward ops' gradient rules.
void define_conv_grad_ops(OpTableBuilder& t);
void conv2d_grad_rule(KILN_GRAD_ARGS);
void depthwise_conv2d_grad_rule(KILN_GRAD_ARGS);
void max_pool_grad_rule(KILN_GRAD_ARGS);
void avg_pool_grad_rule(KILN_GRAD_ARGS);

// Output elements times the filter taps per output channel; oneDNN (or the
// row blocks) split convolutions above one grain.
static OpCost conv_cost(const CostQuery& q) {
  const double base = q.elements();
  const double inner = static_cast<double>(std::max<int64_t>(q.out_inner, 1));
  const double filter = q.in.size() > 1 ? static_cast<double>(std::max<int64_t>(q.in[1], 0)) : 1;
  const double w = static_cast<double>(q.out_elements()) * std::max(1.0, filter / inner);
  return {std::max(w, base), w > static_cast<double>(q.grain)};
}

// ONNX export: kiln's NHWC values are transposed to NCHW around ONNX's
// Conv and pools (onnxruntime removes transpose pairs); HWIO filters to OIHW.
namespace {

const std::vector<int64_t> kToNchw = {0, 3, 1, 2}, kToNhwc = {0, 2, 3, 1};

// (h, w) of a strides/dilations/ksize list ({s}, {h, w} or {1, h, w, 1}).
std::vector<int64_t> spatial(const std::vector<int64_t>& v) {
  window::Hw hw;
  window::parse_hw(v, "window", hw);
  return {hw.h, hw.w};
}
onnx::NamedAttrs window_attrs(onnx::ExportContext& c, const char* dilations) {
  const std::string& pad = c.attr_string("padding");
  if (pad != "SAME" && pad != "VALID") c.unsupported(str_cat("padding '", pad, "'"));
  onnx::NamedAttrs a = {{"auto_pad", std::string(pad == "SAME" ? "SAME_UPPER" : "VALID")},
                        {"strides", spatial(c.attr_ints("strides"))}};
  if (dilations) a.emplace_back("dilations", spatial(c.attr_ints(dilations)));
  return a;
}
// `op` on in(0) as NCHW, the result written to out(0) as NHWC. A bfloat16
// convolution (ONNX's Conv has no bf16) runs on float32 between casts.
void emit_nchw(onnx::ExportContext& c, const char* op, std::vector<std::string> extra,
               onnx::NamedAttrs attrs) {
  const DType dt = c.input_spec(0).dtype;
  const bool bf16 = dt == DType::kBFloat16;
  const std::string x = bf16 ? c.cast(c.in(0), dt, DType::kFloat32) : c.in(0);
  std::vector<std::string> ins = {c.node1("Transpose", {x}, {{"perm", kToNchw}})};
  ins.insert(ins.end(), extra.begin(), extra.end());
  const std::string y = c.node1(op, std::move(ins), std::move(attrs));
  if (!bf16) return c.emit("Transpose", {y}, {{"perm", kToNhwc}});
  c.emit("Cast", {c.node1("Transpose", {y}, {{"perm", kToNhwc}})}, {{"to", c.onnx_dtype(dt)}});
}
// Input i (a filter) as float32 when it is bfloat16.
std::string float_filter(onnx::ExportContext& c, size_t i) {
  const DType dt = c.input_spec(i).dtype;
  return dt == DType::kBFloat16 ? c.cast(c.in(i), dt, DType::kFloat32) : c.in(i);
}
void onnx_conv(onnx::ExportContext& c) {
  const std::string w =
      c.node1("Transpose", {float_filter(c, 1)}, {{"perm", std::vector<int64_t>{3, 2, 0, 1}}});
  emit_nchw(c, "Conv", {w}, window_attrs(c, "dilations"));
}
// Depthwise: HWCM filter -> [C*M, 1, H, W], one group per input channel.
void onnx_depthwise(onnx::ExportContext& c) {
  const Shape& f = c.input_spec(1).shape;
  if (!f.is_fully_defined()) c.unsupported("the filter's shape is not known");
  const std::string r =
      c.node1("Reshape", {float_filter(c, 1), c.ints({f[0], f[1], 1, f[2] * f[3]})});
  const std::string w = c.node1("Transpose", {r}, {{"perm", std::vector<int64_t>{3, 2, 0, 1}}});
  onnx::NamedAttrs a = window_attrs(c, "dilations");
  a.emplace_back("group", f[2]);
  emit_nchw(c, "Conv", {w}, std::move(a));
}
template <bool kAvg>
void onnx_pool(onnx::ExportContext& c) {
  onnx::NamedAttrs a = window_attrs(c, nullptr);
  a.emplace_back("kernel_shape", spatial(c.attr_ints("ksize")));
  if (kAvg) a.emplace_back("count_include_pad", int64_t{0});
  emit_nchw(c, kAvg ? "AveragePool" : "MaxPool", {}, std::move(a));
}

}  // namespace

void define_conv_ops(OpTableBuilder& t) {
  const std::vector<int64_t> ones = {1, 1, 1, 1};
  t.def(OpId::Conv2D)
      .tf()
      .inputs({"input", "filter"})
      .outputs({"output"})
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .attr("dilations", AttrType::kInts, ones)
      .traits(kHalfInFloat | kNativeBFloat16)  // float16 in float32, bfloat16 native
      .cost(conv_cost)
      .infer([](InferContext& c) { infer_conv<false>(c, true); })
      .grad(conv2d_grad_rule)
      .onnx(onnx_conv);
  t.def(OpId::DepthwiseConv2D)
      .tf()
      .inputs({"input", "filter"})
      .outputs({"output"})
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .attr("dilations", AttrType::kInts, ones)
      .traits(kHalfInFloat | kNativeBFloat16)  // float16 in float32, bfloat16 native
      .cost(conv_cost)
      .infer([](InferContext& c) { infer_conv<true>(c, true); })
      .grad(depthwise_conv2d_grad_rule)
      .onnx(onnx_depthwise);
  for (OpId id : {OpId::FusedConv2D, OpId::FusedDepthwiseConv2D})
    t.def(id)
        .inputs({"input", "filter", "args"})
        .outputs({"output"})
        .attr("strides", AttrType::kInts)
        .attr("padding", AttrType::kString)
        .attr("dilations", AttrType::kInts, ones)
        .attr("fused_ops", AttrType::kString)
        .attr("clip_min", AttrType::kFloat, 0.0)
        .attr("clip_max", AttrType::kFloat, 6.0)
        .traits(kVariadicInput | kGraphOnly | kPassOnly)
        .cost(conv_cost)
        .infer(id == OpId::FusedConv2D ? infer_fused_conv<false> : infer_fused_conv<true>);
  t.def(OpId::MaxPool)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("ksize", AttrType::kInts)
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .traits(kHalfInFloat)  // float16/bfloat16 in float32
      .infer(infer_pool<false>)
      .grad(max_pool_grad_rule)
      .onnx(onnx_pool<false>);
  t.def(OpId::AvgPool)
      .tf()
      .inputs({"value"})
      .outputs({"output"})
      .attr("ksize", AttrType::kInts)
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .traits(kHalfInFloat)  // float16/bfloat16 in float32
      .infer(infer_pool<true>)
      .grad(avg_pool_grad_rule)
      .onnx(onnx_pool<true>);
  define_conv_grad_ops(t);
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

namespace fused_conv {

namespace {
constexpr PostOp kAll[] = {PostOp::kBiasAdd, PostOp::kMul,      PostOp::kAdd,     PostOp::kSub,
                           PostOp::kRelu,    PostOp::kClip,     PostOp::kSigmoid, PostOp::kTanh,
                           PostOp::kSwish,   PostOp::kHardSwish};
}  // namespace

const char* post_op_name(PostOp op) {
  switch (op) {
    case PostOp::kBiasAdd: return "BiasAdd";
    case PostOp::kMul: return "Mul";
    case PostOp::kAdd: return "Add";
    case PostOp::kSub: return "Sub";
    case PostOp::kRelu: return "Relu";
    case PostOp::kClip: return "Clip";
    case PostOp::kSigmoid: return "Sigmoid";
    case PostOp::kTanh: return "Tanh";
    case PostOp::kSwish: return "Swish";
    case PostOp::kHardSwish: return "HardSwish";
    case PostOp::kNone: break;
  }
  return "?";
}

std::string parse_post_ops(std::string_view spec, std::vector<PostOp>& out) {
  out.clear();
  bool clip = false;
  for (bool more = !spec.empty(); more;) {
    const size_t comma = spec.find(',');
    const std::string_view name = spec.substr(0, comma);
    more = comma != std::string_view::npos;
    spec = more ? spec.substr(comma + 1) : std::string_view();
    bool found = false;
    for (PostOp op : kAll)
      if (name == post_op_name(op)) {
        if (op == PostOp::kBiasAdd && !out.empty()) return "BiasAdd must be the first step";
        if (op == PostOp::kClip && clip) return "at most one Clip step";
        clip |= op == PostOp::kClip;
        out.push_back(op);
        found = true;
      }
    if (!found)
      return str_cat("unknown step '", name,
                     "' (expected BiasAdd, Mul, Add, Sub, Relu, Clip, Sigmoid, Tanh or Swish)");
  }
  return {};
}

std::string format_post_ops(const std::vector<PostOp>& ops) {
  std::string s;
  for (PostOp op : ops) s += str_cat(s.empty() ? "" : ",", post_op_name(op));
  return s;
}

}  // namespace fused_conv

}  // namespace kiln
