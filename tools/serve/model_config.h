// Which models kiln-serve serves and which of their versions:
// TensorFlow Serving's ModelServerConfig (text proto, the subset in
// docs/SERVING.md) and its version policies.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::serve {

struct VersionPolicy {
  enum class Kind { kLatest, kAll, kSpecific };
  Kind kind = Kind::kLatest;
  int64_t num_versions = 1;    ///< kLatest
  std::set<int64_t> versions;  ///< kSpecific
};

struct ModelConfig {
  std::string name;
  std::string base_path;
  VersionPolicy policy;
  std::map<std::string, int64_t> labels;  ///< version_labels
};

struct ConfigOrError {
  std::vector<ModelConfig> models;
  std::string error;  ///< non-empty: what is wrong and where (line)
};

/// Parses the text of a ModelServerConfig:
///   model_config_list { config { name: "m" base_path: "/p"
///     model_version_policy { latest { num_versions: 2 } } } }
/// Unknown fields, duplicate names and bad values are errors.
ConfigOrError parse_model_config(const std::string& text);

/// The versions `policy` serves among `on_disk`.
std::set<int64_t> select_versions(const VersionPolicy& policy, const std::set<int64_t>& on_disk);

/// The numeric subdirectories of `base_path` (TensorFlow Serving's version
/// layout); names that are not plain decimal numbers are ignored.
std::set<int64_t> versions_on_disk(const std::string& base_path);

}  // namespace kiln::serve
