// Storage for tensor elements: 64-byte aligned, refcounted, pooled.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "kiln/dtype.h"

namespace kiln {

/// A block of tensor memory. Small and medium blocks come from a pooling
/// allocator (thread-local caches for small sizes); object dtypes (string,
/// resource) have their elements constructed and destroyed here.
class Buffer {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr uint8_t kWrappedClass = 0xfe;  ///< size class of wrapped memory

  /// New buffer for `count` elements of `dtype`, refcount 1. Plain dtypes are
  /// left uninitialized; object dtypes are default-constructed. Throws
  /// ResourceExhaustedError past the configured allocation cap.
  static Buffer* allocate(DType dtype, int64_t count);
  /// Wraps memory owned elsewhere (e.g. a NumPy array); `release` runs when
  /// the last reference goes. Plain dtypes only. kiln never writes wrapped
  /// memory (unique() is false). `fixed`: nobody else does either while the
  /// buffer lives (a private mapping of a SavedModel's variables), so its
  /// contents get a version() as allocated blocks do; otherwise version() is 0.
  static Buffer* wrap(void* data, size_t nbytes, std::function<void()> release, bool fixed = false);

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  DType dtype() const { return dtype_; }
  int64_t count() const { return count_; }

  void ref() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  void unref() const {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
  }
  /// True when the caller holds the only reference to memory kiln owns (safe
  /// to write in place); false for wrapped memory, which others may also see.
  bool unique() const {
    return size_class_ != kWrappedClass && refs_.load(std::memory_order_acquire) == 1;
  }

  /// A number naming the buffer's current contents: unique across all buffers
  /// and renewed by touch(), which every write through Tensor's mutable
  /// pointers calls. Caches of data derived from a buffer (packed conv
  /// filters) key on it. 0 for wrapped memory not `fixed` (see wrap()),
  /// which its owner may change unseen: such contents have no version.
  uint64_t version() const {
    return size_class_ == kWrappedClass && !fixed_ ? 0 : version_.load(std::memory_order_acquire);
  }
  /// Gives the contents a new version (before a write).
  void touch() const;

 private:
  Buffer() = default;
  void destroy() const;

  mutable std::atomic<int32_t> refs_{1};
  DType dtype_ = DType::kInvalid;
  uint8_t size_class_ = 0;  // pool bucket; 0xff = direct allocation; 0xfe = wrapped
  bool fixed_ = false;      // wrapped memory nobody changes (see wrap())
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  int64_t count_ = 0;
  std::function<void()>* release_ = nullptr;  // wrapped buffers only
  mutable std::atomic<uint64_t> version_{0};
};

/// Allocator statistics (for tests and debugging).
struct AllocatorStats {
  int64_t bytes_in_use = 0;  ///< bytes handed out and not yet returned
  int64_t pooled_hits = 0;   ///< allocations served from a cache (this thread)
  int64_t allocations = 0;   ///< all allocations (this thread)
};
AllocatorStats allocator_stats();
/// Returns cached blocks to the system (this thread and the shared pool).
void allocator_trim();

}  // namespace kiln
