// The cluster pass's plan for jit_compile: which nodes join one kernel
// (loop fusion over the op table's lowerings, then sibling fusion), each
// group's iteration space and the product it computes. cluster.cpp lowers
// each group to the fused-kernel IR.
#pragma once
#include <cstddef>
#include <vector>

#include "kiln/graph.h"

namespace kiln::jit {

// A cluster's iteration space: its shape, the trailing dims its reductions
// fold (0: none), and whether a reshape relabelled it.
struct Space {
  Shape shape;
  int reduced = 0;
  bool relabelled = false;
  bool mapped = false;  ///< a member reads an outside value through a view
  /// The most trailing dims every view read reads as one run of values (a
  /// row kernel's rows must be contiguous).
  int view_rows = 16;
  /// Views read in place that graph mode would copy out (not one run of
  /// values): each counts as an op, as a product or a fold does.
  int copies = 0;
};

/// The groups of nodes that become kernels, latest roots first.
struct ClusterPlan {
  std::vector<std::vector<Node*>> groups;  ///< members in graph order
  std::vector<Space> spaces;               ///< per group: its iteration space
  std::vector<Node*> products;             ///< per group: the product it computes, or nullptr
  /// Per group: its members other than the last that a node outside it (or
  /// the graph's outputs) reads, in graph order: the kernel's extra outputs.
  std::vector<std::vector<Node*>> outputs;
};

/// Plans the kernels of `g`: groups of at least `min_ops` ops.
ClusterPlan plan_clusters(Graph& g, size_t min_ops);

}  // namespace kiln::jit
