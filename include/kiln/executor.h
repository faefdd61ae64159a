// The executor: a graph compiled into a flat Plan of steps with kernel
// pointers and buffer slots resolved ahead of time. Running a plan costs one
// kernel call per step plus a few tens of nanoseconds of bookkeeping.
#pragma once
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

  /// Runs the plan. `inputs` must match the placeholders in number (dtype and
  /// shape are the caller's responsibility: ConcreteFunction checks them and
  /// names the argument). Thread-safe: each call has its own slots.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

  size_t num_steps() const { return steps_.size(); }
  size_t num_inputs() const { return input_slots_.size(); }
  size_t num_outputs() const { return output_slots_.size(); }
  /// One line per step: "3: AddV2 add (s1, s2) -> s4 [frees s1]".
  std::string debug_string() const;

 private:
  struct Step {
    const OpDef* op = nullptr;
    std::string name;
    Attrs attrs;
    std::vector<int32_t> in_slots;
    std::vector<uint8_t> in_last_use;  // 1 = move the value in (enables in-place reuse)
    int32_t out_begin = 0;             // outputs occupy slots [out_begin, out_begin + n)
    int32_t num_out = 0;
    std::vector<TensorSpec> specs;  // static output specs, when fully known
    bool static_specs = false;
    std::vector<int32_t> release;  // slots dead after this step
  };
  std::vector<Step> steps_;
  std::vector<std::pair<int32_t, Tensor>> constants_;
  std::vector<int32_t> input_slots_;
  std::vector<int32_t> output_slots_;
  int32_t num_slots_ = 0;
  std::string function_name_;
};

}  // namespace kiln
