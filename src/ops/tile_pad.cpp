// Ops that grow a tensor: tile, broadcast_to, pad.
#include "front_util.h"
#include "grad_util.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "kiln/ops/array.h"
#include "onnx_export.h"
#include "shape_ops_util.h"

namespace kiln {
namespace {
using namespace shape_ops;

// ---- Tile ----

void infer_tile(InferContext& c) {
  expect_data_dtype(c, 0);
  const int64_t n = int_vector_length(c, 1);
  const Shape& in = c.shape(0);
  if (in.rank_known() && n >= 0 && n != in.rank())
    c.fail("multiples has ", n, " entries but the input has rank ", in.rank(), " (shape ",
           in.debug_string(), ")");
  const int64_t r = in.rank_known() ? in.rank() : n;
  if (r < 0) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  std::vector<int64_t> m;
  const bool known = c.int_values(1, m);
  if (known)
    for (size_t i = 0; i < m.size(); ++i)
      if (m[i] < 0)
        c.fail("multiples[", i, "] = ", m[i], " must be non-negative (multiples ", ints_str(m),
               ")");
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    const int64_t d = in.rank_known() ? in.dim(i) : Shape::kUnknownDim;
    const int64_t k = known ? m[static_cast<size_t>(i)] : Shape::kUnknownDim;
    if (d == 0 || k == 0)
      out.push_back(0);
    else if (d < 0 || k < 0)
      out.push_back(Shape::kUnknownDim);
    else
      out.push_back(checked_mul(c, d, k, "tiled dimension"));
  }
  check_element_count(c, out);
  c.set_output(0, c.dtype(0), std::move(out));
}

// ---- BroadcastTo ----

void infer_broadcast_to(InferContext& c) {
  expect_data_dtype(c, 0);
  const int64_t n = int_vector_length(c, 1);
  const Shape& in = c.shape(0);
  if (n < 0) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  if (in.rank_known() && in.rank() > n)
    c.fail("cannot broadcast input of shape ", in.debug_string(), " to a shape of rank ", n,
           ": the target rank is lower");
  std::vector<int64_t> target;
  if (!c.int_values(1, target)) {
    Shape out;
    for (int64_t i = 0; i < n; ++i) out.push_back(Shape::kUnknownDim);
    if (in.rank_known())  // known input dims other than 1 fix the output's
      for (int64_t i = 0; i < in.rank(); ++i)
        if (in.dim(i) != 1) out.set_dim(n - in.rank() + i, in.dim(i));
    return c.set_output(0, c.dtype(0), std::move(out));
  }
  for (size_t i = 0; i < target.size(); ++i)
    if (target[i] < 0)
      c.fail("shape[", i, "] = ", target[i], " must be non-negative (shape ", ints_str(target),
             ")");
  const Shape out(target);
  if (in.rank_known())
    for (int64_t i = 0; i < in.rank(); ++i) {
      const int64_t d = in.dim(i), t = target[static_cast<size_t>(n - in.rank() + i)];
      if (d >= 0 && d != 1 && d != t)
        c.fail("cannot broadcast input of shape ", in.debug_string(), " to shape ",
               ints_str(target), ": dimension ", i, " has size ", d, " (expected 1 or ", t, ")");
    }
  check_element_count(c, out);
  c.set_output(0, c.dtype(0), out);
}

// ---- PadV2 ----

void infer_pad(InferContext& c) {
  expect_data_dtype(c, 0);
  const DType pt = c.dtype(1);
  if (pt != DType::kInt32 && pt != DType::kInt64)
    c.fail("expected paddings to be int32 or int64, got ", dtype_name(pt));
  if (c.dtype(2) != c.dtype(0))
    c.fail("constant_values must have the input's dtype ", dtype_name(c.dtype(0)), ", got ",
           dtype_name(c.dtype(2)));
  if (c.shape(2).rank_known() && c.shape(2).rank() != 0)
    c.fail("constant_values must be a scalar, got shape ", c.shape(2).debug_string());
  const Shape& in = c.shape(0);
  const Shape& ps = c.shape(1);
  int64_t r = in.rank_known() ? in.rank() : Shape::kUnknownDim;
  if (ps.rank_known()) {
    if (ps.rank() != 2 || (ps.dim(1) >= 0 && ps.dim(1) != 2))
      c.fail("paddings must have shape [rank, 2], got ", ps.debug_string());
    if (ps.dim(0) >= 0) {
      if (r >= 0 && ps.dim(0) != r)
        c.fail("paddings must have shape [rank, 2] = [", r, ",2] for input of shape ",
               in.debug_string(), ", got ", ps.debug_string());
      r = ps.dim(0);
    }
  }
  if (r < 0) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  std::vector<int64_t> p;
  const bool known = c.int_values(1, p);
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    const int64_t d = in.rank_known() ? in.dim(i) : Shape::kUnknownDim;
    if (!known) {
      out.push_back(Shape::kUnknownDim);
      continue;
    }
    const int64_t before = p[static_cast<size_t>(2 * i)], after = p[static_cast<size_t>(2 * i + 1)];
    if (before < 0 || after < 0)
      c.fail("paddings must be non-negative: paddings[", i, "] = [", before, ", ", after, "]");
    out.push_back(d < 0 ? Shape::kUnknownDim
                        : checked_add(c, checked_add(c, d, before, "padded dimension"), after,
                                      "padded dimension"));
  }
  check_element_count(c, out);
  c.set_output(0, c.dtype(0), std::move(out));
}

std::vector<int64_t> flatten_pairs(std::span<const std::pair<int64_t, int64_t>> paddings) {
  std::vector<int64_t> flat;
  for (const auto& [b, a] : paddings) {
    flat.push_back(b);
    flat.push_back(a);
  }
  return flat;
}

Tensor paddings_tensor(std::span<const std::pair<int64_t, int64_t>> paddings) {
  return Tensor::from_vector(flatten_pairs(paddings),
                             Shape{static_cast<int64_t>(paddings.size()), 2});
}

// ---- gradient rules ----
// Tile: view the gradient as [m0, d0, m1, d1, ...] and sum the copies.
void tile_grad(KILN_GRAD_ARGS) {
  const Shape& xs = in[0].shape();
  if (!xs.rank_known()) throw UnimplementedError("Tile gradient: input of unknown rank");
  const int64_t rank = xs.rank();
  if (rank == 0) {
    gi[0] = g[0];
    return;
  }
  const Tensor split_shape =
      reshape(stack({cast(in[1], DType::kInt64), grad::shape_of(in[0])}, 1), {-1});
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < rank; ++i) axes.push_back(2 * i);
  gi[0] = reduce_sum(reshape(g[0], split_shape), axes);
}
void broadcast_to_grad(KILN_GRAD_ARGS) {
  gi[0] = grad::unbroadcast(g[0], in[0]);
}
// Pad: the input's block of the gradient; constant_values gets the rest
// (TensorFlow gives it none; the padded positions do depend on it).
void pad_grad(KILN_GRAD_ARGS) {
  const Tensor begin = reshape(slice(cast(in[1], DType::kInt64), {0, 0}, {-1, 1}), {-1});
  gi[0] = slice(g[0], begin, grad::shape_of(in[0]));
  gi[2] = reduce_sum(g[0]) - reduce_sum(gi[0]);
}

// ONNX export.
std::string onnx_i64(onnx::ExportContext& c, size_t i) {
  return c.cast(c.in(i), c.input_spec(i).dtype, DType::kInt64);
}
void onnx_tile(onnx::ExportContext& c) {
  c.emit("Tile", {c.in(0), onnx_i64(c, 1)});
}
void onnx_broadcast_to(onnx::ExportContext& c) {
  c.emit("Expand", {c.in(0), onnx_i64(c, 1)});
}
// Pad: kiln's paddings [rank, 2] are ONNX's pads [begins..., ends...].
void onnx_pad(onnx::ExportContext& c) {
  if (c.opset() < 11) c.unsupported("Pad with inputs needs opset 11");
  std::vector<int64_t> p;
  std::string pads;
  if (c.input_ints(1, p)) {
    std::vector<int64_t> v(p.size());
    const size_t r = p.size() / 2;
    for (size_t i = 0; i < r; ++i) v[i] = p[2 * i], v[r + i] = p[2 * i + 1];
    pads = c.ints(v);
  } else {
    const std::string t =
        c.node1("Transpose", {onnx_i64(c, 1)}, {{"perm", std::vector<int64_t>{1, 0}}});
    pads = c.node1("Reshape", {t, c.ints({-1})});
  }
  c.emit("Pad", {c.in(0), pads, c.in(2)});
}

}  // namespace

namespace shape_ops {
void define_tile_pad_ops(OpTableBuilder& t) {
  t.def(OpId::Tile)
      .tf()
      .inputs({"input", "multiples"})
      .outputs({"output"})
      .infer(infer_tile)
      .grad(tile_grad)
      .onnx(onnx_tile);
  t.def(OpId::BroadcastTo)
      .tf()
      .inputs({"input", "shape"})
      .outputs({"output"})
      .traits(kView)
      .infer(infer_broadcast_to)
      .grad(broadcast_to_grad)
      .onnx(onnx_broadcast_to);
  t.def(OpId::Pad)
      .tf()
      .inputs({"input", "paddings", "constant_values"})
      .outputs({"output"})
      .infer(infer_pad)
      .grad(pad_grad)
      .onnx(onnx_pad);
}
}  // namespace shape_ops

Tensor tile(const Tensor& input, const Tensor& multiples) {
  return call_op1(OpId::Tile, {input, multiples});
}
Tensor tile(const Tensor& input, const std::vector<int64_t>& multiples) {
  return tile(input, int64_vector(multiples));
}
Tensor tile(const Tensor& input, std::initializer_list<int64_t> multiples) {
  return tile(input, int64_vector(multiples));
}

Tensor broadcast_to(const Tensor& input, const Tensor& shape) {
  return call_op1(OpId::BroadcastTo, {input, shape});
}
Tensor broadcast_to(const Tensor& input, const std::vector<int64_t>& shape) {
  return broadcast_to(input, int64_vector(shape));
}
Tensor broadcast_to(const Tensor& input, std::initializer_list<int64_t> shape) {
  return broadcast_to(input, int64_vector(shape));
}
Tensor broadcast_to(const Tensor& input, const Shape& shape) {
  return broadcast_to(input, int64_vector(shape.dims()));
}

Tensor pad(const Tensor& input, const Tensor& paddings, const Tensor& constant_values) {
  return call_op1(OpId::Pad, {input, paddings, constant_values});
}
Tensor pad(const Tensor& input, const Tensor& paddings, Scalar constant_values) {
  if (!input.defined()) throw InvalidArgumentError("PadV2: input is an undefined tensor");
  return pad(input, paddings, scalar_of(constant_values, input.dtype()));
}
Tensor pad(const Tensor& input, const std::vector<std::pair<int64_t, int64_t>>& paddings,
           Scalar constant_values) {
  return pad(input, paddings_tensor(paddings), constant_values);
}
Tensor pad(const Tensor& input, std::initializer_list<std::pair<int64_t, int64_t>> paddings,
           Scalar constant_values) {
  return pad(input, paddings_tensor({paddings.begin(), paddings.size()}), constant_values);
}
Tensor pad(const Tensor& input, const std::vector<std::pair<int64_t, int64_t>>& paddings,
           const Tensor& constant_values) {
  return pad(input, paddings_tensor(paddings), constant_values);
}
Tensor pad(const Tensor& input, std::initializer_list<std::pair<int64_t, int64_t>> paddings,
           const Tensor& constant_values) {
  return pad(input, paddings_tensor({paddings.begin(), paddings.size()}), constant_values);
}

}  // namespace kiln
