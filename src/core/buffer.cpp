// Pooling allocator: power-of-two size classes, a small thread-local cache
// per class for small blocks, a shared capped cache for larger ones, and
// direct allocation for huge ones. The Buffer header sits in the first 64
// bytes of its own block, so one allocation serves header and data.
#include "kiln/buffer.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "kiln/config.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "tls.h"

namespace kiln {
namespace {

constexpr size_t kHeader = Buffer::kAlignment;
constexpr int kMinShift = 7;   // 128-byte blocks
constexpr int kMaxShift = 27;  // 128 MiB blocks; larger go direct
constexpr int kNumClasses = kMaxShift - kMinShift + 1;
constexpr int kLocalMaxShift = 16;  // thread-local cache up to 64 KiB blocks
constexpr size_t kLocalPerClass = 32;
constexpr uint8_t kDirect = 0xff;
constexpr uint8_t kWrapped = Buffer::kWrappedClass;
std::atomic<uint64_t> g_next_version{1};

std::atomic<int64_t> g_in_use{0};
thread_local int64_t t_hits KILN_TLS = 0;  // per thread: no shared cache line
thread_local int64_t t_allocs KILN_TLS = 0;

struct SharedPool {
  std::mutex mu;
  std::vector<void*> free[kNumClasses];
  int64_t cached_bytes[kNumClasses] = {};
};
SharedPool& shared_pool() {
  static SharedPool* p = new SharedPool;  // leaked on purpose: used at thread exit
  return *p;
}

struct LocalCache {
  std::vector<void*> free[kNumClasses];
  ~LocalCache() {
    for (auto& v : free)
      for (void* b : v) std::free(b);
  }
};
struct LocalCacheTag {};
using TCache = detail::ThreadCache<LocalCache, LocalCacheTag>;

int size_class(size_t block) {
  const int s = 64 - __builtin_clzll(static_cast<unsigned long long>(block - 1));
  return s < kMinShift ? kMinShift : s;
}

void* raw_alloc(size_t bytes) {
  void* p = std::aligned_alloc(Buffer::kAlignment, bytes);
  if (!p)
    throw ResourceExhaustedError(
        str_cat("out of memory allocating ", bytes, " bytes for a tensor buffer"));
  return p;
}

}  // namespace

Buffer* Buffer::allocate(DType dtype, int64_t count) {
  if (count < 0) throw InvalidArgumentError(str_cat("negative element count ", count));
  const size_t esize = dtype_size(dtype);
  int64_t nbytes64;
  if (__builtin_mul_overflow(count, static_cast<int64_t>(esize), &nbytes64) ||
      nbytes64 > max_allocation_bytes())
    throw ResourceExhaustedError(str_cat("allocating ", count, " elements of ", dtype_name(dtype),
                                         " exceeds the allocation cap of ", max_allocation_bytes(),
                                         " bytes"));
  const size_t nbytes = static_cast<size_t>(nbytes64);
  const size_t block = nbytes + kHeader;
  void* mem = nullptr;
  uint8_t cls = kDirect;
  ++t_allocs;
  if (block <= (size_t{1} << kMaxShift)) {
    int s = size_class(block);
    cls = static_cast<uint8_t>(s - kMinShift);
    LocalCache* lc = s <= kLocalMaxShift ? TCache::get() : nullptr;
    if (lc && !lc->free[cls].empty()) {
      mem = lc->free[cls].back();
      lc->free[cls].pop_back();
    } else if (s > kLocalMaxShift) {
      SharedPool& pool = shared_pool();
      std::lock_guard<std::mutex> lock(pool.mu);
      if (!pool.free[cls].empty()) {
        mem = pool.free[cls].back();
        pool.free[cls].pop_back();
        pool.cached_bytes[cls] -= int64_t{1} << s;
      }
    }
    if (mem)
      ++t_hits;
    else
      mem = raw_alloc(size_t{1} << s);
  } else {
    mem = raw_alloc((block + kAlignment - 1) / kAlignment * kAlignment);
  }
  Buffer* b = new (mem) Buffer();
  b->dtype_ = dtype;
  b->size_class_ = cls;
  b->data_ = static_cast<char*>(mem) + kHeader;
  b->nbytes_ = nbytes;
  b->count_ = count;
  b->touch();
  if (dtype == DType::kString) {
    auto* s = static_cast<std::string*>(b->data_);
    for (int64_t i = 0; i < count; ++i) new (s + i) std::string();
  } else if (dtype == DType::kResource) {
    auto* r = static_cast<Resource**>(b->data_);
    for (int64_t i = 0; i < count; ++i) r[i] = nullptr;
  }
  g_in_use.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
  return b;
}

void Buffer::touch() const {
  version_.store(g_next_version.fetch_add(1, std::memory_order_relaxed), std::memory_order_release);
}

Buffer* Buffer::wrap(void* data, size_t nbytes, std::function<void()> release, bool fixed) {
  Buffer* b = new Buffer();
  b->dtype_ = DType::kUInt8;
  b->size_class_ = kWrapped;
  b->fixed_ = fixed;
  if (fixed) b->touch();
  b->data_ = data;
  b->nbytes_ = nbytes;
  b->count_ = static_cast<int64_t>(nbytes);
  b->release_ = new std::function<void()>(std::move(release));
  return b;
}

void Buffer::destroy() const {
  if (size_class_ == kWrapped) {
    if (*release_) (*release_)();
    delete release_;
    delete this;
    return;
  }
  if (dtype_ == DType::kString) {
    auto* s = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < count_; ++i) s[i].~basic_string();
  } else if (dtype_ == DType::kResource) {
    auto* r = static_cast<Resource**>(data_);
    for (int64_t i = 0; i < count_; ++i)
      if (r[i]) r[i]->unref();
  }
  g_in_use.fetch_sub(static_cast<int64_t>(nbytes_), std::memory_order_relaxed);
  const uint8_t cls = size_class_;
  void* mem = const_cast<Buffer*>(this);
  this->~Buffer();
  if (cls == kDirect) {
    std::free(mem);
    return;
  }
  const int s = cls + kMinShift;
  if (s <= kLocalMaxShift) {
    LocalCache* lc = TCache::get();
    if (lc && lc->free[cls].size() < kLocalPerClass) {
      lc->free[cls].push_back(mem);
      return;
    }
  } else {
    SharedPool& pool = shared_pool();
    std::lock_guard<std::mutex> lock(pool.mu);
    if (pool.cached_bytes[cls] + (int64_t{1} << s) <= config().pool_cache_bytes) {
      pool.free[cls].push_back(mem);
      pool.cached_bytes[cls] += int64_t{1} << s;
      return;
    }
  }
  std::free(mem);
}

AllocatorStats allocator_stats() {
  return {g_in_use.load(), t_hits, t_allocs};
}

void allocator_trim() {
  if (LocalCache* lc = TCache::get())
    for (auto& v : lc->free) {
      for (void* b : v) std::free(b);
      v.clear();
    }
  SharedPool& pool = shared_pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  for (int c = 0; c < kNumClasses; ++c) {
    for (void* b : pool.free[c]) std::free(b);
    pool.free[c].clear();
    pool.cached_bytes[c] = 0;
  }
}

}  // namespace kiln
