// _ParseExampleDense / _ParseExampleVarLen: one feature of serialized
// tf.train.Example messages (tf.io.parse_example builds one op per feature);
// _ParseSequenceFeatureList: one feature list of tf.train.SequenceExamples
// (tf.io.parse_sequence_example; their context is read by the first two).
// Definitions and inference here; the kernels read the wire format in the io
// layer (src/io/example_kernels.cpp, bound by the registry).
#include "families.h"
#include "kiln/context.h"

namespace kiln {
namespace {

bool example_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kInt64 || t == DType::kString;
}

// The batch dims of `serialized` (rank 0 or 1) and checks of `names`.
Shape batch_of(InferContext& c) {
  if (c.dtype(0) != DType::kString)
    c.fail("serialized must be a string tensor, got ", dtype_name(c.dtype(0)));
  if (c.dtype(1) != DType::kString) c.fail("names must be a string tensor");
  const Shape& s = c.shape(0);
  if (!s.rank_known()) return Shape::unknown_rank();
  if (s.rank() > 1)
    c.fail("Expected serialized to be a scalar or vector, got shape: ", s.debug_string());
  return s;
}

void infer_dense(InferContext& c) {
  const Shape batch = batch_of(c);
  const DType t = c.attr_dtype("Tdense");
  if (!example_dtype(t)) c.fail("Tdense must be float32, int64 or string, got ", dtype_name(t));
  if (c.dtype(2) != t)
    c.fail("dense_default must be ", dtype_name(t), ", got ", dtype_name(c.dtype(2)));
  const std::vector<int64_t>& dims = c.attr_ints("dense_shape");
  for (int64_t d : dims)
    if (d < 0) c.fail("dense_shape must be fully defined, got a dim of ", d);
  if (!batch.rank_known()) return c.set_output(0, t, Shape::unknown_rank());
  std::vector<int64_t> out(batch.dims().begin(), batch.dims().end());
  if (c.attr_bool("variable_length")) out.push_back(-1);
  out.insert(out.end(), dims.begin(), dims.end());
  c.set_output(0, t, Shape(out));
}

void infer_varlen(InferContext& c) {
  const Shape batch = batch_of(c);
  const DType t = c.attr_dtype("dtype");
  if (!example_dtype(t)) c.fail("dtype must be float32, int64 or string, got ", dtype_name(t));
  c.set_output(0, t, Shape{-1});
  int64_t rows = -1;
  if (batch.rank_known()) rows = batch.rank() == 0 ? 2 : (batch.dim(0) < 0 ? -1 : batch.dim(0) + 1);
  c.set_output(1, DType::kInt64, Shape{rows});
}

void infer_feature_list(InferContext& c) {
  const Shape batch = batch_of(c);
  if (batch.rank_known() && batch.rank() != 1)
    c.fail("serialized must be a vector of SequenceExamples, got shape ", batch.debug_string());
  const DType t = c.attr_dtype("dtype");
  if (!example_dtype(t)) c.fail("dtype must be float32, int64 or string, got ", dtype_name(t));
  for (int64_t d : c.attr_ints("dense_shape"))
    if (d < 0) c.fail("dense_shape must be fully defined, got a dim of ", d);
  c.set_output(0, t, Shape{-1});
  c.set_output(1, DType::kInt64, Shape{-1});
  const int64_t rows = batch.rank_known() && batch.dim(0) >= 0 ? batch.dim(0) + 1 : -1;
  c.set_output(2, DType::kInt64, Shape{rows});
}

}  // namespace

void define_parse_example_ops(OpTableBuilder& t) {
  // Output [batch...] + dense_shape; with variable_length, [batch..., rows] +
  // dense_shape, rows the most any example has, padded with the scalar default.
  t.def(OpId::ParseExampleDense)
      .inputs({"serialized", "names", "dense_default"})
      .outputs({"output"})
      .attr("key", AttrType::kString)
      .attr("Tdense", AttrType::kDType)
      .attr("dense_shape", AttrType::kInts)
      .attr("variable_length", AttrType::kBool, false)
      .traits(kNoGradient | kNoJit)
      .infer(infer_dense);
  // The feature's values of every example, one after another, and the row
  // splits between examples ([0, n] for a scalar `serialized`).
  t.def(OpId::ParseExampleVarLen)
      .inputs({"serialized", "names"})
      .outputs({"values", "row_splits"})
      .attr("key", AttrType::kString)
      .attr("dtype", AttrType::kDType)
      .traits(kNoGradient | kNoJit)
      .infer(infer_varlen);
  // Every step's values of every example, one after another; value_splits
  // between steps, step_splits (into the steps) between examples.
  t.def(OpId::ParseSequenceFeatureList)
      .inputs({"serialized", "names"})
      .outputs({"values", "value_splits", "step_splits"})
      .attr("key", AttrType::kString)
      .attr("dtype", AttrType::kDType)
      .attr("dense", AttrType::kBool, false)
      .attr("dense_shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("allow_missing", AttrType::kBool, false)
      .traits(kNoGradient | kNoJit)
      .infer(infer_feature_list);
}

}  // namespace kiln
