// JSON writing and base64 for kiln-serve (json.h).
#include "json.h"

#include <charconv>
#include <cmath>

namespace kiln::serve {

void JsonWriter::sep() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (need_comma_) out_ += ',';
  need_comma_ = true;
}

JsonWriter& JsonWriter::open(char c) {
  sep();
  out_ += c;
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::close(char c) {
  out_ += c;
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  sep();
  out_ += json_quote(k);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view s) {
  sep();
  out_ += json_quote(s);
  return *this;
}

JsonWriter& JsonWriter::boolean(bool b) {
  sep();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::int64(int64_t v) {
  sep();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  return *this;
}

JsonWriter& JsonWriter::uint64(uint64_t v) {
  sep();
  char buf[24];
  out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  return *this;
}

namespace {
// Shortest round-trip digits; NaN/Infinity as TF Serving writes them.
template <typename F>
void append_float(std::string& out, F v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "Infinity" : "-Infinity";
  } else {
    char buf[48];
    out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  }
}
}  // namespace

JsonWriter& JsonWriter::float32(float v) {
  sep();
  append_float(out_, v);
  return *this;
}

JsonWriter& JsonWriter::float64(double v) {
  sep();
  append_float(out_, v);
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  sep();
  out_ += json;
  return *this;
}

std::string json_quote(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string error_body(std::string_view msg) {
  // Messages may quote request bytes: keep the body valid UTF-8.
  std::string safe(msg);
  if (!valid_utf8(safe))
    for (char& c : safe)
      if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  return "{\"error\":" + json_quote(safe) + "}";
}

std::string base64_encode(std::string_view bytes) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16 | static_cast<uint8_t>(bytes[i + 1]) << 8 |
                 static_cast<uint8_t>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += a[(v >> s) & 63];
  }
  if (size_t rest = bytes.size() - i) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += a[v >> 18];
    out += a[(v >> 12) & 63];
    out += rest == 2 ? a[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

namespace {
int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}
}  // namespace

std::optional<std::string> base64_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = b64_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || (n == 1 && c < 0xc2) || i + n >= s.size() + (n ? 0 : 1)) return false;
    for (int k = 1; k <= n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n + 1;
  }
  return true;
}

}  // namespace kiln::serve
