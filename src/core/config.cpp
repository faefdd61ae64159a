#include "kiln/config.h"

#include <unistd.h>

#include <string>

#include "core/env.h"

namespace kiln {

Config& config() {
  static Config c;
  return c;
}

const char* version() {
  return KILN_VERSION;
}

int64_t max_allocation_bytes() {
  const int64_t set = config().max_allocation_bytes;
  if (set > 0) return set;
  static const int64_t def = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return int64_t{8} << 30;
    return static_cast<int64_t>(pages) * page / 4 * 3;
  }();
  return def;
}

bool excess_precision_allowed() {
  static const bool xla_off = [] {
    const std::string flags = env("XLA_FLAGS");
    return flags.find("--xla_allow_excess_precision=false") != std::string::npos ||
           flags.find("--xla_allow_excess_precision=0") != std::string::npos;
  }();
  return config().jit_excess_precision && !xla_off;
}

}  // namespace kiln
