// prune keeps what outputs and stateful ops need; also the graph helpers the
// passes use (Node::reset, Graph::sort_topologically).
#include <sstream>

#include "pass_test_util.h"

namespace kiln {
namespace {
using testing::add_output;
using testing::edge_of;
using testing::expect_error;

// Seed 000's CharUnpack: the layer's constants are built eagerly, once.
struct CharUnpack {
  Tensor shifting = reshape(cast(range(7, -1, -1), DType::kUInt8), {1, 1, 8});
  Tensor selection_bit = constant(1, DType::kUInt8);
  Tensor operator()(const Tensor& x) const {
    return cast(
        reshape(bitwise_and(right_shift(expand_dims(x, 2), shifting), selection_bit), {64, 3200}),
        DType::kFloat32);
  }
};

constexpr const char* kCharUnpackListing =
    "[] -> x\n['x'] -> ExpandDims\n[] -> Const\n['ExpandDims', 'Const'] -> RightShift\n"
    "[] -> Const_1\n['RightShift', 'Const_1'] -> BitwiseAnd\n[] -> Const_2\n"
    "['BitwiseAnd', 'Const_2'] -> Reshape\n['Reshape'] -> Cast\n";

TEST(Prune, FunctionReturningNothingKeepsOnlyItsSignature) {
  CharUnpack layer;
  Graph g("fun");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kUInt8, Shape({64, 400}));
    layer(x);  // as `def fun(x): eager(x)`: the result is dropped
  }
  ASSERT_EQ(g.listing(), kCharUnpackListing);
  PassResult r = prune(g);
  EXPECT_EQ(g.listing(), "[] -> x\n");
  EXPECT_NO_THROW(g.verify());
  EXPECT_EQ(r.removed, (std::vector<NodeRef>{{"ExpandDims", "ExpandDims"},
                                             {"Const", "Const"},
                                             {"RightShift", "RightShift"},
                                             {"Const_1", "Const"},
                                             {"BitwiseAnd", "BitwiseAnd"},
                                             {"Const_2", "Const"},
                                             {"Reshape", "Reshape"},
                                             {"Cast", "Cast"}}));
  EXPECT_TRUE(r.added.empty());
  EXPECT_TRUE(r.rewritten.empty());
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->name(), "x");
  // A second run has nothing left to do.
  EXPECT_FALSE(prune(g).changed());
}

TEST(Prune, ReturnedValuesKeepTheirInputs) {
  CharUnpack layer;
  Graph g("fun");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kUInt8, Shape({64, 400}));
    add_output(g, layer(x));
  }
  EXPECT_FALSE(prune(g).changed());
  EXPECT_EQ(g.listing(), kCharUnpackListing);
}

TEST(Prune, PrintAndAssignStayWithWhatTheyNeed) {
  CharUnpack layer;
  Variable v(Tensor(0.f), "total");
  Graph g("fun");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kUInt8, Shape({64, 400}));
    Tensor bits = right_shift(expand_dims(x, 2), layer.shifting);
    print({"bits:", bits});
    Tensor unused = cast(bits, DType::kFloat32) * 2.f;
    (void)unused;
    v.assign_add(reduce_sum(cast(x, DType::kFloat32)));
  }
  const std::string before = g.listing();
  PassResult r = prune(g);
  EXPECT_EQ(r.removed,
            (std::vector<NodeRef>{{"Cast", "Cast"}, {"Const_1", "Const"}, {"mul", "Mul"}}));
  EXPECT_EQ(g.listing(),
            "[] -> x\n['x'] -> ExpandDims\n[] -> Const\n['ExpandDims', 'Const'] -> RightShift\n"
            "['RightShift'] -> PrintV2\n['x'] -> Cast_1\n['Cast_1'] -> Sum\n[] -> Const_2\n"
            "['Const_2', 'Sum', '^PrintV2'] -> AssignAddVariableOp\n")
      << before;
  EXPECT_NO_THROW(g.verify());
}

TEST(Prune, FollowsControlInputsAndKeepsUnusedPlaceholders) {
  Graph g("f");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({2}));
    Tensor unused_arg = tc.add_input("unused", DType::kInt32, Shape());
    (void)unused_arg;
    Tensor b = exp(x);
    Tensor a = tanh(x);
    Tensor c = x * 3.f;
    (void)c;
    edge_of(a).node->add_control_input(edge_of(b).node);
    add_output(g, a);
  }
  PassResult r = prune(g);
  EXPECT_EQ(g.listing(), "[] -> x\n[] -> unused\n['x'] -> Exp\n['x', '^Exp'] -> Tanh\n");
  EXPECT_EQ(r.removed.size(), 2u);  // mul and its constant
  EXPECT_NO_THROW(g.verify());
}

TEST(Prune, KeepsCapturePlaceholders) {
  Graph outer_g("outer");
  TracingContext outer(outer_g);
  ContextScope s1(outer);
  Tensor x = outer.add_input("x", DType::kFloat32, Shape({2}));
  Graph body("body");
  {
    TracingContext tc(body, &outer);
    ContextScope s2(tc);
    Tensor y = x * 2.f;
    (void)y;
  }
  prune(body);
  EXPECT_EQ(body.listing(), "[] -> x_capture\n");
}

TEST(GraphHelpers, SortTopologicallyMovesLateNodesBeforeTheirFirstUser) {
  Graph g("f");
  TracingContext tc(g);
  Node* add;
  {
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({2}));
    Tensor e = exp(x);
    Tensor t = tanh(x);
    add = edge_of(e + t).node;
  }
  Node* late = g.add_node(op_def(OpId::Const), {}, Attrs{Tensor({1.f, 2.f})},
                          {TensorSpec{DType::kFloat32, Shape({2})}}, "late");
  add->set_input(1, {late, 0});
  expect_error([&] { g.verify(); }, Code::kInternal, {"'add'", "earlier node"});
  g.sort_topologically();
  EXPECT_EQ(g.listing(),
            "[] -> x\n['x'] -> Exp\n['x'] -> Tanh\n[] -> late\n['Exp', 'late'] -> add\n");
  EXPECT_NO_THROW(g.verify());
  // Already sorted: unchanged.
  g.sort_topologically();
  EXPECT_EQ(g.listing(),
            "[] -> x\n['x'] -> Exp\n['x'] -> Tanh\n[] -> late\n['Exp', 'late'] -> add\n");
  // Control inputs count as dependencies.
  g.find("Exp")->add_control_input(add);
  expect_error([&] { g.sort_topologically(); }, Code::kInternal, {"cycle"});
}

TEST(GraphHelpers, ResetRewritesANodeInPlace) {
  Graph g("f");
  TracingContext tc(g);
  Tensor sym;
  {
    ContextScope scope(tc);
    Tensor a = tc.add_input("a", DType::kInt32, Shape({2}));
    sym = a + Tensor({1, 2});
    add_output(g, sym);
  }
  Node* n = edge_of(sym).node;
  n->reset(op_def(OpId::Const), {}, Attrs{Tensor({5, 6})}, {TensorSpec{DType::kInt32, Shape({2})}});
  EXPECT_EQ(n->name(), "add");
  EXPECT_EQ(n->op().id, OpId::Const);
  EXPECT_TRUE(n->inputs().empty());
  ASSERT_NE(n->constant_value(0), nullptr);
  testing::expect_tensor<int32_t>(*n->constant_value(0), Shape({2}), {5, 6});
  EXPECT_NO_THROW(g.verify());
  n->set_control_inputs({g.find("a")});
  EXPECT_EQ(g.listing(), "[] -> a\n[] -> Const\n['^a'] -> add\n");
}

// A node holds one attribute per attribute its op declares (they are read by
// position): fewer or more is an internal error, at add_node and at reset.
TEST(GraphHelpers, NodesHoldEveryAttributeOfTheirOp) {
  Graph g("f");
  const TensorSpec spec{DType::kFloat32, Shape({2})};
  expect_error([&] { g.add_node(op_def(OpId::Const), {}, Attrs{}, {spec}); }, Code::kInternal,
               {"a Const node gets 0 attributes; the op has 1"});
  Node* n = g.add_node(op_def(OpId::Const), {}, Attrs{Tensor({1.f, 2.f})}, {spec});
  expect_error([&] { n->reset(op_def(OpId::JitKernel), {}, Attrs{}, {spec}); }, Code::kInternal,
               {"JitKernel node gets 0 attributes"});
  EXPECT_EQ(n->op().id, OpId::Const);  // unchanged
}

}  // namespace
}  // namespace kiln
