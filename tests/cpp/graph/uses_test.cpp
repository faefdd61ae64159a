// The def-use index: readers per edge in graph order, per output, and
// control readers.
#include "graph/uses.h"

#include "kiln/trace.h"
#include "test_util.h"

namespace kiln {
namespace {

std::vector<std::string> names(std::span<Node* const> nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n->name());
  return out;
}

TEST(Uses, ReadersPerEdgePerOutputAndControl) {
  Graph g("f");
  TracingContext tc(g);
  {
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({4}));
    Tensor sq = x * x;                                  // reads x twice
    Tensor parts = unstack(reshape(sq, {2, 2}), 0)[1];  // an op with two outputs
    (void)parts;
    Tensor t = tanh(x);
    (void)t;
  }
  Node* x = g.find("x");
  Node* mul = g.find("mul");
  Node* tanh_node = g.find("Tanh");
  tanh_node->add_control_input(mul);
  const Uses uses(g);
  EXPECT_EQ(names(uses.readers(x)), (std::vector<std::string>{"mul", "mul", "Tanh"}));
  EXPECT_EQ(uses.edges(x).size(), 3u);
  EXPECT_EQ(names(uses.control_readers(mul)), std::vector<std::string>{"Tanh"});
  EXPECT_EQ(names(uses.all_readers(mul)), (std::vector<std::string>{"Reshape", "Tanh"}));
  EXPECT_TRUE(uses.readers(tanh_node).empty());
  EXPECT_TRUE(uses.control_readers(x).empty());
  Node* unstack_node = g.find("unstack");
  ASSERT_NE(unstack_node, nullptr) << g.listing();
  EXPECT_TRUE(uses.readers_of(unstack_node, 0).empty());
  ASSERT_EQ(uses.readers_of(x, 0).size(), 2u);  // mul once, Tanh
  // The same index over a list of nodes.
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  EXPECT_EQ(names(Uses(nodes).readers(x)), names(uses.readers(x)));
}

}  // namespace
}  // namespace kiln
