// TensorFlow's tensor bundle (include/kiln/checkpoint.h): the writer and the
// validating reader. The index is a table (saved_model/table.h) of
// BundleEntryProto keyed by tensor name, after a BundleHeaderProto under "".
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>

#include "kiln/checkpoint.h"
#include "saved_model/bundle_format.h"
#include "saved_model/bundle_slices.h"
#include "saved_model/mapped_file.h"
#include "saved_model/proto_io.h"
#include "saved_model/table.h"
#include "tensor_bundle.pb.h"

namespace kiln::checkpoint {
namespace detail = saved_model::detail;

namespace pb = ::kiln::tfproto;
using detail::crc32c;
using detail::mask_crc;

namespace {

constexpr size_t kAlign = 64;
constexpr int kVersion = 1;  // TensorFlow's kTensorBundleVersion
constexpr size_t kMaxIndexBytes = size_t{1} << 28;
constexpr int kMaxShards = 1 << 16;

void sync_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string index_path(const std::string& prefix) {
  return prefix + ".index";
}

std::string data_path(const std::string& prefix, int shard, int num_shards) {
  char tail[64];
  std::snprintf(tail, sizeof tail, ".data-%05d-of-%05d", shard, num_shards);
  return prefix + tail;
}

// ---- writer ----

struct BundleWriter::Impl {
  std::string prefix, tmp_data, tmp_index;
  int fd = -1;
  int64_t size = 0;
  std::map<std::string, pb::BundleEntryProto> entries;
  bool done = false;

  void append(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n) {
      const ssize_t w = ::write(fd, c, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0)
        throw FailedPreconditionError(str_cat(tmp_data, ": cannot write: ", std::strerror(errno)));
      c += w;
      n -= static_cast<size_t>(w);
      size += w;
    }
  }

  pb::BundleEntryProto* start(const std::string& key, int dtype,
                              const std::vector<int64_t>& shape) {
    if (done) throw FailedPreconditionError(str_cat(prefix, ": the bundle is already written"));
    if (key.empty()) throw InvalidArgumentError("a checkpoint key must not be empty");
    if (entries.count(key)) throw InvalidArgumentError(str_cat("Adding duplicate key: ", key));
    pb::BundleEntryProto* e = &entries[key];
    e->set_dtype(static_cast<pb::DataType>(dtype));
    for (int64_t d : shape) e->mutable_shape()->add_dim()->set_size(d);
    return e;
  }
};

BundleWriter::BundleWriter(std::string prefix) : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.prefix = std::move(prefix);
  const std::string tag = str_cat(".tempstate", std::random_device{}());
  w.tmp_data = data_path(w.prefix, 0, 1) + tag;
  w.tmp_index = index_path(w.prefix) + tag;
  w.fd = ::open(w.tmp_data.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w.fd < 0)
    throw FailedPreconditionError(str_cat(w.tmp_data, ": cannot create: ", std::strerror(errno)));
}

BundleWriter::~BundleWriter() {
  abandon();
}

void BundleWriter::abandon() {
  Impl& w = *impl_;
  if (w.fd >= 0) ::close(w.fd);
  w.fd = -1;
  if (!w.done) ::unlink(w.tmp_data.c_str());
  w.done = true;
}

void BundleWriter::add(const std::string& key, const Tensor& value) {
  const DType dt = value.dtype();
  std::vector<int64_t> shape(value.shape().dims().begin(), value.shape().dims().end());
  if (dt == DType::kString) {
    const std::string* s = value.data<std::string>();
    add_strings(key, shape, std::vector<std::string>(s, s + value.num_elements()));
    return;
  }
  if (dt == DType::kResource || dt == DType::kInvalid)
    throw InvalidArgumentError(str_cat("cannot checkpoint '", key, "': a ", kiln::dtype_name(dt),
                                       " tensor holds no value to save"));
  add_bytes(key, detail::to_proto(dt), shape,
            {static_cast<const char*>(value.raw_data()), value.nbytes()});
}

void BundleWriter::add_bytes(const std::string& key, int tf_dtype,
                             const std::vector<int64_t>& shape, std::string_view bytes) {
  const size_t item = dtype_size(tf_dtype);
  const int64_t n = element_count(shape, key);
  if (!item || bytes.size() != static_cast<size_t>(n) * item)
    throw InvalidArgumentError(str_cat("cannot checkpoint '", key, "': ", bytes.size(),
                                       " bytes for ", n, " elements of DataType ", tf_dtype));
  Impl& w = *impl_;
  pb::BundleEntryProto* e = w.start(key, tf_dtype, shape);
  static const char zeros[kAlign] = {};
  if (w.size % kAlign) w.append(zeros, kAlign - w.size % kAlign);
  e->set_offset(w.size);
  e->set_size(static_cast<int64_t>(bytes.size()));
  e->set_crc32c(mask_crc(crc32c(bytes.data(), bytes.size())));
  w.append(bytes.data(), bytes.size());
}

void BundleWriter::add_strings(const std::string& key, const std::vector<int64_t>& shape,
                               const std::vector<std::string>& values) {
  if (element_count(shape, key) != static_cast<int64_t>(values.size()))
    throw InvalidArgumentError(
        str_cat("cannot checkpoint '", key, "': ", values.size(), " strings for its shape"));
  Impl& w = *impl_;
  pb::BundleEntryProto* e = w.start(key, pb::DT_STRING, shape);
  uint32_t crc = 0;
  const std::string encoded = encode_strings(values, &crc);
  e->set_offset(w.size);
  e->set_size(static_cast<int64_t>(encoded.size()));
  e->set_crc32c(mask_crc(crc));
  w.append(encoded.data(), encoded.size());
}

void BundleWriter::finish() {
  Impl& w = *impl_;
  if (w.done) throw FailedPreconditionError(str_cat(w.prefix, ": the bundle is already written"));
  if (w.fd < 0) throw FailedPreconditionError(str_cat(w.prefix, ": the bundle was abandoned"));
  const bool synced = ::fsync(w.fd) == 0;
  const int err = errno;
  ::close(w.fd);
  w.fd = -1;
  if (!synced)
    throw FailedPreconditionError(str_cat(w.tmp_data, ": cannot write: ", std::strerror(err)));
  detail::TableBuilder table;
  pb::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(pb::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kVersion);
  table.add("", header.SerializeAsString());
  for (const auto& [key, e] : w.entries) table.add(key, e.SerializeAsString());
  if (::rename(w.tmp_data.c_str(), data_path(w.prefix, 0, 1).c_str()) != 0)
    throw FailedPreconditionError(
        str_cat(data_path(w.prefix, 0, 1), ": cannot write: ", std::strerror(errno)));
  w.done = true;
  detail::write_file(index_path(w.prefix), table.finish());
  sync_dir(w.prefix);
}

// ---- reader ----

struct BundleReader::Impl {
  std::string prefix, where;
  int num_shards = 1;
  std::map<std::string, Entry> entries;
  std::map<std::string, Entry> slice_entries;               // keys beginning with 0: slices' bytes
  std::map<std::string, std::vector<slices::Slice>> parts;  // partitioned tensors
  mutable std::map<std::string, std::string> joined;        // partitioned tensors read, kept
  std::vector<uint64_t> shard_sizes;
  mutable std::mutex mu;
  mutable std::vector<std::shared_ptr<detail::MappedFile>> shards;

  const Entry& find(const std::string& key) const {
    auto it = entries.find(key);
    if (it == entries.end())
      throw NotFoundError(str_cat("Key ", key, " not found in checkpoint ", prefix));
    return it->second;
  }

  std::shared_ptr<detail::MappedFile> shard(int i) const {
    std::lock_guard<std::mutex> lock(mu);
    if (!shards[i]) shards[i] = detail::map_file(data_path(prefix, i, num_shards), shard_sizes[i]);
    return shards[i];
  }

  // The stored bytes of `e`, checksummed; a partitioned tensor's joined.
  std::string_view stored(const std::string& key, const Entry& e,
                          std::shared_ptr<detail::MappedFile>* keep) const {
    if (e.partitioned) return join(key, e);
    *keep = shard(e.shard);
    const char* p = (*keep)->data() + e.offset;
    if (dtype_size(e.dtype) && e.size && crc32c(p, e.size) != e.crc32c)
      throw DataLossError(str_cat(where, ": the value of '", key, "' fails its checksum"));
    return {p, static_cast<size_t>(e.size)};
  }

  std::string_view join(const std::string& key, const Entry& e) const {
    if (!dtype_size(e.dtype))
      throw UnimplementedError(str_cat(where, ": '", key,
                                       "' is a string tensor saved in slices; kiln joins "
                                       "slices of plain tensors only"));
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = joined.find(key);
      if (it != joined.end()) return it->second;
    }
    std::vector<std::shared_ptr<detail::MappedFile>> keep;
    std::string b = slices::join_slices(
        e.shape, dtype_size(e.dtype), parts.at(key), [&](const slices::Slice& s) {
          const Entry& part = slice_entries.at(s.key);
          keep.emplace_back();
          return stored(str_cat(key, " (a slice)"), part, &keep.back());
        });
    std::lock_guard<std::mutex> lock(mu);
    return joined.emplace(key, std::move(b)).first->second;
  }

  // Each partitioned tensor's slices: inside it, covering it once, stored
  // with its dtype and their shapes.
  void check_slices() {
    for (const auto& [key, list] : parts) {
      const Entry& e = entries.at(key);
      for (const auto& s : list) {
        auto it = slice_entries.find(s.key);
        const std::string at = str_cat(where, ": a slice of '", key, "'");
        if (it == slice_entries.end()) throw DataLossError(str_cat(at, " is missing"));
        if (it->second.dtype != e.dtype || it->second.shape != s.length)
          throw DataLossError(str_cat(at, " is stored with another dtype or shape"));
      }
    }
  }

  void read_header(const std::string& value) {
    pb::BundleHeaderProto h;
    if (!detail::parse(h, value)) throw DataLossError(str_cat(where, ": the header is damaged"));
    if (h.num_shards() < 1 || h.num_shards() > kMaxShards)
      throw DataLossError(str_cat(where, ": bad shard count ", h.num_shards()));
    if (h.endianness() != pb::BundleHeaderProto::LITTLE)
      throw UnimplementedError(str_cat(where,
                                       ": a big-endian checkpoint; kiln reads "
                                       "little-endian ones"));
    const auto& v = h.version();
    bool bad = v.min_consumer() > kVersion;
    for (int b : v.bad_consumers()) bad = bad || b == kVersion;
    if (bad)
      throw UnimplementedError(str_cat(where, ": written for bundle readers of version ",
                                       v.min_consumer(), " or newer (kiln reads version ", kVersion,
                                       ")"));
    num_shards = h.num_shards();
  }

  void add_entry(const std::string& key, const std::string& value) {
    pb::BundleEntryProto p;
    const std::string at = str_cat(where, ": entry '", key, "'");
    if (!detail::parse(p, value)) throw DataLossError(str_cat(at, " is damaged"));
    Entry e;
    e.dtype = p.dtype();
    e.partitioned = p.slices_size() > 0;
    if (dtype_name(e.dtype).empty())
      throw UnimplementedError(str_cat(at, ": DataType ", e.dtype, " is not one kiln reads"));
    if (p.shape().unknown_rank()) throw DataLossError(str_cat(at, ": an unknown shape"));
    for (const auto& d : p.shape().dim()) e.shape.push_back(d.size());
    int64_t n = 0;
    try {
      n = element_count(e.shape, key);
    } catch (const InvalidArgumentError& err) {
      throw DataLossError(str_cat(where, ": ", err.what()));
    }
    e.shard = p.shard_id();
    e.offset = p.offset();
    e.size = p.size();
    e.crc32c = detail::unmask_crc(p.crc32c());
    if (!e.partitioned) check_extent(at, e, n);
    if (e.partitioned) parts.emplace(key, slices::read_slices(key, e.shape, p.slices(), at));
    (!key.empty() && key[0] == '\0' ? slice_entries : entries).emplace(key, std::move(e));
  }

  void check_extent(const std::string& at, const Entry& e, int64_t n) {
    if (e.shard < 0 || e.shard >= num_shards)
      throw DataLossError(str_cat(at, ": shard ", e.shard, " of ", num_shards));
    const size_t item = dtype_size(e.dtype);
    if (item ? e.size != n * static_cast<int64_t>(item) : (e.size < 0 || (n && e.size < n + 4)))
      throw DataLossError(str_cat(at, ": ", e.size, " bytes do not hold ", n, " ",
                                  dtype_name(e.dtype), " elements"));
    if (shard_sizes.empty())
      for (int i = 0; i < num_shards; ++i) shard_sizes.push_back(shard_size(i));
    const uint64_t limit = shard_sizes[e.shard];
    if (e.offset < 0 || static_cast<uint64_t>(e.offset) > limit ||
        static_cast<uint64_t>(e.size) > limit - static_cast<uint64_t>(e.offset))
      throw DataLossError(str_cat(at, ": bytes [", e.offset, ", ", e.offset + e.size,
                                  ") lie past the end of ", data_path(prefix, e.shard, num_shards),
                                  " (", limit, " bytes)"));
  }

  uint64_t shard_size(int i) const {
    const std::string path = data_path(prefix, i, num_shards);
    try {
      return detail::file_size(path);
    } catch (const NotFoundError&) {
      throw NotFoundError(str_cat(where, ": its data file ", path, " is missing"));
    }
  }
};

BundleReader::BundleReader(const std::string& prefix) : impl_(std::make_unique<Impl>()) {
  Impl& r = *impl_;
  r.prefix = prefix;
  r.where = index_path(prefix);
  const std::string file = detail::read_file(r.where, kMaxIndexBytes);
  const auto table = detail::read_table(file, r.where);
  if (table.empty() || !table[0].first.empty())
    throw DataLossError(str_cat(r.where, ": the bundle header (key \"\") is missing"));
  r.read_header(table[0].second);
  for (size_t i = 1; i < table.size(); ++i) r.add_entry(table[i].first, table[i].second);
  r.check_slices();
  if (r.shard_sizes.empty())
    for (int i = 0; i < r.num_shards; ++i) r.shard_sizes.push_back(r.shard_size(i));
  r.shards.resize(r.num_shards);
}

BundleReader::~BundleReader() = default;

const std::string& BundleReader::prefix() const {
  return impl_->prefix;
}

std::vector<std::string> BundleReader::keys() const {
  std::vector<std::string> out;
  for (const auto& kv : impl_->entries) out.push_back(kv.first);
  return out;
}

bool BundleReader::contains(const std::string& key) const {
  return impl_->entries.count(key) > 0;
}

const Entry& BundleReader::entry(const std::string& key) const {
  return impl_->find(key);
}

std::string_view BundleReader::bytes(const std::string& key) const {
  const Entry& e = impl_->find(key);
  if (!dtype_size(e.dtype))
    throw InvalidArgumentError(str_cat("'", key, "' holds strings, not plain bytes"));
  std::shared_ptr<detail::MappedFile> keep;
  std::string_view b = impl_->stored(key, e, &keep);
  if (e.dtype == 10)  // bool
    for (char c : b)
      if (static_cast<unsigned char>(c) > 1)
        throw DataLossError(str_cat(impl_->where, ": '", key, "' holds a bool not 0 or 1"));
  return b;  // the reader keeps the shard mapped
}

std::vector<std::string> BundleReader::strings(const std::string& key) const {
  const Entry& e = impl_->find(key);
  if (e.dtype != 7) throw InvalidArgumentError(str_cat("'", key, "' does not hold strings"));
  std::shared_ptr<detail::MappedFile> keep;
  const std::string_view b = impl_->stored(key, e, &keep);
  int64_t n = 1;
  for (int64_t d : e.shape) n *= d;
  return decode_strings(b, n, e.crc32c, str_cat(impl_->where, ": '", key, "'"));
}

Tensor BundleReader::read(const std::string& key) const {
  const Entry& e = impl_->find(key);
  Shape shape(e.shape);
  DType dt = DType::kInvalid;
  try {
    dt = detail::from_proto(e.dtype, key);
  } catch (const Error&) {
  }
  if (dt == DType::kInvalid || dt == DType::kResource)
    throw UnimplementedError(
        str_cat("'", key, "' holds ", dtype_name(e.dtype), " values, a dtype kiln tensors lack"));
  if (dt == DType::kString) {
    std::vector<std::string> s = strings(key);
    Tensor t = Tensor::empty(dt, shape);
    std::string* out = t.mutable_data<std::string>();
    for (size_t i = 0; i < s.size(); ++i) out[i] = std::move(s[i]);
    return t;
  }
  const std::string_view b = bytes(key);
  std::shared_ptr<detail::MappedFile> m = impl_->shard(e.shard);
  if (!e.partitioned && e.offset % kAlign == 0)
    return detail::tensor_in(m, b.data(), b.size(), dt, shape);
  Tensor t = Tensor::empty(dt, shape);
  if (!b.empty()) std::memcpy(t.mutable_raw_data(), b.data(), b.size());
  return t;
}

bool is_bundle(const std::string& prefix) {
  const int fd = ::open(index_path(prefix).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char tail[8];
  const off_t end = ::lseek(fd, 0, SEEK_END);
  const bool ok =
      end >= static_cast<off_t>(detail::kTableFooterSize) && ::pread(fd, tail, 8, end - 8) == 8;
  ::close(fd);
  return ok && detail::has_table_magic({tail, 8});
}

}  // namespace kiln::checkpoint
