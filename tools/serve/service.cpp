// The lookups and the predict call REST and gRPC share (service.h).
#include "service.h"

#include <memory>

#include "batching.h"
#include "executor.h"

namespace kiln::serve {

const Model& find_model(const ModelManager& models, const std::string& name) {
  if (const Model* m = models.find(name)) return *m;
  throw NotFoundError("Servable not found for request: Latest(" + name.substr(0, 128) + ")");
}

std::vector<VersionStatus> version_status(const Model& m, std::optional<int64_t> version,
                                          const std::string& label) {
  if (!label.empty()) version = m.find(std::nullopt, label).version;
  auto st = m.status(version);
  if (st.empty())
    throw NotFoundError(version ? "Could not find version " + std::to_string(*version) +
                                      " of model " + m.config().name
                                : "Could not find any versions of model " + m.config().name);
  return st;
}

const saved_model::Signature& find_signature(const saved_model::SavedModel& m,
                                             const std::string& key) {
  const std::string& k = key.empty() ? std::string("serving_default") : key;
  auto it = m.signatures().find(k);
  if (it == m.signatures().end())
    throw InvalidArgumentError("Serving signature name: \"" + k.substr(0, 128) +
                               "\" not found in signature def");
  return it->second;
}

std::vector<TensorInfo> input_infos(const saved_model::Signature& s) {
  std::vector<TensorInfo> out;
  for (size_t i = 0; i < s.input_keys().size(); ++i)
    out.push_back({s.input_keys()[i], s.input_specs()[i].dtype, s.input_specs()[i].shape});
  return out;
}

std::vector<TensorInfo> output_infos(const saved_model::Signature& s) {
  std::vector<TensorInfo> out;
  const auto& outs = s.function()->graph().outputs();
  for (size_t i = 0; i < s.output_keys().size() && i < outs.size(); ++i) {
    const TensorSpec& t = outs[i].node->outputs()[static_cast<size_t>(outs[i].index)];
    out.push_back({s.output_keys()[i], t.dtype, t.shape});
  }
  return out;
}

std::string input_tensor_name(const saved_model::Signature& s, const TensorInfo& t) {
  return s.key() + "_" + t.name + ":0";
}

std::string output_tensor_name(size_t i) {
  return "StatefulPartitionedCall:" + std::to_string(i);
}

void throw_deadline_exceeded() {
  throw DeadlineExceededError(
      "Deadline exceeded: the request's deadline (--rest_api_timeout_in_ms, or a gRPC "
      "client's own) passed before its call finished");
}

Tensors Runner::predict(const ModelHandle& h, const saved_model::Signature& sig, Tensors inputs,
                        Clock::time_point deadline) const {
  if (Clock::now() >= deadline) throw_deadline_exceeded();
  if (batcher_) return batcher_->run(h.model, sig, std::move(inputs), deadline);
  if (!executor_) return sig(inputs);
  // The task owns the model and the tensors: it may outlive this request.
  auto in = std::make_shared<Tensors>(std::move(inputs));
  auto out = std::make_shared<Tensors>();
  if (!executor_->run([model = h.model, &sig, in, out] { *out = sig(*in); }, deadline))
    throw_deadline_exceeded();
  return std::move(*out);
}

}  // namespace kiln::serve
