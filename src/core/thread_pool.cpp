#include "kiln/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/denormal.h"
#include "core/env.h"
#include "core/tls.h"
#include "kiln/config.h"

namespace kiln {
namespace {
thread_local bool t_in_pool_task KILN_TLS = false;
// A worker out of work spins this long for the next job before it sleeps (and
// a caller for the workers' last chunks): a function's back-to-back kernels find
// the threads awake, and on a busy machine a thread gives its core back within
// microseconds.
constexpr auto kSpin = std::chrono::microseconds(50);
inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}
// Spins until ready() or kSpin has passed.
template <typename F>
void spin_until(F ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!ready() && std::chrono::steady_clock::now() < until)
    for (int i = 0; i < 16; ++i) cpu_relax();
}
}  // namespace

struct ThreadPool::Impl {
  std::mutex mu;
  std::condition_variable cv_work, cv_done;
  std::vector<std::thread> workers;
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0, chunk = 0, next = 0, remaining = 0;
  uint64_t generation = 0;
  std::atomic<uint64_t> posted{0};    // generation, readable without the lock
  std::atomic<uint64_t> finished{0};  // the last generation whose chunks all ran
  bool stop = false;
  uint64_t fp_mode = 0;  // the caller's floating-point mode (denormal.h), per job
  std::exception_ptr error;
  std::mutex call_mu;  // one parallel_for at a time

  // Takes chunks until none are left. Called with mu held; returns with it held.
  void run_chunks(std::unique_lock<std::mutex>& lock) {
    while (next < n) {
      int64_t b = next, e = std::min(n, next + chunk);
      next = e;
      const uint64_t mode = fp_mode;
      lock.unlock();
      if (detail::fp_mode() != mode) detail::set_fp_mode(mode);  // run as the caller would
      try {
        t_in_pool_task = true;
        (*fn)(b, e);
        t_in_pool_task = false;
      } catch (...) {
        t_in_pool_task = false;
        lock.lock();
        if (!error) error = std::current_exception();
        remaining -= e - b;
        continue;
      }
      lock.lock();
      remaining -= e - b;
    }
    if (remaining == 0) {
      finished.store(generation, std::memory_order_release);
      cv_done.notify_all();
    }
  }

  void worker() {
    std::unique_lock<std::mutex> lock(mu);
    uint64_t seen = 0;
    for (;;) {
      lock.unlock();
      spin_until([&] { return posted.load(std::memory_order_acquire) != seen; });
      lock.lock();
      cv_work.wait(lock, [&] { return stop || (generation != seen && next < n); });
      if (stop) return;
      seen = generation;
      run_chunks(lock);
    }
  }
};

ThreadPool::ThreadPool(int num_threads) : impl_(new Impl) {
  for (int i = 1; i < num_threads; ++i) impl_->workers.emplace_back([this] { impl_->worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv_work.notify_all();
  for (auto& t : impl_->workers) t.join();
  delete impl_;
}

int ThreadPool::num_threads() const {
  return static_cast<int>(impl_->workers.size()) + 1;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = num_threads();
  if (threads == 1 || n <= grain || t_in_pool_task) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call_lock(impl_->call_mu);
  const int64_t chunks = std::min<int64_t>(threads * 4, (n + grain - 1) / grain);
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->fn = &fn;
  impl_->n = n;
  impl_->chunk = (n + chunks - 1) / chunks;
  impl_->next = 0;
  impl_->remaining = n;
  impl_->fp_mode = detail::fp_mode();
  impl_->error = nullptr;
  ++impl_->generation;
  impl_->posted.store(impl_->generation, std::memory_order_release);
  impl_->cv_work.notify_all();
  impl_->run_chunks(lock);
  if (impl_->remaining != 0) {
    // The last chunks run on workers: wait a short spin before sleeping (a futex
    // wake-up costs tens of microseconds, a kernel's whole tail on small tensors).
    const uint64_t gen = impl_->generation;
    lock.unlock();
    spin_until([&] { return impl_->finished.load(std::memory_order_acquire) == gen; });
    lock.lock();
  }
  impl_->cv_done.wait(lock, [&] { return impl_->remaining == 0; });
  impl_->n = 0;
  impl_->fn = nullptr;
  if (impl_->error) std::rethrow_exception(std::exchange(impl_->error, nullptr));
}

namespace {
std::atomic<bool> g_pool_started{false};
}

int default_num_threads() {
  // OMP_NUM_THREADS, the variable users set to limit a process's threads.
  if (const std::string s = env("OMP_NUM_THREADS"); !s.empty()) {
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);  // "4" or the first of a list "4,2"
    if (end != s.c_str() && v > 0 && (*end == 0 || *end == ','))
      return static_cast<int>(std::min(v, 1024L));
  }
  // The CPUs this process may run on (taskset, cgroup cpusets), not all the machine has.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

ThreadPool& ThreadPool::global() {
  static ThreadPool* pool = [] {
    int n = config().num_threads;
    if (n <= 0) n = default_num_threads();
    g_pool_started.store(true);
    return new ThreadPool(n);
  }();
  return *pool;
}

bool ThreadPool::global_started() {
  return g_pool_started.load();
}

int64_t default_parallel_grain() {
  return config().parallel_grain;
}

}  // namespace kiln
