// Helpers for the pass tests: trace a graph, name its outputs.
#pragma once
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

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

using Body = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// A smooth, sign-changing pattern (deterministic, no RNG).
inline Tensor wave(const Shape& s, double freq, double phase = 0.0, double amp = 1.0) {
  std::vector<float> v(static_cast<size_t>(s.num_elements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(amp * std::sin(freq * static_cast<double>(i) + phase));
  return Tensor::from_vector(v, s);
}

/// Traces `body` with one placeholder per example tensor; results are graph
/// outputs directly (no Identity), so a fused root may itself be an output.
inline std::unique_ptr<Graph> trace(const std::vector<Tensor>& examples, const Body& body) {
  auto g = std::make_unique<Graph>("f");
  TracingContext tc(*g);
  ContextScope scope(tc);
  std::vector<Tensor> args;
  for (size_t i = 0; i < examples.size(); ++i)
    args.push_back(tc.add_input(str_cat("a", i), examples[i].dtype(), examples[i].shape()));
  for (const Tensor& t : body(args)) g->outputs().push_back(tc.edge_for(t));
  return g;
}

}  // namespace kiln::testing
