// Slicing and gathering: slice, strided_slice (and the index() lowering),
// StridedSliceGrad, gather.
#include <algorithm>
#include <limits>

#include "front_util.h"
#include "grad_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "kiln/ops/array.h"
#include "onnx_export.h"
#include "shape_ops_util.h"
#include "slice_spec.h"

namespace kiln {
namespace {
using namespace shape_ops;

// ---- Slice ----

void infer_slice(InferContext& c) {
  expect_data_dtype(c, 0);
  const int64_t nb = int_vector_length(c, 1);
  const int64_t ns = int_vector_length(c, 2);
  if (nb >= 0 && ns >= 0 && nb != ns)
    c.fail("begin and size must have the same length, got ", nb, " and ", ns);
  const Shape& in = c.shape(0);
  int64_t r = in.rank_known() ? in.rank() : (nb >= 0 ? nb : ns);
  if (in.rank_known() && ((nb >= 0 && nb != r) || (ns >= 0 && ns != r)))
    c.fail("begin and size must have one entry per dimension of input (shape ", in.debug_string(),
           "), got ", nb >= 0 ? nb : ns);
  if (r < 0) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  std::vector<int64_t> begin, size;
  const bool have_begin = c.int_values(1, begin), have_size = c.int_values(2, size);
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    const size_t k = static_cast<size_t>(i);
    const int64_t d = in.rank_known() ? in.dim(i) : Shape::kUnknownDim;
    const int64_t b = have_begin ? begin[k] : -1, s = have_size ? size[k] : -2;
    if (have_begin && b < 0)
      c.fail("begin[", i, "] = ", b, " must be >= 0 (input shape ", in.debug_string(), ")");
    if (have_size && s < -1)
      c.fail("size[", i, "] = ", s, " must be >= 0, or -1 for the rest of the dimension");
    if (have_begin && d >= 0 && b > d)
      c.fail("begin[", i, "] = ", b, " is out of bounds for dimension ", i, " of size ", d,
             " (input shape ", in.debug_string(), ")");
    if (have_begin && have_size && d >= 0 && s > d - b)
      c.fail("slice [", b, ", ", b, " + ", s, ") is out of bounds for dimension ", i, " of size ",
             d, " (input shape ", in.debug_string(), ")");
    if (s >= 0)
      out.push_back(s);
    else if (s == -1 && have_begin && d >= 0)
      out.push_back(d - b);
    else
      out.push_back(Shape::kUnknownDim);
  }
  c.set_output(0, c.dtype(0), std::move(out));
}

// ---- StridedSlice ----

StridedSliceMasks masks_of(const InferContext& c) {
  return {c.attr_int("begin_mask"), c.attr_int("end_mask"), c.attr_int("ellipsis_mask"),
          c.attr_int("new_axis_mask"), c.attr_int("shrink_axis_mask")};
}

void infer_strided_slice(InferContext& c) {
  expect_data_dtype(c, 0);
  const int64_t nb = int_vector_length(c, 1);
  const int64_t ne = int_vector_length(c, 2);
  const int64_t ns = int_vector_length(c, 3);
  int64_t n = -1;
  for (int64_t v : {nb, ne, ns}) {
    if (v < 0) continue;
    if (n >= 0 && v != n)
      c.fail("begin, end and strides must have the same length, got ", nb, ", ", ne, " and ", ns);
    n = v;
  }
  SliceInts begin, end, strides;
  const bool known = c.int_values(1, begin) && c.int_values(2, end) && c.int_values(3, strides);
  if (n < 0) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  StridedSliceSpec spec = canonicalize_strided_slice(c.shape(0), n, known ? begin.data() : nullptr,
                                                     known ? end.data() : nullptr,
                                                     known ? strides.data() : nullptr, masks_of(c));
  c.set_output(0, c.dtype(0), std::move(spec.shape));
}

// ---- StridedSliceGrad ----
// Inputs: shape (of StridedSlice's input), begin, end, strides, dy.

void infer_strided_slice_grad(InferContext& c) {
  const DType dt = c.dtype(4);
  if (!is_numeric(dt)) c.fail("dy must be a numeric tensor, got ", dtype_name(dt));
  const int64_t rank = int_vector_length(c, 0);
  int64_t n = -1;
  for (size_t i : {1, 2, 3}) {
    const int64_t v = int_vector_length(c, i);
    if (v < 0) continue;
    if (n >= 0 && v != n)
      c.fail("begin, end and strides must have the same length, got ", int_vector_length(c, 1),
             ", ", int_vector_length(c, 2), " and ", int_vector_length(c, 3));
    n = v;
  }
  Shape xs = Shape::unknown_rank();
  std::vector<int64_t> dims;
  if (c.int_values(0, dims)) {
    xs = Shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0) c.fail("shape[", i, "] = ", dims[i], " must be >= 0");
      xs.push_back(dims[i]);
    }
    check_element_count(c, xs);
  } else if (rank >= 0) {
    xs = Shape(std::vector<int64_t>(static_cast<size_t>(rank), Shape::kUnknownDim));
  }
  // dy must have the shape StridedSlice gives for an input of shape xs
  // (checked as far as it is known; the kernel checks it in full).
  if (n >= 0 && xs.rank_known()) {
    SliceInts b, e, st;
    const bool known = c.int_values(1, b) && c.int_values(2, e) && c.int_values(3, st);
    const Shape want =
        canonicalize_strided_slice(xs, n, known ? b.data() : nullptr, known ? e.data() : nullptr,
                                   known ? st.data() : nullptr, masks_of(c), "StridedSliceGrad")
            .shape;
    if (!c.shape(4).is_compatible_with(want))
      c.fail("dy has shape ", c.shape(4).debug_string(), " but the slice of an input of shape ",
             xs.debug_string(), " has shape ", want.debug_string());
  }
  c.set_output(0, dt, std::move(xs));
}

// ---- GatherV2 ----

void infer_gather(InferContext& c) {
  expect_data_dtype(c, 0);
  const DType it = c.dtype(1);
  if (it != DType::kInt32 && it != DType::kInt64)
    c.fail("expected indices to be int32 or int64, got ", dtype_name(it));
  if (c.attr_int("batch_dims") != 0)
    c.fail("batch_dims ", c.attr_int("batch_dims"), " is not supported; only batch_dims = 0 is");
  const Shape& p = c.shape(0);
  const Shape& idx = c.shape(1);
  if (!p.rank_known() || !idx.rank_known())
    return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  if (p.rank() == 0) c.fail("params must be at least 1-dimensional, got shape []");
  const int64_t axis = normalize_axis(c.attr_int("axis"), p.rank(), c.op().type_name);
  Shape out;
  for (int64_t i = 0; i < axis; ++i) out.push_back(p.dim(i));
  for (int64_t d : idx.dims()) out.push_back(d);
  for (int64_t i = axis + 1; i < p.rank(); ++i) out.push_back(p.dim(i));
  check_element_count(c, out);
  c.set_output(0, c.dtype(0), std::move(out));
}

// ---- jit views ----
// A slice read in place under jit_compile: constant begin/size (or spec), and
// every dim that is not read whole statically known.

bool slice_view(const jit::ViewQuery& q, jit::View& v) {
  const Shape& in = q.inputs[0].shape;
  SmallVec<int64_t, 8> begin, size;
  if (!in.rank_known() || !q.ints(1, begin) || !q.ints(2, size) ||
      begin.size() != static_cast<size_t>(in.rank()) || size.size() != begin.size())
    return false;
  v = jit::whole_view(in.rank());
  for (size_t d = 0; d < begin.size(); ++d) {
    const int64_t n = in.dim(static_cast<int>(d)), b = begin[d];
    const int64_t z = size[d] == -1 && n >= 0 ? n - b : size[d];
    if (b < 0) return false;                            // the kernel's error
    if (b == 0 && (size[d] == -1 || z == n)) continue;  // whole
    if (z < 0) return false;
    v.start[d] = b;
    v.dims[d].size = z;
  }
  return true;
}

bool strided_slice_view(const jit::ViewQuery& q, jit::View& v) {
  const Shape& in = q.inputs[0].shape;
  SliceInts begin, end, strides;
  if (!in.rank_known() || in.rank() > 16 || !q.ints(1, begin) || !q.ints(2, end) ||
      !q.ints(3, strides) || end.size() != begin.size() || strides.size() != begin.size())
    return false;
  auto mask = [&](const char* m) { return attr_value<int64_t>(q.op, q.attrs, m); };
  // Dims of unknown size are resolved twice, as two large sizes: a dim read
  // from a start counted from its front, in steps of 1, to its end or to a
  // point counted from its end moves its size with the dim's (a rest of the
  // dim); an index counted from the front stays put.
  constexpr int64_t kStandIn = int64_t{1} << 40, kOther = kStandIn + (int64_t{1} << 20);
  constexpr int64_t kBig = int64_t{1} << 36;  // starts and trims past it stay kernel calls
  auto resolve = [&](int64_t unknown, StridedSliceSpec& spec) {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < in.rank(); ++d)
      dims.push_back(in.dim(static_cast<int>(d)) < 0 ? unknown : in.dim(static_cast<int>(d)));
    try {  // a spec the kernel would reject stays a kernel call (and fails there)
      spec = canonicalize_strided_slice(
          Shape(dims), static_cast<int64_t>(begin.size()), begin.data(), end.data(), strides.data(),
          {mask("begin_mask"), mask("end_mask"), mask("ellipsis_mask"), mask("new_axis_mask"),
           mask("shrink_axis_mask")});
    } catch (const Error&) {
      return false;
    }
    return true;
  };
  StridedSliceSpec spec, other;
  if (!resolve(kStandIn, spec) || !resolve(kOther, other)) return false;
  // Dim k of unknown size read from begin[k] to its end less `trim` values.
  auto rest = [&](size_t k, int64_t& trim) {
    trim = kStandIn - spec.begin[k] - spec.size[k];
    return spec.begin[k] == other.begin[k] && spec.stride[k] == 1 && other.stride[k] == 1 &&
           other.size[k] - spec.size[k] == kOther - kStandIn && trim >= 0 && trim < kBig &&
           spec.begin[k] < kBig;
  };
  v.start.assign(static_cast<size_t>(in.rank()), 0);
  v.dims.clear();
  for (int64_t g : spec.gather) {
    const auto k = static_cast<size_t>(g);
    if (g == kSliceShrunk) continue;  // below
    if (g == kSliceNewAxis) {
      v.dims.push_back({-1, 1, 1});
    } else if (spec.whole >> k & 1) {
      v.dims.push_back({g, 1, -1});
    } else if (in.dim(static_cast<int>(k)) >= 0) {
      v.start[k] = spec.begin[k];
      v.dims.push_back({g, spec.stride[k], spec.size[k]});
    } else if (int64_t trim = 0; rest(k, trim)) {
      v.start[k] = spec.begin[k];
      v.dims.push_back({g, 1, jit::rest_of_dim(trim)});
    } else {  // a part whose start or size depends on the dim's size
      return false;
    }
  }
  // Shrunk dims are read at their index (one counted from the front of a dim
  // of unknown size: the kernel checks it lies inside).
  for (size_t k = 0; k < v.start.size(); ++k) {
    bool walked = false;
    for (const jit::ViewDim& d : v.dims) walked |= d.src == static_cast<int64_t>(k);
    if (walked) continue;
    if (in.dim(static_cast<int>(k)) < 0 &&
        (spec.begin[k] != other.begin[k] || spec.begin[k] >= kBig))
      return false;
    v.start[k] = spec.begin[k];
  }
  return true;
}

// ---- gradient rules ----
// Slice: pad the gradient back with begin before and the rest after.
void slice_grad(KILN_GRAD_ARGS) {
  const Tensor before = cast(in[1], DType::kInt64);
  const Tensor after = grad::shape_of(in[0]) - before - grad::shape_of(out[0]);
  gi[0] = pad(g[0], stack({before, after}, 1), 0);
}

// StridedSlice: scatter the gradient into zeros of the input's shape with
// one StridedSliceGrad (begin/end/strides may be computed in the graph).
// The shape input takes begin's index dtype.
void strided_slice_grad(KILN_GRAD_ARGS) {
  const DType it = in[1].dtype();
  const Shape& xs = in[0].shape();
  Tensor shape_in;
  if (!xs.is_fully_defined()) {
    shape_in = shape(in[0], it);
  } else if (it == DType::kInt32 && std::all_of(xs.dims().begin(), xs.dims().end(), [](int64_t d) {
               return d <= std::numeric_limits<int32_t>::max();
             })) {
    std::vector<int32_t> d;
    for (int64_t v : xs.dims()) d.push_back(static_cast<int32_t>(v));
    shape_in = Tensor::from_vector(d, Shape({xs.rank()}));
  } else {
    shape_in = int64_vector(xs.to_vector());
  }
  gi[0] = call_op1(OpId::StridedSliceGrad, {shape_in, in[1], in[2], in[3], g[0]}, attrs);
}

// StridedSliceGrad is linear in dy: its gradient is the same slice of g.
// shape/begin/end/strides get none.
void strided_slice_grad_grad(KILN_GRAD_ARGS) {
  gi[4] = call_op1(OpId::StridedSlice, {g[0], in[1], in[2], in[3]}, attrs);
}

// Gather: the gradient rows are summed back into the rows they were read
// from (UnsortedSegmentSum; repeated indices add up). For axis > 0 the index
// dims are moved to the front first and the result's axis moved back.
void gather_grad(KILN_GRAD_ARGS) {
  if (attr_value<int64_t>(op, attrs, "batch_dims") != 0)
    throw UnimplementedError(str_cat(op.type_name, " gradient: batch_dims != 0 is not supported"));
  const Tensor &params = in[0], &idx = in[1];
  const Shape &ps = params.shape(), &is = idx.shape();
  if (!ps.rank_known() || !is.rank_known())
    throw UnimplementedError(str_cat(op.type_name,
                                     " gradient: params and indices need a known rank, got ",
                                     ps.debug_string(), " and ", is.debug_string()));
  const int64_t pr = ps.rank(), ir = is.rank();
  const int64_t axis = normalize_axis(attr_value<int64_t>(op, attrs, "axis"), pr,
                                      str_cat(op.type_name, " gradient").c_str());
  Tensor dy = g[0];  // [p_0..p_{axis-1}, indices..., p_{axis+1}..]
  if (axis > 0 && ir > 0) {
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < ir; ++i) perm.push_back(axis + i);
    for (int64_t i = 0; i < axis; ++i) perm.push_back(i);
    for (int64_t i = axis + ir; i < pr - 1 + ir; ++i) perm.push_back(i);
    dy = transpose(dy, perm);
  }
  const Tensor n =
      ps.dim(axis) >= 0 ? Tensor(ps.dim(axis)) : gather(shape(params, DType::kInt64), Tensor(axis));
  Tensor r = unsorted_segment_sum(dy, idx, n);  // [p_axis, p_0.., p_{axis+1}..]
  if (axis > 0) {
    std::vector<int64_t> perm;
    for (int64_t i = 1; i <= axis; ++i) perm.push_back(i);
    perm.push_back(0);
    for (int64_t i = axis + 1; i < pr; ++i) perm.push_back(i);
    r = transpose(r, perm);
  }
  gi[0] = r;
}

// ONNX export.
constexpr int64_t kOnnxMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kOnnxMin = std::numeric_limits<int64_t>::min();

std::string onnx_axes_node(onnx::ExportContext& c, const char* op, const std::string& x,
                           const std::vector<int64_t>& axes, std::string out) {
  std::vector<std::string> outs;
  if (!out.empty()) outs.push_back(std::move(out));
  if (c.opset() >= 13) return c.node(op, {x, c.ints(axes)}, {}, std::move(outs))[0];
  return c.node(op, {x}, {{"axes", axes}}, std::move(outs))[0];
}
// Slice(input, begin, size): ends = begin + size, to the end where size is -1.
void onnx_slice(onnx::ExportContext& c) {
  if (c.opset() < 10) c.unsupported("Slice with inputs needs opset 10");
  std::vector<int64_t> begin, size;
  std::string starts, ends;
  if (c.input_ints(1, begin) && c.input_ints(2, size)) {
    std::vector<int64_t> e(begin.size());
    for (size_t i = 0; i < e.size(); ++i) e[i] = size[i] < 0 ? kOnnxMax : begin[i] + size[i];
    starts = c.ints(begin);
    ends = c.ints(e);
  } else {
    starts = c.cast(c.in(1), c.input_spec(1).dtype, DType::kInt64);
    const std::string n = c.cast(c.in(2), c.input_spec(2).dtype, DType::kInt64);
    const std::string to_end = c.node1("Equal", {n, c.scalar(-1, DType::kInt64)});
    ends = c.node1("Where", {to_end, c.constant(Tensor(kOnnxMax)), c.node1("Add", {starts, n})});
  }
  c.emit("Slice", {c.in(0), starts, ends});
}
// StridedSlice with computed begin/end (x[i] in a loop): one Slice over
// the spec's dims, masked entries replaced by constants, then a Squeeze of
// the shrunk dims. No ellipsis or new axes.
void onnx_strided_slice_dynamic(onnx::ExportContext& c, const std::vector<int64_t>& s) {
  if (c.attr_int("ellipsis_mask") || c.attr_int("new_axis_mask"))
    c.unsupported("computed bounds with an ellipsis or new axes");
  const int64_t n = static_cast<int64_t>(s.size());
  auto bits = [&](const char* m) {
    std::vector<bool> v;
    for (int64_t j = 0; j < n; ++j) v.push_back((c.attr_int(m) >> j) & 1);
    return v;
  };
  auto mask = [&](const std::vector<bool>& v) {
    Tensor t = Tensor::empty(DType::kBool, Shape{n});
    for (int64_t j = 0; j < n; ++j) t.mutable_data<bool>()[j] = v[static_cast<size_t>(j)];
    return c.constant(t);
  };
  const auto bm = bits("begin_mask"), em = bits("end_mask"), sm = bits("shrink_axis_mask");
  std::vector<int64_t> b0, e0, axes, shrink;
  for (int64_t j = 0; j < n; ++j) {
    b0.push_back(s[j] > 0 ? 0 : kOnnxMax);
    e0.push_back(s[j] > 0 ? kOnnxMax : kOnnxMin);
    axes.push_back(j);
    if (sm[j]) shrink.push_back(j);
  }
  const std::string b = c.cast(c.in(1), c.input_spec(1).dtype, DType::kInt64);
  const std::string e = c.cast(c.in(2), c.input_spec(2).dtype, DType::kInt64);
  const std::string starts = c.node1("Where", {mask(bm), c.ints(b0), b});
  std::string ends = c.node1("Where", {mask(em), c.ints(e0), e});
  if (!shrink.empty()) {
    const std::string last = c.node1("Equal", {b, c.scalar(-1, DType::kInt64)});
    const std::string next = c.node1("Add", {b, c.scalar(1, DType::kInt64)});
    const std::string one = c.node1("Where", {last, c.constant(Tensor(kOnnxMax)), next});
    ends = c.node1("Where", {mask(sm), one, ends});
  }
  const std::vector<std::string> ins = {c.in(0), starts, ends, c.ints(axes), c.ints(s)};
  if (shrink.empty()) return c.emit("Slice", ins);
  onnx_axes_node(c, "Squeeze", c.node1("Slice", ins), shrink, c.out(0));
}
// StridedSlice with constant begin/end/strides: one Slice over every input
// dim, a Squeeze of the shrunk dims, an Unsqueeze for the new axes.
void onnx_strided_slice(onnx::ExportContext& c) {
  if (c.opset() < 10) c.unsupported("Slice with steps needs opset 10");
  std::vector<int64_t> b, e, s;
  if (!c.input_ints(3, s)) c.unsupported("strides must be constants");
  if (!c.input_ints(1, b) || !c.input_ints(2, e)) return onnx_strided_slice_dynamic(c, s);
  const int64_t r = c.input_rank(0), n = static_cast<int64_t>(b.size());
  auto bit = [&](const char* m, int64_t j) { return (c.attr_int(m) >> j) & 1; };
  int64_t real = 0;
  bool ellipsis = false;
  for (int64_t j = 0; j < n; ++j) {
    ellipsis |= bit("ellipsis_mask", j);
    real += !bit("ellipsis_mask", j) && !bit("new_axis_mask", j);
  }
  std::vector<int64_t> starts, ends, steps, shrink, new_axes;
  int64_t out_dims = 0;
  auto full = [&] {
    starts.push_back(0), ends.push_back(kOnnxMax), steps.push_back(1), ++out_dims;
  };
  for (int64_t j = 0; j < n; ++j) {
    if (bit("ellipsis_mask", j)) {
      for (int64_t k = 0; k < r - real; ++k) full();
    } else if (bit("new_axis_mask", j)) {
      new_axes.push_back(out_dims++);
    } else if (bit("shrink_axis_mask", j)) {
      shrink.push_back(static_cast<int64_t>(starts.size()));
      starts.push_back(b[j]), ends.push_back(b[j] == -1 ? kOnnxMax : b[j] + 1), steps.push_back(1);
    } else {
      const bool up = s[j] > 0;
      starts.push_back(bit("begin_mask", j) ? (up ? 0 : kOnnxMax) : b[j]);
      ends.push_back(bit("end_mask", j) ? (up ? kOnnxMax : kOnnxMin) : e[j]);
      steps.push_back(s[j]);
      ++out_dims;
    }
  }
  (void)ellipsis;
  while (static_cast<int64_t>(starts.size()) < r) full();
  std::vector<int64_t> axes(starts.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  const bool last = shrink.empty() && new_axes.empty();
  std::string y =
      c.node("Slice", {c.in(0), c.ints(starts), c.ints(ends), c.ints(axes), c.ints(steps)}, {},
             last ? std::vector<std::string>{c.out(0)} : std::vector<std::string>{})[0];
  if (!shrink.empty())
    y = onnx_axes_node(c, "Squeeze", y, shrink, new_axes.empty() ? c.out(0) : "");
  if (!new_axes.empty()) onnx_axes_node(c, "Unsqueeze", y, new_axes, c.out(0));
}
void onnx_gather(onnx::ExportContext& c) {
  if (c.attr_int("batch_dims") != 0) c.unsupported("batch_dims must be 0");
  c.emit("Gather", {c.in(0), c.in(1)}, {{"axis", c.attr_int("axis")}});
}

}  // namespace

namespace shape_ops {
void define_slicing_ops(OpTableBuilder& t) {
  t.def(OpId::Slice)
      .tf()
      .inputs({"input", "begin", "size"})
      .outputs({"output"})
      .traits(kView)
      .infer(infer_slice)
      .grad(slice_grad)
      .jit_view(slice_view)
      .onnx(onnx_slice);
  // StridedSlice's five masks, shared by StridedSliceGrad.
  auto masks = [](auto& d) -> auto& {
    for (const char* m :
         {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
      d.attr(m, AttrType::kInt, int64_t{0});
    return d;
  };
  masks(t.def(OpId::StridedSlice)
            .tf()
            .inputs({"input", "begin", "end", "strides"})
            .outputs({"output"}))
      .traits(kView)
      .infer(infer_strided_slice)
      .grad(strided_slice_grad)
      .jit_view(strided_slice_view)
      .onnx(onnx_strided_slice);
  masks(t.def(OpId::StridedSliceGrad)
            .tf()
            .inputs({"shape", "begin", "end", "strides", "dy"})
            .outputs({"output"}))
      .traits(kView | kHalfInFloat)  // kHalfInFloat: float16/bfloat16 in float32
      .infer(infer_strided_slice_grad)
      .grad(strided_slice_grad_grad);
  t.def(OpId::Gather)
      .tf_form({{2, "axis"}})
      .inputs({"params", "indices"})
      .outputs({"output"})
      .attr("axis", AttrType::kInt, int64_t{0})
      .attr("batch_dims", AttrType::kInt, int64_t{0})
      .infer(infer_gather)
      .grad(gather_grad)
      .onnx(onnx_gather);
}
}  // namespace shape_ops

Tensor slice(const Tensor& input, const Tensor& begin, const Tensor& size) {
  return call_op1(OpId::Slice, {input, begin, size});
}
Tensor slice(const Tensor& input, const std::vector<int64_t>& begin,
             const std::vector<int64_t>& size) {
  return slice(input, int64_vector(begin), int64_vector(size));
}
Tensor slice(const Tensor& input, std::initializer_list<int64_t> begin,
             std::initializer_list<int64_t> size) {
  return slice(input, int64_vector(begin), int64_vector(size));
}

Tensor strided_slice(const Tensor& input, const Tensor& begin, const Tensor& end,
                     const Tensor& strides, int64_t begin_mask, int64_t end_mask,
                     int64_t ellipsis_mask, int64_t new_axis_mask, int64_t shrink_axis_mask) {
  return call_op1(OpId::StridedSlice, {input, begin, end, strides},
                  {begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask});
}
Tensor strided_slice(const Tensor& input, const std::vector<int64_t>& begin,
                     const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                     int64_t begin_mask, int64_t end_mask, int64_t ellipsis_mask,
                     int64_t new_axis_mask, int64_t shrink_axis_mask) {
  const std::vector<int64_t> ones(begin.size(), 1);
  return strided_slice(input, int64_vector(begin), int64_vector(end),
                       int64_vector(strides.empty() ? ones : strides), begin_mask, end_mask,
                       ellipsis_mask, new_axis_mask, shrink_axis_mask);
}
Tensor strided_slice(const Tensor& input, std::initializer_list<int64_t> begin,
                     std::initializer_list<int64_t> end, std::initializer_list<int64_t> strides,
                     int64_t begin_mask, int64_t end_mask, int64_t ellipsis_mask,
                     int64_t new_axis_mask, int64_t shrink_axis_mask) {
  return strided_slice(input, std::vector<int64_t>(begin), std::vector<int64_t>(end),
                       std::vector<int64_t>(strides), begin_mask, end_mask, ellipsis_mask,
                       new_axis_mask, shrink_axis_mask);
}

namespace {

// begin/end/strides as an int64 tensor. One-entry specs (x[i] in a loop) of
// small values are made once per thread: tensors are immutable.
Tensor spec_vector(std::span<const int64_t> v) {
  constexpr int64_t kLow = -64, kHigh = 4096;
  if (v.size() != 1 || v[0] < kLow || v[0] >= kHigh) return int64_vector(v);
  thread_local std::vector<Tensor> cache(static_cast<size_t>(kHigh - kLow));
  Tensor& t = cache[static_cast<size_t>(v[0] - kLow)];
  if (!t.defined()) t = int64_vector(v);
  return t;
}

Tensor index_items(const Tensor& input, std::span<const IndexItem> items) {
  if (items.size() > 64)
    throw InvalidArgumentError(
        str_cat("index: ", items.size(), " index entries given; at most 64 are supported"));
  SmallVec<int64_t, 8> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_mask = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const IndexItem& it = items[i];
    const int64_t bit = int64_t{1} << i;
    int64_t b = 0, e = 0, s = 1;
    switch (it.kind()) {
      case IndexItem::kIndex:
        b = it.index();
        e = b == -1 ? 0 : b + 1;  // ignored: the dimension is removed
        shrink_mask |= bit;
        break;
      case IndexItem::kSlice: {
        const Slice& sl = it.slice();
        if (sl.step_) s = *sl.step_;
        if (s == 0) throw InvalidArgumentError("index: slice step cannot be zero");
        if (sl.start_)
          b = *sl.start_;
        else
          begin_mask |= bit;
        if (sl.stop_)
          e = *sl.stop_;
        else
          end_mask |= bit;
        break;
      }
      case IndexItem::kNewAxis: new_axis_mask |= bit; break;
      case IndexItem::kEllipsis:
        if (ellipsis_mask) throw InvalidArgumentError("index: at most one ellipsis is allowed");
        ellipsis_mask |= bit;
        break;
    }
    begin.push_back(b);
    end.push_back(e);
    strides.push_back(s);
  }
  return strided_slice(input, spec_vector(begin), spec_vector(end), spec_vector(strides),
                       begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask);
}

}  // namespace

Tensor index(const Tensor& input, const std::vector<IndexItem>& items) {
  return index_items(input, items);
}
Tensor index(const Tensor& input, std::initializer_list<IndexItem> items) {
  return index_items(input, std::span<const IndexItem>(items.begin(), items.size()));
}

Tensor gather(const Tensor& params, const Tensor& indices, int64_t axis) {
  return call_op1(OpId::Gather, {params, indices}, {axis});
}

}  // namespace kiln
