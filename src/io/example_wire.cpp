#include "example_wire.h"

#include <cstring>

namespace kiln::io {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

// A cursor over one message's bytes.
struct Reader {
  const char* p;
  const char* end;
  explicit Reader(std::string_view s) : p(s.data()), end(s.data() + s.size()) {}
  bool done() const { return p == end; }

  bool varint(uint64_t* v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      const auto b = static_cast<unsigned char>(*p++);
      r |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) {
        *v = r;
        return true;
      }
    }
    return false;
  }
  // The next field's number and wire type.
  bool tag(uint32_t* field, uint32_t* type) {
    uint64_t t;
    if (!varint(&t) || (t >> 3) == 0 || (t >> 3) > 0x1fffffff) return false;
    *field = static_cast<uint32_t>(t >> 3);
    *type = static_cast<uint32_t>(t & 7);
    return true;
  }
  bool bytes(std::string_view* out) {
    uint64_t n;
    if (!varint(&n) || n > static_cast<uint64_t>(end - p)) return false;
    *out = std::string_view(p, n);
    p += n;
    return true;
  }
  bool skip(uint32_t type) {
    uint64_t v;
    std::string_view s;
    switch (type) {
      case kVarint: return varint(&v);
      case kFixed64: return advance(8);
      case kFixed32: return advance(4);
      case kLen: return bytes(&s);
      default: return false;  // groups and unknown types are not in these messages
    }
  }
  bool advance(size_t n) {
    if (static_cast<size_t>(end - p) < n) return false;
    p += n;
    return true;
  }
};

// Merges one Feature message's bytes into *f (the last oneof case wins).
bool merge_feature(std::string_view bytes, FeatureView* f) {
  Reader r(bytes);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.tag(&field, &type)) return false;
    if (field >= 1 && field <= 3 && type == kLen) {
      std::string_view list;
      if (!r.bytes(&list)) return false;
      const auto kind = static_cast<FeatureKind>(field);
      if (kind != f->kind) f->lists.clear();
      f->kind = kind;
      f->lists.push_back(list);
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

// Calls `one(bytes)` for each length-delimited value of field `number` of a
// message, skipping its other fields; false when the message is malformed or
// `one` fails.
template <typename One>
bool each_field(std::string_view message, uint32_t number, One one) {
  Reader r(message);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.tag(&field, &type)) return false;
    if (field == number && type == kLen) {
      std::string_view value;
      if (!r.bytes(&value) || !one(value)) return false;
    } else if (!r.skip(type)) {
      return false;
    }
  }
  return true;
}

// The value pieces of `key`'s entry in a message's map<string, message> field 1
// (Features, FeatureLists): the last entry of a key wins, as in protobuf.
bool find_map_entry(std::string_view message, std::string_view key,
                    std::vector<std::string_view>* pieces, bool* found) {
  return each_field(message, 1, [&](std::string_view entry) {
    std::string_view entry_key;
    std::vector<std::string_view> values;
    const bool ok =
        each_field(entry, 1, [&](std::string_view k) { return entry_key = k, true; }) &&
        each_field(entry, 2, [&](std::string_view v) { return values.push_back(v), true; });
    if (ok && entry_key == key) {
      *found = true;
      *pieces = std::move(values);
    }
    return ok;
  });
}

// `key`'s feature in one Features message (a later message's entry replaces it).
bool read_features(std::string_view bytes, std::string_view key, FeatureView* out) {
  std::vector<std::string_view> pieces;
  bool found = false;
  if (!find_map_entry(bytes, key, &pieces, &found)) return false;
  if (!found) return true;
  FeatureView f;
  f.found = true;
  for (std::string_view v : pieces)
    if (!merge_feature(v, &f)) return false;
  *out = std::move(f);
  return true;
}

// Calls `one(reader, type)` for each field-1 value of a list message.
template <typename One>
bool each_value(const FeatureView& f, One one) {
  for (std::string_view list : f.lists) {
    Reader r(list);
    while (!r.done()) {
      uint32_t field, type;
      if (!r.tag(&field, &type)) return false;
      if (field == 1) {
        if (!one(r, type)) return false;
      } else if (!r.skip(type)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

bool find_feature(std::string_view example, std::string_view key, FeatureView* out,
                  std::string* error) {
  *out = FeatureView{};
  const bool ok = each_field(
      example, 1, [&](std::string_view features) { return read_features(features, key, out); });
  if (ok) return true;
  *error = "the bytes are not a valid tf.train.Example";
  *out = FeatureView{};
  return false;
}

bool find_feature_list(std::string_view sequence_example, std::string_view key,
                       FeatureListView* out) {
  *out = FeatureListView{};
  std::vector<std::string_view> pieces;  // FeatureList: repeated Feature feature = 1
  bool found = false;
  if (!each_field(sequence_example, 2, [&](std::string_view lists) {
        return find_map_entry(lists, key, &pieces, &found);
      }))
    return false;
  out->found = found;
  for (std::string_view piece : pieces)
    if (!each_field(piece, 1, [&](std::string_view feature) {
          FeatureView step;
          step.found = true;
          if (!merge_feature(feature, &step)) return false;
          out->steps.push_back(std::move(step));
          return true;
        }))
      return false;
  return true;
}

bool append_floats(const FeatureView& f, std::vector<float>* out) {
  return each_value(f, [&](Reader& r, uint32_t type) {
    if (type == kFixed32) {
      float v;
      if (!r.advance(4)) return false;
      std::memcpy(&v, r.p - 4, 4);
      out->push_back(v);
      return true;
    }
    std::string_view packed;
    if (type != kLen || !r.bytes(&packed) || packed.size() % 4 != 0) return false;
    if (packed.empty()) return true;  // (memcpy may not take the null data of empty vectors)
    const size_t old = out->size();
    out->resize(old + packed.size() / 4);
    std::memcpy(out->data() + old, packed.data(), packed.size());  // little endian, as x86
    return true;
  });
}

bool append_int64s(const FeatureView& f, std::vector<int64_t>* out) {
  return each_value(f, [&](Reader& r, uint32_t type) {
    uint64_t v;
    if (type == kVarint) {
      if (!r.varint(&v)) return false;
      out->push_back(static_cast<int64_t>(v));
      return true;
    }
    std::string_view packed;
    if (type != kLen || !r.bytes(&packed)) return false;
    Reader values(packed);
    while (!values.done()) {
      if (!values.varint(&v)) return false;
      out->push_back(static_cast<int64_t>(v));
    }
    return true;
  });
}

bool append_bytes(const FeatureView& f, std::vector<std::string_view>* out) {
  return each_value(f, [&](Reader& r, uint32_t type) {
    std::string_view s;
    if (type != kLen || !r.bytes(&s)) return false;
    out->push_back(s);
    return true;
  });
}

const char* kind_name(FeatureKind k) {
  switch (k) {
    case FeatureKind::kBytes: return "string";
    case FeatureKind::kFloat: return "float";
    case FeatureKind::kInt64: return "int64";
    case FeatureKind::kNone: break;
  }
  return "none";
}

}  // namespace kiln::io
