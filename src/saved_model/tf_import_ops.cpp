// TensorFlow ops kiln has no row of the same name for, built from kiln's ops
// when a SavedModel TensorFlow wrote is loaded (tf_import.h). Ops that are a
// kiln row, or a row with another input form, carry their import in the row
// (OpDef::tf_direct / tf_import); these are the rest.
#include "kiln/ops.h"
#include "ops/tf_import.h"
#include "saved_model/tf_import.h"

namespace kiln::saved_model::detail {
namespace {

using C = tf_import::Context;

void mat_mul(C& c) {
  c.set_output(matmul(c.input(0), c.input(1), c.attr_bool("transpose_a", false),
                      c.attr_bool("transpose_b", false)));
}

// BatchMatMulV3: BatchMatMulV2 with an output dtype.
void batch_mat_mul_v3(C& c) {
  Tensor y = tf_import::call_row1(
      OpId::MatMul, {c.input(0), c.input(1)},
      {{"adj_x", c.attr_bool("adj_x", false)}, {"adj_y", c.attr_bool("adj_y", false)}});
  const DType out = c.has_attr("Tout") ? c.attr_type("Tout") : y.dtype();
  c.set_output(out == y.dtype() ? y : cast(y, out));
}

// x normalized per channel (the last axis, or axis 1 for NCHW).
Tensor per_channel(const Tensor& v, bool nchw) {
  return nchw ? reshape(v, std::vector<int64_t>{-1, 1, 1}) : v;
}

// FusedBatchNorm(V2/V3): y, batch mean, batch variance and three reserve
// spaces; with is_training, the batch's own moments.
void fused_batch_norm(C& c) {
  const bool nchw = c.attr_string("data_format", "NHWC") == "NCHW";
  const double eps = c.attr_float("epsilon", 1e-4);
  const Tensor& x = c.input(0);
  Tensor mean = c.input(3), var = c.input(4);
  if (c.attr_bool("is_training", true)) {
    const std::vector<int64_t> axes =
        nchw ? std::vector<int64_t>{0, 2, 3} : std::vector<int64_t>{0, 1, 2};
    mean = reduce_mean(x, axes);
    var = reduce_mean(square(subtract(x, per_channel(mean, nchw))), axes);
  }
  const Tensor scale = multiply(c.input(1), rsqrt(add(var, eps)));
  const Tensor y = add(multiply(subtract(x, per_channel(mean, nchw)), per_channel(scale, nchw)),
                       per_channel(c.input(2), nchw));
  std::vector<Tensor> out = {y, mean, var, mean, var};
  if (c.op_type() == "FusedBatchNormV3") out.push_back(zeros(std::vector<int64_t>{0}, x.dtype()));
  c.set_outputs(std::move(out));
}

// min(max(x, 0), 6) with TensorFlow's gradient: 1 only where 0 < x < 6
// (clip_by_value's would pass it at 0, where ReLU'd inputs often sit).
void relu6(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(where(less(x, 6.0), relu(x), 6.0));
}

void elu(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(where(greater(x, 0.0), x, expm1(x)));
}

void selu(C& c) {
  const double alpha = 1.6732632423543772, scale = 1.0507009873554805;
  const Tensor& x = c.input(0);
  c.set_output(multiply(where(greater(x, 0.0), x, multiply(expm1(x), alpha)), scale));
}

void softplus(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(add(maximum(x, 0.0), log1p(exp(negative(abs(x))))));
}

void softsign(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(divide(x, add(abs(x), 1.0)));
}

void leaky_relu(C& c) {
  const Tensor& x = c.input(0);
  c.set_output(where(greater(x, 0.0), x, multiply(x, c.attr_float("alpha", 0.2))));
}

void add_n(C& c) {
  if (c.num_inputs() == 0) c.fail("adds no inputs");
  Tensor s = c.input(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) s = add(s, c.input(i));
  c.set_output(s);
}

// The old Add (strings too) is AddV2's row.
void add_v1(C& c) {
  c.set_output(add(c.input(0), c.input(1)));
}

// Split: (split_dim, value) into num_split equal parts.
void split(C& c) {
  const std::vector<int64_t> axis = c.ints(0, "split_dim");
  if (axis.size() != 1) c.fail("its split_dim must be one integer");
  c.set_outputs(tf_import::call_row(OpId::Split, {c.input(1)},
                                    {{"axis", axis[0]}, {"num_split", c.attr_int("num_split")}}));
}

void pad_v1(C& c) {
  c.set_output(pad(c.input(0), c.input(1)));
}

void einsum_rule(C& c) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(c.input(i));
  c.set_output(einsum(c.attr_string("equation"), xs));
}

void erfc_rule(C& c) {
  c.set_output(subtract(1.0, erf(c.input(0))));
}

// ReverseV2: (tensor, axis) as a strided slice with stride -1 on the axes.
void reverse_v2(C& c) {
  const Tensor& x = c.input(0);
  if (!x.shape().rank_known()) c.fail("needs a known rank");
  const int64_t rank = x.shape().rank();
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int64_t a : c.ints(1, "axis")) {
    if (a < -rank || a >= rank) c.fail(str_cat("axis ", a, " is out of range"));
    strides[static_cast<size_t>(a < 0 ? a + rank : a)] = -1;
  }
  const int64_t mask = (int64_t{1} << rank) - 1;
  const Tensor zero = constant(std::vector<int64_t>(static_cast<size_t>(rank), 0), Shape{rank});
  c.set_output(tf_import::call_row1(OpId::StridedSlice,
                                    {x, zero, zero, constant(strides, Shape{rank})},
                                    {{"begin_mask", mask}, {"end_mask", mask}}));
}

}  // namespace

const std::vector<TfComposite>& tf_composites() {
  static const std::vector<TfComposite> rules = {
      {"MatMul", mat_mul, {}},
      {"BatchMatMulV3", batch_mat_mul_v3, {}},
      {"FusedBatchNorm",
       fused_batch_norm,
       {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"}},
      {"FusedBatchNormV2",
       fused_batch_norm,
       {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"}},
      {"FusedBatchNormV3",
       fused_batch_norm,
       {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
        "reserve_space_3"}},
      {"Relu6", relu6, {}},
      {"Elu", elu, {}},
      {"Selu", selu, {}},
      {"Softplus", softplus, {}},
      {"Softsign", softsign, {}},
      {"LeakyRelu", leaky_relu, {}},
      {"AddN", add_n, {}},
      {"Add", add_v1, {}},
      {"Split", split, {}},
      {"Pad", pad_v1, {}},
      {"Einsum", einsum_rule, {}},
      {"Erfc", erfc_rule, {}},
      {"ReverseV2", reverse_v2, {}},
  };
  return rules;
}

const TfComposite* find_tf_composite(const std::string& op_type) {
  for (const TfComposite& r : tf_composites())
    if (op_type == r.op_type) return &r;
  return nullptr;
}

}  // namespace kiln::saved_model::detail
