// Joining and splitting: concat, stack, unstack, split.
#include <algorithm>

#include "front_util.h"
#include "grad_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops/array.h"
#include "kiln/ops/binary.h"
#include "onnx_export.h"
#include "shape_ops_util.h"

namespace kiln {
namespace {
using namespace shape_ops;

void expect_values(const InferContext& c) {
  if (c.num_inputs() == 0) c.fail("expected at least one tensor in values, got none");
  expect_data_dtype(c, 0);
  for (size_t i = 1; i < c.num_inputs(); ++i) c.expect_same_dtype(0, i);
}

// ---- ConcatV2 ----

void infer_concat(InferContext& c) {
  expect_values(c);
  const size_t n = c.num_inputs();
  size_t first = n;  // first input of known rank
  for (size_t i = 0; i < n && first == n; ++i)
    if (c.shape(i).rank_known()) first = i;
  if (first == n) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  const Shape& ref = c.shape(first);
  const int64_t r = ref.rank();
  if (r == 0)
    c.fail("cannot concatenate scalars (", c.input_name(first),
           " has shape []); use stack instead");
  const int64_t axis = normalize_axis(c.attr_int("axis"), r, c.op().type_name);
  Shape out = ref;
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const Shape& s = c.shape(i);
    if (!s.rank_known()) {
      total = Shape::kUnknownDim;
      continue;
    }
    if (s.rank() != r)
      c.fail("all inputs must have the same rank: ", c.input_name(i), " has shape ",
             s.debug_string(), " but ", c.input_name(first), " has shape ", ref.debug_string());
    for (int64_t d = 0; d < r; ++d) {
      if (d == axis) continue;
      const int64_t a = out.dim(d), b = s.dim(d);
      if (a >= 0 && b >= 0 && a != b)
        c.fail("dimension ", d, " of ", c.input_name(i), " (shape ", s.debug_string(),
               ") does not match ", c.input_name(first), " (shape ", ref.debug_string(),
               "); all dimensions except the concat axis ", axis, " must agree");
      if (a < 0) out.set_dim(d, b);
    }
    if (total >= 0)
      total = s.dim(axis) < 0 ? Shape::kUnknownDim
                              : checked_add(c, total, s.dim(axis), "concatenated dimension");
  }
  out.set_dim(axis, total);
  c.set_output(0, c.dtype(0), std::move(out));
}

// ---- Pack ----

void infer_stack(InferContext& c) {
  expect_values(c);
  const int64_t n = static_cast<int64_t>(c.num_inputs());
  Shape merged = Shape::unknown_rank();
  size_t first = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const Shape& s = c.shape(i);
    if (!s.rank_known()) continue;
    if (!merged.rank_known()) {
      merged = s;
      first = i;
      continue;
    }
    if (!merged.is_compatible_with(s))
      c.fail("all inputs must have the same shape: ", c.input_name(i), " has shape ",
             s.debug_string(), " but ", c.input_name(first), " has shape ",
             c.shape(first).debug_string());
    for (int64_t d = 0; d < s.rank(); ++d)
      if (merged.dim(d) < 0) merged.set_dim(d, s.dim(d));
  }
  if (!merged.rank_known()) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  const int64_t r = merged.rank();
  int64_t axis = c.attr_int("axis");
  if (axis < -r - 1 || axis > r)
    c.fail("axis ", axis, " is out of range for stacking tensors of rank ", r, " (expected [",
           -r - 1, ", ", r, "])");
  if (axis < 0) axis += r + 1;
  merged.insert(axis, n);
  check_element_count(c, merged);
  c.set_output(0, c.dtype(0), std::move(merged));
}

// ---- Unpack ----

void infer_unstack(InferContext& c) {
  expect_data_dtype(c, 0);
  const Shape& in = c.shape(0);
  const int64_t num = c.attr_int("num");
  if (num < -1) c.fail("num must be >= 0 (or -1 to use the dimension), got ", num);
  if (!in.rank_known()) {
    if (num < 0)
      c.fail("cannot infer the number of outputs: the input's rank is unknown; pass num");
    for (int64_t i = 0; i < num; ++i) c.set_output(i, c.dtype(0), Shape::unknown_rank());
    return;
  }
  const int64_t r = in.rank();
  if (r == 0) c.fail("cannot unstack a scalar (value has shape [])");
  const int64_t axis = normalize_axis(c.attr_int("axis"), r, c.op().type_name);
  int64_t count = in.dim(axis);
  if (count < 0) {
    if (num < 0)
      c.fail("cannot infer the number of outputs: dimension ", axis, " of shape ",
             in.debug_string(), " is unknown; pass num");
    count = num;
  } else if (num >= 0 && num != count) {
    c.fail("num is ", num, " but dimension ", axis, " of value (shape ", in.debug_string(),
           ") has size ", count);
  }
  Shape out = in;
  out.erase(axis);
  for (int64_t i = 0; i < count; ++i) c.set_output(i, c.dtype(0), out);
}

// ---- SplitV ----

void infer_split(InferContext& c) {
  expect_data_dtype(c, 0);
  const Shape& in = c.shape(0);
  std::vector<int64_t> sizes = c.attr_ints("size_splits");
  const int64_t num_split = c.attr_int("num_split");
  if (sizes.empty()) {
    if (num_split < 1) c.fail("num_split must be >= 1 when size_splits is empty, got ", num_split);
  } else if (num_split != 0 && num_split != static_cast<int64_t>(sizes.size())) {
    c.fail("num_split ", num_split, " disagrees with size_splits ", ints_str(sizes));
  }
  int64_t unknown = -1, total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (unknown >= 0)
        c.fail("size_splits ", ints_str(sizes), " has more than one -1; at most one size ",
               "can be inferred");
      unknown = static_cast<int64_t>(i);
    } else if (sizes[i] < 0) {
      c.fail("size_splits[", i, "] = ", sizes[i], " is invalid: sizes must be >= 0 or -1");
    } else {
      total = checked_add(c, total, sizes[i], "sum of size_splits");
    }
  }
  if (!in.rank_known()) {
    const size_t n = sizes.empty() ? static_cast<size_t>(num_split) : sizes.size();
    for (size_t i = 0; i < n; ++i) c.set_output(i, c.dtype(0), Shape::unknown_rank());
    return;
  }
  const int64_t r = in.rank();
  if (r == 0) c.fail("cannot split a scalar (value has shape [])");
  const int64_t axis = normalize_axis(c.attr_int("axis"), r, c.op().type_name);
  const int64_t d = in.dim(axis);
  if (sizes.empty()) {
    if (d >= 0 && d % num_split != 0)
      c.fail("dimension ", axis, " of value (shape ", in.debug_string(), ") has size ", d,
             ", which is not divisible by num_split ", num_split);
    sizes.assign(static_cast<size_t>(num_split), d < 0 ? Shape::kUnknownDim : d / num_split);
  } else if (d >= 0) {
    if (unknown >= 0) {
      if (total > d)
        c.fail("size_splits ", ints_str(sizes), " add up to ", total, ", more than dimension ",
               axis, " of value (shape ", in.debug_string(), ")");
      sizes[static_cast<size_t>(unknown)] = d - total;
    } else if (total != d) {
      c.fail("size_splits ", ints_str(sizes), " add up to ", total, " but dimension ", axis,
             " of value (shape ", in.debug_string(), ") has size ", d);
    }
  } else if (unknown >= 0) {
    sizes[static_cast<size_t>(unknown)] = Shape::kUnknownDim;
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape out = in;
    out.set_dim(axis, sizes[i]);
    c.set_output(i, c.dtype(0), std::move(out));
  }
}

// ---- gradient rules ----
// g cut back into the inputs' pieces along the axis: one SplitV when at
// most one size is unknown while tracing (its size is inferred), else
// slices at offsets summed from the inputs' shapes at run time.
void concat_grad(KILN_GRAD_ARGS) {
  int64_t rank = -1;
  for (const Tensor& x : in)
    if (x.shape().rank_known()) {
      rank = x.shape().rank();
      break;
    }
  if (rank < 0) throw UnimplementedError("ConcatV2 gradient: every input has unknown rank");
  if (in.size() == 1) {
    gi[0] = g[0];
    return;
  }
  int64_t axis = attr_value<int64_t>(op, attrs, "axis");
  if (axis < 0) axis += rank;
  std::vector<int64_t> sizes;
  size_t unknown = 0;
  for (const Tensor& x : in) {
    const int64_t d = x.shape().rank_known() ? x.shape().dim(axis) : Shape::kUnknownDim;
    sizes.push_back(d);
    unknown += d < 0;
  }
  if (unknown <= 1) {
    std::vector<Tensor> parts = split(g[0], sizes, axis);
    for (size_t i = 0; i < parts.size(); ++i) gi[i] = parts[i];
    return;
  }
  std::vector<int64_t> unit(static_cast<size_t>(rank), 0);
  unit[static_cast<size_t>(axis)] = 1;
  const Tensor along = int64_vector(unit);  // offset -> begin
  Tensor offset(int64_t{0});
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& x = in[i];
    const Tensor dims = grad::shape_of(x);
    Tensor part = slice(g[0], along * offset, dims);
    // The slice's static shape is lost with runtime sizes: take x's back.
    const Shape& xs = x.shape();
    if (xs.rank_known()) {
      std::vector<int64_t> v = xs.to_vector();
      if (std::count(v.begin(), v.end(), Shape::kUnknownDim) <= 1) part = reshape(part, v);
    }
    gi[i] = part;
    if (i + 1 < in.size())
      offset = offset + (sizes[i] >= 0 ? Tensor(sizes[i]) : gather(dims, Tensor(axis)));
  }
}
void stack_grad(KILN_GRAD_ARGS) {
  std::vector<Tensor> parts =
      unstack(g[0], attr_value<int64_t>(op, attrs, "axis"), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < parts.size(); ++i) gi[i] = parts[i];
}
void unstack_grad(KILN_GRAD_ARGS) {
  gi[0] = stack(std::vector<Tensor>(g.begin(), g.end()), attr_value<int64_t>(op, attrs, "axis"));
}
void split_grad(KILN_GRAD_ARGS) {
  gi[0] = concat(std::vector<Tensor>(g.begin(), g.end()), attr_value<int64_t>(op, attrs, "axis"));
}

// ONNX export.
std::vector<std::string> onnx_inputs(onnx::ExportContext& c) {
  std::vector<std::string> v;
  for (size_t i = 0; i < c.num_inputs(); ++i) v.push_back(c.in(i));
  return v;
}
std::string onnx_unsqueeze(onnx::ExportContext& c, const std::string& x, int64_t axis) {
  if (c.opset() >= 13) return c.node1("Unsqueeze", {x, c.ints({axis})});
  return c.node1("Unsqueeze", {x}, {{"axes", std::vector<int64_t>{axis}}});
}
std::string onnx_squeeze(onnx::ExportContext& c, const std::string& x, int64_t axis,
                         std::string out = {}) {
  std::vector<std::string> outs;
  if (!out.empty()) outs.push_back(std::move(out));
  if (c.opset() >= 13) return c.node("Squeeze", {x, c.ints({axis})}, {}, std::move(outs))[0];
  return c.node("Squeeze", {x}, {{"axes", std::vector<int64_t>{axis}}}, std::move(outs))[0];
}
void onnx_concat(onnx::ExportContext& c) {
  c.emit("Concat", onnx_inputs(c), {{"axis", c.attr_int("axis")}});
}
void onnx_stack(onnx::ExportContext& c) {
  const int64_t axis = c.attr_int("axis");
  std::vector<std::string> parts;
  for (const std::string& v : onnx_inputs(c)) parts.push_back(onnx_unsqueeze(c, v, axis));
  c.emit("Concat", parts, {{"axis", axis}});
}
// Split with explicit sizes (an input since opset 13, an attribute before);
// returns the pieces, written to `outs` when given.
std::vector<std::string> onnx_split(onnx::ExportContext& c, const std::vector<int64_t>& sizes,
                                    int64_t axis, std::vector<std::string> outs) {
  onnx::NamedAttrs a = {{"axis", axis}};
  std::vector<std::string> ins = {c.in(0)};
  if (c.opset() >= 13)
    ins.push_back(c.ints(sizes));
  else
    a.emplace_back("split", sizes);
  return c.node("Split", std::move(ins), std::move(a), std::move(outs), sizes.size());
}
int64_t onnx_dim(onnx::ExportContext& c, int64_t axis) {
  const int64_t r = c.input_rank(0);
  const int64_t d = c.input_spec(0).shape[axis < 0 ? axis + r : axis];
  if (d < 0) c.unsupported("the split dimension is not known");
  return d;
}
void onnx_unstack(onnx::ExportContext& c) {
  const int64_t axis = c.attr_int("axis");
  const std::vector<int64_t> ones(c.num_outputs(), 1);
  if (c.num_outputs() == 1) {
    onnx_squeeze(c, c.in(0), axis, c.out(0));
    return;
  }
  const auto parts = onnx_split(c, ones, axis, {});
  for (size_t i = 0; i < parts.size(); ++i) onnx_squeeze(c, parts[i], axis, c.out(i));
}
void onnx_split_op(onnx::ExportContext& c) {
  const int64_t axis = c.attr_int("axis");
  std::vector<int64_t> sizes = c.attr_ints("size_splits");
  const int64_t d = onnx_dim(c, axis);
  if (sizes.empty()) sizes.assign(c.num_outputs(), d / static_cast<int64_t>(c.num_outputs()));
  int64_t known = 0;
  for (int64_t s : sizes) known += s >= 0 ? s : 0;
  for (int64_t& s : sizes)
    if (s < 0) s = d - known;
  std::vector<std::string> outs;
  for (size_t i = 0; i < c.num_outputs(); ++i) outs.push_back(c.out(i));
  if (outs.size() == 1) return c.emit("Identity", {c.in(0)});
  onnx_split(c, sizes, axis, std::move(outs));
}

// ---- jit views ----
// Split and Unstack outputs read in place under jit_compile: the parts before
// output i along the axis must have known sizes.

int64_t view_axis(const jit::ViewQuery& q, int64_t rank) {
  const int64_t a = attr_value<int64_t>(q.op, q.attrs, "axis");
  return a < 0 ? a + rank : a;
}

bool split_view(const jit::ViewQuery& q, jit::View& v) {
  const Shape& in = q.inputs[0].shape;
  if (!in.rank_known() || in.rank() == 0) return false;
  const int64_t axis = view_axis(q, in.rank());
  int64_t start = 0;
  for (size_t j = 0; j <= q.output; ++j) {
    const Shape& s = q.outputs[j].shape;
    if (!s.rank_known() || s.rank() != in.rank() || s.dim(static_cast<int>(axis)) < 0) return false;
    if (j < q.output) start += s.dim(static_cast<int>(axis));
  }
  v = jit::whole_view(in.rank());
  const int64_t size = q.outputs[q.output].shape.dim(static_cast<int>(axis));
  if (size == in.dim(static_cast<int>(axis))) return true;  // one part: all of it
  v.start[static_cast<size_t>(axis)] = start;
  v.dims[static_cast<size_t>(axis)].size = size;
  return true;
}

bool unstack_view(const jit::ViewQuery& q, jit::View& v) {
  const Shape& in = q.inputs[0].shape;
  if (!in.rank_known() || in.rank() == 0) return false;
  const int64_t axis = view_axis(q, in.rank());
  v = jit::whole_view(in.rank());
  v.start[static_cast<size_t>(axis)] = static_cast<int64_t>(q.output);
  v.dims.erase(v.dims.begin() + axis);
  return true;
}

}  // namespace

namespace shape_ops {
void define_concat_split_ops(OpTableBuilder& t) {
  t.def(OpId::Concat)
      .tf_form({{-1, "axis"}})
      .inputs({"values"})
      .outputs({"output"})
      .attr("axis", AttrType::kInt)
      .traits(kVariadicInput | kView)
      .infer(infer_concat)
      .grad(concat_grad)
      .onnx(onnx_concat);
  t.def(OpId::Stack)
      .tf()
      .inputs({"values"})
      .outputs({"output"})
      .attr("axis", AttrType::kInt, int64_t{0})
      .traits(kVariadicInput)
      .infer(infer_stack)
      .grad(stack_grad)
      .onnx(onnx_stack);
  t.def(OpId::Unstack)
      .tf()
      .inputs({"value"})
      .outputs({"output"})
      .attr("num", AttrType::kInt, int64_t{-1})
      .attr("axis", AttrType::kInt, int64_t{0})
      .traits(kView | kVariadicOutput)
      .infer(infer_unstack)
      .grad(unstack_grad)
      .jit_view(unstack_view)
      .onnx(onnx_unstack);
  t.def(OpId::Split)
      .tf_form({{1, "size_splits"}, {2, "axis"}})
      .inputs({"value"})
      .outputs({"output"})
      .attr("size_splits", AttrType::kInts, std::vector<int64_t>{})
      .attr("axis", AttrType::kInt, int64_t{0})
      .attr("num_split", AttrType::kInt, int64_t{0})
      .traits(kView | kVariadicOutput)
      .infer(infer_split)
      .grad(split_grad)
      .jit_view(split_view)
      .onnx(onnx_split_op);
}
}  // namespace shape_ops

Tensor concat(const std::vector<Tensor>& values, int64_t axis) {
  return call_op1(OpId::Concat, std::span<const Tensor>(values), {axis});
}

Tensor stack(const std::vector<Tensor>& values, int64_t axis) {
  return call_op1(OpId::Stack, std::span<const Tensor>(values), {axis});
}

std::vector<Tensor> unstack(const Tensor& value, int64_t axis, int64_t num) {
  return call_op(OpId::Unstack, std::span<const Tensor>(&value, 1), {num, axis});
}

std::vector<Tensor> split(const Tensor& value, int64_t num_splits, int64_t axis) {
  return call_op(OpId::Split, std::span<const Tensor>(&value, 1),
                 {std::vector<int64_t>{}, axis, num_splits});
}
std::vector<Tensor> split(const Tensor& value, const std::vector<int64_t>& size_splits,
                          int64_t axis) {
  if (size_splits.empty()) throw InvalidArgumentError("SplitV: size_splits must not be empty");
  return call_op(OpId::Split, std::span<const Tensor>(&value, 1), {size_splits, axis});
}
std::vector<Tensor> split(const Tensor& value, std::initializer_list<int64_t> size_splits,
                          int64_t axis) {
  return split(value, std::vector<int64_t>(size_splits), axis);
}

}  // namespace kiln
