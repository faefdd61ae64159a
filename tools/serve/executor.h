// Runs model calls on worker threads so that an HTTP worker can give up at
// the request's deadline (kiln calls cannot be interrupted: a call that has
// started finishes in the background; one still queued is skipped).
#pragma once
#include <chrono>
#include <condition_variable>
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
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

}  // namespace kiln::serve
