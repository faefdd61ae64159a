// The executor: a graph compiled into a flat Plan of steps with kernel
// pointers and buffer slots resolved ahead of time. Running a plan costs one
// kernel call per step plus a few tens of nanoseconds of bookkeeping.
//
// Independent heavy branches run concurrently: at compile time (or after
// the first run, when shapes are only known then) the plan estimates each
// step's cost from its element counts and looks for parallel regions, i.e.
// windows of consecutive steps that split into >= 2 independent heavy
// groups. A region runs its light dependency-free steps first, then its
// groups as chains on the thread pool (the calling thread takes one), joins,
// then runs its stateful steps and what depends on them: stateful ops (and
// host callbacks) always run on the calling thread, in program order.
// Everything else runs in order on the caller's thread exactly as without
// regions. Config::parallel_branches switches this off.
//
// Values computed only from variables (a batch norm's scale and shift from
// its moving statistics) are kept between runs of a plan whose only stateful
// steps are variable reads: a run whose variables hold the same buffers at the
// same versions (Buffer::version) as when they were computed skips the steps
// that computed them (plan_memo.cpp; Config::memoize_variable_values).
#pragma once
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/graph.h"

namespace kiln {

class Plan {
 public:
  /// Compiles `graph` (its nodes must be in topological order, as traced and
  /// optimized graphs are). Placeholders in graph.inputs() are the plan's
  /// inputs, graph.outputs() its outputs. The plan keeps what it needs (the
  /// graph may be destroyed afterwards).
  static std::unique_ptr<Plan> compile(const Graph& graph);
  ~Plan();

  /// Runs the plan. `inputs` must match the placeholders in number (dtype and
  /// shape are the caller's responsibility: ConcreteFunction checks them and
  /// names the argument). Thread-safe: each call has its own slots.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;
  /// The same, where the caller gives `inputs` up: an input is moved into
  /// the step that reads it last, so that step may write in place (a loop
  /// body's `x = tanh(x)`). `inputs` are left unspecified.
  /// Outputs go into `out` (its storage reused across calls of a loop).
  void run_owned(std::span<Tensor> inputs, std::vector<Tensor>& out) const;

  size_t num_steps() const { return steps_.size(); }
  size_t num_inputs() const { return input_slots_.size(); }
  size_t num_outputs() const { return output_slots_.size(); }
  /// Parallel regions found so far (0 for small plans; plans whose costs
  /// depend on unknown dims are analysed after their first run).
  size_t num_parallel_regions() const;
  /// One line per step: "3: AddV2 add (s1, s2) -> s4 [frees s1]", then one
  /// line per parallel region: "region 2..9: pre [2] chains [3 5 7] [4 6 8] post [9]".
  std::string debug_string() const;
  /// Steps a run skips when the values kept from variables are current (0
  /// when the plan keeps none: it writes state, or computes nothing from
  /// variables alone).
  size_t num_memoized_steps() const;
  /// Runs that reused the kept values so far (for tests).
  int64_t memo_hits() const;

 private:
  struct Step {
    const OpDef* op = nullptr;
    std::string name;
    Attrs attrs;
    std::vector<int32_t> in_slots;
    // 1 = move the value in (enables in-place reuse); 2 = a caller's input
    // read here last, moved in when the caller gave its inputs up (run_owned).
    std::vector<uint8_t> in_last_use;
    int32_t out_begin = 0;  // outputs occupy slots [out_begin, out_begin + n)
    int32_t num_out = 0;
    std::vector<TensorSpec> specs;  // static output specs, when fully known
    bool static_specs = false;
    std::vector<int32_t> release;  // slots dead after this step
  };
  // What the parallel analysis needs beyond the steps (kept from compile).
  struct StepInfo {
    std::vector<int32_t> preds;  // steps that must run first (data, control, state order)
    std::vector<int64_t> in_elements, out_elements;  // -1 = unknown until a run
    int64_t out_inner = -1;                          // last dim of output 0
  };
  // A window of steps [begin, end) run as: `pre` in order on the caller,
  // then `chains` concurrently (each in order), then `post` in order on the
  // caller; then `release` is freed.
  struct Region {
    int32_t begin = 0, end = 0;
    std::vector<int32_t> pre;
    std::vector<std::vector<int32_t>> chains;
    std::vector<int32_t> post;
    std::vector<int32_t> release;
    std::vector<std::vector<uint8_t>> moves;  // per step in the window: in_last_use to use
  };
  class Slots;     // a run's tensors (plan.cpp)
  class Args;      // one thread's kernel arguments (plan.cpp)
  struct Memo;     // values computed from variables only (plan_memo.cpp)
  struct MemoRun;  // one run's use of them

  const Tensor& read(int32_t slot, Slots& slots, std::span<const Tensor> inputs) const;
  void run_step(const Step& s, const uint8_t* moves, Slots& slots, Args& args,
                std::span<const Tensor> inputs, Tensor* owned = nullptr) const;
  void run_impl(std::span<const Tensor> inputs, Tensor* owned, std::vector<Tensor>& out) const;
  /// Step k, unless the run reuses its value; keeps what a run computing the
  /// kept values produces.
  void run_one(size_t k, const uint8_t* moves, Slots& slots, Args& args,
               std::span<const Tensor> inputs, Tensor* owned, MemoRun* mr) const;
  void run_region(const Region& r, Slots& slots, std::span<const Tensor> inputs, MemoRun* mr) const;
  void run_recording(Slots& slots, std::span<const Tensor> inputs) const;
  /// Finds the regions from per-step element counts (plan_parallel.cpp).
  std::vector<Region> analyse(const std::vector<StepInfo>& info) const;
  /// Finds the steps computing values from variables only (plan_memo.cpp).
  void analyse_memo();
  /// Before a run: fills the kept values' slots when current (true), else
  /// prepares `mr` to record them; false when this run keeps nothing.
  bool memo_begin(MemoRun& mr, Slots& slots, std::span<const Tensor> inputs) const;
  void memo_record(size_t k, MemoRun& mr, Slots& slots) const;
  void memo_end(MemoRun& mr) const;

  std::vector<Step> steps_;
  std::vector<std::pair<int32_t, Tensor>> constants_;
  std::vector<int32_t> input_slots_;
  std::vector<int32_t> output_slots_;
  int32_t num_slots_ = 0;
  std::string function_name_;

  std::vector<StepInfo> info_;
  // Regions are published once: at compile time, or by the first run when
  // some cost was unknown (kPending until then; concurrent first runs run
  // in order). Read only after an acquire load of state_ == kReady.
  enum State : int { kNone = 0, kPending = 1, kRecording = 2, kReady = 3 };
  mutable std::atomic<int> state_{kNone};
  mutable std::vector<Region> regions_;
  std::unique_ptr<Memo> memo_;
};

}  // namespace kiln
