// Thread-local storage for the hot path. initial-exec avoids __tls_get_addr
// calls in this shared library; only small trivially-destructible values use
// it (static TLS space is limited when the library is loaded by dlopen).
#pragma once

#define KILN_TLS __attribute__((tls_model("initial-exec")))

namespace kiln::detail {

/// Lazily creates a per-thread T, freed at thread exit; after the thread's
/// destructors ran, get() returns nullptr (callers then bypass the cache).
template <typename T, typename Tag>
class ThreadCache {
 public:
  static T* get() {
    T* p = ptr_;
    if (__builtin_expect(p != nullptr, 1)) return p;
    return dead_ ? nullptr : create();
  }

 private:
  struct Reaper {
    ~Reaper() {
      delete ptr_;
      ptr_ = nullptr;
      dead_ = true;
    }
  };
  static T* create() {
    static thread_local Reaper reaper;  // registers the thread-exit cleanup
    (void)&reaper;
    ptr_ = new T();
    return ptr_;
  }
  static inline thread_local T* ptr_ KILN_TLS = nullptr;
  static inline thread_local bool dead_ KILN_TLS = false;
};

}  // namespace kiln::detail
