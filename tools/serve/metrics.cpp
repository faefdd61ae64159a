// Prometheus text exposition (metrics.h).
#include "metrics.h"

#include <charconv>
#include <sstream>

#include "models.h"

namespace kiln::serve {

void Metrics::record(const std::string& model, const std::string& api, const std::string& status,
                     double micros, const char* entrypoint) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{model, status}];
  Histogram& h = latency_[{model, api, entrypoint}];
  size_t b = 0;
  while (b < kBuckets.size() && micros > kBuckets[b]) ++b;
  ++h.counts[b];
  h.sum += micros;
  ++h.count;
}

void Metrics::record_http(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_[status];
}

std::string prom_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

namespace {
std::string number(double v, std::chars_format f) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, f).ptr);
}

void write_histogram(std::ostream& os, const std::string& labels,
                     const std::array<uint64_t, 15>& counts, double sum, uint64_t count) {
  const std::string name = ":tensorflow:serving:request_latency";
  uint64_t cum = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    cum += counts[b];
    os << name << "_bucket{" << labels << ",le=\"";
    if (b < Metrics::kBuckets.size())
      os << number(Metrics::kBuckets[b], std::chars_format::fixed);
    else
      os << "+Inf";
    os << "\"} " << cum << "\n";
  }
  os << name << "_sum{" << labels << "} " << number(sum, std::chars_format::general) << "\n";
  os << name << "_count{" << labels << "} " << count << "\n";
}
}  // namespace

std::string Metrics::prometheus(const ModelManager& models) const {
  std::ostringstream os;
  std::lock_guard<std::mutex> lock(mu_);
  os << "# HELP :tensorflow:serving:request_count Requests by model and status.\n"
     << "# TYPE :tensorflow:serving:request_count counter\n";
  for (const auto& [k, n] : requests_)
    os << ":tensorflow:serving:request_count{model_name=\"" << prom_label(k.first) << "\",status=\""
       << k.second << "\"} " << n << "\n";
  os << "# HELP :tensorflow:serving:request_latency Request latency in microseconds.\n"
     << "# TYPE :tensorflow:serving:request_latency histogram\n";
  for (const auto& [k, h] : latency_) {
    const auto& [model, api, entrypoint] = k;
    write_histogram(os,
                    "model_name=\"" + prom_label(model) + "\",API=\"" + api + "\",entrypoint=\"" +
                        entrypoint + "\"",
                    h.counts, h.sum, h.count);
  }
  os << "# HELP kiln_serve_http_responses_total HTTP responses by status code.\n"
     << "# TYPE kiln_serve_http_responses_total counter\n";
  for (const auto& [code, n] : http_)
    os << "kiln_serve_http_responses_total{code=\"" << code << "\"} " << n << "\n";
  os << "# HELP kiln_serve_versions_loaded Versions AVAILABLE per model.\n"
     << "# TYPE kiln_serve_versions_loaded gauge\n";
  for (const auto& m : models.models())
    os << "kiln_serve_versions_loaded{model_name=\"" << prom_label(m->config().name) << "\"} "
       << m->loaded_count() << "\n";
  os << "# HELP kiln_serve_version_load_failures_total Versions that failed to load.\n"
     << "# TYPE kiln_serve_version_load_failures_total counter\n";
  for (const auto& m : models.models())
    os << "kiln_serve_version_load_failures_total{model_name=\"" << prom_label(m->config().name)
       << "\"} " << m->load_failures() << "\n";
  return os.str();
}

}  // namespace kiln::serve
