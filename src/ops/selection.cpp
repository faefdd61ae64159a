// Sorting and selection: TopKV2 (the k largest per row) and Where (the
// coordinates of the true elements): definitions, inference, fronts and
// TopKV2's gradient (a scatter of dy to the chosen positions).
#include <cstdint>
#include <utility>
#include <vector>

#include "families.h"
#include "front_util.h"
#include "grad_util.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "onnx_export.h"

namespace kiln {
namespace {

// (input [..., n], k) -> values [..., k] (input's dtype), indices [..., k] int32.
void infer_top_k(InferContext& c) {
  if (!is_numeric(c.dtype(0)))
    c.fail("input must have a numeric dtype, got ", dtype_name(c.dtype(0)));
  if (c.dtype(1) != DType::kInt32 && c.dtype(1) != DType::kInt64)
    c.fail("k must be int32 or int64, got ", dtype_name(c.dtype(1)));
  if (c.shape(1).rank_known() && c.shape(1).rank() != 0)
    c.fail("k must be a scalar, got shape ", c.shape(1).debug_string());
  const Shape& in = c.shape(0);
  if (in.rank_known() && in.rank() < 1)
    c.fail("input must have rank >= 1, got shape ", in.debug_string());
  int64_t k = -1;
  std::vector<int64_t> v;
  if (c.int_values(1, v)) {
    k = v.at(0);
    const int64_t n = in.rank_known() ? in.dim(in.rank() - 1) : -1;
    if (k < 0) c.fail("k must be non-negative, got ", k);
    if (n >= 0 && k > n) c.fail("input must have at least k = ", k, " columns, got ", n);
  }
  if (!in.rank_known()) {
    c.set_output(0, c.dtype(0), Shape::unknown_rank());
    c.set_output(1, DType::kInt32, Shape::unknown_rank());
    return;
  }
  Shape out = in;
  out.set_dim(in.rank() - 1, k);
  c.set_output(0, c.dtype(0), out);
  c.set_output(1, DType::kInt32, std::move(out));
}

// dy scattered into zeros shaped like the input, at each row's indices.
void top_k_grad(KILN_GRAD_ARGS) {
  const Tensor &x = in[0], &idx = out[1];
  if (!x.shape().rank_known())
    throw UnimplementedError("TopKV2 gradient: the input needs a known rank while tracing");
  const int64_t last = x.shape().rank() - 1;
  const Tensor xs = shape(x, DType::kInt64);
  const Tensor n = gather(xs, Tensor(last));
  const Tensor total = size(x, DType::kInt64);
  const Tensor rows = floordiv(total, maximum(n, int64_t{1}));
  const Tensor k = gather(shape(idx, DType::kInt64), Tensor(last));
  const Tensor ind = reshape(cast(idx, DType::kInt64), stack({rows, k}));
  const Tensor offsets = expand_dims(range(Tensor(int64_t{0}), rows, Tensor(int64_t{1})) * n, 1);
  const Tensor flat =
      unsorted_segment_sum(reshape(g[0], {-1}), reshape(ind + offsets, {-1}), total);
  gi[0] = reshape(flat, xs);
}

template <typename T>
int64_t count_nonzero(const Tensor& t) {
  const T* p = t.data<T>();
  int64_t n = 0;
  for (int64_t i = 0, e = t.num_elements(); i < e; ++i) n += p[i] != T(0);
  return n;
}

// The number of true elements of a concrete condition.
int64_t count_true(const InferContext& c, const Tensor& t) {
  switch (t.dtype()) {
    case DType::kBool: return count_nonzero<bool>(t);
    case DType::kInt8: return count_nonzero<int8_t>(t);
    case DType::kUInt8: return count_nonzero<uint8_t>(t);
    case DType::kInt32: return count_nonzero<int32_t>(t);
    case DType::kInt64: return count_nonzero<int64_t>(t);
    case DType::kFloat32: return count_nonzero<float>(t);
    case DType::kFloat64: return count_nonzero<double>(t);
    default: c.fail("input must be bool or numeric, got ", dtype_name(t.dtype()));
  }
  return 0;
}

// condition -> [N, rank] int64; N is counted when the value is known.
void infer_where(InferContext& c) {
  if (c.dtype(0) != DType::kBool && !is_numeric(c.dtype(0)))
    c.fail("input must be bool or numeric, got ", dtype_name(c.dtype(0)));
  const Shape& in = c.shape(0);
  const Tensor* v = c.value(0);
  const int64_t n = v ? count_true(c, *v) : -1;
  c.set_output(0, DType::kInt64, Shape{n, in.rank_known() ? in.rank() : -1});
}

// ONNX export: TopK's int64 indices cast to int32.
void onnx_top_k(onnx::ExportContext& c) {
  if (c.opset() < 10) c.unsupported("TopK with a k input needs opset 10");
  const std::string k =
      c.node1("Reshape", {c.cast(c.in(1), c.input_spec(1).dtype, DType::kInt64), c.ints({1})});
  const auto vi = c.node("TopK", {c.in(0), k}, {{"axis", int64_t{-1}}}, {}, 2);
  c.node("Identity", {vi[0]}, {}, {c.out(0)});
  c.node("Cast", {vi[1]}, {{"to", c.onnx_dtype(c.output_spec(1).dtype)}}, {c.out(1)});
}
// Where(x): NonZero's [rank, N] transposed to [N, rank].
void onnx_where(onnx::ExportContext& c) {
  c.emit("Transpose", {c.node1("NonZero", {c.in(0)})}, {{"perm", std::vector<int64_t>{1, 0}}});
}

}  // namespace

void define_selection_ops(OpTableBuilder& t) {
  t.def(OpId::TopKV2)
      .tf()
      .inputs({"input", "k"})
      .outputs({"values", "indices"})
      .attr("sorted", AttrType::kBool, true)
      .traits(kHalfInFloat)  // float16/bfloat16 in float32
      .infer(infer_top_k)
      .grad(top_k_grad)
      .onnx(onnx_top_k);
  t.def(OpId::Where)
      .tf()
      .inputs({"input"})
      .outputs({"index"})
      .traits(kNoGradient | kHalfInFloat)  // kHalfInFloat: float16/bfloat16 in float32
      .infer(infer_where)
      .onnx(onnx_where);
}

std::pair<Tensor, Tensor> top_k(const Tensor& input, const Tensor& k, bool sorted) {
  const Tensor args[] = {input, k};
  std::vector<Tensor> r = call_op(OpId::TopKV2, args, {sorted});
  return {std::move(r.at(0)), std::move(r.at(1))};
}
std::pair<Tensor, Tensor> top_k(const Tensor& input, int64_t k, bool sorted) {
  if (k < INT32_MIN || k > INT32_MAX)
    throw InvalidArgumentError(str_cat("TopKV2: k = ", k, " is out of the int32 range"));
  return top_k(input, Tensor(static_cast<int32_t>(k)), sorted);
}

Tensor where(const Tensor& condition) {
  return call_op1(OpId::Where, {condition});
}

}  // namespace kiln
