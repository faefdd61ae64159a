// The JIT's on-disk cache of compiled shared objects, keyed by a content hash.
// One file per entry, written atomically (temporary file + rename) so several
// processes can share a directory; every load verifies a checksum.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::jit {

/// Lower-case hex SHA-256 of `data` (OpenSSL's EVP API).
std::string sha256_hex(std::string_view data);

/// The cache directory: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
/// $HOME/.cache/kiln (empty variables count as unset; without $HOME, the
/// passwd entry's home). Empty when none of these is known. Not created here.
std::filesystem::path default_cache_dir();

/// A size-bounded directory of entries `<dir>/<key>.kjit`. Each file holds the
/// magic "KILNJIT2", its key (64 bytes), the payload length (uint64,
/// little-endian), the SHA-256 of key and payload (32 raw bytes), then the
/// payload: an entry copied or linked under another key's name is a miss.
/// Keys are 64 lower-case hex digits (a SHA-256 the caller computed, which
/// covers the source, the compiler and kiln's version); any other key throws
/// InvalidArgumentError.
class DiskCache {
 public:
  /// After each store the oldest entries (by mtime) are removed until the
  /// entries total at most `max_bytes` (the entry just stored is kept).
  DiskCache(std::filesystem::path dir, uint64_t max_bytes);

  /// The entry's payload when present, intact and written for `key`, else
  /// std::nullopt. A truncated, corrupt or foreign entry is deleted and
  /// reported as missing; a symbolic link is not followed (a miss). A hit
  /// refreshes the entry's mtime, so eviction drops the least recently used.
  std::optional<std::string> load(std::string_view key) const;

  /// Stores atomically (mkostemp in `dir`, write, fsync, rename over the final
  /// name; concurrent stores of one key leave one intact entry). Creates `dir`
  /// when needed. Throws kiln::InternalError naming the path on failure.
  void store(std::string_view key, std::string_view bytes) const;

  const std::filesystem::path& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }

 private:
  std::filesystem::path entry_path(std::string_view key) const;
  void evict(const std::filesystem::path& keep) const;

  std::filesystem::path dir_;
  uint64_t max_bytes_;
};

}  // namespace kiln::jit
