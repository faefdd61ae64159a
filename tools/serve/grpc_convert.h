// TensorFlow Serving's gRPC messages (proto/serving.proto) <-> kiln: a
// PredictRequest's TensorProtos checked against the signature and decoded by
// kiln's own TensorProto reader (tf.io.parse_tensor's, which validates
// hostile bytes), outputs encoded back, the metadata's SignatureDefMap and
// the version statuses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "service.h"
#include "serving.pb.h"

namespace kiln::serve {

namespace tfs = ::tensorflow::serving;

/// The Any type URL of GetModelMetadata's "signature_def" entry.
inline constexpr const char* kSignatureDefMapUrl =
    "type.googleapis.com/tensorflow.serving.SignatureDefMap";

/// The signature's `inputs` from `req`; InvalidArgumentError for names
/// missing or not in the signature, a dtype other than the signature's, a
/// shape whose values would take more than `max_tensor_bytes`, or a
/// malformed tensor.
Tensors decode_inputs(const tfs::PredictRequest& req, const std::vector<TensorInfo>& inputs,
                      int64_t max_tensor_bytes);

/// The outputs to answer: all of the signature's `keys`, or those
/// `req.output_filter` names (InvalidArgumentError for other names, repeats).
std::vector<std::string> output_names(const tfs::PredictRequest& req,
                                      const std::vector<std::string>& keys);

/// Puts `names` of `outputs` into `resp` as TensorProtos.
void encode_outputs(const Tensors& outputs, const std::vector<std::string>& names,
                    tfs::PredictResponse* resp);

/// Every signature of `m` as TensorFlow's SignatureDefMap, packed into `out`.
void pack_signature_defs(const saved_model::SavedModel& m, tfs::Any* out);

void to_proto(const VersionStatus& s, tfs::ModelVersionStatus* out);

/// gRPC's (and TensorFlow's) numeric status code of a kiln code.
int grpc_code(Code c);

}  // namespace kiln::serve
