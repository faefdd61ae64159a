// Runs model calls on worker threads so that an HTTP worker can give up at
// the request's deadline (kiln calls cannot be interrupted: a call that has
// started finishes in the background; one still queued is skipped).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::serve {

class Executor {
 public:
  using Clock = std::chrono::steady_clock;
  /// How long run() yields waiting for a short call before it sleeps.
  static constexpr std::chrono::microseconds kSpin{50};
  /// How long an idle worker yields waiting for the next call before it sleeps.
  static constexpr std::chrono::microseconds kIdleSpin{200};
  explicit Executor(int threads);
  ~Executor();
  /// Runs `fn` (which must own what it touches) and waits until `deadline`.
  /// True when it ran (its exception, if any, is rethrown); false on timeout.
  bool run(std::function<void()> fn, Clock::time_point deadline);

 private:
  struct Task;
  void worker();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  std::atomic<int> queued_{0};  // queue_.size(), readable without the lock
  /// No two calls overlapped for kQuietAfter: yielding pays (a single client).
  bool quiet() const;
  static constexpr std::chrono::milliseconds kQuietAfter{100};
  std::atomic<int> in_flight_{0};            // callers inside run()
  std::atomic<int64_t> last_overlap_ns_{0};  // when two calls last overlapped (Clock)
  std::atomic<int> idle_spinners_{0};        // idle workers yielding for the next call
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

}  // namespace kiln::serve
