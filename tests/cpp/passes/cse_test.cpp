// cse: duplicate subexpressions merge; stateful and random ops never do.
#include "pass_test_util.h"

namespace kiln {
namespace {
using testing::add_output;
using testing::count_ops;

TEST(Cse, MergesDuplicateSubexpressionsAndEqualConstants) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({-1, 3}));
    Tensor a = tanh(x) * 2.f;  // each 2.f is its own tensor: byte-equal Consts
    Tensor b = tanh(x) * 2.f;
    add_output(g, identity(a + b));
  }
  ASSERT_EQ(g.listing(),
            "[] -> x\n['x'] -> Tanh\n[] -> Const\n['Tanh', 'Const'] -> mul\n"
            "['x'] -> Tanh_1\n[] -> Const_1\n['Tanh_1', 'Const_1'] -> mul_1\n"
            "['mul', 'mul_1'] -> add\n['add'] -> Identity\n");
  PassResult r = cse(g);
  EXPECT_EQ(r.removed,
            (std::vector<NodeRef>{{"Tanh_1", "Tanh"}, {"Const_1", "Const"}, {"mul_1", "Mul"}}));
  EXPECT_EQ(g.listing(),
            "[] -> x\n['x'] -> Tanh\n[] -> Const\n['Tanh', 'Const'] -> mul\n"
            "['mul', 'mul'] -> add\n['add'] -> Identity\n");
  EXPECT_NO_THROW(g.verify());
  EXPECT_FALSE(cse(g).changed());
}

TEST(Cse, CommutativeOpsMatchSwappedInputsOthersDoNot) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kInt32, Shape({2}));
    Tensor y = tc.add_input("y", DType::kInt32, Shape({2}));
    add_output(g, identity(x * y));
    add_output(g, identity(y * x));
    add_output(g, identity(x - y));
    add_output(g, identity(y - x));
  }
  PassResult r = cse(g);
  EXPECT_EQ(r.removed, (std::vector<NodeRef>{{"mul_1", "Mul"}}));
  EXPECT_EQ(
      g.listing(),
      "[] -> x\n[] -> y\n['x', 'y'] -> mul\n['mul'] -> Identity\n['mul'] -> Identity_1\n"
      "['x', 'y'] -> sub\n['sub'] -> Identity_2\n['y', 'x'] -> sub_1\n['sub_1'] -> Identity_3\n");
  EXPECT_NO_THROW(g.verify());
}

TEST(Cse, NeverMergesRandomOrStatefulOps) {
  Variable v(Tensor({1.f, 2.f}), "v");
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    add_output(g, random_uniform({2}) + random_uniform({2}));
    add_output(g, v.read_value() + v.read_value());
  }
  PassResult r = cse(g);
  // Only the duplicate shape constants of the two random ops merge.
  for (const NodeRef& n : r.removed) EXPECT_EQ(n.second, "Const") << n.first;
  EXPECT_EQ(count_ops(g, OpId::RandomUniform), 2);
  EXPECT_EQ(count_ops(g, OpId::ReadVariable), 2);
  EXPECT_NO_THROW(g.verify());
}

TEST(Cse, AttrsAndControlInputsMustMatch) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({2, 3}));
    add_output(g, reduce_sum(x, {0}));
    add_output(g, reduce_sum(x, {1}));
    add_output(g, cast(x, DType::kInt32));
    add_output(g, cast(x, DType::kInt64));
    Tensor e1 = exp(x);
    Tensor e2 = exp(x);
    testing::edge_of(e2).node->add_control_input(g.find("Sum"));
    add_output(g, e1 + e2);
  }
  const std::string before = g.listing();
  EXPECT_FALSE(cse(g).changed());
  EXPECT_EQ(g.listing(), before);
}

TEST(Cse, ConstantsMergeOnlyWhenSmallAndByteEqualOrSameBuffer) {
  std::vector<float> big(2000, 1.f);
  Tensor b1 = Tensor::from_vector(big, Shape({2000}));
  Tensor b2 = Tensor::from_vector(big, Shape({2000}));
  Tensor b1_view = b1.view(Shape({2000}));  // another tensor, same buffer
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({2000}));
    add_output(g, identity(x + b1));
    add_output(g, identity(x + b2));       // equal values but large: kept apart
    add_output(g, identity(x + b1_view));  // same buffer: merged with b1
    add_output(g, identity(x + 0.f));
    add_output(g, identity(x + -0.f));  // different bits from 0.f: kept apart
    Tensor s = tc.add_input("s", DType::kString, Shape());
    add_output(g, identity(s + Tensor("ab")));
    add_output(g, identity(s + Tensor("ab")));  // equal strings: merged
    add_output(g, identity(s + Tensor("ac")));
  }
  ASSERT_EQ(testing::count_ops(g, OpId::Const), 8);
  PassResult r = cse(g);
  EXPECT_EQ(
      r.removed,
      (std::vector<NodeRef>{
          {"Const_2", "Const"}, {"add_2", "AddV2"}, {"Const_6", "Const"}, {"add_6", "AddV2"}}));
  EXPECT_EQ(testing::count_ops(g, OpId::Const), 6);
  EXPECT_TRUE(g.find("Const_1"));  // b2
  EXPECT_TRUE(g.find("Const_4"));  // -0.f
  EXPECT_EQ(testing::count_ops(g, OpId::Add), 6);
  EXPECT_NO_THROW(g.verify());
}

}  // namespace
}  // namespace kiln
