// Internal text helpers of the core layer shared with the layers above.
#pragma once
#include <string>
#include <string_view>

namespace kiln::detail {

/// Appends `s` to `out` as Python escapes a bytes literal: printable ASCII
/// as is, `quote` and backslash escaped, \n \t \r, \xNN for other bytes.
void append_escaped(std::string& out, std::string_view s, char quote);

}  // namespace kiln::detail
