// Internal: kiln values <-> ONNX's protobuf messages (dtypes, shapes, value
// infos, tensors). Readers validate everything and throw InvalidArgumentError
// with `where` (file and value) in the message.
#pragma once
#include <string>

#include "kiln/op.h"
#include "onnx.pb.h"

namespace kiln::onnx::detail {

namespace pb = ::kiln::onnxproto;

/// Rank, dimension and element-count bounds a file may declare.
inline constexpr int kMaxRank = 64;
inline constexpr int64_t kMaxDim = int64_t{1} << 40;
/// The largest model file kiln reads (protobuf's own limit is 2 GiB).
inline constexpr size_t kMaxModelBytes = size_t{2} << 30;

/// ONNX's TensorProto.DataType of a kiln dtype (InvalidArgumentError for
/// kResource/kInvalid).
int to_proto(DType t);
/// kiln's dtype of an ONNX data type; throws naming `where` when kiln has none.
DType from_proto(int t, const std::string& where);
/// The ONNX name of a data type ("FLOAT", "UINT16"), for messages.
std::string onnx_dtype_name(int t);

/// A concrete tensor as TensorProto (strings in string_data, others raw).
void to_proto(const Tensor& t, pb::TensorProto* out);
/// The tensor a TensorProto holds: raw_data or the typed fields, sizes,
/// dtype and bool bytes validated; external data is refused.
Tensor from_proto(const pb::TensorProto& t, const std::string& where);

/// A value info of `spec` (unknown dims become symbolic "unk__<n>" dims;
/// an unknown rank has no shape).
void to_proto(const std::string& name, const TensorSpec& spec, pb::ValueInfoProto* out);
/// The dtype and shape a value info declares (symbolic dims unknown).
TensorSpec from_proto(const pb::ValueInfoProto& v, const std::string& where);

}  // namespace kiln::onnx::detail
