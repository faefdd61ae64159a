#include "saved_model/table.h"

#include <cstring>

#include "kiln/status.h"
#include "saved_model/proto_io.h"

namespace kiln::saved_model::detail {
namespace {

constexpr uint64_t kMagic = 0xdb4775248b80fb57ull;
constexpr size_t kHandlesSize = 40;  // two block handles of at most 20 bytes, padded
constexpr size_t kTrailer = 5;       // compression type + masked CRC
constexpr size_t kBlockSize = 262144;

void put_fixed32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 4);
}

uint32_t get_fixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

size_t common_prefix(std::string_view a, std::string_view b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Appends a block and its trailer to `file`; returns its encoded handle.
std::string write_block(std::string* file, const std::string& contents) {
  std::string handle;
  put_varint64(&handle, file->size());
  put_varint64(&handle, contents.size());
  file->append(contents);
  const char type = 0;  // uncompressed
  uint32_t crc = crc32c(contents.data(), contents.size());
  crc = crc32c(&type, 1, crc);
  file->push_back(type);
  put_fixed32(file, mask_crc(crc));
  return handle;
}

struct Handle {
  uint64_t offset = 0, size = 0;
};

Handle decode_handle(const char** p, const char* end, const std::string& where) {
  Handle h;
  if (!get_varint64(p, end, &h.offset) || !get_varint64(p, end, &h.size))
    throw DataLossError(str_cat(where, ": a malformed block handle"));
  return h;
}

// A block's contents, bounds and checksum checked.
std::string_view read_block(std::string_view file, const Handle& h, const std::string& where) {
  const uint64_t limit = file.size() - kTableFooterSize;
  if (h.offset > limit || h.size > limit - h.offset || kTrailer > limit - h.offset - h.size)
    throw DataLossError(str_cat(where, ": a block at ", h.offset, " of ", h.size,
                                " bytes lies outside the file (", file.size(), " bytes)"));
  const char* p = file.data() + h.offset;
  const char type = p[h.size];
  const uint32_t want = unmask_crc(get_fixed32(p + h.size + 1));
  if (crc32c(p, h.size + 1) != want)
    throw DataLossError(str_cat(where, ": the block at ", h.offset, " fails its checksum"));
  if (type != 0)
    throw UnimplementedError(str_cat(where, ": compressed table blocks (type ", int(type),
                                     ") are not supported; TensorFlow writes checkpoint "
                                     "indexes uncompressed"));
  return {p, h.size};
}

// Appends a block's (key, value) entries to `out`.
void parse_block(std::string_view b, const std::string& where,
                 std::vector<std::pair<std::string, std::string>>* out) {
  if (b.size() < 4) throw DataLossError(str_cat(where, ": a block too short for its trailer"));
  const uint64_t restarts = get_fixed32(b.data() + b.size() - 4);
  if (restarts == 0 || restarts > (b.size() - 4) / 4)
    throw DataLossError(str_cat(where, ": a block with a bad restart count ", restarts));
  const char* p = b.data();
  const char* end = b.data() + b.size() - 4 - 4 * restarts;
  std::string key;
  while (p < end) {
    uint64_t shared, unshared, vlen;
    if (!get_varint64(&p, end, &shared) || !get_varint64(&p, end, &unshared) ||
        !get_varint64(&p, end, &vlen) || shared > key.size() ||
        unshared > static_cast<uint64_t>(end - p) ||
        vlen > static_cast<uint64_t>(end - p) - unshared)
      throw DataLossError(str_cat(where, ": a malformed block entry"));
    key.resize(shared);
    key.append(p, unshared);
    p += unshared;
    out->emplace_back(key, std::string(p, vlen));
    p += vlen;
  }
}

}  // namespace

void put_varint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool get_varint64(const char** p, const char* end, uint64_t* v) {
  uint64_t r = 0;
  const char* q = *p;
  for (int shift = 0; shift <= 63 && q < end; shift += 7) {
    const uint64_t byte = static_cast<unsigned char>(*q++);
    if (shift == 63 && byte > 1) return false;
    r |= (byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *v = r;
      *p = q;
      return true;
    }
  }
  return false;
}

void TableBlock::add(std::string_view key, std::string_view value) {
  size_t shared = 0;
  if (counter_ < interval_) {
    shared = common_prefix(last_, key);
  } else {
    restarts_.push_back(static_cast<uint32_t>(data_.size()));
    counter_ = 0;
  }
  put_varint64(&data_, shared);
  put_varint64(&data_, key.size() - shared);
  put_varint64(&data_, value.size());
  data_.append(key.substr(shared));
  data_.append(value);
  last_.assign(key);
  ++counter_;
}

std::string TableBlock::finish() {
  for (uint32_t r : restarts_) put_fixed32(&data_, r);
  put_fixed32(&data_, static_cast<uint32_t>(restarts_.size()));
  std::string out = std::move(data_);
  *this = TableBlock(interval_);
  return out;
}

void TableBuilder::add(std::string_view key, std::string_view value) {
  if (any_ && key <= last_key_)
    throw InvalidArgumentError(
        str_cat("table keys must increase: '", key, "' after '", last_key_, "'"));
  if (!block_.empty() && block_.estimate() >= kBlockSize) flush_block();
  block_.add(key, value);
  last_key_.assign(key);
  any_ = true;
}

void TableBuilder::flush_block() {
  if (block_.empty()) return;
  std::string last = block_.last_key();
  index_.emplace_back(std::move(last), write_block(&out_, block_.finish()));
}

std::string TableBuilder::finish() {
  flush_block();
  const std::string meta = write_block(&out_, TableBlock(1).finish());
  TableBlock index(1);
  for (const auto& [key, handle] : index_) index.add(key, handle);
  const std::string index_handle = write_block(&out_, index.finish());
  std::string footer = meta + index_handle;
  footer.resize(kHandlesSize, '\0');
  put_fixed32(&footer, static_cast<uint32_t>(kMagic));
  put_fixed32(&footer, static_cast<uint32_t>(kMagic >> 32));
  out_ += footer;
  return std::move(out_);
}

bool has_table_magic(std::string_view tail) {
  if (tail.size() < 8) return false;
  const char* p = tail.data() + tail.size() - 8;
  return get_fixed32(p) == static_cast<uint32_t>(kMagic) &&
         get_fixed32(p + 4) == static_cast<uint32_t>(kMagic >> 32);
}

std::vector<std::pair<std::string, std::string>> read_table(std::string_view file,
                                                            const std::string& where) {
  if (file.size() < kTableFooterSize || !has_table_magic(file))
    throw DataLossError(
        str_cat(where, ": not a table file (no footer magic; ", file.size(), " bytes)"));
  const char* p = file.data() + file.size() - kTableFooterSize;
  const char* end = p + kHandlesSize;
  decode_handle(&p, end, where);  // the metaindex: nothing kiln or TensorFlow reads
  const Handle index = decode_handle(&p, end, where);
  std::vector<std::pair<std::string, std::string>> handles, out;
  parse_block(read_block(file, index, where), where, &handles);
  for (const auto& [key, value] : handles) {
    const char* q = value.data();
    const Handle h = decode_handle(&q, q + value.size(), where);
    const size_t first = out.size();
    parse_block(read_block(file, h, where), where, &out);
    for (size_t i = first; i < out.size(); ++i)
      if ((i > 0 && out[i].first <= out[i - 1].first) || out[i].first > key)
        throw DataLossError(str_cat(where, ": table keys out of order at '", out[i].first, "'"));
  }
  return out;
}

}  // namespace kiln::saved_model::detail
