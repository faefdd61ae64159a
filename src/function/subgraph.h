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

#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/graph.h"

namespace kiln::detail {

/// The gradient of a traced body, as a subgraph (src/autodiff/backward.cpp).
/// Its inputs are the body's inputs followed by one gradient per body
/// output; output k is the gradient of body input `input_index[k]`.
struct Backward {
  Ref<Subgraph> graph;
  std::vector<size_t> input_index;
  bool stateful = false;  ///< reads variables (call it as StatefulPartitionedCall)
};

/// Builds a Backward once, on first use (thread-safe).
class BackwardCache {
 public:
  template <typename Build>
  const Backward& get(Build&& build) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!value_) value_ = std::make_unique<Backward>(build());
    return *value_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::unique_ptr<Backward> value_;
};

/// A function's forward and backward split at the values the backward reads
/// (TensorFlow keeps such intermediates too): `forward` is the body with
/// those values as extra outputs after its own; `backward` takes the body's
/// inputs, one gradient per body output, then the residuals, and returns
/// the gradients of the inputs `backward.input_index` names. Used for eager
/// calls under a tape, so the backward does not recompute the forward.
struct Residuals;

/// A subgraph with a traced graph whose inputs are its placeholders
/// (graph.inputs()) followed by the `hoisted` Const nodes (variable handles
/// a function captured): what inlining and differentiation need.
class TracedSubgraph : public Subgraph {
 public:
  virtual const Graph& traced_graph() const = 0;
  virtual std::span<Node* const> hoisted() const { return {}; }
  /// The body's gradient, built on first use and cached.
  virtual const Backward& backward() const = 0;
};

/// Builds the gradient of `body` (src/autodiff/backward.cpp). With `force`,
/// the result has exactly those inputs' gradients (zeros where unconnected;
/// `force_specs[k]` gives the dtype and shape of a forced resource input's
/// gradient); otherwise only connected, differentiable inputs. `grad_specs`
/// overrides the specs of the output-gradient inputs (default: the body's
/// output specs).
Backward build_backward(const TracedSubgraph& body, const std::vector<size_t>* force = nullptr,
                        const std::vector<TensorSpec>* force_specs = nullptr,
                        const std::vector<TensorSpec>* grad_specs = nullptr);

/// Builds the Residuals of `body` (src/autodiff/residuals.cpp); throws what
/// build_backward throws (an op without a gradient rule, ...).
std::unique_ptr<Residuals> build_residuals(const TracedSubgraph& body);

/// True when a tape of the current context records now
/// (src/autodiff/tape.cpp): a gradient computed now is itself differentiated.
bool any_tape_recording();
/// True when a recording tape of the current context would record an op
/// with these inputs (one is watched or produced by a watched value, or is a
/// trainable variable the tape watches on access).
bool tapes_would_record(std::span<const Tensor> inputs);

class GraphSubgraph final : public TracedSubgraph {
 public:
  /// Takes a traced body (inputs = placeholders in call order, outputs set),
  /// verifies it (when config().verify_graphs), keeps a copy as traced,
  /// optimizes it and compiles it.
  static Ref<GraphSubgraph> create(std::unique_ptr<Graph> graph);

  const std::string& name() const override { return graph_->function_name(); }
  std::span<const TensorSpec> input_specs() const override { return inputs_; }
  std::span<const TensorSpec> output_specs() const override { return outputs_; }
  /// Checks the inputs against input_specs (count, dtype, shape), then runs
  /// the plan.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const override;

  /// The optimized body (what runs).
  const Graph& graph() const { return *graph_; }
  const Graph& traced_graph() const override { return *traced_; }
  const Backward& backward() const override;
  /// As a branch of an If whose other branch is `other`: the backward with
  /// the gradients of every input either branch differentiates (zeros where
  /// this one does not), taking the If's joined output specs.
  const Backward& if_backward(const GraphSubgraph& other) const;
  /// True when the optimized body still has a stateful node.
  bool stateful() const { return stateful_; }

 private:
  GraphSubgraph() = default;
  std::unique_ptr<Graph> graph_, traced_;
  std::unique_ptr<Plan> plan_;
  std::vector<TensorSpec> inputs_, outputs_;
  bool stateful_ = false;
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
  /// The function's Residuals, built on first use; null when it cannot be
  /// split (see CallInfo::residuals).
  const Residuals* residuals() const;
  const ConcreteFunction& function() const { return *cf_; }

 private:
  std::shared_ptr<const ConcreteFunction> cf_;
};

}  // namespace kiln::detail
