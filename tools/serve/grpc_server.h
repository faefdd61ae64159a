// kiln-serve's gRPC API: TensorFlow Serving's PredictionService (Predict,
// GetModelMetadata) and ModelService (GetModelStatus) over the same models,
// runner (batching, deadlines) and metrics as REST, served by gRPC C++'s
// synchronous server on its own threads.
#pragma once
#include <memory>

#include "flags.h"

namespace kiln::serve {

class ModelManager;
class Metrics;
class Runner;

class GrpcServer {
 public:
  GrpcServer(const Flags& flags, const ModelManager& models, Metrics& metrics,
             const Runner& runner);
  ~GrpcServer();
  /// Listens on --rest_api_host:--port and serves; the port bound (-1 on
  /// failure).
  int start();
  /// Stops accepting; in-flight calls finish (up to --rest_api_timeout_in_ms).
  /// Safe from any thread; a no-op before start().
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::serve
