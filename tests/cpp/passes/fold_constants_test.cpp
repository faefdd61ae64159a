// fold_constants: constant subgraphs become Const nodes, within limits.
#include "pass_test_util.h"

namespace kiln {
namespace {
using testing::add_output;
using testing::const_value;
using testing::edge_of;
using testing::expect_tensor;

TEST(FoldConstants, FoldsChainsInPlaceKeepingNames) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({2}));
    Tensor c = Tensor({1.f, 2.f}) * 2.f + 1.f;  // all constant
    add_output(g, identity(x + c));
  }
  ASSERT_EQ(g.listing(),
            "[] -> x\n[] -> Const\n[] -> Const_1\n['Const', 'Const_1'] -> mul\n[] -> Const_2\n"
            "['mul', 'Const_2'] -> add\n['x', 'add'] -> add_1\n['add_1'] -> Identity\n");
  PassResult r = fold_constants(g);
  EXPECT_EQ(r.rewritten,
            (std::vector<NodeRef>{{"mul", "Mul -> Const"}, {"add", "AddV2 -> Const"}}));
  EXPECT_TRUE(r.removed.empty());
  EXPECT_EQ(g.listing(),
            "[] -> x\n[] -> Const\n[] -> Const_1\n[] -> mul\n[] -> Const_2\n[] -> add\n"
            "['x', 'add'] -> add_1\n['add_1'] -> Identity\n");
  expect_tensor<float>(const_value(g, "add"), Shape({2}), {3.f, 5.f});
  EXPECT_NO_THROW(g.verify());
  prune(g);
  EXPECT_EQ(g.listing(), "[] -> x\n[] -> add\n['x', 'add'] -> add_1\n['add_1'] -> Identity\n");
}

TEST(FoldConstants, RespectsTheElementCap) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    add_output(g, zeros({300, 300}));            // 90,000 elements > 65,536
    add_output(g, ones({2, 4}, DType::kInt32));  // 8 elements
  }
  ASSERT_EQ(g.listing(),
            "[] -> Const\n[] -> Const_1\n['Const', 'Const_1'] -> Fill\n"
            "[] -> Const_2\n[] -> Const_3\n['Const_2', 'Const_3'] -> Fill_1\n");
  PassResult r = fold_constants(g, 4);
  EXPECT_FALSE(r.changed());
  r = fold_constants(g);
  EXPECT_EQ(r.rewritten, (std::vector<NodeRef>{{"Fill_1", "Fill -> Const"}}));
  expect_tensor<int32_t>(const_value(g, "Fill_1"), Shape({2, 4}), std::vector<int32_t>(8, 1));
  EXPECT_EQ(g.find("Fill")->op().id, OpId::Fill);
  r = fold_constants(g, 100000);
  EXPECT_EQ(r.rewritten, (std::vector<NodeRef>{{"Fill", "Fill -> Const"}}));
  EXPECT_NO_THROW(g.verify());
}

TEST(FoldConstants, LeavesFailingNodesForRunTime) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    add_output(g, floordiv(Tensor({4, 2}), Tensor({0, 1})));
  }
  const std::string before = g.listing();
  PassResult r;
  EXPECT_NO_THROW(r = fold_constants(g));
  EXPECT_FALSE(r.changed());
  EXPECT_EQ(g.listing(), before);
  EXPECT_EQ(g.find("floordiv")->op().id, OpId::FloorDiv);
}

TEST(FoldConstants, NeverFoldsStatefulRandomOrPlaceholders) {
  Variable v(Tensor({1.f, 2.f}), "v");
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({2}));
    add_output(g, random_uniform({2}) + v.read_value() + x);
  }
  const std::string before = g.listing();
  EXPECT_FALSE(fold_constants(g).changed());
  EXPECT_EQ(g.listing(), before);
}

TEST(FoldConstants, SkipsNodesWithStatefulControlInputs) {
  Graph g("f");
  Tensor y;
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    print({"hello"});
    y = Tensor({1, 2}) + Tensor({3, 4});
    add_output(g, y);
  }
  edge_of(y).node->add_control_input(g.find("PrintV2"));
  EXPECT_FALSE(fold_constants(g).changed());
  // A control input from a pure node does not block folding.
  edge_of(y).node->set_control_inputs({g.find("Const")});
  EXPECT_TRUE(fold_constants(g).changed());
  expect_tensor<int32_t>(const_value(g, "add"), Shape({2}), {4, 6});
  EXPECT_NO_THROW(g.verify());
}

TEST(FoldConstants, SpecializesShapeSizeAndRankOfStaticShapes) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({2, 3}));
    Tensor y = tc.add_input("y", DType::kFloat32, Shape({-1, 3}));
    add_output(g, shape(x));
    add_output(g, size(x, DType::kInt64));
    add_output(g, rank(y));
    add_output(g, shape(y));
  }
  PassResult r = fold_constants(g);
  EXPECT_EQ(r.rewritten, (std::vector<NodeRef>{{"Shape", "Shape -> Const"},
                                               {"Size", "Size -> Const"},
                                               {"Rank", "Rank -> Const"}}));
  expect_tensor<int32_t>(const_value(g, "Shape"), Shape({2}), {2, 3});
  expect_tensor<int64_t>(const_value(g, "Size"), Shape(), {6});
  expect_tensor<int32_t>(const_value(g, "Rank"), Shape(), {2});
  EXPECT_EQ(g.find("Shape_1")->op().id, OpId::ShapeOf);  // y's first dim is unknown
  EXPECT_EQ(g.listing(),
            "[] -> x\n[] -> y\n[] -> Shape\n[] -> Size\n[] -> Rank\n['y'] -> Shape_1\n");
  EXPECT_NO_THROW(g.verify());
}

TEST(FoldConstants, ShapesComputedFromFoldedValuesFoldOnward) {
  // reshape(x, shape(y)[:1] ++ [-1]): the Reshape's shape is known only once
  // its shape computation folds; then the shape of its result folds too
  // (TensorFlow's einsum writes such chains around its products).
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({12}));
    Tensor y = tc.add_input("y", DType::kFloat32, Shape({3, 5}));
    const std::vector<Tensor> parts{slice(shape(y), {0}, {1}),
                                    Tensor::from_vector<int32_t>({-1}, Shape({1}))};
    Tensor target = concat(parts, 0);
    Tensor r = reshape(x, target);
    EXPECT_FALSE(r.shape().is_fully_defined());
    add_output(g, r);
    add_output(g, shape(r));
  }
  fold_constants(g);
  EXPECT_EQ(g.find("Reshape")->outputs()[0].shape, Shape({3, 4}));
  expect_tensor<int32_t>(const_value(g, "Shape_1"), Shape({2}), {3, 4});
  EXPECT_NO_THROW(g.verify());
}

TEST(FoldConstants, MultiOutputNodesBecomeOneConstPerOutput) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kInt64, Shape({2}));
    std::vector<Tensor> parts = split(Tensor(std::initializer_list<int64_t>{1, 2, 3, 4, 5, 6}), 3);
    add_output(g, identity(x * parts[2] + parts[0]));
  }
  ASSERT_EQ(g.listing(),
            "[] -> x\n[] -> Const\n['Const'] -> split\n['x', 'split:2'] -> mul\n"
            "['mul', 'split'] -> add\n['add'] -> Identity\n");
  PassResult r = fold_constants(g);
  EXPECT_EQ(r.added, (std::vector<NodeRef>{{"split/folded_0", "Const"},
                                           {"split/folded_1", "Const"},
                                           {"split/folded_2", "Const"}}));
  EXPECT_EQ(r.removed, (std::vector<NodeRef>{{"split", "SplitV"}}));
  EXPECT_EQ(g.listing(),
            "[] -> x\n[] -> Const\n[] -> split/folded_2\n['x', 'split/folded_2'] -> mul\n"
            "[] -> split/folded_0\n['mul', 'split/folded_0'] -> add\n['add'] -> Identity\n"
            "[] -> split/folded_1\n");
  expect_tensor<int64_t>(const_value(g, "split/folded_2"), Shape({2}), {5, 6});
  EXPECT_NO_THROW(g.verify());
}

TEST(FoldConstants, FoldsStringsAndKeepsGraphOutputsWired) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    add_output(g, Tensor("ab") + Tensor("cd"));
  }
  fold_constants(g);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0].node->name(), "add");
  EXPECT_EQ(const_value(g, "add").item<std::string>(), "abcd");
  EXPECT_NO_THROW(g.verify());
}

}  // namespace
}  // namespace kiln
