// SerializeTensor / ParseTensor (tf.io.serialize_tensor / parse_tensor): a
// tensor <-> the bytes of TensorFlow's TensorProto; DecodeRaw /
// DecodePaddedRaw (tf.io.decode_raw): strings' bytes as numbers. Definitions
// and inference here; the proto kernels use the saved-model layer's code
// (src/saved_model/tensor_codec_kernels.cpp, bound by the registry), the raw
// ones are CPU kernels (src/kernels/cpu/decode_raw.cpp).
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

bool raw_dtype(DType t) {
  return t != DType::kString && t != DType::kResource && t != DType::kInvalid;
}

// [input dims..., n]: n, the values per string, is known when the call runs.
void infer_decode_raw(InferContext& c) {
  if (c.dtype(0) != DType::kString)
    c.fail("bytes must be a string tensor, got ", dtype_name(c.dtype(0)));
  const DType t = c.attr_dtype("out_type");
  if (!raw_dtype(t)) c.fail("out_type must be a numeric or bool type, got ", dtype_name(t));
  if (c.num_inputs() > 1) {
    if (c.dtype(1) != DType::kInt32)
      c.fail("fixed_length must be an int32 scalar, got ", dtype_name(c.dtype(1)));
    if (c.shape(1).rank_known() && c.shape(1).rank() != 0)
      c.fail("fixed_length must be a scalar, got shape ", c.shape(1).debug_string());
  }
  const Shape& s = c.shape(0);
  if (!s.rank_known()) return c.set_output(0, t, Shape::unknown_rank());
  std::vector<int64_t> dims(s.dims().begin(), s.dims().end());
  dims.push_back(-1);
  c.set_output(0, t, Shape(dims));
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
  // Every string must have the same length, a multiple of out_type's size.
  t.def(OpId::DecodeRaw)
      .tf()
      .inputs({"bytes"})
      .outputs({"output"})
      .attr("out_type", AttrType::kDType)
      .attr("little_endian", AttrType::kBool, true)
      .traits(kNoGradient | kNoJit)
      .infer(infer_decode_raw);
  // Each string cut or zero-padded to fixed_length bytes.
  t.def(OpId::DecodePaddedRaw)
      .tf()
      .inputs({"input_bytes", "fixed_length"})
      .outputs({"output"})
      .attr("out_type", AttrType::kDType)
      .attr("little_endian", AttrType::kBool, true)
      .traits(kNoGradient | kNoJit)
      .infer(infer_decode_raw);
}

}  // namespace kiln
