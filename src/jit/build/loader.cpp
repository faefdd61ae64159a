#include "loader.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "core/fd_util.h"
#include "kiln/status.h"

namespace kiln::jit {
namespace {

std::string fd_path(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

std::string dl_error() {
  const char* e = ::dlerror();
  return e ? e : "unknown dlopen error";
}

}  // namespace

LoadedModule LoadedModule::load(std::string_view so_bytes) {
  int fd = ::memfd_create("kiln-jit", MFD_CLOEXEC);
  if (fd < 0) {
    throw InternalError(str_cat("kiln jit: memfd_create failed: ", std::strerror(errno)));
  }
  if (!write_all(fd, so_bytes)) {
    int err = errno;
    ::close(fd);
    throw InternalError(
        str_cat("kiln jit: cannot write the shared object into a memfd: ", std::strerror(err)));
  }
  void* handle = ::dlopen(fd_path(fd).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::string why = dl_error();
    ::close(fd);
    throw InternalError(str_cat("kiln jit: cannot load the compiled shared object: ", why));
  }
  return LoadedModule(handle, fd);
}

void* LoadedModule::symbol(const char* name) const {
  if (!handle_) throw InternalError("kiln jit: symbol lookup on an empty (moved-from) module");
  ::dlerror();
  void* p = ::dlsym(handle_, name);
  if (!p) {
    throw InternalError(
        str_cat("kiln jit: symbol '", name, "' not found in the compiled module: ", dl_error()));
  }
  return p;
}

LoadedModule::LoadedModule(LoadedModule&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), fd_(std::exchange(other.fd_, -1)) {}

LoadedModule& LoadedModule::operator=(LoadedModule&& other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, nullptr);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

LoadedModule::~LoadedModule() {
  release();
}

// glibc finds loaded objects by name first: were the fd closed while the object
// stays resident (dlclose need not unload, e.g. GNU unique symbols make it
// NODELETE), a later memfd with the same number would dlopen the old code. So the
// fd is closed only once the object is gone.
void LoadedModule::release() noexcept {
  if (!handle_) return;
  ::dlclose(handle_);
  handle_ = nullptr;
  std::string path = fd_path(fd_);
  if (void* still = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    ::dlclose(still);
    return;  // resident for good: keep its name (fd) reserved
  }
  ::dlerror();  // clear the "not loaded" message
  ::close(fd_);
  fd_ = -1;
}

}  // namespace kiln::jit
