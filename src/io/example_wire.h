// Internal: reads features out of a serialized tf.train.Example (or the
// context and feature lists of a tf.train.SequenceExample) without
// building its message (the wire format walked once per feature, nothing
// allocated). Protobuf's rules hold: a map key's last entry wins, a Feature's
// last oneof case wins, repeated list fields and split messages merge.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::io {

enum class FeatureKind : uint8_t { kNone = 0, kBytes = 1, kFloat = 2, kInt64 = 3 };

/// One feature: the kind of its winning list and that list's message bytes
/// (several when the list was written in pieces).
struct FeatureView {
  bool found = false;  ///< the Example has an entry for the key
  FeatureKind kind = FeatureKind::kNone;
  std::vector<std::string_view> lists;
};

/// Finds `key` in `example`; false (with why in *error) when the bytes are
/// not a valid Example.
bool find_feature(std::string_view example, std::string_view key, FeatureView* out,
                  std::string* error);

/// One feature list of a SequenceExample: one view per step.
struct FeatureListView {
  bool found = false;  ///< the SequenceExample has an entry for the key
  std::vector<FeatureView> steps;
};

/// Finds `key` among `sequence_example`'s feature lists; false when the bytes
/// are not a valid SequenceExample. (Its context is read by find_feature:
/// both messages keep their Features in field 1.)
bool find_feature_list(std::string_view sequence_example, std::string_view key,
                       FeatureListView* out);

/// The values of a found feature appended to the vector of its kind; false
/// when a list is malformed.
bool append_floats(const FeatureView& f, std::vector<float>* out);
bool append_int64s(const FeatureView& f, std::vector<int64_t>* out);
bool append_bytes(const FeatureView& f, std::vector<std::string_view>* out);

/// "float", "int64" or "string" (the dtype names TensorFlow's messages use).
const char* kind_name(FeatureKind k);

}  // namespace kiln::io
