#include "saved_model/variables_io.h"

#include <memory>

#include "saved_model/mapped_file.h"
#include "variables.pb.h"

namespace kiln::saved_model::detail {
namespace {

constexpr int64_t kIndexVersion = 1;
constexpr size_t kAlign = 64;
constexpr size_t kMaxIndexBytes = size_t{1} << 28;

}  // namespace

void write_variables(const std::string& dir, const std::vector<std::pair<int, Tensor>>& values) {
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

std::vector<std::pair<int, Tensor>> read_variables(const std::string& dir) {
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

}  // namespace kiln::saved_model::detail
