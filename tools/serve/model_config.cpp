// ModelServerConfig text-proto subset and version policies (model_config.h).
#include "model_config.h"

#include <cctype>
#include <charconv>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace kiln::serve {

namespace {

// A text-proto field: a scalar (name: value) or a message (name { ... }).
struct Field {
  std::string name, value;
  bool message = false;
  int line = 0;
  std::vector<Field> fields;
};

struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class TextProto {
 public:
  explicit TextProto(const std::string& s) : s_(s) {}

  std::vector<Field> parse() {
    auto fields = message(0);
    if (skip(), pos_ < s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return fields;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ParseError("line " + std::to_string(line_) + ": " + why);
  }

  void skip() {
    while (pos_ < s_.size()) {
      if (s_[pos_] == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(s_[pos_]))) {
        line_ += s_[pos_++] == '\n';
      } else {
        return;
      }
    }
  }

  std::string ident() {
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                s_[pos_] == '_' || s_[pos_] == '-' || s_[pos_] == '.'))
      ++pos_;
    if (b == pos_) fail("expected a field name or value");
    return s_.substr(b, pos_ - b);
  }

  std::string quoted() {
    const char q = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\n') fail("newline in a string");
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  std::vector<Field> message(int depth) {
    if (depth > 8) fail("messages nested too deeply");
    std::vector<Field> out;
    for (skip(); pos_ < s_.size() && s_[pos_] != '}'; skip()) out.push_back(field(depth));
    return out;
  }

  Field field(int depth) {
    Field f;
    f.line = line_;
    f.name = ident();
    skip();
    const bool colon = pos_ < s_.size() && s_[pos_] == ':';
    if (colon) ++pos_, skip();
    if (pos_ < s_.size() && s_[pos_] == '{') {
      ++pos_;
      f.message = true;
      f.fields = message(depth + 1);
      if (pos_ >= s_.size()) fail("missing '}' for " + f.name);
      ++pos_;
    } else if (!colon) {
      fail("expected ':' or '{' after " + f.name);
    } else if (pos_ < s_.size() && (s_[pos_] == '"' || s_[pos_] == '\'')) {
      f.value = quoted();
    } else {
      f.value = ident();
    }
    if (skip(), pos_ < s_.size() && (s_[pos_] == ';' || s_[pos_] == ',')) ++pos_;
    return f;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int line_ = 1;
};

[[noreturn]] void bad(const Field& f, const std::string& why) {
  throw ParseError("line " + std::to_string(f.line) + ": " + f.name + ": " + why);
}

int64_t as_int(const Field& f, int64_t lo) {
  if (f.message) bad(f, "expected a number");
  int64_t v = 0;
  auto [p, ec] = std::from_chars(f.value.data(), f.value.data() + f.value.size(), v);
  if (ec != std::errc() || p != f.value.data() + f.value.size()) bad(f, "not an integer");
  if (v < lo) bad(f, "must be at least " + std::to_string(lo));
  return v;
}

const std::string& as_string(const Field& f) {
  if (f.message) bad(f, "expected a string");
  return f.value;
}

void expect_message(const Field& f) {
  if (!f.message) bad(f, "expected a message { ... }");
}

VersionPolicy policy_of(const Field& f) {
  expect_message(f);
  if (f.fields.size() != 1) bad(f, "give one of latest, all, specific");
  const Field& p = f.fields[0];
  expect_message(p);
  VersionPolicy v;
  if (p.name == "latest") {
    for (const Field& x : p.fields)
      x.name == "num_versions" ? void(v.num_versions = as_int(x, 1)) : bad(x, "unknown field");
  } else if (p.name == "all") {
    v.kind = VersionPolicy::Kind::kAll;
    if (!p.fields.empty()) bad(p.fields[0], "unknown field");
  } else if (p.name == "specific") {
    v.kind = VersionPolicy::Kind::kSpecific;
    for (const Field& x : p.fields)
      x.name == "versions" ? void(v.versions.insert(as_int(x, 0))) : bad(x, "unknown field");
    if (v.versions.empty()) bad(p, "lists no versions");
  } else {
    bad(p, "unknown version policy (latest, all or specific)");
  }
  return v;
}

void add_label(ModelConfig& m, const Field& f) {
  expect_message(f);
  std::string key;
  int64_t value = -1;
  for (const Field& x : f.fields) {
    if (x.name == "key")
      key = as_string(x);
    else if (x.name == "value")
      value = as_int(x, 0);
    else
      bad(x, "unknown field");
  }
  if (key.empty() || value < 0) bad(f, "needs key and value");
  m.labels[key] = value;
}

ModelConfig model_of(const Field& c) {
  expect_message(c);
  ModelConfig m;
  for (const Field& f : c.fields) {
    if (f.name == "name")
      m.name = as_string(f);
    else if (f.name == "base_path")
      m.base_path = as_string(f);
    else if (f.name == "model_platform") {
      if (as_string(f) != "tensorflow") bad(f, "only \"tensorflow\" is served");
    } else if (f.name == "model_version_policy")
      m.policy = policy_of(f);
    else if (f.name == "version_labels")
      add_label(m, f);
    else
      bad(f, "unknown field (see docs/SERVING.md for what is read)");
  }
  if (m.name.empty() || m.base_path.empty()) bad(c, "needs name and base_path");
  return m;
}

}  // namespace

ConfigOrError parse_model_config(const std::string& text) {
  ConfigOrError r;
  try {
    for (const Field& top : TextProto(text).parse()) {
      if (top.name != "model_config_list") bad(top, "expected model_config_list");
      expect_message(top);
      for (const Field& c : top.fields) {
        if (c.name != "config") bad(c, "expected config");
        r.models.push_back(model_of(c));
        for (size_t i = 0; i + 1 < r.models.size(); ++i)
          if (r.models[i].name == r.models.back().name) bad(c, "duplicate model name");
      }
    }
    if (r.models.empty()) r.error = "the config lists no models";
  } catch (const ParseError& e) {
    r.error = e.what();
  }
  return r;
}

std::set<int64_t> select_versions(const VersionPolicy& policy, const std::set<int64_t>& on_disk) {
  switch (policy.kind) {
    case VersionPolicy::Kind::kAll: return on_disk;
    case VersionPolicy::Kind::kSpecific: {
      std::set<int64_t> out;
      for (int64_t v : policy.versions)
        if (on_disk.count(v)) out.insert(v);
      return out;
    }
    case VersionPolicy::Kind::kLatest: break;
  }
  std::set<int64_t> out;
  for (auto it = on_disk.rbegin(); it != on_disk.rend(); ++it) {
    if (static_cast<int64_t>(out.size()) >= policy.num_versions) break;
    out.insert(*it);
  }
  return out;
}

std::set<int64_t> versions_on_disk(const std::string& base_path) {
  std::set<int64_t> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(base_path, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string n = it->path().filename().string();
    int64_t v = 0;
    auto [p, err] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (err != std::errc() || p != n.data() + n.size() || n.empty() || v < 0) continue;
    if (it->is_directory(ec)) out.insert(v);
  }
  return out;
}

}  // namespace kiln::serve
