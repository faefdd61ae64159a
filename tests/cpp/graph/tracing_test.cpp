// Tracing records op calls as graph nodes; the graph lists, verifies and
// exports itself. (Functions, passes and the executor build on this.)
#include <thread>

#include "kiln/trace.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

TEST(Tracing, RecordsNodesLikeTheSeedGuideListing) {
  Graph g("double");
  TracingContext tc(g);
  {
    ContextScope scope(tc);
    Tensor a = tc.add_input("a", DType::kString, Shape());
    Tensor r = a + a;
    EXPECT_TRUE(r.is_symbolic());
    EXPECT_EQ(r.to_string(), "Tensor(\"add:0\", shape=(), dtype=string)");
    g.outputs().push_back({g.find("add"), 0});
    Tensor out = identity(r);
    (void)out;
  }
  EXPECT_EQ(g.listing(), "[] -> a\n['a', 'a'] -> add\n['add'] -> Identity\n");
  EXPECT_NO_THROW(g.verify());
}

TEST(Tracing, SymbolicTensorsKnowDtypeAndStaticShapeButCannotBeRead) {
  Graph g("f");
  TracingContext tc(g);
  ContextScope scope(tc);
  Tensor x = tc.add_input("x", DType::kFloat32, Shape({-1, 3}));
  Tensor y = reduce_sum(x * 2.f, {1});
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  EXPECT_EQ(y.shape(), Shape({-1}));
  expect_error([&] { y.data<float>(); }, Code::kFailedPrecondition,
               {"Sum:0", "symbolic", "function 'f'"});
  // A constant shape argument gives a static output shape.
  Tensor r = reshape(x, {3, -1});
  EXPECT_EQ(r.shape(), Shape({3, -1}));
  Tensor z = reshape(tc.add_input("z", DType::kFloat32, Shape({2, 6})), {3, -1});
  EXPECT_EQ(z.shape(), Shape({3, 4}));
}

TEST(Tracing, EagerTensorsBecomeDeduplicatedConstants) {
  Graph g("f");
  TracingContext tc(g);
  Tensor w({1.f, 2.f});
  {
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({2}));
    Tensor y = x * w + w;
    (void)y;
  }
  int consts = 0;
  for (const auto& n : g.nodes()) consts += n->op().id == OpId::Const;
  EXPECT_EQ(consts, 1);
  EXPECT_EQ(g.listing(), "[] -> x\n[] -> Const\n['x', 'Const'] -> mul\n['mul', 'Const'] -> add\n");
}

TEST(Tracing, StatefulOpsAreChainedInProgramOrder) {
  Graph g("f");
  TracingContext tc(g);
  Variable v(Tensor(1));
  {
    ContextScope scope(tc);
    v.assign_add(Tensor(1));
    Tensor r = v.read_value();
    print({"v =", r});
    v.assign(Tensor(5));
  }
  std::vector<std::string> stateful;
  for (const auto& n : g.nodes())
    if (n->op().has(kStateful)) {
      if (!stateful.empty()) {
        ASSERT_EQ(n->control_inputs().size(), 1u);
        EXPECT_EQ(n->control_inputs()[0]->name(), stateful.back());
      }
      stateful.push_back(n->name());
    }
  EXPECT_EQ(stateful.size(), 4u);
  EXPECT_NO_THROW(g.verify());
  // The eager variable was not touched by tracing.
  EXPECT_EQ(v.read_value().item<int32_t>(), 1);
}

TEST(Tracing, LeakedSymbolicTensorsAreErrorsNamingTheirFunction) {
  Tensor leaked;
  {
    Graph g("leaky");
    TracingContext tc(g);
    ContextScope scope(tc);
    leaked = tc.add_input("x", DType::kFloat32, Shape({2})) + 1.f;
  }
  // Eagerly, after the trace ended.
  expect_error([&] { leaked * 2.f; }, Code::kInvalidArgument,
               {"add:0", "function 'leaky'", "trace has ended"});
  // Inside another function's trace.
  Graph g2("other");
  TracingContext tc2(g2);
  ContextScope scope(tc2);
  expect_error(
      [&] { leaked * 2.f; }, Code::kInvalidArgument,
      {"function 'other' captured an external symbolic tensor", "add:0", "function 'leaky'"});
}

TEST(Tracing, InnerTraceCapturesOuterValuesOnce) {
  Graph outer_g("outer");
  TracingContext outer(outer_g);
  ContextScope s1(outer);
  Tensor x = outer.add_input("x", DType::kFloat32, Shape({2}));
  Graph body_g("body");
  TracingContext body(body_g, &outer);
  ContextScope s2(body);
  Tensor y = x * x + x;
  (void)y;
  ASSERT_EQ(body.captures().size(), 1u);
  EXPECT_EQ(body.captures()[0].second->name(), "x_capture");
  EXPECT_EQ(body_g.listing(),
            "[] -> x_capture\n['x_capture', 'x_capture'] -> mul\n"
            "['mul', 'x_capture'] -> add\n");
}

TEST(Tracing, InferenceErrorsSurfaceWhileTracing) {
  Graph g("f");
  TracingContext tc(g);
  ContextScope scope(tc);
  Tensor x = tc.add_input("x", DType::kInt32, Shape({2}));
  expect_error([&] { x + Tensor({1.f, 2.f}); }, Code::kInvalidArgument, {"AddV2", "dtype"});
  expect_error([&] { x + Tensor({1, 2, 3}); }, Code::kInvalidArgument, {"[2]", "[3]"});
  EXPECT_EQ(g.num_nodes(), 1u + 0u + 2u);  // x and the two captured constants
}

TEST(Tracing, IsThreadLocal) {
  Graph g("f");
  TracingContext tc(g);
  ContextScope scope(tc);
  Tensor eager_result;
  std::thread t([&] { eager_result = Tensor({1, 2}) + Tensor({3, 4}); });
  t.join();
  EXPECT_FALSE(eager_result.is_symbolic());
  EXPECT_EQ(g.num_nodes(), 0u);
}

TEST(Graph, UniqueNamesDebugListingAndDot) {
  Graph g("f");
  TracingContext tc(g);
  {
    ContextScope scope(tc);
    Tensor a = tc.add_input("a", DType::kFloat32, Shape({-1}));
    Tensor l = a + a;
    Tensor m = a + a;
    Tensor r = l + m;
    g.outputs().push_back({g.find("add_2"), 0});
    (void)r;
  }
  EXPECT_NE(g.find("add"), nullptr);
  EXPECT_NE(g.find("add_1"), nullptr);
  EXPECT_NE(g.find("add_2"), nullptr);
  EXPECT_EQ(g.unique_name("add"), "add_3");
  const std::string dbg = g.debug_listing();
  EXPECT_NE(dbg.find("add_2 = AddV2(add:0, add_1:0) -> float32[?]"), std::string::npos) << dbg;
  EXPECT_NE(dbg.find("return (add_2:0)"), std::string::npos) << dbg;
  const std::string dot = g.to_dot();
  EXPECT_EQ(dot.rfind("digraph \"f\" {", 0), 0u);
  EXPECT_NE(dot.find("n0 -> n1;"), std::string::npos) << dot;
}

TEST(Graph, VerifierCatchesBrokenGraphs) {
  Graph g("f");
  TracingContext tc(g);
  {
    ContextScope scope(tc);
    Tensor a = tc.add_input("a", DType::kFloat32, Shape({2}));
    Tensor b = a * 2.f;
    (void)b;
  }
  Node* mul = g.find("mul");
  mul->set_input(0, {mul, 0});  // a node feeding itself
  expect_error([&] { g.verify(); }, Code::kInternal, {"'mul'", "earlier node"});
}

}  // namespace
}  // namespace kiln
