// Internal: the Subgraphs behind subgraph attrs. GraphSubgraph: a traced
// body (If branches, While cond and body, backward functions), optimized,
// with its compiled plan. FunctionSubgraph: a ConcreteFunction called from a
// trace or under a tape (the StatefulPartitionedCall op's `f`). Both keep
// their traced graph for the inline pass and for differentiation.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/subgraph.h"
#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/graph.h"

namespace kiln::detail {

/// What the function layer asks of autodiff, which sits above it: autodiff
/// installs these when the op table is assembled (src/registry/). Unset,
/// the function layer treats every call as untaped and a gradient request
/// as an internal error.
struct AutodiffHooks {
  /// The gradient of `body`, as Backward (src/autodiff/backward.cpp).
  Backward (*backward)(const TracedSubgraph& body) = nullptr;
  /// `body` split at its residuals; throws when it cannot be split.
  std::unique_ptr<Residuals> (*residuals)(const TracedSubgraph& body) = nullptr;
  /// True when a recording tape of this thread would record an op with
  /// these inputs.
  bool (*would_record)(std::span<const Tensor> inputs) = nullptr;
};
void set_autodiff_hooks(const AutodiffHooks& hooks);
const AutodiffHooks& autodiff_hooks();

class GraphSubgraph final : public TracedSubgraph {
 public:
  /// Takes a traced body (inputs = placeholders in call order, outputs set),
  /// verifies it (when config().verify_graphs), keeps a copy as traced,
  /// optimizes it and compiles it.
  /// With `jit` (a body traced inside a jit_compile function), its
  /// unsupported ops are an error and its fusible clusters compile.
  static Ref<GraphSubgraph> create(std::unique_ptr<Graph> graph, bool jit = false);

  const std::string& name() const override { return graph_->function_name(); }
  std::span<const TensorSpec> input_specs() const override { return inputs_; }
  std::span<const TensorSpec> output_specs() const override { return outputs_; }
  /// Checks the inputs against input_specs (count, dtype, shape), then runs
  /// the plan.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const override;
  void run_owned(std::span<Tensor> inputs, std::vector<Tensor>& out) const override;

  /// The optimized body (what runs).
  const Graph& graph() const { return *graph_; }
  const Graph& traced_graph() const override { return *traced_; }
  const Backward& backward() const override;
  bool jit_compiled() const override { return jit_ != nullptr; }
  /// As a branch of an If whose other branch is `other`: the backward with
  /// the gradients of every input either branch differentiates (zeros where
  /// this one does not), taking the If's joined output specs.
  const Backward& if_backward(const GraphSubgraph& other) const;
  /// True when the optimized body still has a stateful node.
  bool stateful() const { return stateful_; }
  /// What the JIT made of the body (jit bodies only; null otherwise).
  const jit::JitResult* jit() const { return jit_.get(); }
  size_t jit_kernels() const;

 private:
  GraphSubgraph() = default;
  std::unique_ptr<Graph> graph_, traced_;
  std::unique_ptr<Plan> plan_;
  std::vector<TensorSpec> inputs_, outputs_;
  bool stateful_ = false;
  std::shared_ptr<const jit::JitResult> jit_;
  BackwardCache backward_, if_backward_;
};

/// What recording a ConcreteFunction call needs, computed once per trace.
struct CallInfo {
  std::vector<Node*> hoisted;          ///< variable-handle Const nodes of the graph
  std::vector<Tensor> hoisted_values;  ///< their handles (extra call inputs)
  std::vector<TensorSpec> inputs;      ///< flat arguments, then the handles
  std::vector<TensorSpec> outputs;
  bool stateful = false;  ///< the traced graph has a stateful node
  BackwardCache backward;
  /// Built on the first eager call under a tape; null when the body cannot
  /// be split (then the gradient recomputes, and reports why if asked).
  mutable std::once_flag residuals_once;
  mutable std::unique_ptr<Residuals> residuals;
};

struct Residuals {
  Ref<GraphSubgraph> forward;
  Backward backward;
  size_t num_outputs = 0;  ///< the body's own outputs (then the residuals)
};

/// A ConcreteFunction as a call op's `f`: inputs are its flat arguments and
/// then its captured variable handles (explicit, so tapes see the call read
/// them). Owns the function, so graphs that call it keep it alive.
class FunctionSubgraph final : public TracedSubgraph {
 public:
  explicit FunctionSubgraph(std::shared_ptr<const ConcreteFunction> cf) : cf_(std::move(cf)) {}
  const std::string& name() const override { return cf_->name(); }
  std::span<const TensorSpec> input_specs() const override { return cf_->call_->inputs; }
  std::span<const TensorSpec> output_specs() const override { return cf_->call_->outputs; }
  std::vector<Tensor> run(std::span<const Tensor> inputs) const override;
  const Graph& traced_graph() const override { return cf_->graph(); }
  std::span<Node* const> hoisted() const override { return cf_->call_->hoisted; }
  const Backward& backward() const override;
  bool jit_compiled() const override { return cf_->jit_compile(); }
  /// The function's Residuals, built on first use; null when it cannot be
  /// split (see CallInfo::residuals).
  const Residuals* residuals() const;
  const ConcreteFunction& function() const { return *cf_; }

 private:
  std::shared_ptr<const ConcreteFunction> cf_;
};

}  // namespace kiln::detail
