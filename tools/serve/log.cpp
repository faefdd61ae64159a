// JSON-lines logging (log.h).
#include "log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "json.h"

namespace kiln::serve {

namespace {
std::string timestamp() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}
}  // namespace

void log_event(std::string_view level, std::string_view event,
               std::initializer_list<std::pair<std::string_view, LogValue>> fields) {
  JsonWriter w;
  w.begin_object().key("ts").string(timestamp()).key("level").string(level);
  w.key("event").string(event);
  for (const auto& [k, v] : fields) {
    w.key(k);
    if (auto* s = std::get_if<std::string>(&v))
      w.string(*s);
    else if (auto* i = std::get_if<int64_t>(&v))
      w.int64(*i);
    else
      w.float64(std::get<double>(v));
  }
  std::string line = w.end_object().take() + "\n";
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace kiln::serve
