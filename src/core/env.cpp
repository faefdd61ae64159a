#include "env.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kiln {
namespace {

void ignored(const char* name, const std::string& value, const char* want, const char* fallback) {
  std::fprintf(stderr, "kiln: ignoring %s='%s' (want %s); using %s\n", name, value.c_str(), want,
               fallback);
}

}  // namespace

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

double env_seconds(const char* name, double fallback) {
  const std::string s = env(name);
  if (s.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno == 0 && end && *end == '\0' && std::isfinite(v) && v > 0) return v;
  ignored(name, s, "seconds > 0", std::to_string(fallback).c_str());
  return fallback;
}

uint64_t env_count(const char* name, uint64_t fallback) {
  const std::string s = env(name);
  if (s.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno == 0 && end && *end == '\0' && s.find_first_not_of("0123456789") == std::string::npos)
    return v;
  ignored(name, s, "a whole number", std::to_string(fallback).c_str());
  return fallback;
}

}  // namespace kiln
