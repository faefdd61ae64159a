// The unsorted segment reductions (sum, max, min, prod by segment id):
// definitions, inference, fronts and gradients. Gather's gradient is built on
// UnsortedSegmentSum.
#include <optional>
#include <utility>

#include "front_util.h"
#include "grad_util.h"
#include "kiln/context.h"
#include "kiln/ops.h"

namespace kiln {
namespace {

// (data, segment_ids, num_segments) -> [num_segments] + data.shape[rank(ids):].
void infer_unsorted_segment(InferContext& c) {
  if (!is_numeric(c.dtype(0)))
    c.fail("data must have a numeric dtype, got ", dtype_name(c.dtype(0)));
  for (size_t i : {size_t{1}, size_t{2}})
    if (c.dtype(i) != DType::kInt32 && c.dtype(i) != DType::kInt64)
      c.fail(c.input_name(i), " must be int32 or int64, got ", dtype_name(c.dtype(i)));
  const Shape& ns = c.shape(2);
  if (ns.rank_known() && ns.rank() != 0)
    c.fail("num_segments must be a scalar, got shape ", ns.debug_string());
  int64_t n = -1;
  std::vector<int64_t> v;
  if (c.int_values(2, v)) {
    n = v.at(0);
    if (n < 0) c.fail("num_segments must be non-negative, got ", n);
  }
  const Shape& data = c.shape(0);
  const Shape& ids = c.shape(1);
  if (!data.rank_known() || !ids.rank_known())
    return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  if (ids.rank() > data.rank())
    c.fail("segment_ids shape ", ids.debug_string(), " must be a prefix of data shape ",
           data.debug_string());
  for (int64_t i = 0; i < ids.rank(); ++i)
    if (ids.dim(i) >= 0 && data.dim(i) >= 0 && ids.dim(i) != data.dim(i))
      c.fail("segment_ids shape ", ids.debug_string(), " must be a prefix of data shape ",
             data.debug_string());
  Shape out{n};
  for (int64_t i = ids.rank(); i < data.rank(); ++i) out.push_back(data.dim(i));
  c.set_output(0, c.dtype(0), std::move(out));
}

// Which slices of data have a kept (non-negative) id, shaped to broadcast
// against them; nullopt when all ids are known to be kept.
std::optional<Tensor> kept_ids(const OpDef& op, const Tensor& data, const Tensor& ids) {
  // Known ids (eager, or constant while tracing) that are all kept need no mask.
  bool all_valid = !ids.is_symbolic() || ids.symbol()->constant_value(ids.output_index());
  if (all_valid)
    for (int64_t i : grad::known_ints(op, ids, "segment_ids")) all_valid &= i >= 0;
  if (all_valid) return std::nullopt;
  if (!data.shape().rank_known() || !ids.shape().rank_known())
    throw UnimplementedError(str_cat(op.type_name,
                                     " gradient: data and segment_ids need a known rank while "
                                     "tracing"));
  const std::vector<int64_t> ones(static_cast<size_t>(data.shape().rank() - ids.shape().rank()), 1);
  return reshape(greater_equal(ids, 0), concat({grad::shape_of(ids), int64_vector(ones)}, 0));
}

// t (one row per segment) gathered back by segment id, zeros for dropped ids.
Tensor gather_back(const Tensor& t, const Tensor& ids, const std::optional<Tensor>& kept) {
  if (!kept) return gather(t, ids);
  const Tensor r = gather(t, maximum(ids, 0));
  return where(*kept, r, zeros_like(r));
}

void unsorted_segment_sum_grad(KILN_GRAD_ARGS) {
  gi[0] = gather_back(g[0], in[1], kept_ids(op, in[0], in[1]));
}

// Max/min: the gradient goes to the slices equal to their segment's result,
// shared evenly among ties (as TensorFlow).
void unsorted_segment_extremum_grad(KILN_GRAD_ARGS) {
  const Tensor &data = in[0], &ids = in[1];
  const std::optional<Tensor> kept = kept_ids(op, data, ids);
  Tensor chosen = equal(data, gather_back(out[0], ids, kept));
  if (kept) chosen = logical_and(chosen, *kept);
  const Tensor count = unsorted_segment_sum(cast(chosen, data.dtype()), ids, in[2]);
  const Tensor share = gather_back(g[0] / maximum(count, 1), ids, kept);
  gi[0] = where(chosen, share, zeros_like(share));
}

// Prod: the product of the other slices of the segment; a zero slice gets
// the product of the non-zero ones, and segments with two zeros give zeros.
void unsorted_segment_prod_grad(KILN_GRAD_ARGS) {
  const Tensor &data = in[0], &ids = in[1];
  const std::optional<Tensor> kept = kept_ids(op, data, ids);
  const Tensor is_zero = equal(data, zeros_like(data));
  const Tensor safe = where(is_zero, ones_like(data), data);
  const Tensor zeros = unsorted_segment_sum(cast(is_zero, DType::kInt32), ids, in[2]);
  const Tensor dy = where(greater(zeros, 1), zeros_like(g[0]), g[0]);
  const Tensor nonzero = unsorted_segment_prod(safe, ids, in[2]);
  const Tensor others =
      where(is_zero, gather_back(nonzero, ids, kept), gather_back(out[0], ids, kept) / safe);
  gi[0] = gather_back(dy, ids, kept) * others;
}

}  // namespace

void define_segment_ops(OpTableBuilder& t) {
  const std::pair<OpId, GradFn> rows[] = {
      {OpId::UnsortedSegmentSum, unsorted_segment_sum_grad},
      {OpId::UnsortedSegmentMax, unsorted_segment_extremum_grad},
      {OpId::UnsortedSegmentMin, unsorted_segment_extremum_grad},
      {OpId::UnsortedSegmentProd, unsorted_segment_prod_grad}};
  for (const auto& [id, rule] : rows)
    t.def(id)
        .tf()
        .inputs({"data", "segment_ids", "num_segments"})
        .outputs({"output"})
        .infer(infer_unsorted_segment)
        .grad(rule);
  for (OpId id : {OpId::UnsortedSegmentSum, OpId::UnsortedSegmentMax, OpId::UnsortedSegmentMin,
                  OpId::UnsortedSegmentProd})
    t.def(id).traits(kHalfInFloat);  // float16/bfloat16 in float32
}

Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids,
                            const Tensor& num_segments) {
  return call_op1(OpId::UnsortedSegmentSum, {data, segment_ids, num_segments});
}
Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids, int64_t num_segments) {
  return unsorted_segment_sum(data, segment_ids, Tensor(num_segments));
}
Tensor unsorted_segment_max(const Tensor& data, const Tensor& segment_ids,
                            const Tensor& num_segments) {
  return call_op1(OpId::UnsortedSegmentMax, {data, segment_ids, num_segments});
}
Tensor unsorted_segment_min(const Tensor& data, const Tensor& segment_ids,
                            const Tensor& num_segments) {
  return call_op1(OpId::UnsortedSegmentMin, {data, segment_ids, num_segments});
}
Tensor unsorted_segment_prod(const Tensor& data, const Tensor& segment_ids,
                             const Tensor& num_segments) {
  return call_op1(OpId::UnsortedSegmentProd, {data, segment_ids, num_segments});
}

}  // namespace kiln
