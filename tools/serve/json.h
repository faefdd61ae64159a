// JSON output for kiln-serve: a small writer (commas handled, strings
// escaped, floats in their shortest round-trip form) and base64.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::serve {

/// Appends JSON to a string. begin_*/end_* nest; key() precedes each member.
class JsonWriter {
 public:
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(std::string_view k);
  JsonWriter& string(std::string_view s);
  JsonWriter& boolean(bool b);
  JsonWriter& int64(int64_t v);
  JsonWriter& uint64(uint64_t v);
  /// Shortest form that reads back as the same float; NaN and the infinities
  /// as TensorFlow Serving writes them (NaN, Infinity, -Infinity).
  JsonWriter& float32(float v);
  JsonWriter& float64(double v);
  /// Already-encoded JSON, placed as one value.
  JsonWriter& raw(std::string_view json);
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  JsonWriter& open(char c);
  JsonWriter& close(char c);
  void sep();
  std::string out_;
  bool need_comma_ = false;
  bool after_key_ = false;
};

/// `s` as a JSON string literal with quotes.
std::string json_quote(std::string_view s);
/// {"error": "msg"}
std::string error_body(std::string_view msg);

std::string base64_encode(std::string_view bytes);
/// Standard or URL-safe alphabet, padding optional; nullopt when invalid.
std::optional<std::string> base64_decode(std::string_view text);
/// Whether `s` is well-formed UTF-8.
bool valid_utf8(std::string_view s);

}  // namespace kiln::serve
