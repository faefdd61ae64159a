// Internal: what the string ops' inference (src/ops/string_ops.cpp) and their
// CPU kernels (src/kernels/cpu/strings.cpp) share: compiled regular
// expressions, StringFormat's template, and bytes quoted for messages.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/op.h"

namespace re2 {
class RE2;
}

namespace kiln::strings {

/// `pattern` compiled by RE2 (TensorFlow's dialect), from a small shared
/// cache; the result is safe to match with from any thread. A pattern that
/// does not compile is InvalidArgument naming the op, the pattern and RE2's
/// reason.
std::shared_ptr<const re2::RE2> compile_regex(const OpCall& c, const std::string& pattern);
/// InvalidArgument unless `rewrite` is valid for `re` (\0..\9 naming groups
/// that exist, \\ for a backslash).
void check_rewrite(const OpCall& c, const re2::RE2& re, const std::string& rewrite);

/// StringFormat's template cut at every (non-overlapping, leftmost)
/// occurrence of `placeholder`: one more piece than placeholders.
std::vector<std::string> split_template(std::string_view tmpl, std::string_view placeholder);

/// `s` for an error message: b'...' with quotes, backslashes, control and
/// non-ASCII bytes escaped (the message stays valid UTF-8), cut after 80 bytes.
std::string quote_for_message(std::string_view s);

/// UTF-8: true for a continuation byte (10xxxxxx).
inline bool is_trail_byte(unsigned char b) {
  return (b & 0xC0) == 0x80;
}

/// "BYTE" or "UTF8_CHAR" (the `unit` attribute); InvalidArgument otherwise.
bool unit_is_utf8(const OpCall& c);

/// ASCII whitespace: space, \t, \n, \v, \f, \r (absl::ascii_isspace).
inline bool is_ascii_space(char ch) {
  return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/// StringSplitV2's split of one string (TensorFlow's SplitV2, Python's
/// str.split): at every `sep`, or at runs of whitespace when `sep` is empty;
/// after `maxsplit` > 0 splits the rest is one piece; 0 keeps the string whole.
void split_v2(std::string_view text, std::string_view sep, int64_t maxsplit,
              std::vector<std::string_view>& out);

/// The UTF-8 character at byte i < s.size() of s: returns its length in bytes
/// and sets `valid`. Where the bytes are not a well-formed character (a stray
/// continuation byte, an overlong form, a surrogate, above U+10FFFF, cut off)
/// `valid` is false and the length is that of the maximal ill-formed prefix
/// (at least 1): what Unicode's "U+FFFD substitution of maximal subparts"
/// (and ICU, behind TensorFlow's errors="replace") replaces by one U+FFFD.
size_t utf8_next(std::string_view s, size_t i, bool& valid);
/// utf8_next that also gives the character's code point (when `valid`): the
/// one UTF-8 decoder of the string and Unicode kernels.
size_t utf8_decode(std::string_view s, size_t i, bool& valid, char32_t& code_point);

/// `s` escaped for a message (printable ASCII; \xNN for other bytes), cut
/// after `max` bytes with "...".
std::string escape_for_message(std::string_view s, size_t max = 80);

}  // namespace kiln::strings
