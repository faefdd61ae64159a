// TensorFlow Serving's REST API over kiln models, independent of the HTTP
// library: a method, path and body in, a status and JSON body out.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/status.h"
#include "service.h"

namespace kiln::serve {

class ModelManager;
class Metrics;

/// A request path taken apart.
struct Route {
  enum class Kind { kNone, kStatus, kMetadata, kPredict, kClassify, kRegress, kMetrics };
  Kind kind = Kind::kNone;
  std::string model;
  std::optional<int64_t> version;
  std::string label;
};

/// GET /v1/models/M[/versions/N|/labels/L][/metadata],
/// POST /v1/models/M[/versions/N|/labels/L]:predict (or :classify, :regress),
/// GET /monitoring/prometheus/metrics. Anything else: kind kNone.
Route parse_route(std::string_view method, std::string_view path);

/// TensorFlow Serving's HTTP status for an error code (400, 404, 503, ...).
int http_status(Code c);

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

class Rest {
 public:
  using Clock = std::chrono::steady_clock;
  /// Predicts run through `runner` (the one gRPC shares; service.h).
  Rest(const ModelManager& models, Metrics& metrics, const Runner& runner)
      : models_(models), metrics_(metrics), runner_(runner) {}
  /// Never throws: every failure is an {"error": "..."} reply.
  HttpReply handle(std::string_view method, std::string_view path, std::string_view body,
                   Clock::time_point deadline);

 private:
  HttpReply dispatch(const Route& r, std::string_view body, Clock::time_point deadline);
  HttpReply status(const Route& r);
  HttpReply metadata(const Route& r);
  HttpReply predict(const Route& r, std::string_view body, Clock::time_point deadline);
  const ModelManager& models_;
  Metrics& metrics_;
  const Runner& runner_;
};

}  // namespace kiln::serve
