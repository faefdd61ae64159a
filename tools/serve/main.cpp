// kiln-serve: serves kiln SavedModels with TensorFlow Serving's REST and
// gRPC APIs, no Python (docs/SERVING.md). Exit status 0 after SIGTERM/SIGINT, 1 when
// it cannot serve, 2 on bad usage.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "batching.h"
#include "executor.h"
#include "flags.h"
#include "grpc_server.h"
#include "http_server.h"
#include "log.h"
#include "metrics.h"
#include "model_config.h"
#include "models.h"
#include "rest.h"
#include "service.h"

namespace {

using namespace kiln::serve;

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "kiln-serve: %s\nRun kiln-serve --help for the flags.\n", msg.c_str());
  return 2;
}

// The models to serve, from the flags; error non-empty on failure.
ConfigOrError model_configs(const Flags& f) {
  if (f.model_config_file.empty()) {
    ModelConfig m;
    m.name = f.model_name;
    m.base_path = f.model_base_path;
    return {{m}, ""};
  }
  std::ifstream in(f.model_config_file);
  if (!in) return {{}, "cannot read --model_config_file " + f.model_config_file};
  std::stringstream ss;
  ss << in.rdbuf();
  ConfigOrError c = parse_model_config(ss.str());
  if (!c.error.empty()) c.error = f.model_config_file + ": " + c.error;
  return c;
}

// SIGTERM/SIGINT: the handler writes the signal to a pipe (threads libkiln
// may start before main() keep them unblocked, so sigwait alone is not
// enough); one thread reads it and stops the server.
int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  const char c = static_cast<char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &c, 1);
}

bool install_signal_handlers() {
  if (pipe(g_signal_pipe) != 0) return false;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  return sigaction(SIGTERM, &sa, nullptr) == 0 && sigaction(SIGINT, &sa, nullptr) == 0;
}

// The thread that stops the servers on a signal; a 0 byte (written once the
// HTTP server has stopped some other way) ends it without stopping anything.
std::thread watch_signals(HttpServer& server, GrpcServer& grpc) {
  return std::thread([&server, &grpc] {
    char c = 0;
    while (read(g_signal_pipe[0], &c, 1) < 0 && errno == EINTR) {
    }
    if (c == 0) return;
    log_event("info", "shutdown", {{"signal", std::string(c == SIGTERM ? "SIGTERM" : "SIGINT")}});
    server.stop();
    grpc.stop();  // returns once its in-flight calls have finished
  });
}

int serve(const Flags& flags, const std::vector<ModelConfig>& configs,
          const BatchingOptions& batching) {
  ModelManager models(configs);
  models.poll_all();
  for (const auto& m : models.models()) {
    const int64_t n = m->loaded_count();  // none yet: served once a version appears
    log_event(n ? "info" : "warning", "model",
              {{"model", m->config().name},
               {"base_path", m->config().base_path},
               {"versions_loaded", n}});
  }
  Metrics metrics;
  Executor executor(worker_threads(flags));
  std::unique_ptr<Batcher> batcher;
  if (flags.enable_batching) batcher = std::make_unique<Batcher>(batching);
  const Runner runner(&executor, batcher.get());
  Rest rest(models, metrics, runner);
  GrpcServer grpc(flags, models, metrics, runner);
  const int grpc_port = grpc.start();
  if (grpc_port < 0) {
    log_event("error", "bind_failed",
              {{"host", flags.rest_api_host},
               {"port", int64_t{flags.grpc_port}},
               {"api", std::string("grpc")}});
    return 1;
  }
  HttpServer server(flags, rest, metrics);
  const int port = server.bind();
  if (port < 0) {
    log_event("error", "bind_failed",
              {{"host", flags.rest_api_host},
               {"port", int64_t{flags.rest_api_port}},
               {"api", std::string("rest")}});
    return 1;
  }
  std::thread watcher = watch_signals(server, grpc);
  models.start_polling(flags.file_system_poll_wait_seconds);
  // The REST line comes last: launchers wait for "listening" (ports of both by then).
  log_event("info", "grpc_listening",
            {{"host", flags.rest_api_host}, {"port", int64_t{grpc_port}}});
  log_event("info", "listening", {{"host", flags.rest_api_host}, {"port", int64_t{port}}});
  const bool ok = server.listen();
  const char wake = 0;
  [[maybe_unused]] ssize_t woke = write(g_signal_pipe[1], &wake, 1);
  watcher.join();  // it may still be in server.stop()
  grpc.stop();
  models.stop_polling();
  log_event("info", "stopped", {});
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  if (!install_signal_handlers()) {
    std::perror("kiln-serve: signal handlers");
    return 1;
  }
  // Threads started from here on (model calls, polling) never take the
  // signals; the main thread takes them again once it serves (http_server.cpp).
  block_stop_signals(true);
  const FlagsOrError parsed = parse_flags(std::vector<std::string>(argv + 1, argv + argc));
  if (parsed.flags.help) {
    std::fputs(usage_text().c_str(), stdout);
    return 0;
  }
  if (!parsed.error.empty()) return usage_error(parsed.error);
  const Flags& flags = parsed.flags;
  const ConfigOrError configs = model_configs(flags);
  if (!configs.error.empty()) return usage_error(configs.error);
  BatchingOptions batching;
  if (!flags.batching_parameters_file.empty()) {
    std::ifstream in(flags.batching_parameters_file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in)
      return usage_error("cannot read --batching_parameters_file " +
                         flags.batching_parameters_file);
    try {
      batching = parse_batching_parameters(text.str());
    } catch (const kiln::Error& e) {
      return usage_error(flags.batching_parameters_file + ": " + e.what());
    }
  }
  if (flags.enable_batching)
    log_event("info", "batching",
              {{"max_batch_size", batching.max_batch_size},
               {"batch_timeout_micros", batching.batch_timeout_micros},
               {"num_batch_threads", batching.num_batch_threads}});
  return serve(flags, configs.models, batching);
}
