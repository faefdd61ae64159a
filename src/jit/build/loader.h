// Loading compiled JIT code: shared-object bytes in, callable symbols out.
#pragma once
#include <string_view>

namespace kiln::jit {

/// A shared object loaded from bytes; dlclose on destruction. Movable, not copyable.
class LoadedModule {
 public:
  /// Loads `so_bytes` through an anonymous memfd (dlopen of /proc/self/fd/N,
  /// RTLD_NOW | RTLD_LOCAL): the bytes verified are the bytes loaded, and no
  /// file is left behind. Two live modules never alias, even with equal bytes.
  /// Throws kiln::InternalError with dlerror()'s text on failure (e.g. bytes
  /// that are not an ELF shared object).
  static LoadedModule load(std::string_view so_bytes);

  /// The address of `name`; throws kiln::InternalError naming it when absent.
  void* symbol(const char* name) const;

  LoadedModule(LoadedModule&& other) noexcept;
  LoadedModule& operator=(LoadedModule&& other) noexcept;
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule();

 private:
  LoadedModule(void* handle, int fd) : handle_(handle), fd_(fd) {}
  void release() noexcept;

  void* handle_ = nullptr;
  int fd_ = -1;  // the memfd; open while loaded, so its /proc path names this module alone
};

}  // namespace kiln::jit
