// Collective ops (all-reduce, all-gather, broadcast, and the all-reduce's
// start/done pair) — definitions, inference, gradients, front functions. The
// kernels hand their tensors to the process's communicator (kiln/comm.h).
#include "kiln/ops/collective.h"

#include "families.h"
#include "grad_util.h"
#include "kiln/comm.h"
#include "kiln/context.h"

namespace kiln {
namespace {

void check_reduction(const InferContext& c) {
  try {
    comm::parse_reduction(c.attr_string("reduction"));
  } catch (const InvalidArgumentError& e) {
    c.fail(e.what());
  }
}

void infer_all_reduce(InferContext& c) {
  if (!comm::can_reduce(c.dtype(0)))
    c.fail(
        "x must be float32, float64, int32 or int64 (float16 and bfloat16 reduce in float32), got ",
        dtype_name(c.dtype(0)));
  check_reduction(c);
  c.set_output(0, c.dtype(0), c.shape(0));
}

void check_movable(const InferContext& c) {
  if (is_object(c.dtype(0)) || c.dtype(0) == DType::kInvalid)
    c.fail("x must hold numbers or bools, got ", dtype_name(c.dtype(0)));
}

void infer_all_gather(InferContext& c) {
  check_movable(c);
  const Shape& s = c.shape(0);
  if (!s.rank_known()) return c.set_output(0, c.dtype(0), Shape::unknown_rank());
  if (s.rank() < 1) c.fail("x must have rank >= 1 (the workers' values are joined on axis 0)");
  // Every worker gives the same shape (the workers check): dim 0 times the
  // number of workers. (Asks the communicator, which joins the job.)
  std::vector<int64_t> dims(s.dims().begin(), s.dims().end());
  if (dims[0] >= 0) dims[0] *= comm::communicator().size();
  c.set_output(0, c.dtype(0), Shape(dims));
}

void infer_broadcast(InferContext& c) {
  check_movable(c);
  if (c.attr_int("root") < 0)
    c.fail("root must be a worker's rank (>= 0), got ", c.attr_int("root"));
  c.set_output(0, c.dtype(0), c.shape(0));
}

void infer_start(InferContext& c) {
  infer_all_reduce(c);
  c.set_output(0, DType::kInt64, Shape({}));
}

void infer_done(InferContext& c) {
  infer_all_reduce(c);
  c.expect_dtype(1, DType::kInt64);
  if (c.shape(1).rank_known() && c.shape(1).rank() != 0)
    c.fail("ticket must be a scalar, got shape ", c.shape(1).to_string());
}

// d/dx_w of every worker's loss through y = sum_v x_v is the sum of the
// workers' dy (the mean's, their mean): the same all-reduce of the gradient.
void all_reduce_grad(KILN_GRAD_ARGS) {
  const std::string& r = attr_value<std::string>(op, attrs, "reduction");
  if (r != "sum" && r != "mean")
    throw UnimplementedError(str_cat("no gradient is defined for op ", op.type_name,
                                     " with reduction \"", r, "\" (only sum and mean)"));
  gi[0] = all_reduce(g[0], r, attr_value<int64_t>(op, attrs, "key"));
}

}  // namespace

void define_collective_ops(OpTableBuilder& t) {
  const uint32_t kOrdered = kStateful;  // never pruned, merged or reordered
  for (OpId id :
       {OpId::CollectiveAllReduce, OpId::CollectiveAllReduceStart, OpId::CollectiveAllReduceDone}) {
    t.def(id)
        .attr("reduction", AttrType::kString, std::string("sum"))
        .attr("key", AttrType::kInt, int64_t{0})
        .traits(kOrdered | kHalfInFloat);
  }
  t.def(OpId::CollectiveAllReduce)
      .inputs({"x"})
      .outputs({"y"})
      .infer(infer_all_reduce)
      .grad(all_reduce_grad);
  t.def(OpId::CollectiveAllReduceStart)
      .inputs({"x"})
      .outputs({"ticket"})
      .traits(kNoGradient)
      .infer(infer_start);
  t.def(OpId::CollectiveAllReduceDone)
      .inputs({"x", "ticket"})
      .outputs({"y"})
      .infer(infer_done)
      .grad(all_reduce_grad);
  t.def(OpId::CollectiveAllGather)
      .inputs({"x"})
      .outputs({"y"})
      .attr("key", AttrType::kInt, int64_t{0})
      .traits(kOrdered | kNoGradient)
      .infer(infer_all_gather);
  t.def(OpId::CollectiveBroadcast)
      .inputs({"x"})
      .outputs({"y"})
      .attr("root", AttrType::kInt, int64_t{0})
      .attr("key", AttrType::kInt, int64_t{0})
      .traits(kOrdered | kNoGradient)
      .infer(infer_broadcast);
}

// ---- front functions ----

Tensor all_reduce(const Tensor& x, std::string_view reduction, int64_t key) {
  return call_op1(OpId::CollectiveAllReduce, {x}, {std::string(reduction), key});
}
Tensor all_gather(const Tensor& x, int64_t key) {
  return call_op1(OpId::CollectiveAllGather, {x}, {key});
}
Tensor broadcast(const Tensor& x, int64_t root, int64_t key) {
  return call_op1(OpId::CollectiveBroadcast, {x}, {root, key});
}
Tensor all_reduce_start(const Tensor& x, std::string_view reduction, int64_t key) {
  return call_op1(OpId::CollectiveAllReduceStart, {x}, {std::string(reduction), key});
}
Tensor all_reduce_done(const Tensor& x, const Tensor& ticket, std::string_view reduction,
                       int64_t key) {
  return call_op1(OpId::CollectiveAllReduceDone, {x, ticket}, {std::string(reduction), key});
}

}  // namespace kiln
