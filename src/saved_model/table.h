// Internal: the sorted key/value table file TensorFlow's checkpoint index is
// (the LevelDB table layout TensorFlow keeps in tensorflow/core/lib/io):
// prefix-compressed data blocks with restart points, an index block of block
// handles, an empty metaindex block, and a 48-byte footer ending in a magic
// number. Each block is followed by a compression byte and a masked CRC-32C.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/crc32c.h"

namespace kiln::saved_model::detail {

/// TensorFlow's masking of CRCs stored next to the data they cover.
using kiln::detail::mask_crc;
using kiln::detail::unmask_crc;

/// Appends `v` as a varint.
void put_varint64(std::string* out, uint64_t v);
/// Reads a varint from [*p, end); false (and *p unchanged) when malformed.
bool get_varint64(const char** p, const char* end, uint64_t* v);

/// One block's entries, keys prefix-compressed against the previous key and
/// stored whole every `interval` entries (the restart points).
class TableBlock {
 public:
  explicit TableBlock(int interval) : interval_(interval) {}
  bool empty() const { return data_.empty(); }
  /// Bytes finish() would return.
  size_t estimate() const { return data_.size() + 4 * (restarts_.size() + 1); }
  const std::string& last_key() const { return last_; }
  void add(std::string_view key, std::string_view value);
  /// The block's contents (entries, restart offsets, their count); resets it.
  std::string finish();

 private:
  std::string data_, last_;
  std::vector<uint32_t> restarts_{0};
  int counter_ = 0;
  int interval_;
};

/// Builds a table from (key, value) pairs added in strictly increasing key order.
class TableBuilder {
 public:
  /// Appends one entry; InvalidArgumentError when keys are not increasing.
  void add(std::string_view key, std::string_view value);
  /// The file's bytes (the builder is spent).
  std::string finish();

 private:
  void flush_block();
  std::string out_, last_key_;
  TableBlock block_{16};
  std::vector<std::pair<std::string, std::string>> index_;  // (last key, handle)
  bool any_ = false;
};

/// The table's entries in key order, every block's checksum and bounds
/// checked; DataLossError naming `where` for a damaged file,
/// UnimplementedError for compressed blocks.
std::vector<std::pair<std::string, std::string>> read_table(std::string_view file,
                                                            const std::string& where);

/// True when `tail` (a file's last bytes) ends with a table footer's magic.
bool has_table_magic(std::string_view tail);

/// Bytes of the footer at the end of every table file.
inline constexpr size_t kTableFooterSize = 48;

}  // namespace kiln::saved_model::detail
