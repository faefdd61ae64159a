// The profiler's recording side: per-thread event buffers registered in one
// list, a session started and stopped under one mutex, merged at stop().
#include "kiln/profiler.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "core/tls.h"
#include "kiln/buffer.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::profiler {

namespace detail {
std::atomic<int> g_level{0};
}  // namespace detail

namespace {

// One thread's events. The buffer outlives its thread (the registry holds
// it) so that a pool thread's events survive until stop().
struct ThreadBuffer {
  std::mutex mu;  // uncontended except against stop()
  std::vector<Event> events;
  int64_t tid = 0;
  std::string name;
  bool alive = true;  // guarded by the registry's mutex
};

struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
};

Registry& registry() {
  static Registry* r = new Registry;  // leaked on purpose: used at thread exit
  return *r;
}

// The session: guarded by its mutex (the hooks read detail::g_level only).
struct Session {
  std::mutex mu;
  bool running = false;
  int64_t start_ns = 0;
  int64_t keep_from_ns = 0;  // start + delay_ms
  int64_t start_unix_us = 0;
  int worker = -1;
};

Session& session() {
  static Session* s = new Session;
  return *s;
}

// This thread's registration; unregisters (marks dead) at thread exit.
struct Holder {
  std::shared_ptr<ThreadBuffer> buf = std::make_shared<ThreadBuffer>();
  Holder() {
    buf->tid = static_cast<int64_t>(::syscall(SYS_gettid));
    char name[64] = {};
    if (pthread_getname_np(pthread_self(), name, sizeof(name)) == 0) buf->name = name;
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.buffers.push_back(buf);
  }
  ~Holder() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    buf->alive = false;
  }
};
struct HolderTag {};

ThreadBuffer* this_buffer() {
  Holder* h = kiln::detail::ThreadCache<Holder, HolderTag>::get();
  return h ? h->buf.get() : nullptr;  // nullptr while the thread exits
}

// Empties every buffer; drops those of exited threads. Returns the events.
std::vector<Event> drain(std::vector<std::pair<int64_t, std::string>>* threads) {
  std::vector<Event> all;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& b : r.buffers) {
    std::lock_guard<std::mutex> block(b->mu);
    if (threads && !b->events.empty()) threads->emplace_back(b->tid, b->name);
    std::move(b->events.begin(), b->events.end(), std::back_inserter(all));
    b->events.clear();
  }
  std::erase_if(r.buffers, [](const auto& b) { return !b->alive; });
  return all;
}

int64_t unix_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

namespace detail {

void record(Event&& e) {
  if (!is_enabled()) return;  // stopped meanwhile
  ThreadBuffer* b = this_buffer();
  if (!b) return;
  e.tid = b->tid;
  std::lock_guard<std::mutex> lock(b->mu);
  b->events.push_back(std::move(e));
}

void record_kernel(int64_t start_ns, const char* category, std::string_view op,
                   std::string_view node, std::span<const Tensor> outputs) {
  Event e;
  e.dur_ns = now_ns() - start_ns;
  e.start_ns = start_ns;
  e.name = node.empty() ? op : node;
  e.category = category;
  e.op = op;
  for (const Tensor& t : outputs) {
    if (!t.defined() || t.shape().rank() < 0) {
      e.shapes.push_back(-1);
      e.dtypes.push_back(t.defined() ? t.dtype() : DType::kInvalid);
      continue;
    }
    e.shapes.push_back(t.rank());
    for (int64_t d : t.shape().dims()) e.shapes.push_back(d);
    e.dtypes.push_back(t.dtype());
    if (!t.is_symbolic()) e.bytes += static_cast<int64_t>(t.nbytes());
  }
  const int64_t end = start_ns + e.dur_ns;
  record(std::move(e));
  if (!is_enabled(3)) return;
  Event c;
  c.name = "Memory";
  c.category = "memory";
  c.phase = 'C';
  c.start_ns = end;
  c.value = static_cast<double>(allocator_stats().bytes_in_use);
  record(std::move(c));
}

}  // namespace detail

void start(const ProfilerOptions& options) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.running) throw FailedPreconditionError("Another profiler is running.");
  KILN_CHECK_ARG(options.host_tracer_level >= 0 && options.host_tracer_level <= 3,
                 "ProfilerOptions: host_tracer_level must be 0 to 3, got ",
                 options.host_tracer_level);
  KILN_CHECK_ARG(options.delay_ms >= 0, "ProfilerOptions: delay_ms must be >= 0, got ",
                 options.delay_ms);
  KILN_CHECK_ARG(options.worker >= -1, "ProfilerOptions: worker must be >= -1, got ",
                 options.worker);
  drain(nullptr);  // what a hook recorded while the last session stopped
  s.running = true;
  s.start_ns = now_ns();
  s.keep_from_ns = s.start_ns + options.delay_ms * 1000000;
  s.start_unix_us = unix_us();
  s.worker = options.worker;
  detail::g_level.store(options.host_tracer_level, std::memory_order_release);
}

Profile stop() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.running)
    throw UnavailableError("Cannot export profiling results. No profiler is running.");
  detail::g_level.store(0, std::memory_order_release);
  s.running = false;
  Profile p;
  p.start_unix_us = s.start_unix_us;
  p.pid = static_cast<int64_t>(::getpid());
  p.worker = s.worker;
  std::vector<Event> all = drain(&p.threads);
  std::erase_if(all, [&](const Event& e) { return e.start_ns < s.keep_from_ns; });
  for (Event& e : all) e.start_ns -= s.start_ns;
  // Parents before their children: earlier first, then longer first.
  std::stable_sort(all.begin(), all.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns > b.dur_ns;
  });
  std::sort(p.threads.begin(), p.threads.end());
  p.events = std::move(all);
  return p;
}

void ScopedTrace::begin(std::string_view name, std::string_view category) {
  event_ = std::make_unique<Event>();
  event_->name = name;
  event_->category = category;
  start_ = now_ns();
}

void ScopedTrace::end() {
  event_->start_ns = start_;
  event_->dur_ns = now_ns() - start_;
  detail::record(std::move(*event_));
}

void ScopedTrace::add_arg(std::string key, std::string value) {
  if (event_) event_->args.emplace_back(std::move(key), std::move(value));
}

}  // namespace kiln::profiler
