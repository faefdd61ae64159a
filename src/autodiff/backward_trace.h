// Internal to src/autodiff: tracing a body's backward function, and splitting
// it from its forward at the values it reads (residuals.cpp).
#pragma once
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autodiff/autodiff.h"
#include "kiln/trace.h"

namespace kiln::detail {

/// Values a replay gave each node of the body's traced graph.
using ReplayValues = std::unordered_map<const Node*, std::vector<Tensor>>;

/// Replays the nodes of `body` its outputs depend on through execute_op (the
/// current trace records them, tapes see them), with `inputs` for its
/// placeholders then its hoisted nodes. Returns the body's outputs; with
/// `values`, also what each replayed node gave. Without `values`, stateful
/// ops without a gradient rule (random, assign, print) are refused: running
/// them again would differ; with it (a split backward, whose replayed nodes
/// are cut before anything runs) they are recorded.
std::vector<Tensor> replay(const TracedSubgraph& body, std::span<const Tensor> inputs,
                           ReplayValues* values = nullptr);

/// A traced, not yet optimized backward graph. Its inputs are the body's
/// inputs and one gradient per body output, then (when split) one input per
/// residual; output k is the gradient of body input input_index[k].
struct BackwardTrace {
  std::unique_ptr<Graph> graph;
  std::vector<size_t> input_index;
  /// Nodes before this position are the inputs and the replayed forward.
  size_t replay_end = 0;
  /// (edge in graph, body edge it replays) for every replayed value.
  std::vector<std::pair<Edge, Edge>> replayed;
  /// When split: the body edges the residual inputs take, in input order.
  std::vector<Edge> residuals;
};

/// Traces the backward of `body` (see build_backward). With `split`, the
/// replayed forward is cut off: each replayed value the gradient ops read
/// becomes a residual input.
BackwardTrace trace_backward(const TracedSubgraph& body, const std::vector<size_t>* force,
                             const std::vector<TensorSpec>* force_specs,
                             const std::vector<TensorSpec>* grad_specs, bool split);

/// The replayed values of `values` as edges of the graph `tc` records.
std::vector<std::pair<Edge, Edge>> replayed_edges(const ReplayValues& values, TracingContext& tc);

/// Cuts `g` (being recorded by `tc`) at the replay boundary of `b`: the
/// replayed nodes' values the rest reads become residual inputs, and the
/// replayed nodes are removed. Fills b.residuals.
void split_residuals(Graph& g, TracingContext& tc, BackwardTrace& b);

}  // namespace kiln::detail
