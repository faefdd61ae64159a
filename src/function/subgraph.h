// Internal: the Subgraph behind control-flow attrs (If branches, While cond
// and body): a traced body graph, optimized, with its compiled plan.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kiln/executor.h"
#include "kiln/graph.h"

namespace kiln::detail {

class GraphSubgraph final : public Subgraph {
 public:
  /// Takes a traced body (inputs = placeholders in call order, outputs set),
  /// verifies it (when config().verify_graphs), optimizes it and compiles it.
  static Ref<GraphSubgraph> create(std::unique_ptr<Graph> graph);

  const std::string& name() const override { return graph_->function_name(); }
  std::span<const TensorSpec> input_specs() const override { return inputs_; }
  std::span<const TensorSpec> output_specs() const override { return outputs_; }
  /// Checks the inputs against input_specs (count, dtype, shape), then runs
  /// the plan.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const override;

  const Graph& graph() const { return *graph_; }
  /// True when the optimized body still has a stateful node.
  bool stateful() const { return stateful_; }

 private:
  GraphSubgraph() = default;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Plan> plan_;
  std::vector<TensorSpec> inputs_, outputs_;
  bool stateful_ = false;
};

}  // namespace kiln::detail
