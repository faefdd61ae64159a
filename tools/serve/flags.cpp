// kiln-serve's flags (flags.h).
#include "flags.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <thread>

namespace kiln::serve {

namespace {

using Setter = std::function<std::string(Flags&, const std::string&)>;

// A setter for an integer flag within [lo, hi]; returns "" or why not.
template <typename T>
Setter int_flag(T Flags::*field, int64_t lo, int64_t hi) {
  return [=](Flags& f, const std::string& v) -> std::string {
    int64_t x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size() || v.empty())
      return "is not an integer: '" + v + "'";
    if (x < lo || x > hi)
      return "is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]: " + v;
    f.*field = static_cast<T>(x);
    return "";
  };
}

Setter bool_flag(bool Flags::*field) {
  return [=](Flags& f, const std::string& v) -> std::string {
    if (v != "true" && v != "false") return "is not true or false: '" + v + "'";
    f.*field = v == "true";
    return "";
  };
}

Setter str_flag(std::string Flags::*field) {
  return [=](Flags& f, const std::string& v) -> std::string {
    f.*field = v;
    return "";
  };
}

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> m = {
      {"rest_api_port", int_flag(&Flags::rest_api_port, 0, 65535)},
      {"rest_api_host", str_flag(&Flags::rest_api_host)},
      {"port", int_flag(&Flags::grpc_port, 0, 65535)},
      {"grpc_max_threads", int_flag(&Flags::grpc_max_threads, 2, 65536)},
      {"model_name", str_flag(&Flags::model_name)},
      {"model_base_path", str_flag(&Flags::model_base_path)},
      {"model_config_file", str_flag(&Flags::model_config_file)},
      {"rest_api_num_threads", int_flag(&Flags::rest_api_num_threads, 0, 4096)},
      {"file_system_poll_wait_seconds", int_flag(&Flags::file_system_poll_wait_seconds, 0, 86400)},
      {"max_body_bytes", int_flag(&Flags::max_body_bytes, 1, int64_t{1} << 40)},
      {"max_tensor_bytes", int_flag(&Flags::max_tensor_bytes, 1, int64_t{1} << 46)},
      {"rest_api_timeout_in_ms", int_flag(&Flags::rest_api_timeout_in_ms, 1, 86400000)},
      {"rest_api_read_timeout_in_ms", int_flag(&Flags::rest_api_read_timeout_in_ms, 1, 86400000)},
      {"enable_batching", bool_flag(&Flags::enable_batching)},
      {"batching_parameters_file", str_flag(&Flags::batching_parameters_file)},
  };
  return m;
}

// Applies one flag; "" or the error message.
std::string apply(Flags& f, const std::string& name, const std::string& value) {
  auto it = setters().find(name);
  if (it == setters().end()) return "unknown flag --" + name + " (see --help)";
  std::string why = it->second(f, value);
  return why.empty() ? "" : "--" + name + " " + why;
}

}  // namespace

FlagsOrError parse_flags(const std::vector<std::string>& args) {
  FlagsOrError r;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help" || a == "-help") {
      r.flags.help = true;
      return r;
    }
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
      r.error = "unexpected argument '" + a + "' (flags are --name=value)";
      return r;
    }
    std::string name = a.substr(2), value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      r.error = "missing value after " + a;
      return r;
    }
    if (r.error = apply(r.flags, name, value); !r.error.empty()) return r;
  }
  const Flags& f = r.flags;
  if (f.model_base_path.empty() == f.model_config_file.empty())
    r.error = "give exactly one of --model_base_path and --model_config_file";
  else if (!f.batching_parameters_file.empty() && !f.enable_batching)
    r.error = "--batching_parameters_file needs --enable_batching=true";
  return r;
}

int worker_threads(const Flags& flags) {
  if (flags.rest_api_num_threads > 0) return flags.rest_api_num_threads;
  return 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::string usage_text() {
  return R"(usage: kiln-serve --model_base_path=DIR [--model_name=NAME] [flags]
       kiln-serve --model_config_file=FILE [flags]

Serves kiln SavedModels over TensorFlow Serving's REST and gRPC APIs (no
Python).
DIR holds numbered versions (DIR/1, DIR/2, ...); new ones are loaded as they
appear, removed ones unloaded.

  --port=8500                     gRPC port (0: any free port, logged)
  --grpc_max_threads=1024         gRPC calls in flight at once; more get
                                  RESOURCE_EXHAUSTED
  --rest_api_port=8501            REST port (0: any free port, logged)
  --rest_api_host=0.0.0.0         address both listen on
  --model_name=default            the model's name in URLs
  --model_base_path=DIR           the model's versions
  --model_config_file=FILE        several models: ModelServerConfig text proto
                                  (see docs/SERVING.md for the subset read)
  --rest_api_num_threads=0        HTTP worker threads (0: 4 per core)
  --file_system_poll_wait_seconds=1  seconds between scans for versions (0: once)
  --max_body_bytes=67108864       larger request bodies get 413 (gRPC:
                                  RESOURCE_EXHAUSTED)
  --max_tensor_bytes=1073741824   larger decoded gRPC input tensors are refused
  --rest_api_timeout_in_ms=30000  per-request deadline (reading it, queueing,
                                  running): past it, 504; caps a gRPC
                                  client's deadline too
  --rest_api_read_timeout_in_ms=5000  per socket read; idle keep-alive limit
  --enable_batching=false         merge concurrent predicts of one signature
                                  into one call (docs/SERVING.md)
  --batching_parameters_file=FILE BatchingParameters text proto: max_batch_size,
                                  batch_timeout_micros, num_batch_threads,
                                  max_enqueued_batches
  --help                          this text

Exit status: 0 after SIGTERM/SIGINT (in-flight requests finish), 1 when a
model cannot be served or a port cannot be bound, 2 on bad usage.
)";
}

}  // namespace kiln::serve
