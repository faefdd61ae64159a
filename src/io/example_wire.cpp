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

// One map entry of Features: its key and its value's pieces.
bool read_entry(std::string_view bytes, std::string_view key, FeatureView* out, bool* hit) {
  Reader r(bytes);
  std::string_view entry_key, value;
  std::vector<std::string_view> values;
  while (!r.done()) {
    uint32_t field, type;
    if (!r.tag(&field, &type)) return false;
    if (field == 1 && type == kLen) {
      if (!r.bytes(&entry_key)) return false;
    } else if (field == 2 && type == kLen) {
      if (!r.bytes(&value)) return false;
      values.push_back(value);
    } else if (!r.skip(type)) {
      return false;
    }
  }
  *hit = entry_key == key;
  if (!*hit) return true;
  FeatureView f;
  f.found = true;
  for (std::string_view v : values)
    if (!merge_feature(v, &f)) return false;
  *out = std::move(f);
  return true;
}

bool read_features(std::string_view bytes, std::string_view key, FeatureView* out) {
  Reader r(bytes);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.tag(&field, &type)) return false;
    if (field == 1 && type == kLen) {
      std::string_view entry;
      bool hit = false;
      if (!r.bytes(&entry) || !read_entry(entry, key, out, &hit)) return false;
    } else if (!r.skip(type)) {
      return false;
    }
  }
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
  Reader r(example);
  bool ok = true;
  while (ok && !r.done()) {
    uint32_t field, type;
    std::string_view features;
    ok = r.tag(&field, &type) &&
         (field == 1 && type == kLen ? r.bytes(&features) && read_features(features, key, out)
                                     : r.skip(type));
  }
  if (ok) return true;
  *error = "the bytes are not a valid tf.train.Example";
  *out = FeatureView{};
  return false;
}

namespace {
// The steps of a FeatureList message's pieces (repeated Feature feature = 1).
bool read_steps(const std::vector<std::string_view>& pieces, FeatureListView* out) {
  for (std::string_view piece : pieces) {
    Reader r(piece);
    while (!r.done()) {
      uint32_t field, type;
      if (!r.tag(&field, &type)) return false;
      if (field == 1 && type == kLen) {
        std::string_view feature;
        FeatureView step;
        step.found = true;
        if (!r.bytes(&feature) || !merge_feature(feature, &step)) return false;
        out->steps.push_back(std::move(step));
      } else if (!r.skip(type)) {
        return false;
      }
    }
  }
  return true;
}

// FeatureLists: map<string, FeatureList> feature_list = 1 (the last entry of a key wins).
bool read_feature_lists(std::string_view bytes, std::string_view key,
                        std::vector<std::string_view>* pieces, bool* found) {
  Reader r(bytes);
  while (!r.done()) {
    uint32_t field, type;
    if (!r.tag(&field, &type)) return false;
    if (field != 1 || type != kLen) {
      if (!r.skip(type)) return false;
      continue;
    }
    std::string_view entry, entry_key, value;
    if (!r.bytes(&entry)) return false;
    Reader e(entry);
    std::vector<std::string_view> values;
    while (!e.done()) {
      uint32_t f, t;
      if (!e.tag(&f, &t)) return false;
      if (f == 1 && t == kLen) {
        if (!e.bytes(&entry_key)) return false;
      } else if (f == 2 && t == kLen) {
        if (!e.bytes(&value)) return false;
        values.push_back(value);
      } else if (!e.skip(t)) {
        return false;
      }
    }
    if (entry_key == key) {
      *found = true;
      *pieces = std::move(values);
    }
  }
  return true;
}
}  // namespace

bool find_feature_list(std::string_view sequence_example, std::string_view key,
                       FeatureListView* out) {
  *out = FeatureListView{};
  Reader r(sequence_example);
  std::vector<std::string_view> pieces;
  bool found = false;
  while (!r.done()) {
    uint32_t field, type;
    std::string_view lists;
    if (!r.tag(&field, &type)) return false;
    if (field == 2 && type == kLen) {
      if (!r.bytes(&lists) || !read_feature_lists(lists, key, &pieces, &found)) return false;
    } else if (!r.skip(type)) {
      return false;
    }
  }
  out->found = found;
  return !found || read_steps(pieces, out);
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
