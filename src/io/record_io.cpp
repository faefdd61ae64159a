#include "kiln/record_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "core/crc32c.h"
#include "core/fd_util.h"
#include "kiln/config.h"
#include "kiln/status.h"

namespace kiln::io {
namespace {

constexpr size_t kHeader = 12;  // length + its masked CRC
constexpr size_t kFooter = 4;   // the data's masked CRC
constexpr size_t kWriteBuffer = 256 * 1024;

void put_fixed32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t get_fixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}
uint64_t get_fixed64(const char* p) {
  return get_fixed32(p) | (uint64_t{get_fixed32(p + 4)} << 32);
}

int window_bits(Compression c) {
  return c == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS;
}

[[noreturn]] void throw_open_error(const std::string& path, int err) {
  const std::string msg = str_cat(path, "; ", std::strerror(err));
  if (err == ENOENT) throw NotFoundError(msg);
  throw FailedPreconditionError(msg);
}

}  // namespace

Compression compression_from_string(std::string_view name) {
  if (name.empty() || name == "NONE") return Compression::kNone;
  if (name == "ZLIB") return Compression::kZlib;
  if (name == "GZIP") return Compression::kGzip;
  throw InvalidArgumentError(
      str_cat("Unsupported compression_type: \"", name, "\" (\"\", \"ZLIB\" or \"GZIP\")"));
}

std::string frame_record(std::string_view record) {
  std::string out(kHeader + record.size() + kFooter, '\0');
  const uint64_t n = record.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  put_fixed32(&out[8], detail::mask_crc(detail::crc32c(out.data(), 8)));
  if (!record.empty()) std::memcpy(&out[kHeader], record.data(), record.size());
  put_fixed32(&out[kHeader + record.size()],
              detail::mask_crc(detail::crc32c(record.data(), record.size())));
  return out;
}

// ---- writer ----

struct RecordWriter::Impl {
  std::string path;
  RecordWriterOptions options;
  int fd = -1;
  std::string pending;  // bytes for the file (compressed already when compressing)
  z_stream z{};
  bool deflating = false;

  void check_open() const {
    if (fd < 0) throw FailedPreconditionError("Writer is closed.");
  }
  void drain(bool force) {
    if (pending.empty() || (!force && pending.size() < kWriteBuffer)) return;
    if (!write_all(fd, pending))
      throw FailedPreconditionError(str_cat(path, "; write failed: ", std::strerror(errno)));
    pending.clear();
  }
  // Runs deflate over `in` with `mode`, appending its output to `pending`.
  void deflate_into(std::string_view in, int mode) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    char out[1 << 15];
    do {
      z.next_out = reinterpret_cast<Bytef*>(out);
      z.avail_out = sizeof out;
      const int rc = ::deflate(&z, mode);
      if (rc == Z_STREAM_ERROR) throw InternalError(str_cat(path, "; deflate failed"));
      pending.append(out, sizeof out - z.avail_out);
    } while (z.avail_out == 0 || z.avail_in > 0);
  }
  void put(std::string_view bytes) {
    if (deflating) {
      deflate_into(bytes, Z_NO_FLUSH);
    } else {
      pending.append(bytes);
    }
    drain(false);
  }
};

RecordWriter::RecordWriter(const std::string& path, RecordWriterOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->options = options;
  if (options.compression_level < -1 || options.compression_level > 9)
    throw InvalidArgumentError(
        str_cat("compression_level must be -1 or in [0, 9], got ", options.compression_level));
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (options.append ? O_APPEND : O_TRUNC);
  impl_->fd = ::open(path.c_str(), flags, 0644);
  if (impl_->fd < 0) throw_open_error(path, errno);
  if (options.compression != Compression::kNone) {
    if (deflateInit2(&impl_->z, options.compression_level, Z_DEFLATED,
                     window_bits(options.compression), 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      ::close(impl_->fd);
      throw InternalError(str_cat(path, "; zlib could not start a stream"));
    }
    impl_->deflating = true;
  }
}

RecordWriter::~RecordWriter() {
  try {
    close();
  } catch (const Error&) {  // reported only by an explicit close()
  }
}

void RecordWriter::write(std::string_view record) {
  impl_->check_open();
  impl_->put(frame_record(record));
}

void RecordWriter::flush() {
  impl_->check_open();
  if (impl_->deflating) impl_->deflate_into({}, Z_SYNC_FLUSH);
  impl_->drain(true);
}

void RecordWriter::close() {
  Impl& w = *impl_;
  if (w.fd < 0) return;
  std::string error;
  try {
    if (w.deflating) w.deflate_into({}, Z_FINISH);
    w.drain(true);
  } catch (const Error& e) {
    error = e.what();
  }
  if (w.deflating) deflateEnd(&w.z);
  w.deflating = false;
  if (::close(w.fd) != 0 && error.empty())
    error = str_cat(w.path, "; close failed: ", std::strerror(errno));
  w.fd = -1;
  if (!error.empty()) throw FailedPreconditionError(error);
}

bool RecordWriter::closed() const {
  return impl_->fd < 0;
}

// ---- reader ----

struct RecordReader::Impl {
  std::string path;
  Compression compression = Compression::kNone;
  size_t buffer_size = 0;
  int fd = -1;
  bool file_done = false;
  std::string raw;  // compressed bytes read and not yet inflated
  size_t raw_pos = 0;
  std::string buf;  // the stream's bytes not yet consumed, from buf_pos
  size_t buf_pos = 0;
  uint64_t offset = 0;  // stream bytes consumed
  z_stream z{};
  bool inflating = false;
  bool stream_ended = false;

  // Reads the next block of the file into `dst`; false at its end.
  bool read_block(std::string& dst) {
    if (file_done) return false;
    const size_t old = dst.size();
    dst.resize(old + buffer_size);
    ssize_t n;
    do n = ::read(fd, dst.data() + old, buffer_size);
    while (n < 0 && errno == EINTR);
    if (n < 0) throw DataLossError(str_cat(path, "; read failed: ", std::strerror(errno)));
    dst.resize(old + static_cast<size_t>(n));
    if (n == 0) file_done = true;
    return n > 0;
  }

  // Inflates more of the stream into `buf`; false when nothing more comes.
  bool inflate_more() {
    for (;;) {
      if (raw_pos == raw.size()) {
        raw.clear();
        raw_pos = 0;
        if (!read_block(raw)) {
          if (!stream_ended && (z.total_in > 0 || z.avail_in > 0))
            throw DataLossError(str_cat(path,
                                        "; inflate() failed: the compressed stream ends "
                                        "early"));
          return false;
        }
      }
      if (stream_ended) {  // another member follows (concatenated GZIP files)
        inflateReset(&z);
        stream_ended = false;
      }
      z.next_in = reinterpret_cast<Bytef*>(raw.data() + raw_pos);
      z.avail_in = static_cast<uInt>(raw.size() - raw_pos);
      char out[1 << 16];
      z.next_out = reinterpret_cast<Bytef*>(out);
      z.avail_out = sizeof out;
      const int rc = ::inflate(&z, Z_NO_FLUSH);
      raw_pos = raw.size() - z.avail_in;
      if (rc == Z_STREAM_END)
        stream_ended = true;
      else if (rc != Z_OK && rc != Z_BUF_ERROR)
        throw DataLossError(str_cat(path, "; inflate() failed with error ", rc, ": ",
                                    z.msg ? z.msg : "corrupt compressed data"));
      const size_t produced = sizeof out - z.avail_out;
      if (produced > 0) {
        buf.append(out, produced);
        return true;
      }
    }
  }

  // Makes `n` stream bytes available from buf_pos (fewer at the end).
  size_t fill(size_t n) {
    if (buf_pos > 0 && buf_pos >= buf.size() / 2) {
      buf.erase(0, buf_pos);
      buf_pos = 0;
    }
    while (buf.size() - buf_pos < n) {
      const bool more = inflating ? inflate_more() : read_block(buf);
      if (!more) break;
    }
    return std::min(n, buf.size() - buf_pos);
  }
};

RecordReader::RecordReader(const std::string& path, Compression compression, size_t buffer_size)
    : impl_(std::make_unique<Impl>()) {
  Impl& r = *impl_;
  r.path = path;
  r.compression = compression;
  r.buffer_size = buffer_size == 0 ? 256 * 1024 : buffer_size;
  r.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r.fd < 0) throw_open_error(path, errno);
  struct stat st {};
  if (::fstat(r.fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(r.fd);
    throw FailedPreconditionError(str_cat(path, "; Is a directory"));
  }
  if (compression != Compression::kNone) {
    if (inflateInit2(&r.z, window_bits(compression)) != Z_OK) {
      ::close(r.fd);
      throw InternalError(str_cat(path, "; zlib could not start a stream"));
    }
    r.inflating = true;
  }
}

RecordReader::~RecordReader() {
  if (impl_->inflating) inflateEnd(&impl_->z);
  ::close(impl_->fd);
}

bool RecordReader::read(std::string* out) {
  Impl& r = *impl_;
  const uint64_t start = r.offset;
  if (r.fill(kHeader) < kHeader) return false;  // none, or a header still being written
  const char* h = r.buf.data() + r.buf_pos;
  const uint64_t n = get_fixed64(h);
  if (detail::crc32c(h, 8) != detail::unmask_crc(get_fixed32(h + 8)))
    throw DataLossError(str_cat("corrupted record at ", start,
                                start == 0 ? " (Is this even a TFRecord file?)" : ""));
  if (n > kMaxRecordBytes)
    throw DataLossError(str_cat("corrupted record at ", start, ": a record of ", n,
                                " bytes is more than the limit of ", kMaxRecordBytes));
  if (n > static_cast<uint64_t>(max_allocation_bytes()))  // a compressed file inflates to it
    throw ResourceExhaustedError(str_cat("record at ", start, " of ", n,
                                         " bytes exceeds the allocation cap of ",
                                         max_allocation_bytes(), " bytes"));
  r.buf_pos += kHeader;
  r.offset += kHeader;
  // Grows with the bytes that arrive, so a hostile length cannot reserve memory.
  const uint64_t need = n + kFooter;
  if (r.fill(static_cast<size_t>(need)) < need)
    throw DataLossError(
        str_cat("truncated record at ", start, "' failed with Read less bytes than requested"));
  const char* d = r.buf.data() + r.buf_pos;
  if (detail::crc32c(d, n) != detail::unmask_crc(get_fixed32(d + n)))
    throw DataLossError(str_cat("corrupted record at ", r.offset));
  out->assign(d, n);
  r.buf_pos += need;
  r.offset += need;
  return true;
}

uint64_t RecordReader::offset() const {
  return impl_->offset;
}

}  // namespace kiln::io
