// Small POSIX file-descriptor helpers shared by the JIT's cache and loader.
#pragma once
#include <errno.h>
#include <unistd.h>

#include <string_view>

namespace kiln::jit {

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

}  // namespace kiln::jit
