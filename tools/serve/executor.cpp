// Deadline-bounded model calls (executor.h).
#include "executor.h"

#include <utility>

namespace kiln::serve {

struct Executor::Task {
  std::function<void()> fn;
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, done = false, cancelled = false;
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
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      t = std::move(queue_.front());
      queue_.pop_front();
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
    t->done = true;
    t->cv.notify_all();
  }
}

bool Executor::run(std::function<void()> fn, Clock::time_point deadline) {
  auto t = std::make_shared<Task>();
  t->fn = std::move(fn);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(t);
  }
  cv_.notify_one();
  std::unique_lock<std::mutex> lock(t->mu);
  if (!t->cv.wait_until(lock, deadline, [&] { return t->done; })) {
    t->cancelled = true;
    return false;
  }
  // The caller takes the exception: the worker's last reference to the
  // task must not be what destroys it.
  if (std::exception_ptr e = std::exchange(t->error, nullptr)) std::rethrow_exception(e);
  return true;
}

}  // namespace kiln::serve
