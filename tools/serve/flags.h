// kiln-serve's command line: TensorFlow Serving's flag names (--name=value
// or --name value), plus kiln-serve's limits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::serve {

struct Flags {
  int rest_api_port = 8501;  ///< 0: any free port (printed in the "listening" log line)
  std::string rest_api_host = "0.0.0.0";
  int grpc_port = 8500;         ///< --port (gRPC); 0: any free port
  int grpc_max_threads = 1024;  ///< gRPC calls in flight at once (each waits on a thread)
  std::string model_name = "default";
  std::string model_base_path;
  std::string model_config_file;
  int rest_api_num_threads = 0;                 ///< 0: 4 per core, as TensorFlow Serving
  int file_system_poll_wait_seconds = 1;        ///< 0: load once at start-up
  int64_t max_body_bytes = 64 << 20;            ///< also gRPC's largest message
  int64_t max_tensor_bytes = int64_t{1} << 30;  ///< one decoded gRPC input tensor
  int64_t rest_api_timeout_in_ms = 30000;       ///< per request: reading it, queueing, running
  int64_t rest_api_read_timeout_in_ms = 5000;   ///< per read; also the keep-alive idle limit
  bool enable_batching = false;                 ///< merge concurrent predicts (batching.h)
  std::string batching_parameters_file;         ///< BatchingParameters text proto
  bool help = false;
};

struct FlagsOrError {
  Flags flags;
  std::string error;  ///< non-empty: bad usage (exit status 2)
};

/// Parses argv[1:]. Unknown flags, bad numbers, missing values and a missing
/// model (neither --model_base_path nor --model_config_file) are errors.
FlagsOrError parse_flags(const std::vector<std::string>& args);

/// HTTP worker threads (and model-call threads): the flag, else 4 per core.
int worker_threads(const Flags& flags);

/// The --help text.
std::string usage_text();

}  // namespace kiln::serve
