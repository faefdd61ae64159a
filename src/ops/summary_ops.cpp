// Summary ops (tf.summary): writes into a TensorBoard event-file writer,
// stateful so they run in program order on every call of a function.
// Definitions and inference here; the writer and the kernels are in the
// summary layer (src/summary, bound by the registry).
#include "families.h"

namespace kiln {
namespace {

void check_scalar(const InferContext& c, size_t i, DType want, const char* what) {
  if (c.dtype(i) != want)
    c.fail(what, " must be a ", dtype_name(want), " tensor, got ", dtype_name(c.dtype(i)));
  const Shape& s = c.shape(i);
  if (s.rank_known() && s.rank() != 0) c.fail(what, " must be a scalar, got shape ", s.to_string());
}

void check_writer_and_step(const InferContext& c, bool step) {
  check_scalar(c, 0, DType::kResource, "writer");
  if (step) check_scalar(c, 1, DType::kInt64, "step");
}

void infer_write(InferContext& c) {
  check_writer_and_step(c, true);
  if (c.dtype(2) == DType::kResource) c.fail("tensor cannot be a resource");
  check_scalar(c, 3, DType::kString, "tag");
  check_scalar(c, 4, DType::kString, "summary_metadata");
}

void infer_write_raw(InferContext& c) {
  check_writer_and_step(c, true);
  if (c.dtype(2) != DType::kString)
    c.fail("tensor must be a string tensor of serialized Summary protos, got ",
           dtype_name(c.dtype(2)));
}

void infer_write_graph(InferContext& c) {
  check_writer_and_step(c, true);
  check_scalar(c, 2, DType::kString, "tensor");
}

void infer_writer_only(InferContext& c) {
  check_writer_and_step(c, false);
}

}  // namespace

void define_summary_ops(OpTableBuilder& t) {
  constexpr auto kWrite = kStateful | kNoGradient | kNoJit;
  t.def(OpId::WriteSummary)
      .inputs({"writer", "step", "tensor", "tag", "summary_metadata"})
      .traits(kWrite)
      .infer(infer_write);
  t.def(OpId::WriteRawProtoSummary)
      .inputs({"writer", "step", "tensor"})
      .traits(kWrite)
      .infer(infer_write_raw);
  t.def(OpId::WriteGraphSummary)
      .inputs({"writer", "step", "tensor"})
      .traits(kWrite)
      .infer(infer_write_graph);
  t.def(OpId::FlushSummaryWriter).inputs({"writer"}).traits(kWrite).infer(infer_writer_only);
  t.def(OpId::CloseSummaryWriter).inputs({"writer"}).traits(kWrite).infer(infer_writer_only);
}

}  // namespace kiln
