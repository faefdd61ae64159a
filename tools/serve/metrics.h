// Prometheus metrics (text format 0.0.4) at /monitoring/prometheus/metrics:
// TensorFlow Serving's request count and latency names, plus kiln-serve's
// HTTP, version and load-failure series.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace kiln::serve {

class ModelManager;

class Metrics {
 public:
  /// One API call on a configured model: `status` is TensorFlow's code name,
  /// `entrypoint` "REST" or "GRPC".
  void record(const std::string& model, const std::string& api, const std::string& status,
              double micros, const char* entrypoint = "REST");
  /// Any HTTP response, by status code.
  void record_http(int status);
  std::string prometheus(const ModelManager& models) const;

  /// Latency bucket bounds in microseconds (then +Inf).
  static constexpr std::array<double, 14> kBuckets = {100,   250, 500, 1e3,   2.5e3, 5e3, 1e4,
                                                      2.5e4, 5e4, 1e5, 2.5e5, 5e5,   1e6, 1e7};

 private:
  struct Histogram {
    std::array<uint64_t, kBuckets.size() + 1> counts{};
    double sum = 0;
    uint64_t count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> requests_;  // (model, status)
  // (model, api, entrypoint)
  std::map<std::tuple<std::string, std::string, std::string>, Histogram> latency_;
  std::map<int, uint64_t> http_;
};

/// A Prometheus label value with \, " and newlines escaped.
std::string prom_label(const std::string& v);

}  // namespace kiln::serve
