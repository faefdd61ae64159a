// The gRPC services and their server (grpc_server.h).
#include "grpc_server.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <mutex>

#include "grpc_convert.h"
#include "metrics.h"
#include "serving.grpc.pb.h"

namespace kiln::serve {

namespace {

using Clock = std::chrono::steady_clock;

// Runs `body`, answering its kiln error as gRPC's status, and records the
// call in the metrics (for configured models only).
template <typename Body>
grpc::Status answer(const ModelManager& models, Metrics& metrics, const std::string& model,
                    const char* api, Body&& body) {
  const auto t0 = Clock::now();
  Code code = Code::kOk;
  std::string message;
  try {
    body();
  } catch (const Error& e) {
    code = e.code();
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = Code::kResourceExhausted;
    message = "out of memory handling the request";
  } catch (const std::exception& e) {
    code = Code::kInternal;
    message = e.what();
  }
  if (models.find(model))
    metrics.record(model, api, tf_code_name(code),
                   std::chrono::duration<double, std::micro>(Clock::now() - t0).count(), "GRPC");
  if (code == Code::kOk) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(grpc_code(code)), message);
}

// The version a ModelSpec asks for.
ModelHandle find_version(const ModelManager& models, const tfs::ModelSpec& spec) {
  const Model& m = find_model(models, spec.name());
  if (spec.has_version()) return m.find(spec.version().value());
  return m.find(std::nullopt, spec.version_label());
}

void echo_spec(const tfs::ModelSpec& asked, const ModelHandle& h, const std::string& signature,
               tfs::ModelSpec* out) {
  out->set_name(asked.name());
  out->mutable_version()->set_value(h.version);
  out->set_signature_name(signature);
}

class PredictionService final : public tfs::PredictionService::Service {
 public:
  PredictionService(const Flags& flags, const ModelManager& models, Metrics& metrics,
                    const Runner& runner)
      : flags_(flags), models_(models), metrics_(metrics), runner_(runner) {}

  grpc::Status Predict(grpc::ServerContext* ctx, const tfs::PredictRequest* req,
                       tfs::PredictResponse* resp) override {
    return answer(models_, metrics_, req->model_spec().name(), "predict", [&] {
      const ModelHandle h = find_version(models_, req->model_spec());
      const saved_model::Signature& sig =
          find_signature(*h.model, req->model_spec().signature_name());
      const std::vector<std::string> names = output_names(*req, sig.output_keys());
      Tensors inputs = decode_inputs(*req, input_infos(sig), flags_.max_tensor_bytes);
      const Tensors outputs = runner_.predict(h, sig, std::move(inputs), deadline(ctx));
      encode_outputs(outputs, names, resp);
      echo_spec(req->model_spec(), h, sig.key(), resp->mutable_model_spec());
    });
  }

  grpc::Status GetModelMetadata(grpc::ServerContext*, const tfs::GetModelMetadataRequest* req,
                                tfs::GetModelMetadataResponse* resp) override {
    return answer(models_, metrics_, req->model_spec().name(), "metadata", [&] {
      if (req->metadata_field().empty())
        throw InvalidArgumentError(
            "GetModelMetadataRequest must specify at least one metadata_field");
      for (const std::string& f : req->metadata_field())
        if (f != "signature_def")
          throw InvalidArgumentError("Metadata field " + f.substr(0, 128) + " is not supported");
      const ModelHandle h = find_version(models_, req->model_spec());
      pack_signature_defs(*h.model, &(*resp->mutable_metadata())["signature_def"]);
      echo_spec(req->model_spec(), h, "", resp->mutable_model_spec());
    });
  }

 private:
  // The call's deadline: the client's, capped by --rest_api_timeout_in_ms.
  Clock::time_point deadline(const grpc::ServerContext* ctx) const {
    const auto limit = std::chrono::milliseconds(flags_.rest_api_timeout_in_ms);
    const auto left = ctx->deadline() - std::chrono::system_clock::now();
    return Clock::now() + (left < limit ? std::chrono::duration_cast<Clock::duration>(left)
                                        : std::chrono::duration_cast<Clock::duration>(limit));
  }
  const Flags& flags_;
  const ModelManager& models_;
  Metrics& metrics_;
  const Runner& runner_;
};

class ModelService final : public tfs::ModelService::Service {
 public:
  ModelService(const ModelManager& models, Metrics& metrics) : models_(models), metrics_(metrics) {}

  grpc::Status GetModelStatus(grpc::ServerContext*, const tfs::GetModelStatusRequest* req,
                              tfs::GetModelStatusResponse* resp) override {
    const tfs::ModelSpec& spec = req->model_spec();
    return answer(models_, metrics_, spec.name(), "status", [&] {
      const Model& m = find_model(models_, spec.name());
      std::optional<int64_t> version;
      if (spec.has_version()) version = spec.version().value();
      for (const VersionStatus& s : version_status(m, version, spec.version_label()))
        to_proto(s, resp->add_model_version_status());
    });
  }

 private:
  const ModelManager& models_;
  Metrics& metrics_;
};

}  // namespace

class GrpcServer::Impl {
 public:
  Impl(const Flags& flags, const ModelManager& models, Metrics& metrics, const Runner& runner)
      : flags_(flags), predict_(flags, models, metrics, runner), status_(models, metrics) {}
  const Flags& flags_;
  PredictionService predict_;
  ModelService status_;
  std::mutex mu_;
  std::unique_ptr<grpc::Server> server_;
};

GrpcServer::GrpcServer(const Flags& flags, const ModelManager& models, Metrics& metrics,
                       const Runner& runner)
    : impl_(std::make_unique<Impl>(flags, models, metrics, runner)) {}

GrpcServer::~GrpcServer() {
  stop();
}

int GrpcServer::start() {
  const Flags& f = impl_->flags_;
  grpc::ServerBuilder b;
  int port = -1;
  const std::string host = f.rest_api_host.find(':') != std::string::npos
                               ? "[" + f.rest_api_host + "]"
                               : f.rest_api_host;
  b.AddListeningPort(host + ":" + std::to_string(f.grpc_port), grpc::InsecureServerCredentials(),
                     &port);
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a second server on the port fails
  b.RegisterService(&impl_->predict_);
  b.RegisterService(&impl_->status_);
  b.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(f.max_body_bytes, INT32_MAX)));
  // Each call holds a gRPC thread while it waits for a model thread; past the
  // quota gRPC answers RESOURCE_EXHAUSTED instead of queueing.
  grpc::ResourceQuota quota("kiln-serve");
  quota.SetMaxThreads(f.grpc_max_threads);
  b.SetResourceQuota(quota);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  if (!server || port <= 0) return -1;
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->server_ = std::move(server);
  return port;
}

void GrpcServer::stop() {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  if (!impl_->server_) return;
  impl_->server_->Shutdown(std::chrono::system_clock::now() +
                           std::chrono::milliseconds(impl_->flags_.rest_api_timeout_in_ms));
  impl_->server_.reset();
}

}  // namespace kiln::serve
