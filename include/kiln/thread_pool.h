// A fixed pool of worker threads for splitting large kernels.
#pragma once
#include <cstdint>
#include <functional>

namespace kiln {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const;
  /// Calls fn(begin, end) over [0, n) split into chunks of at least `grain`
  /// items; the caller's thread takes part. Runs inline when the work is
  /// small or when called from inside a pool task. Exceptions propagate.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  /// The shared pool, sized from config().num_threads on first use.
  static ThreadPool& global();

 private:
  struct Impl;
  Impl* impl_;
};

/// Shorthand for ThreadPool::global().parallel_for with config().parallel_grain
/// when grain <= 0.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace kiln
