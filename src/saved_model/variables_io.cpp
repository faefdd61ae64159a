#include "saved_model/variables_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "kiln/buffer.h"
#include "variables.pb.h"

namespace kiln::saved_model::detail {
namespace {

constexpr int64_t kIndexVersion = 1;
constexpr size_t kAlign = 64;
constexpr size_t kMaxIndexBytes = size_t{1} << 28;

// A read-only file mapped copy-on-write; unmapped when its last tensor goes.
struct Mapping {
  void* base = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (base != MAP_FAILED) ::munmap(base, size);
  }
};

std::shared_ptr<Mapping> map_file(const std::string& path, uint64_t want) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataLossError(str_cat(path, ": cannot open: ", std::strerror(errno)));
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok || static_cast<uint64_t>(st.st_size) != want) {
    ::close(fd);
    throw DataLossError(str_cat(path, ": ",
                                ok ? str_cat(st.st_size, " bytes, the index says ", want)
                                   : std::string("not a regular file")));
  }
  auto m = std::make_shared<Mapping>();
  if (want) {
    m->base = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    m->size = want;
  }
  ::close(fd);
  if (want && m->base == MAP_FAILED)
    throw DataLossError(str_cat(path, ": cannot map: ", std::strerror(errno)));
  return m;
}

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
  std::shared_ptr<Mapping> m = map_file(dpath, index.data_size());
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
    char* p = size ? static_cast<char*>(m->base) + off : nullptr;
    if (size && crc32c(p, size) != e.crc32c())
      throw DataLossError(str_cat(dpath, ": the value of entry ", i, " fails its checksum"));
    if (dt == DType::kBool)
      for (uint64_t k = 0; k < size; ++k)
        if (static_cast<unsigned char>(p[k]) > 1)
          throw DataLossError(str_cat(dpath, ": entry ", i, " holds a bool that is not 0 or 1"));
    Tensor t;
    if (size) {
      Buffer* b = Buffer::wrap(p, size, [m] {});
      t = Tensor::from_buffer(b, 0, dt, shape);
      b->unref();  // the tensor holds it now
    } else {
      t = Tensor::empty(dt, shape);
    }
    out.emplace_back(e.node_id(), std::move(t));
  }
  if (inline_next != index.inline_values_size())
    throw InvalidArgumentError(str_cat(ipath, ": more string values than string entries"));
  return out;
}

}  // namespace kiln::saved_model::detail
