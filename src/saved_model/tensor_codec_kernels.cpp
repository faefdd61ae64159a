#include "tensor_codec_kernels.h"

#include <string>

#include "proto_io.h"

namespace kiln::saved_model {
namespace {

void serialize_kernel(KernelContext& c) {
  detail::pb::TensorProto p;
  detail::to_proto(c.input(0), &p);
  std::string bytes;
  if (!p.SerializeToString(&bytes)) c.fail("the tensor could not be serialized");
  c.allocate_output(0).mutable_data<std::string>()[0] = std::move(bytes);
}

void parse_kernel(KernelContext& c) {
  const std::string& bytes = c.input(0).data<std::string>()[0];
  detail::pb::TensorProto p;
  if (!p.ParseFromString(bytes)) c.fail("Could not parse `serialized` as TensorProto");
  Tensor t = detail::from_proto(p, "serialized");
  const DType want = c.attr_dtype("out_type");
  if (t.dtype() != want)
    c.fail("Type mismatch between parsed tensor (", dtype_name(t.dtype()), ") and dtype (",
           dtype_name(want), ")");
  c.set_output(0, std::move(t));
}

}  // namespace

void bind_tensor_codec_kernels(OpTableBuilder& t) {
  t.kernel(OpId::SerializeTensor, serialize_kernel);
  t.kernel(OpId::ParseTensor, parse_kernel);
}

}  // namespace kiln::saved_model
