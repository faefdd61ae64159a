// A small strict JSON parser for the profiler's tests: the trace must parse
// back, and its events are then checked by field.
#pragma once
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace kiln::testing {

struct Json {
  using Array = std::vector<Json>;
  using Object = std::map<std::string, Json>;
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<Array>,
               std::shared_ptr<Object>>
      v;

  bool is_number() const { return std::holds_alternative<double>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v); }
  double num() const { return std::get<double>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
  const Array& arr() const { return *std::get<std::shared_ptr<Array>>(v); }
  const Object& obj() const { return *std::get<std::shared_ptr<Object>>(v); }
  bool has(const std::string& k) const { return is_object() && obj().count(k) > 0; }
  const Json& operator[](const std::string& k) const { return obj().at(k); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json parse() {
    Json j = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return j;
  }

 private:
  [[noreturn]] void fail(const char* why) {
    throw std::runtime_error(std::string("json: ") + why + " at " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail("unexpected character");
    ++i_;
  }
  bool literal(const char* w) {
    const std::string word(w);
    if (s_.compare(i_, word.size(), word) != 0) return false;
    i_ += word.size();
    return true;
  }
  Json value() {
    const char c = peek();
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Json{string()};
    if (literal("true")) return Json{true};
    if (literal("false")) return Json{false};
    if (literal("null")) return Json{nullptr};
    return number();
  }
  Json object() {
    expect('{');
    auto o = std::make_shared<Json::Object>();
    if (peek() == '}') {
      ++i_;
      return Json{o};
    }
    for (;;) {
      if (peek() != '"') fail("expected a key");
      std::string k = string();
      expect(':');
      (*o)[k] = value();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return Json{o};
    }
  }
  Json array() {
    expect('[');
    auto a = std::make_shared<Json::Array>();
    if (peek() == ']') {
      ++i_;
      return Json{a};
    }
    for (;;) {
      a->push_back(value());
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return Json{a};
    }
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c == '\\') {
        if (i_ >= s_.size()) fail("bad escape");
        c = s_[i_++];
        if (c == 'u') {
          if (i_ + 4 > s_.size()) fail("bad \\u escape");
          out += static_cast<char>(std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16));
          i_ += 4;
          continue;
        }
        if (std::string("\"\\/bfnrt").find(c) == std::string::npos) fail("bad escape");
      }
      out += c;
    }
    expect('"');
    return out;
  }
  Json number() {
    const char* begin = s_.c_str() + i_;
    char* end = nullptr;
    const double d = std::strtod(begin, &end);
    if (end == begin) fail("expected a value");
    i_ += static_cast<size_t>(end - begin);
    return Json{d};
  }
  const std::string& s_;
  size_t i_ = 0;
};

inline Json parse_json(const std::string& s) {
  return JsonParser(s).parse();
}

}  // namespace kiln::testing
