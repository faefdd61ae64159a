// SerializeTensor / ParseTensor (tf.io.serialize_tensor / parse_tensor): a
// tensor <-> the bytes of TensorFlow's TensorProto. Definitions and inference
// here; the kernels use the saved-model layer's proto code
// (src/saved_model/tensor_codec_kernels.cpp, bound by the registry).
#include "families.h"
#include "kiln/context.h"

namespace kiln {
namespace {

void infer_serialize(InferContext& c) {
  if (c.dtype(0) == DType::kResource)
    c.fail("tensor must hold values, got ", dtype_name(c.dtype(0)));
  c.set_output(0, DType::kString, Shape{});
}

void infer_parse(InferContext& c) {
  if (c.dtype(0) != DType::kString)
    c.fail("serialized must be a string, got ", dtype_name(c.dtype(0)));
  if (c.shape(0).rank_known() && c.shape(0).rank() != 0)
    c.fail("serialized must be a scalar, got shape ", c.shape(0).debug_string());
  c.set_output(0, c.attr_dtype("out_type"), Shape::unknown_rank());
}

}  // namespace

void define_tensor_codec_ops(OpTableBuilder& t) {
  t.def(OpId::SerializeTensor)
      .tf()
      .inputs({"tensor"})
      .outputs({"serialized"})
      .traits(kNoGradient | kNoJit)
      .infer(infer_serialize);
  t.def(OpId::ParseTensor)
      .tf()
      .inputs({"serialized"})
      .outputs({"output"})
      .attr("out_type", AttrType::kDType)
      .traits(kNoGradient | kNoJit)
      .infer(infer_parse);
}

}  // namespace kiln
