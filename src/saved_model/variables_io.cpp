#include "saved_model/variables_io.h"

#include <unistd.h>

#include <deque>
#include <memory>

#include "kiln/checkpoint.h"
#include "saved_model/mapped_file.h"
#include "variables.pb.h"

namespace kiln::saved_model::detail {
namespace {

constexpr int64_t kIndexVersion = 1;
constexpr size_t kAlign = 64;
constexpr size_t kMaxIndexBytes = size_t{1} << 28;

// A checkpoint edge name as TensorFlow escapes it in keys.
std::string escape(const std::string& name) {
  std::string out;
  for (char ch : name) {
    if (ch == '.')
      out += "..";
    else if (ch == '/')
      out += ".S";
    else
      out += ch;
  }
  return out;
}

// Each node's path from the root (breadth first, first path wins); "" when unreachable.
std::vector<std::string> paths(const Edges& edges) {
  std::vector<std::string> out(edges.size());
  std::vector<bool> seen(edges.size());
  std::deque<int> todo{0};
  seen[0] = true;
  while (!todo.empty()) {
    const int i = todo.front();
    todo.pop_front();
    for (const auto& [name, c] : edges[i]) {
      if (c < 0 || static_cast<size_t>(c) >= edges.size() || seen[c]) continue;
      seen[c] = true;
      out[c] = out[i].empty() ? escape(name) : str_cat(out[i], "/", escape(name));
      todo.push_back(c);
    }
  }
  return out;
}

std::string value_key(const std::string& path, int node) {
  return str_cat(path.empty() ? str_cat("_kiln_unreachable_", node) : path,
                 "/.ATTRIBUTES/VARIABLE_VALUE");
}

// Saved-graph node -> checkpoint key. A checkpoint graph of the saved graph's
// size is the same graph, node for node (as TensorFlow and kiln write them);
// another is matched to `edges` by edge names from the root.
std::map<int, std::string> keys_by_graph(const checkpoint::ObjectGraph& g, const Edges& edges) {
  std::map<int, std::string> out;
  if (g.nodes.size() == edges.size()) {
    for (size_t i = 0; i < edges.size(); ++i)
      for (const auto& a : g.nodes[i].attributes)
        if (a.name == checkpoint::kVariableValue) out[static_cast<int>(i)] = a.checkpoint_key;
    return out;
  }
  std::vector<int> pair(edges.size(), -1);
  std::deque<int> todo{0};
  pair[0] = 0;
  while (!todo.empty()) {
    const int i = todo.front();
    todo.pop_front();
    const auto& node = g.nodes[pair[i]];
    for (const auto& a : node.attributes)
      if (a.name == checkpoint::kVariableValue) out[i] = a.checkpoint_key;
    for (const auto& [name, c] : edges[i]) {
      if (c < 0 || static_cast<size_t>(c) >= edges.size() || pair[c] >= 0) continue;
      for (const auto& [cname, cid] : node.children)
        if (cname == name) pair[c] = cid;
      if (pair[c] >= 0) todo.push_back(c);
    }
  }
  return out;
}

std::vector<std::pair<int, Tensor>> read_bundle(const std::string& dir, const Edges& edges) {
  const checkpoint::BundleReader r(str_cat(dir, "/", kVariablesPrefix));
  std::map<int, std::string> keys;
  if (r.contains(checkpoint::kObjectGraphKey)) {
    keys = keys_by_graph(
        checkpoint::decode_object_graph(r.strings(checkpoint::kObjectGraphKey).at(0), r.prefix()),
        edges);
  } else {
    const std::vector<std::string> p = paths(edges);
    for (size_t i = 0; i < edges.size(); ++i) keys[static_cast<int>(i)] = value_key(p[i], i);
  }
  std::vector<std::pair<int, Tensor>> out;
  for (const auto& [node, key] : keys)
    if (r.contains(key)) out.emplace_back(node, r.read(key));
  return out;
}

}  // namespace

void write_variables(const std::string& dir, const Edges& edges,
                     const std::vector<std::pair<int, Tensor>>& values) {
  const std::vector<std::string> p = paths(edges);
  checkpoint::ObjectGraph g;
  g.nodes.resize(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) g.nodes[i].children = edges[i];
  checkpoint::BundleWriter w(str_cat(dir, "/", kVariablesPrefix));
  for (const auto& [node, t] : values) {
    const std::string key = value_key(p[node], node);
    g.nodes[node].attributes.push_back({checkpoint::kVariableValue, "", key});
    w.add(key, t);
  }
  w.add(checkpoint::kObjectGraphKey, Tensor(checkpoint::encode_object_graph(g)));
  w.finish();
}

namespace {

// Exports of earlier kilns: VariablesIndex + one data file.
std::vector<std::pair<int, Tensor>> read_kiln_variables(const std::string& dir);

}  // namespace

std::vector<std::pair<int, Tensor>> read_variables(const std::string& dir, const Edges& edges) {
  const std::string index = checkpoint::index_path(str_cat(dir, "/", kVariablesPrefix));
  if (::access(index.c_str(), F_OK) != 0 &&
      ::access(str_cat(dir, "/", kVariablesIndex).c_str(), F_OK) == 0)
    return read_kiln_variables(dir);  // an export of an earlier kiln
  return read_bundle(dir, edges);
}

namespace {

[[maybe_unused]] void write_kiln_variables(const std::string& dir,
                                           const std::vector<std::pair<int, Tensor>>& values) {
  pb::VariablesIndex index;
  index.set_format_version(kIndexVersion);
  std::string data;
  for (const auto& [node, t] : values) {
    pb::VariableEntry* e = index.add_entries();
    e->set_node_id(node);
    e->set_dtype(to_proto(t.dtype()));
    to_proto(t.shape(), e->mutable_shape());
    if (t.dtype() == DType::kString) {
      to_proto(t, index.add_inline_values());
      continue;
    }
    data.resize((data.size() + kAlign - 1) / kAlign * kAlign, '\0');
    e->set_offset(data.size());
    e->set_size(t.nbytes());
    e->set_crc32c(crc32c(t.raw_data(), t.nbytes()));
    data.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  index.set_data_size(data.size());
  write_file(str_cat(dir, "/", kVariablesData), data);
  write_file(str_cat(dir, "/", kVariablesIndex), index.SerializeAsString());
}

std::vector<std::pair<int, Tensor>> read_kiln_variables(const std::string& dir) {
  const std::string ipath = str_cat(dir, "/", kVariablesIndex);
  const std::string dpath = str_cat(dir, "/", kVariablesData);
  pb::VariablesIndex index;
  if (!parse(index, read_file(ipath, kMaxIndexBytes)))
    throw DataLossError(str_cat(ipath, ": not a valid variables index (truncated or corrupt)"));
  if (index.format_version() != kIndexVersion)
    throw InvalidArgumentError(str_cat(ipath, ": index format ", index.format_version(),
                                       " is not one this kiln reads (", kIndexVersion, ")"));
  std::shared_ptr<MappedFile> m = map_file(dpath, index.data_size());
  std::vector<std::pair<int, Tensor>> out;
  int inline_next = 0;
  for (int i = 0; i < index.entries_size(); ++i) {
    const pb::VariableEntry& e = index.entries(i);
    const std::string at = str_cat(ipath, ": entry ", i);
    const DType dt = from_proto(e.dtype(), at);
    const Shape shape = from_proto(e.shape(), at);
    if (!shape.is_fully_defined() || dt == DType::kResource)
      throw InvalidArgumentError(str_cat(at, ": a value must have a known shape and data type"));
    if (dt == DType::kString) {
      if (inline_next >= index.inline_values_size())
        throw InvalidArgumentError(str_cat(at, ": its string value is missing"));
      Tensor t = from_proto(index.inline_values(inline_next++), at);
      if (t.dtype() != dt || t.shape() != shape)
        throw InvalidArgumentError(str_cat(at, ": its string value has another shape"));
      out.emplace_back(e.node_id(), std::move(t));
      continue;
    }
    const uint64_t n = static_cast<uint64_t>(shape.num_elements());
    const uint64_t size = e.size(), off = e.offset();
    if (n > (uint64_t{1} << 58) || size != n * dtype_size(dt) || off % kAlign != 0 ||
        off > index.data_size() || size > index.data_size() - off)
      throw InvalidArgumentError(str_cat(at, ": ", size, " bytes at offset ", off, " do not fit a ",
                                         dtype_name(dt), shape.to_string(), " value in ",
                                         index.data_size(), " bytes of data"));
    const char* p = size ? m->data() + off : nullptr;
    if (size && crc32c(p, size) != e.crc32c())
      throw DataLossError(str_cat(dpath, ": the value of entry ", i, " fails its checksum"));
    if (dt == DType::kBool)
      for (uint64_t k = 0; k < size; ++k)
        if (static_cast<unsigned char>(p[k]) > 1)
          throw DataLossError(str_cat(dpath, ": entry ", i, " holds a bool that is not 0 or 1"));
    out.emplace_back(e.node_id(), tensor_in(m, p, size, dt, shape));
  }
  if (inline_next != index.inline_values_size())
    throw InvalidArgumentError(str_cat(ipath, ": more string values than string entries"));
  return out;
}

}  // namespace

}  // namespace kiln::saved_model::detail
