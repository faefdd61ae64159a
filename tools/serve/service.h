// What the REST and gRPC APIs share: a model version and a signature looked
// up as TensorFlow Serving does (same errors), a signature's inputs and
// outputs as metadata lists them, and a predict run through the batcher or
// the executor under the request's deadline.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "convert.h"
#include "kiln/saved_model.h"
#include "models.h"

namespace kiln::serve {

class Executor;
class Batcher;

using Tensors = std::map<std::string, Tensor>;

/// The model named `name`; NotFoundError in TensorFlow Serving's words.
const Model& find_model(const ModelManager& models, const std::string& name);
/// The status of `m`'s versions: `version`, else `label`'s, else every one
/// (NotFoundError when there is none).
std::vector<VersionStatus> version_status(const Model& m, std::optional<int64_t> version,
                                          const std::string& label);
/// Signature `key` of `m` ("" is serving_default); InvalidArgumentError.
const saved_model::Signature& find_signature(const saved_model::SavedModel& m,
                                             const std::string& key);
/// A signature's inputs and outputs, in its own order.
std::vector<TensorInfo> input_infos(const saved_model::Signature& s);
std::vector<TensorInfo> output_infos(const saved_model::Signature& s);
/// The graph tensor names metadata gives a signature's inputs and outputs
/// (TensorFlow's: "serving_default_x:0", "StatefulPartitionedCall:0").
std::string input_tensor_name(const saved_model::Signature& s, const TensorInfo& t);
std::string output_tensor_name(size_t i);

/// The error of a request whose deadline passed before its call finished.
[[noreturn]] void throw_deadline_exceeded();

/// Runs predicts: through the batcher when there is one, else on the
/// executor (the caller gives up at the deadline), else on the caller.
class Runner {
 public:
  using Clock = std::chrono::steady_clock;
  Runner(Executor* executor, Batcher* batcher) : executor_(executor), batcher_(batcher) {}
  /// `sig` of `h`'s model on `inputs`; DeadlineExceededError past `deadline`.
  Tensors predict(const ModelHandle& h, const saved_model::Signature& sig, Tensors inputs,
                  Clock::time_point deadline) const;

 private:
  Executor* executor_;
  Batcher* batcher_;
};

}  // namespace kiln::serve
