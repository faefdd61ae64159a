// Helpers for the pass tests: trace a graph, name its outputs.
#pragma once
#include "kiln/passes.h"
#include "kiln/trace.h"
#include "test_util.h"

namespace kiln::testing {

/// The graph edge behind a symbolic tensor.
inline Edge edge_of(const Tensor& t) {
  Node* n = dynamic_cast<Node*>(t.symbol());
  EXPECT_NE(n, nullptr);
  return {n, t.output_index()};
}

/// Marks `t` as a graph output.
inline void add_output(Graph& g, const Tensor& t) {
  g.outputs().push_back(edge_of(t));
}

/// The constant value of node `name` (which must be a Const).
inline Tensor const_value(const Graph& g, std::string_view name) {
  Node* n = g.find(name);
  EXPECT_NE(n, nullptr) << name;
  if (!n) return Tensor();
  EXPECT_EQ(n->op().id, OpId::Const) << name << " is " << n->op().type_name;
  const Tensor* v = n->constant_value(0);
  return v ? *v : Tensor();
}

/// Number of nodes of op `id`.
inline int count_ops(const Graph& g, OpId id) {
  int c = 0;
  for (const auto& n : g.nodes()) c += n->op().id == id;
  return c;
}

}  // namespace kiln::testing
