// Internal: subgraphs with a traced graph (cond branches, loop bodies,
// called functions), the interface the inline pass and autodiff read. The
// function layer implements it (src/function/subgraph.h).
#pragma once
#include <memory>
#include <mutex>
#include <span>
#include <vector>

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
  /// True when the body runs compiled (jit_compile): its gradient's graphs
  /// (the backward, the forward that keeps residuals) are compiled too.
  virtual bool jit_compiled() const { return false; }
};

}  // namespace kiln::detail
