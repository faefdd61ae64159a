// Small POSIX file-descriptor helpers shared by the JIT's cache and loader
// and the saved-model files.
#pragma once
#include <errno.h>
#include <unistd.h>

#include <string>
#include <string_view>

namespace kiln {

/// Writes all of `data` to `fd`, retrying short writes and EINTR.
inline bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

/// Appends the rest of the file behind `fd` to `out`, retrying EINTR; false
/// on a read error.
inline bool read_all(int fd, std::string& out) {
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace kiln
