// Internal: the PrintV2 op's `template` attribute. Tensors go where "{}"
// stands; "{{" and "}}" are literal braces (std::format style).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// Appends `text` to `out` with its braces escaped.
inline void append_print_literal(std::string& out, std::string_view text) {
  for (char ch : text) {
    out += ch;
    if (ch == '{' || ch == '}') out += ch;
  }
}

/// Splits `tmpl` into the literal pieces around its placeholders (one more
/// piece than placeholders). Returns false and sets `error` when malformed.
inline bool parse_print_template(std::string_view tmpl, std::vector<std::string>& pieces,
                                 std::string& error) {
  pieces.assign(1, std::string());
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char ch = tmpl[i];
    const char next = i + 1 < tmpl.size() ? tmpl[i + 1] : '\0';
    if (ch == '{' && next == '}') {
      pieces.emplace_back();
      ++i;
    } else if ((ch == '{' || ch == '}') && next == ch) {
      pieces.back() += ch;
      ++i;
    } else if (ch == '{' || ch == '}') {
      error = "unmatched '" + std::string(1, ch) + "' at offset " + std::to_string(i) +
              " (write \"{{\" or \"}}\" for a literal brace)";
      return false;
    } else {
      pieces.back() += ch;
    }
  }
  return true;
}

}  // namespace kiln
