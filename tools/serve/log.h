// kiln-serve's structured log: one JSON object per line on stderr.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kiln::serve {

using LogValue = std::variant<std::string, int64_t, double>;

/// {"ts": "...Z", "level": level, "event": event, key: value, ...}\n to stderr
/// (lines from several threads never interleave).
void log_event(std::string_view level, std::string_view event,
               std::initializer_list<std::pair<std::string_view, LogValue>> fields = {});

}  // namespace kiln::serve
