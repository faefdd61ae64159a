// Shape ops: reshape, expand_dims, squeeze, transpose, shape/size/rank and
// one_hot, plus the helpers shared by the other data-movement files.
#include <algorithm>
#include <limits>

#include "families.h"
#include "front_util.h"
#include "grad_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops/array.h"
#include "onnx_export.h"
#include "shape_ops_util.h"
#include "transpose_perm.h"

namespace kiln {
namespace shape_ops {

void expect_data_dtype(const InferContext& c, size_t i) {
  if (c.dtype(i) == DType::kResource || c.dtype(i) == DType::kInvalid)
    c.fail("unsupported dtype ", dtype_name(c.dtype(i)), " for ", c.input_name(i));
}

static void expect_int_dtype(const InferContext& c, size_t i) {
  const DType dt = c.dtype(i);
  if (dt != DType::kInt32 && dt != DType::kInt64)
    c.fail("expected ", c.input_name(i), " to be int32 or int64, got ", dtype_name(dt));
}

int64_t int_vector_length(const InferContext& c, size_t i) {
  expect_int_dtype(c, i);
  const Shape& s = c.shape(i);
  if (!s.rank_known()) return -1;
  if (s.rank() != 1)
    c.fail("expected ", c.input_name(i), " to be a vector (rank 1), got shape ", s.debug_string());
  return s.dim(0);
}

void expect_int_scalar(const InferContext& c, size_t i) {
  expect_int_dtype(c, i);
  const Shape& s = c.shape(i);
  if (s.rank_known() && s.rank() != 0)
    c.fail("expected ", c.input_name(i), " to be a scalar, got shape ", s.debug_string());
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

void check_element_count(const InferContext& c, const Shape& s, const char* what) {
  if (!s.is_fully_defined()) return;
  int64_t n = 1;
  for (int64_t d : s.dims())
    if (__builtin_mul_overflow(n, d, &n))
      c.fail(what, " shape ", s.debug_string(), " has too many elements (int64 overflow)");
}

int64_t checked_mul(const InferContext& c, int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) c.fail(what, ": ", a, " * ", b, " overflows int64");
  return r;
}

int64_t checked_add(const InferContext& c, int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) c.fail(what, ": ", a, " + ", b, " overflows int64");
  return r;
}

Tensor scalar_of(Scalar s, DType dtype) {
  if (s.kind == Scalar::kInt && (s.i == 0 || s.i == 1)) {
    if (dtype == DType::kBool) return Tensor(s.i == 1);
    if (dtype == DType::kString && s.i == 0) return Tensor(std::string());
  }
  return Tensor(s, dtype);
}

}  // namespace shape_ops

namespace {
using namespace shape_ops;

// ---- Reshape ----

void infer_reshape(InferContext& c) {
  expect_data_dtype(c, 0);
  const int64_t len = int_vector_length(c, 1);
  const Shape& in = c.shape(0);
  std::vector<int64_t> dims;
  if (!c.int_values(1, dims)) {
    if (len < 0) {
      c.set_output(0, c.dtype(0), Shape::unknown_rank());
    } else {
      Shape s;
      for (int64_t i = 0; i < len; ++i) s.push_back(Shape::kUnknownDim);
      c.set_output(0, c.dtype(0), std::move(s));
    }
    return;
  }
  int64_t unknown = -1, product = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (unknown >= 0)
        c.fail("shape ", ints_str(dims), " has more than one -1; at most one dimension ",
               "can be inferred");
      unknown = static_cast<int64_t>(i);
    } else if (dims[i] < 0) {
      c.fail("shape[", i, "] = ", dims[i], " is invalid: dimensions must be >= 0 or -1 (shape ",
             ints_str(dims), ")");
    } else if (__builtin_mul_overflow(product, dims[i], &product)) {
      c.fail("shape ", ints_str(dims), " has too many elements (int64 overflow)");
    }
  }
  const int64_t n = in.num_elements_or_unknown();
  if (n >= 0) {
    if (unknown >= 0) {
      if (product == 0)
        c.fail("cannot infer the -1 in shape ", ints_str(dims), " for a tensor of shape ",
               in.debug_string(), ": the other dimensions multiply to 0");
      if (n % product != 0)
        c.fail("cannot reshape a tensor of shape ", in.debug_string(), " (", n,
               " elements) to shape ", ints_str(dims), ": ", n, " is not a multiple of ", product);
      dims[static_cast<size_t>(unknown)] = n / product;
    } else if (n != product) {
      c.fail("cannot reshape a tensor of shape ", in.debug_string(), " (", n,
             " elements) to shape ", ints_str(dims), " (", product, " elements)");
    }
  } else if (unknown >= 0) {
    dims[static_cast<size_t>(unknown)] = Shape::kUnknownDim;
  }
  c.set_output(0, c.dtype(0), Shape(dims));
}

// ---- ExpandDims / Squeeze ----

void infer_expand_dims(InferContext& c) {
  expect_data_dtype(c, 0);
  const Shape& in = c.shape(0);
  if (!in.rank_known()) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  const int64_t r = in.rank();
  int64_t axis = c.attr_int("axis");
  if (axis < -r - 1 || axis > r)
    c.fail("axis ", axis, " is out of range for input of rank ", r, " (shape ", in.debug_string(),
           "; expected [", -r - 1, ", ", r, "])");
  if (axis < 0) axis += r + 1;
  Shape out = in;
  out.insert(axis, 1);
  c.set_output(0, c.dtype(0), std::move(out));
}

void infer_squeeze(InferContext& c) {
  expect_data_dtype(c, 0);
  const Shape& in = c.shape(0);
  const auto& axes = c.attr_ints("squeeze_dims");
  if (!in.rank_known()) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  const int64_t r = in.rank();
  std::vector<bool> drop(static_cast<size_t>(r), false);
  if (axes.empty()) {
    for (int64_t i = 0; i < r; ++i) {
      if (in.dim(i) < 0)  // might be 1: the rank is not known
        return c.set_output(0, c.dtype(0), Shape::unknown_rank());
      drop[static_cast<size_t>(i)] = in.dim(i) == 1;
    }
  } else {
    for (int64_t a : axes) {
      if (a < -r || a >= r)
        c.fail("axis ", a, " is out of range for input of rank ", r, " (shape ", in.debug_string(),
               "; expected [", -r, ", ", r, "))");
      const int64_t k = a < 0 ? a + r : a;
      if (in.dim(k) >= 0 && in.dim(k) != 1)
        c.fail("cannot squeeze dimension ", k, " of shape ", in.debug_string(),
               ": expected size 1, got ", in.dim(k));
      drop[static_cast<size_t>(k)] = true;
    }
  }
  Shape out;
  for (int64_t i = 0; i < r; ++i)
    if (!drop[static_cast<size_t>(i)]) out.push_back(in.dim(i));
  c.set_output(0, c.dtype(0), std::move(out));
}

// ---- Transpose ----

void infer_transpose(InferContext& c) {
  expect_data_dtype(c, 0);
  const Shape& in = c.shape(0);
  if (c.attr_ints("perm").empty() && !in.rank_known())
    return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  const std::vector<int64_t> perm = transpose_perm(c.attr_ints("perm"), in.rank());
  const int64_t n = static_cast<int64_t>(perm.size());
  if (in.rank_known() && in.rank() != n)
    c.fail("perm ", ints_str(perm), " has ", n, " entries but the input has rank ", in.rank(),
           " (shape ", in.debug_string(), ")");
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= n || seen[static_cast<size_t>(p)])
      c.fail("perm ", ints_str(perm), " is not a permutation of [0, ", n, ")");
    seen[static_cast<size_t>(p)] = true;
  }
  Shape out;
  for (int64_t p : perm) out.push_back(in.rank_known() ? in.dim(p) : Shape::kUnknownDim);
  c.set_output(0, c.dtype(0), std::move(out));
}

// ---- Shape / Size / Rank ----

void expect_out_type(const InferContext& c, DType t) {
  if (t != DType::kInt32 && t != DType::kInt64)
    c.fail("out_type must be int32 or int64, got ", dtype_name(t));
}

void infer_shape_of(InferContext& c) {
  const DType t = c.attr_dtype("out_type");
  expect_out_type(c, t);
  const Shape& in = c.shape(0);
  if (t == DType::kInt32 && in.rank_known())
    for (int64_t d : in.dims())
      if (d > std::numeric_limits<int32_t>::max())
        c.fail("dimension ", d, " of shape ", in.debug_string(),
               " does not fit in int32; use out_type int64");
  c.set_output(0, t, Shape{in.rank_known() ? in.rank() : Shape::kUnknownDim});
}

void infer_size(InferContext& c) {
  const DType t = c.attr_dtype("out_type");
  expect_out_type(c, t);
  const Shape& in = c.shape(0);
  check_element_count(c, in, "input");
  if (t == DType::kInt32 && in.num_elements_or_unknown() > std::numeric_limits<int32_t>::max())
    c.fail("the element count ", in.num_elements(), " of shape ", in.debug_string(),
           " does not fit in int32; use out_type int64");
  c.set_output(0, t, Shape());
}

void infer_rank(InferContext& c) {
  c.set_output(0, DType::kInt32, Shape());
}

// ---- OneHot ----

void infer_one_hot(InferContext& c) {
  const DType it = c.dtype(0);
  if (it != DType::kUInt8 && it != DType::kInt8 && it != DType::kInt32 && it != DType::kInt64)
    c.fail("expected indices to be uint8, int8, int32 or int64, got ", dtype_name(it));
  expect_int_scalar(c, 1);
  expect_data_dtype(c, 2);
  c.expect_same_dtype(2, 3);
  for (size_t i : {size_t{2}, size_t{3}})
    if (c.shape(i).rank_known() && c.shape(i).rank() != 0)
      c.fail("expected ", c.input_name(i), " to be a scalar, got shape ",
             c.shape(i).debug_string());
  int64_t depth = Shape::kUnknownDim;
  std::vector<int64_t> v;
  if (c.int_values(1, v)) {
    depth = v[0];
    if (depth < 0) c.fail("depth must be non-negative, got ", depth);
  }
  const Shape& in = c.shape(0);
  if (!in.rank_known()) return c.set_output(0, c.dtype(2), Shape::unknown_rank());
  const int64_t r = in.rank();
  int64_t axis = c.attr_int("axis");
  if (axis < -1 || axis > r)
    c.fail("axis ", axis, " is out of range for indices of rank ", r, " (expected -1 or [0, ", r,
           "])");
  if (axis == -1) axis = r;
  Shape out = in;
  out.insert(axis, depth);
  check_element_count(c, out);
  c.set_output(0, c.dtype(2), std::move(out));
}

// ---- gradient rules ----
// Reshape, ExpandDims, Squeeze: the gradient takes the input's shape back.
void reshape_grad(KILN_GRAD_ARGS) {
  gi[0] = reshape(g[0], grad::shape_of(in[0]));
}
void transpose_grad(KILN_GRAD_ARGS) {
  const std::vector<int64_t>& perm = attr_value<std::vector<int64_t>>(op, attrs, "perm");
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(perm.size()) : perm[i];
    inv[static_cast<size_t>(p)] = static_cast<int64_t>(i);
  }
  gi[0] = transpose(g[0], inv);  // empty perm (reverse) is its own inverse
}

// ONNX export rules.

// The target shape: the inferred one when at most one dim is unknown (a
// constant with -1), else the shape input cast to int64.
void onnx_reshape(onnx::ExportContext& c) {
  const Shape& s = c.output_spec(0).shape;
  int unknown = 0;
  bool zero = false;
  for (int64_t i = 0; s.rank_known() && i < s.rank(); ++i) {
    unknown += s[i] < 0;
    zero |= s[i] == 0;
  }
  std::string shape;
  if (s.rank_known() && unknown <= 1 && !zero)
    shape = c.ints(s.to_vector());
  else if (!zero)
    shape = c.cast(c.in(1), c.input_spec(1).dtype, DType::kInt64);
  else if (c.opset() >= 14)
    return c.emit("Reshape", {c.in(0), c.cast(c.in(1), c.input_spec(1).dtype, DType::kInt64)},
                  {{"allowzero", int64_t{1}}});
  else
    c.unsupported("a shape with zero dims needs opset 14");
  c.emit("Reshape", {c.in(0), shape});
}
// Unsqueeze/Squeeze: axes an input since opset 13, an attribute before.
void onnx_axes_op(onnx::ExportContext& c, const char* op, const std::vector<int64_t>& axes) {
  if (axes.empty()) return c.emit(op, {c.in(0)});
  if (c.opset() >= 13) return c.emit(op, {c.in(0), c.ints(axes)});
  c.emit(op, {c.in(0)}, {{"axes", axes}});
}
void onnx_expand_dims(onnx::ExportContext& c) {
  onnx_axes_op(c, "Unsqueeze", {c.attr_int("axis")});
}
void onnx_squeeze(onnx::ExportContext& c) {
  onnx_axes_op(c, "Squeeze", c.attr_ints("squeeze_dims"));
}
void onnx_transpose(onnx::ExportContext& c) {
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty()) return c.emit("Transpose", {c.in(0)});
  for (int64_t& p : perm)
    if (p < 0) p += static_cast<int64_t>(perm.size());
  c.emit("Transpose", {c.in(0)}, {{"perm", perm}});
}
void onnx_shape_of(onnx::ExportContext& c) {
  c.emit("Cast", {c.node1("Shape", {c.in(0)})}, {{"to", c.onnx_dtype(c.attr_dtype("out_type"))}});
}
void onnx_size(onnx::ExportContext& c) {
  c.emit("Cast", {c.node1("Size", {c.in(0)})}, {{"to", c.onnx_dtype(c.attr_dtype("out_type"))}});
}
void onnx_rank(onnx::ExportContext& c) {
  const std::string r = c.node1("Size", {c.node1("Shape", {c.in(0)})});
  c.emit("Cast", {r}, {{"to", c.onnx_dtype(DType::kInt32)}});
}
void onnx_one_hot(onnx::ExportContext& c) {
  const std::string one = c.ints({1});
  const std::string values =
      c.node1("Concat", {c.node1("Reshape", {c.in(3), one}), c.node1("Reshape", {c.in(2), one})},
              {{"axis", int64_t{0}}});
  c.emit("OneHot", {c.in(0), c.in(1), values}, {{"axis", c.attr_int("axis")}});
}

// Transpose under jit_compile: a strided read of its input.
bool transpose_view(const jit::ViewQuery& q, jit::View& v) {
  const Shape& in = q.inputs[0].shape;
  if (!in.rank_known()) return false;
  const auto perm =
      transpose_perm(attr_value<std::vector<int64_t>>(q.op, q.attrs, "perm"), in.rank());
  v.start.assign(perm.size(), 0);
  v.dims.clear();
  for (int64_t p : perm) v.dims.push_back({p, 1, -1});
  return true;
}

}  // namespace

void define_shape_ops(OpTableBuilder& t) {
  t.def(OpId::Reshape)
      .tf()
      .inputs({"tensor", "shape"})
      .outputs({"output"})
      .traits(kView)
      .infer(infer_reshape)
      .grad(reshape_grad)
      .jit_relabel()
      .onnx(onnx_reshape);
  t.def(OpId::ExpandDims)
      .tf_form({{1, "axis"}})
      .inputs({"input"})
      .outputs({"output"})
      .attr("axis", AttrType::kInt)
      .traits(kView)
      .infer(infer_expand_dims)
      .grad(reshape_grad)
      .jit_relabel()
      .onnx(onnx_expand_dims);
  t.def(OpId::Squeeze)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("squeeze_dims", AttrType::kInts, std::vector<int64_t>{})
      .traits(kView)
      .infer(infer_squeeze)
      .grad(reshape_grad)
      .jit_relabel()
      .onnx(onnx_squeeze);
  t.def(OpId::Transpose)
      .tf_form({{1, "perm"}})
      .inputs({"x"})
      .outputs({"y"})
      .attr("perm", AttrType::kInts, std::vector<int64_t>{})
      .traits(kView)
      .infer(infer_transpose)
      .grad(transpose_grad)
      .jit_view(transpose_view)
      .onnx(onnx_transpose);
  t.def(OpId::ShapeOf)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("out_type", AttrType::kDType, DType::kInt32)
      .traits(kShapeOnly | kNoGradient)
      .infer(infer_shape_of)
      .onnx(onnx_shape_of);
  t.def(OpId::Size)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("out_type", AttrType::kDType, DType::kInt32)
      .traits(kShapeOnly | kNoGradient)
      .infer(infer_size)
      .onnx(onnx_size);
  t.def(OpId::Rank)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .traits(kShapeOnly | kNoGradient)
      .infer(infer_rank)
      .onnx(onnx_rank);
  t.def(OpId::OneHot)
      .tf()
      .inputs({"indices", "depth", "on_value", "off_value"})
      .outputs({"output"})
      .attr("axis", AttrType::kInt, int64_t{-1})
      .traits(kNoGradient)
      .infer(infer_one_hot)
      .onnx(onnx_one_hot);
  shape_ops::define_concat_split_ops(t);
  shape_ops::define_slicing_ops(t);
  shape_ops::define_tile_pad_ops(t);
}

// ---- front functions ----

Tensor reshape(const Tensor& tensor, const Tensor& shape) {
  return call_op1(OpId::Reshape, {tensor, shape});
}
Tensor reshape(const Tensor& tensor, const std::vector<int64_t>& shape) {
  return reshape(tensor, int64_vector(shape));
}
Tensor reshape(const Tensor& tensor, std::initializer_list<int64_t> shape) {
  return reshape(tensor, int64_vector(shape));
}
Tensor reshape(const Tensor& tensor, const Shape& shape) {
  return reshape(tensor, int64_vector(shape.dims()));
}

Tensor expand_dims(const Tensor& input, int64_t axis) {
  return call_op1(OpId::ExpandDims, {input}, {axis});
}

Tensor squeeze(const Tensor& input, const std::vector<int64_t>& axis) {
  return call_op1(OpId::Squeeze, {input}, {axis});
}

Tensor transpose(const Tensor& input, const std::vector<int64_t>& perm) {
  return call_op1(OpId::Transpose, {input}, {perm});
}

Tensor shape(const Tensor& input, DType out_type) {
  return call_op1(OpId::ShapeOf, {input}, {out_type});
}
Tensor size(const Tensor& input, DType out_type) {
  return call_op1(OpId::Size, {input}, {out_type});
}
Tensor rank(const Tensor& input) {
  return call_op1(OpId::Rank, {input});
}

Tensor one_hot(const Tensor& indices, const Tensor& depth, const Tensor& on_value,
               const Tensor& off_value, int64_t axis) {
  return call_op1(OpId::OneHot, {indices, depth, on_value, off_value}, {axis});
}
Tensor one_hot(const Tensor& indices, int64_t depth, Scalar on_value, Scalar off_value,
               int64_t axis, DType dtype) {
  return one_hot(indices, Tensor(depth), shape_ops::scalar_of(on_value, dtype),
                 shape_ops::scalar_of(off_value, dtype), axis);
}

}  // namespace kiln
