#include "saved_model/bundle_format.h"

#include <array>

#include "kiln/checkpoint.h"
#include "kiln/status.h"
#include "saved_model/proto_io.h"
#include "saved_model/table.h"
#include "tensor_bundle.pb.h"

namespace kiln::checkpoint {
namespace detail = saved_model::detail;
namespace pb = ::kiln::tfproto;

namespace {

struct TfType {
  int number;
  const char* name;
  size_t size;
};

// TensorFlow's DataType numbers (types.proto) a bundle holds as plain bytes or strings.
constexpr std::array<TfType, 16> kTypes = {{
    {1, "float32", 4},
    {2, "float64", 8},
    {3, "int32", 4},
    {4, "uint8", 1},
    {5, "int16", 2},
    {6, "int8", 1},
    {7, "string", 0},
    {8, "complex64", 8},
    {9, "int64", 8},
    {10, "bool", 1},
    {14, "bfloat16", 2},
    {17, "uint16", 2},
    {18, "complex128", 16},
    {19, "float16", 2},
    {22, "uint32", 4},
    {23, "uint64", 8},
}};

const TfType* find_type(int number) {
  for (const TfType& t : kTypes)
    if (t.number == number) return &t;
  return nullptr;
}

void put_u32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// Extends `crc` by a string length as TensorFlow checksums it.
uint32_t extend_length(uint32_t crc, uint64_t len) {
  if (len <= UINT32_MAX) {
    std::string b;
    put_u32(&b, static_cast<uint32_t>(len));
    return detail::crc32c(b.data(), 4, crc);
  }
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(len >> (8 * i));
  return detail::crc32c(b, 8, crc);
}

}  // namespace

std::string_view dtype_name(int tf_dtype) {
  const TfType* t = find_type(tf_dtype);
  return t ? t->name : "";
}

int tf_dtype(std::string_view name) {
  for (const TfType& t : kTypes)
    if (name == t.name) return t.number;
  return 0;
}

size_t dtype_size(int tf_dtype) {
  const TfType* t = find_type(tf_dtype);
  return t ? t->size : 0;
}

int64_t element_count(const std::vector<int64_t>& shape, const std::string& key) {
  if (shape.size() > static_cast<size_t>(detail::kMaxRank))
    throw InvalidArgumentError(
        str_cat("'", key, "': rank ", shape.size(), " exceeds ", detail::kMaxRank));
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > detail::kMaxDim)
      throw InvalidArgumentError(str_cat("'", key, "': bad dimension ", d));
    if (d && n > (int64_t{1} << 58) / d)
      throw InvalidArgumentError(str_cat("'", key, "': more than 2^58 elements"));
    n *= d;
  }
  return n;
}

std::string encode_strings(const std::vector<std::string>& values, uint32_t* crc) {
  std::string out;
  uint32_t c = 0;
  for (const std::string& s : values) {
    detail::put_varint64(&out, s.size());
    c = extend_length(c, s.size());
  }
  const uint32_t stored = detail::mask_crc(c);
  put_u32(&out, stored);
  c = detail::crc32c(out.data() + out.size() - 4, 4, c);
  for (const std::string& s : values) {
    out += s;
    c = detail::crc32c(s.data(), s.size(), c);
  }
  *crc = c;
  return out;
}

std::vector<std::string> decode_strings(std::string_view stored, int64_t n, uint32_t crc,
                                        const std::string& where) {
  if (stored.empty() && n == 0) return {};
  const char* p = stored.data();
  const char* end = p + stored.size();
  std::vector<uint64_t> lengths;
  uint32_t c = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t len;
    if (!detail::get_varint64(&p, end, &len))
      throw DataLossError(str_cat(where, ": string length ", i, " is malformed or missing"));
    lengths.push_back(len);
    c = extend_length(c, len);
  }
  if (end - p < 4) throw DataLossError(str_cat(where, ": the string lengths' checksum is missing"));
  uint32_t raw = 0;
  for (int i = 0; i < 4; ++i) raw |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  if (detail::unmask_crc(raw) != c)
    throw DataLossError(str_cat(where, ": the string lengths fail their checksum"));
  c = detail::crc32c(p, 4, c);
  p += 4;
  std::vector<std::string> out;
  out.reserve(lengths.size());
  for (uint64_t len : lengths) {
    if (len > static_cast<uint64_t>(end - p))
      throw DataLossError(str_cat(where, ": a string runs past the tensor's bytes"));
    out.emplace_back(p, len);
    c = detail::crc32c(p, len, c);
    p += len;
  }
  if (p != end) throw DataLossError(str_cat(where, ": bytes left after the last string"));
  if (c != crc) throw DataLossError(str_cat(where, ": the strings fail their checksum"));
  return out;
}

std::string encode_object_graph(const ObjectGraph& graph) {
  pb::TrackableObjectGraph g;
  for (const ObjectGraph::Node& n : graph.nodes) {
    auto* node = g.add_nodes();
    for (const auto& [name, id] : n.children) {
      auto* c = node->add_children();
      c->set_node_id(id);
      c->set_local_name(name);
    }
    for (const auto& a : n.attributes) {
      auto* t = node->add_attributes();
      t->set_name(a.name);
      t->set_full_name(a.full_name);
      t->set_checkpoint_key(a.checkpoint_key);
    }
    for (const auto& s : n.slots) {
      auto* r = node->add_slot_variables();
      r->set_original_variable_node_id(s.original_node);
      r->set_slot_name(s.slot_name);
      r->set_slot_variable_node_id(s.slot_node);
    }
  }
  return g.SerializeAsString();
}

ObjectGraph decode_object_graph(std::string_view bytes, const std::string& where) {
  pb::TrackableObjectGraph g;
  if (!detail::parse(g, std::string(bytes)) || g.nodes_size() == 0)
    throw DataLossError(str_cat(where, ": the checkpoint's object graph is damaged or empty"));
  const int count = g.nodes_size();
  auto id = [&](int v, int node) {
    if (v < 0 || v >= count)
      throw DataLossError(
          str_cat(where, ": object graph node ", node, " refers to node ", v, " of ", count));
    return v;
  };
  ObjectGraph out;
  out.nodes.resize(count);
  for (int i = 0; i < count; ++i) {
    const auto& n = g.nodes(i);
    ObjectGraph::Node& o = out.nodes[i];
    for (const auto& c : n.children()) o.children.emplace_back(c.local_name(), id(c.node_id(), i));
    for (const auto& a : n.attributes())
      o.attributes.push_back({a.name(), a.full_name(), a.checkpoint_key()});
    for (const auto& s : n.slot_variables())
      o.slots.push_back(
          {id(s.original_variable_node_id(), i), s.slot_name(), id(s.slot_variable_node_id(), i)});
  }
  return out;
}

}  // namespace kiln::checkpoint
