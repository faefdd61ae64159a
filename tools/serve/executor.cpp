// Deadline-bounded model calls (executor.h).
#include "executor.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace kiln::serve {

struct Executor::Task {
  std::function<void()> fn;
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, cancelled = false;
  std::atomic<bool> finished{false};  // set under mu; read without it while yielding
  std::exception_ptr error;
};

Executor::Executor(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { worker(); });
}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void Executor::worker() {
  for (;;) {
    std::shared_ptr<Task> t;
    {
      // Requests of one client come back to back: yield a little for the
      // next task before sleeping, so its caller need not wake this thread.
      // Only on a quiet server and one worker at a time: under load a
      // yielding thread that loses its core sees its work only when it runs
      // again, a time slice later, where a sleeping one would be woken.
      // (Counted while it decides: a counted worker checks the queue under mu_
      // before it sleeps, so run() may skip the wake-up.)
      if (quiet()) {
        if (idle_spinners_.fetch_add(1) == 0) {
          const Clock::time_point spin_end = Clock::now() + kIdleSpin;
          while (queued_.load() == 0 && Clock::now() < spin_end) std::this_thread::yield();
        }
        idle_spinners_.fetch_sub(1);
      }
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      t = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1);
    }
    {
      std::lock_guard<std::mutex> lock(t->mu);
      if (t->cancelled) continue;
      t->started = true;
    }
    try {
      t->fn();
    } catch (...) {
      t->error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(t->mu);
    t->finished.store(true, std::memory_order_release);
    t->cv.notify_all();
  }
}

bool Executor::quiet() const {
  const int64_t since =
      Clock::now().time_since_epoch().count() - last_overlap_ns_.load(std::memory_order_relaxed);
  return since > std::chrono::duration_cast<Clock::duration>(kQuietAfter).count();
}

bool Executor::run(std::function<void()> fn, Clock::time_point deadline) {
  // A short call is over before a sleeping caller could be woken: when this is
  // the only request lately (quiet()), yield for a few microseconds first (the context
  // switch back saved is most of a small request's cost), then sleep until
  // done or the deadline. Under load nobody yields (see worker()).
  struct InFlight {
    std::atomic<int>& n;
    ~InFlight() { n.fetch_sub(1); }
  } in_flight{in_flight_};
  if (in_flight_.fetch_add(1) != 0)
    last_overlap_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  const bool alone = quiet();
  auto t = std::make_shared<Task>();
  t->fn = std::move(fn);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(t);
    queued_.fetch_add(1);
  }
  // A worker yielding for work takes it (it checks the queue under mu_ before
  // it sleeps): waking another one would only cost a context switch.
  if (idle_spinners_.load() == 0) cv_.notify_one();
  if (alone) {
    const Clock::time_point spin_end = std::min(deadline, Clock::now() + kSpin);
    while (!t->finished.load(std::memory_order_acquire) && Clock::now() < spin_end)
      std::this_thread::yield();
  }
  std::unique_lock<std::mutex> lock(t->mu);
  if (!t->cv.wait_until(lock, deadline,
                        [&] { return t->finished.load(std::memory_order_acquire); })) {
    t->cancelled = true;
    return false;
  }
  // The caller takes the exception: the worker's last reference to the
  // task must not be what destroys it.
  if (std::exception_ptr e = std::exchange(t->error, nullptr)) std::rethrow_exception(e);
  return true;
}

}  // namespace kiln::serve
