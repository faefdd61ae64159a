// A fixed pool of worker threads for splitting large kernels.
#pragma once
#include <cstdint>
#include <functional>

namespace kiln {

/// The pool size when config().num_threads is 0: OMP_NUM_THREADS when set to a
/// positive count, else the number of CPUs this process may run on.
int default_num_threads();

/// config().parallel_grain (declared here to keep this header light).
int64_t default_parallel_grain();

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

  /// The shared pool, sized from config().num_threads on first use (0: see
  /// default_num_threads()). Its size is kiln's whole thread budget: oneDNN and
  /// OpenBLAS run inside its tasks, single-threaded.
  static ThreadPool& global();
  /// Whether global() has created the pool (its size is then fixed).
  static bool global_started();

 private:
  struct Impl;
  Impl* impl_;
};

/// Calls fn(begin, end) over [0, n): inline when n <= grain (no allocation,
/// the common case for small tensors), else on ThreadPool::global().
/// grain <= 0 means config().parallel_grain.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (grain <= 0) grain = default_parallel_grain();
  if (n <= grain) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  ThreadPool::global().parallel_for(n, grain, std::function<void(int64_t, int64_t)>(fn));
}

}  // namespace kiln
