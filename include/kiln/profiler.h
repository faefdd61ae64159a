// The profiler: a timeline of what kiln ran, per thread, written as a
// Chrome/Perfetto trace and summarized as a table of ops (docs/PROFILER.md).
//
//   kiln::profiler::start();
//   ... run eager ops and functions ...
//   kiln::profiler::Profile p = kiln::profiler::stop();
//   std::string path = p.save("logs");  // logs/plugins/profile/<run>/<host>.trace.json.gz
//   std::cout << p.table();
//
// Recorded (with the OS thread id of the thread that ran it):
//   host_tracer_level >= 1: ScopedTrace annotations (C++ and Python's Trace);
//   host_tracer_level >= 2: every kernel run by a plan ("kernel": op type,
//     node name, output shapes, dtypes and bytes) or eagerly ("eager"), graph
//     function runs ("function"), executor parallel regions and their chains
//     ("executor"), tracing a function ("tracing"), optimizing and compiling
//     its graph ("compile"), each optimization pass ("optimize") and the JIT
//     ("jit": compile vs disk-cache hit);
//   host_tracer_level >= 3: bytes the allocator has handed out, sampled after
//     each kernel (a "C" counter event named "Memory").
// When the profiler is off every hook costs one relaxed atomic load.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/dtype.h"

namespace kiln {
class Tensor;
}

namespace kiln::profiler {

/// TensorFlow's tf.profiler.experimental.ProfilerOptions.
struct ProfilerOptions {
  /// 0: nothing; 1: annotations; 2: + kernels, functions, tracing, passes,
  /// JIT (the default); 3: + memory counter.
  int host_tracer_level = 2;
  /// Accepted for TensorFlow's sake; kiln does not trace Python calls.
  int python_tracer_level = 0;
  /// Accepted for TensorFlow's sake; kiln runs on the host only.
  int device_tracer_level = 1;
  /// Events that start earlier than this many ms after start() are dropped.
  int64_t delay_ms = 0;
  /// The worker's rank in a multi-process job (MPI), -1 for none: the trace's
  /// process is named "kiln worker <rank>" and its file
  /// "<host>_worker<rank>.trace.json.gz", so ranks on one host keep apart.
  int worker = -1;
};

/// One event of the timeline. Times are ns since the profile's start.
struct Event {
  std::string name;      ///< node name, op type (eager), annotation, function, pass
  std::string category;  ///< "kernel", "eager", "function", "user", "tracing", ...
  std::string op;        ///< the op type of a kernel ("MatMul"), else ""
  char phase = 'X';      ///< 'X' a complete event; 'C' a counter (value)
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t tid = 0;  ///< the OS thread id (gettid)
  /// Per output of a kernel: its rank, then its dims (-1 ranks: undefined).
  std::vector<int64_t> shapes;
  std::vector<DType> dtypes;                              ///< per output of a kernel
  int64_t bytes = 0;                                      ///< bytes of a kernel's outputs
  double value = 0;                                       ///< a counter's value
  std::vector<std::pair<std::string, std::string>> args;  ///< annotation arguments

  /// "[2,3];[4]": the output shapes, ";"-separated.
  std::string shapes_string() const;
  /// "float32" or "float32;int64": the output dtypes.
  std::string dtypes_string() const;
};

/// Per op type: what the summary table lists.
struct OpStats {
  std::string op;
  int64_t calls = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
};

/// What stop() collected: every thread's events, merged and sorted by start.
struct Profile {
  std::vector<Event> events;
  int64_t start_unix_us = 0;  ///< wall-clock time of start(), us since the epoch
  int64_t pid = 0;
  int worker = -1;  ///< ProfilerOptions::worker
  /// OS thread id -> its name (pthread name, "" when none).
  std::vector<std::pair<int64_t, std::string>> threads;

  /// Kernels ("kernel" and "eager" events) by op type, most total time first.
  std::vector<OpStats> op_stats() const;
  /// The top `row_limit` ops by total time: Name, Calls, Total ms, Avg us,
  /// Min us, Max us and % of all kernel time (torch.profiler's
  /// key_averages().table()).
  std::string table(size_t row_limit = 20) const;
  /// The Chrome trace format's JSON: {"traceEvents": [...]} with "X"
  /// complete events (ts and dur in us), "C" counters and "M" metadata
  /// naming the process and threads. Opens in ui.perfetto.dev and
  /// chrome://tracing.
  std::string chrome_trace_json() const;
  /// The serialized XSpace (TensorFlow's xplane.proto) TensorBoard's profile
  /// plugin reads: plane "/host:CPU", a line per thread, kernels named
  /// "<function>/<node>:<op type>" (the function run enclosing them on their
  /// thread, when there is one) with shapes, dtype, bytes and is_eager
  /// stats. Counters are left out.
  std::string xspace() const;
  /// Writes chrome_trace_json() gzip-compressed as
  /// <logdir>/plugins/profile/<run>/<host>.trace.json.gz (TensorBoard's
  /// layout; run: "YYYY_MM_DD_HH_MM_SS" of start(), made unique) beside
  /// xspace() as <host>.xplane.pb, and returns the trace's path.
  /// FailedPreconditionError when a path component is a file or a folder
  /// cannot be created.
  std::string save(const std::string& logdir) const;
};

namespace detail {
/// The host tracer level of the running profile; 0 when none runs.
extern std::atomic<int> g_level;
/// Records a complete event on this thread's buffer.
void record(Event&& e);
/// Records a kernel that started at `start_ns` and has just finished.
void record_kernel(int64_t start_ns, const char* category, std::string_view op,
                   std::string_view node, std::span<const Tensor> outputs);
}  // namespace detail

/// Whether a profile is being recorded: one relaxed atomic load.
inline bool is_enabled() {
  return detail::g_level.load(std::memory_order_relaxed) > 0;
}
/// Whether events of `level` are recorded (see host_tracer_level).
inline bool is_enabled(int level) {
  return detail::g_level.load(std::memory_order_relaxed) >= level;
}
/// The profiler's clock: ns of the steady clock.
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
/// The start time of a kernel to pass to kernel_end(); 0 when kernels are
/// not recorded (the hook's only cost when the profiler is off).
inline int64_t kernel_begin() {
  if (is_enabled(2)) [[unlikely]]
    return now_ns();
  return 0;
}
/// Records a kernel begun at `start` (kernel_begin()), when start != 0.
inline void kernel_end(int64_t start, const char* category, std::string_view op,
                       std::string_view node, std::span<const Tensor> outputs) {
  if (start != 0) [[unlikely]]
    detail::record_kernel(start, category, op, node, outputs);
}

/// Starts recording. FailedPreconditionError "Another profiler is running."
/// when a profile is already being recorded (Python: AlreadyExistsError).
void start(const ProfilerOptions& options = {});
/// Stops recording and returns what was recorded. UnavailableError "Cannot
/// export profiling results. No profiler is running." when none runs.
Profile stop();

/// An annotation: the time from construction to destruction, as one event
/// on this thread (TensorFlow's TraceMe). Costs one atomic load when the
/// profiler is off or below `level`.
class ScopedTrace {
 public:
  explicit ScopedTrace(std::string_view name, std::string_view category = "user", int level = 1) {
    if (is_enabled(level)) begin(name, category);
  }
  /// The name is built only when recording (e.g. [&] { return str_cat(...); }).
  template <typename MakeName>
  requires std::is_invocable_r_v<std::string, MakeName>
  explicit ScopedTrace(MakeName&& make_name, std::string_view category = "user", int level = 1) {
    if (is_enabled(level)) begin(make_name(), category);
  }
  ~ScopedTrace() {
    if (start_ != 0) end();
  }
  ScopedTrace(const ScopedTrace&) = delete;
  ScopedTrace& operator=(const ScopedTrace&) = delete;

  /// Whether this annotation records (the profiler was on at construction).
  bool active() const { return start_ != 0; }
  /// Adds an argument shown with the event (no-op when not active).
  void add_arg(std::string key, std::string value);

 private:
  void begin(std::string_view name, std::string_view category);
  void end();
  int64_t start_ = 0;
  std::unique_ptr<Event> event_;  // built only when active
};

/// TensorFlow's name for the same annotation.
using TraceMe = ScopedTrace;

}  // namespace kiln::profiler
