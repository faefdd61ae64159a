// gRPC messages <-> kiln tensors and metadata (grpc_convert.h).
#include "grpc_convert.h"

#include <algorithm>

#include "kiln/context.h"
#include "kiln/op.h"
#include "kiln/status.h"

namespace kiln::serve {

namespace {

std::string key_set(const std::vector<std::string>& keys) {
  std::string s = "{";
  for (const auto& k : keys) s += (s.size() > 1 ? "," : "") + k;
  return s + "}";
}

std::string short_name(const std::string& s) {
  return s.substr(0, 128);
}

// The bytes `p`'s values would take once decoded (saturating), checking the
// shape's form; the repeated-value form can declare far more than it carries.
uint64_t declared_bytes(const tensorflow::TensorProto& p, DType dtype, const std::string& name) {
  const auto& shape = p.tensor_shape();
  if (shape.unknown_rank() || shape.dim_size() > 64)
    throw InvalidArgumentError("input '" + name +
                               "': the tensor's shape must be known (rank <= 64)");
  uint64_t n = 1;
  for (const auto& d : shape.dim()) {
    if (d.size() < 0)
      throw InvalidArgumentError("input '" + name + "': negative dimension " +
                                 std::to_string(d.size()));
    const uint64_t size = static_cast<uint64_t>(d.size());
    n = size != 0 && n > (uint64_t{1} << 62) / size ? (uint64_t{1} << 62) : n * size;
  }
  const uint64_t each = dtype_size(dtype);
  return n > (uint64_t{1} << 62) / each ? (uint64_t{1} << 62) : n * each;
}

Tensor decode(const tensorflow::TensorProto& p, const TensorInfo& info, int64_t max_bytes) {
  const std::string want = tf_dtype_name(info.dtype);
  if (tensorflow::DataType_Name(p.dtype()) != want) {
    const std::string got = tensorflow::DataType_Name(p.dtype());
    throw InvalidArgumentError("input '" + info.name + "': expects " + want + " but " +
                               (got.empty() ? "dtype " + std::to_string(p.dtype()) : got) +
                               " is provided");
  }
  const uint64_t bytes = declared_bytes(p, info.dtype, info.name);
  if (bytes > static_cast<uint64_t>(max_bytes))
    throw InvalidArgumentError("input '" + info.name + "': its shape declares " +
                               std::to_string(bytes) +
                               " bytes, over --max_tensor_bytes=" + std::to_string(max_bytes));
  const Tensor serialized(p.SerializeAsString());
  try {
    return call_op1(OpId::ParseTensor, {serialized}, {AttrValue(info.dtype)});
  } catch (const Error& e) {
    throw InvalidArgumentError("input '" + info.name + "': " + e.what());
  }
}

void to_proto(const Shape& s, tensorflow::TensorShapeProto* out) {
  if (!s.rank_known()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int64_t d : s.dims()) out->add_dim()->set_size(d);
}

void to_proto(const TensorInfo& t, const std::string& tensor_name, tensorflow::TensorInfo* out) {
  out->set_name(tensor_name);
  tensorflow::DataType dt = tensorflow::DT_INVALID;
  tensorflow::DataType_Parse(tf_dtype_name(t.dtype), &dt);
  out->set_dtype(dt);
  to_proto(t.shape, out->mutable_tensor_shape());
}

}  // namespace

Tensors decode_inputs(const tfs::PredictRequest& req, const std::vector<TensorInfo>& infos,
                      int64_t max_tensor_bytes) {
  std::vector<std::string> keys;
  for (const auto& t : infos) keys.push_back(t.name);
  for (const auto& [name, p] : req.inputs())
    if (std::find(keys.begin(), keys.end(), name) == keys.end())
      throw InvalidArgumentError("input tensor alias not found in signature: " + short_name(name) +
                                 ". Inputs expected to be in the set " + key_set(keys) + ".");
  Tensors out;
  for (const auto& info : infos) {
    auto it = req.inputs().find(info.name);
    if (it == req.inputs().end())
      throw InvalidArgumentError("missing input '" + info.name + "': inputs expected are " +
                                 key_set(keys));
    out.emplace(info.name, decode(it->second, info, max_tensor_bytes));
  }
  return out;
}

std::vector<std::string> output_names(const tfs::PredictRequest& req,
                                      const std::vector<std::string>& keys) {
  if (req.output_filter().empty()) return keys;
  std::vector<std::string> names;
  for (const std::string& name : req.output_filter()) {
    if (std::find(keys.begin(), keys.end(), name) == keys.end())
      throw InvalidArgumentError("output tensor alias not found in signature: " + short_name(name) +
                                 " Outputs expected to be in the set " + key_set(keys) + ".");
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw InvalidArgumentError("duplicate output tensor alias: " + name);
    names.push_back(name);
  }
  return names;
}

void encode_outputs(const Tensors& outputs, const std::vector<std::string>& names,
                    tfs::PredictResponse* resp) {
  for (const std::string& name : names) {
    auto it = outputs.find(name);
    if (it == outputs.end()) throw InternalError("the call returned no output '" + name + "'");
    const Tensor bytes = call_op1(OpId::SerializeTensor, {it->second});
    if (!(*resp->mutable_outputs())[name].ParseFromString(bytes.data<std::string>()[0]))
      throw InternalError("output '" + name + "' could not be encoded as a TensorProto");
  }
}

void pack_signature_defs(const saved_model::SavedModel& m, tfs::Any* out) {
  tfs::SignatureDefMap map;
  for (const auto& [key, sig] : m.signatures()) {
    tensorflow::SignatureDef& def = (*map.mutable_signature_def())[key];
    for (const auto& t : input_infos(sig))
      to_proto(t, input_tensor_name(sig, t), &(*def.mutable_inputs())[t.name]);
    size_t i = 0;
    for (const auto& t : output_infos(sig))
      to_proto(t, output_tensor_name(i++), &(*def.mutable_outputs())[t.name]);
    def.set_method_name(saved_model::kPredictMethod);
  }
  out->set_type_url(kSignatureDefMapUrl);
  out->set_value(map.SerializeAsString());
}

void to_proto(const VersionStatus& s, tfs::ModelVersionStatus* out) {
  out->set_version(s.version);
  switch (s.state) {
    case VersionState::kStart: out->set_state(tfs::ModelVersionStatus::START); break;
    case VersionState::kLoading: out->set_state(tfs::ModelVersionStatus::LOADING); break;
    case VersionState::kAvailable: out->set_state(tfs::ModelVersionStatus::AVAILABLE); break;
    case VersionState::kUnloading: out->set_state(tfs::ModelVersionStatus::UNLOADING); break;
    case VersionState::kEnd: out->set_state(tfs::ModelVersionStatus::END); break;
  }
  out->mutable_status()->set_error_code(grpc_code(s.error_code));
  out->mutable_status()->set_error_message(s.error_message);
}

int grpc_code(Code c) {
  switch (c) {
    case Code::kOk: return 0;
    case Code::kInvalidArgument: return 3;
    case Code::kDeadlineExceeded: return 4;
    case Code::kNotFound: return 5;
    case Code::kResourceExhausted: return 8;
    case Code::kFailedPrecondition: return 9;
    case Code::kOutOfRange: return 11;
    case Code::kUnimplemented: return 12;
    case Code::kInternal: return 13;
    case Code::kUnavailable: return 14;
    case Code::kDataLoss: return 15;
  }
  return 13;
}

}  // namespace kiln::serve
