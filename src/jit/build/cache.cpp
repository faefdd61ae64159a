#include "cache.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/env.h"
#include "core/fd_util.h"
#include "kiln/status.h"

namespace kiln::jit {
namespace fs = std::filesystem;
namespace {

// "KILNJIT2": entries bound to their key. "KILNJIT1" entries (payload
// checksum only) read as misses and are replaced.
constexpr std::string_view kMagic = "KILNJIT2";
constexpr size_t kKeySize = 64;
constexpr size_t kDigestSize = 32;
constexpr size_t kHeaderSize = kMagic.size() + kKeySize + 8 + kDigestSize;
constexpr std::string_view kEntrySuffix = ".kjit";
constexpr std::string_view kTempInfix = ".kjit.tmp-";  // ".<key>.kjit.tmp-XXXXXX"
constexpr auto kStaleTemp = std::chrono::minutes(10);

std::array<unsigned char, kDigestSize> sha256(std::string_view data) {
  std::array<unsigned char, kDigestSize> md{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != kDigestSize) {
    throw InternalError("kiln jit: OpenSSL's SHA-256 failed");
  }
  return md;
}

bool is_key(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

void check_key(std::string_view key) {
  KILN_CHECK_ARG(is_key(key), "kiln jit: a cache key is 64 lower-case hex digits, got '", key, "'");
}

// File names this cache owns; nothing else in the directory is touched.
bool is_entry_name(std::string_view n) {
  return n.size() == 64 + kEntrySuffix.size() && n.ends_with(kEntrySuffix) &&
         is_key(n.substr(0, 64));
}
bool is_temp_name(std::string_view n) {
  return n.size() == 1 + 64 + kTempInfix.size() + 6 && n[0] == '.' && is_key(n.substr(1, 64)) &&
         n.substr(65, kTempInfix.size()) == kTempInfix;
}

std::string errno_text(int err) {
  return std::strerror(err);
}

// SHA-256 over the key and the payload: an entry is valid for its key only.
std::array<unsigned char, kDigestSize> entry_digest(std::string_view key,
                                                    std::string_view payload) {
  std::array<unsigned char, kDigestSize> md{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned int len = 0;
  const bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, key.data(), key.size()) == 1 &&
                  EVP_DigestUpdate(ctx, payload.data(), payload.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, md.data(), &len) == 1 && len == kDigestSize;
  EVP_MD_CTX_free(ctx);
  if (!ok) throw InternalError("kiln jit: OpenSSL's SHA-256 failed");
  return md;
}

std::string encode_entry(std::string_view key, std::string_view payload) {
  std::string out(kMagic);
  out.append(key);
  uint64_t len = payload.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  auto md = entry_digest(key, payload);
  out.append(reinterpret_cast<const char*>(md.data()), md.size());
  out.append(payload);
  return out;
}

// The payload of an intact entry file for `key`, else nullopt (another
// key's entry copied or linked to this name is not intact).
std::optional<std::string> decode_entry(std::string_view key, std::string&& file) {
  const std::string_view f(file);
  if (f.size() < kHeaderSize || f.substr(0, kMagic.size()) != kMagic ||
      f.substr(kMagic.size(), kKeySize) != key) {
    return std::nullopt;
  }
  const size_t at_len = kMagic.size() + kKeySize, at_digest = at_len + 8;
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) {
    len |= uint64_t{static_cast<unsigned char>(file[at_len + i])} << (8 * i);
  }
  if (len != file.size() - kHeaderSize) return std::nullopt;
  auto md = entry_digest(key, f.substr(kHeaderSize));
  if (std::memcmp(md.data(), file.data() + at_digest, kDigestSize) != 0) return std::nullopt;
  file.erase(0, kHeaderSize);
  return std::move(file);
}

// Deletes a corrupt entry unless another process has renamed a new file over it meanwhile.
void remove_if_same(const fs::path& path, const struct stat& seen) {
  struct stat now {};
  if (::stat(path.c_str(), &now) == 0 && now.st_dev == seen.st_dev && now.st_ino == seen.st_ino) {
    ::unlink(path.c_str());
  }
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * kDigestSize);
  for (unsigned char b : sha256(data)) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

fs::path default_cache_dir() {
  if (std::string d = env("KILN_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return fs::path(d) / "kiln";
  std::string home = env("HOME");
  if (home.empty()) {
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  }
  if (home.empty()) return {};
  return fs::path(home) / ".cache" / "kiln";
}

DiskCache::DiskCache(fs::path dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {}

fs::path DiskCache::entry_path(std::string_view key) const {
  check_key(key);
  return dir_ / (std::string(key) + std::string(kEntrySuffix));
}

std::optional<std::string> DiskCache::load(std::string_view key) const {
  fs::path path = entry_path(key);
  // O_NOFOLLOW: a symbolic link at an entry's name is a miss (the store
  // that follows renames a real entry over it).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string file;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  // An entry is code this process will run: only files that this user wrote
  // and that nobody else may change are trusted (a cache directory shared
  // with other users could otherwise plant one).
  if (ok && (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)) {
    ::close(fd);
    return std::nullopt;
  }
  if (ok) file.reserve(static_cast<size_t>(st.st_size));
  ok = ok && read_all(fd, file);
  std::optional<std::string> payload;
  if (ok) payload = decode_entry(key, std::move(file));
  if (payload) ::futimens(fd, nullptr);  // a hit is recent use: evicted last
  ::close(fd);
  if (ok && !payload) remove_if_same(path, st);
  return payload;
}

void DiskCache::store(std::string_view key, std::string_view bytes) const {
  fs::path path = entry_path(key);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    throw InternalError(
        str_cat("kiln jit: cannot create the cache directory ", dir_, ": ", ec.message()));
  }
  std::string tmp = (dir_ / str_cat(".", key, kTempInfix, "XXXXXX")).string();
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    throw InternalError(str_cat("kiln jit: cannot create a file in the cache directory ", dir_,
                                ": ", errno_text(errno)));
  }
  errno = 0;
  int err = 0;
  if (!write_all(fd, encode_entry(key, bytes)) || ::fsync(fd) != 0) err = errno ? errno : EIO;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw InternalError(
        str_cat("kiln jit: cannot write the cache entry ", path, ": ", errno_text(err)));
  }
  evict(path);
}

void DiskCache::evict(const fs::path& keep) const {
  struct Entry {
    fs::file_time_type mtime;
    uint64_t size;
    fs::path path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  const auto stale = fs::file_time_type::clock::now() - kStaleTemp;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code e1, e2;
    if (!it->is_regular_file(e1) || e1) continue;
    auto mtime = it->last_write_time(e1);
    uint64_t size = it->file_size(e2);
    if (e1 || e2) continue;  // removed meanwhile by another process
    if (is_temp_name(name) && mtime < stale) fs::remove(it->path(), e1);  // a crashed store's
    if (!is_entry_name(name)) continue;
    total += size;
    if (it->path() != keep) entries.push_back({mtime, size, it->path()});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.mtime != b.mtime ? a.mtime < b.mtime : a.path < b.path;
  });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    fs::remove(e.path, ec);
    total -= e.size;
  }
}

}  // namespace kiln::jit
