// The pass driver: order, switches, report, and scale.
#include <chrono>

#include "pass_test_util.h"

namespace kiln {
namespace {
using testing::add_output;
using testing::expect_error;

// x*1 + (2*3) computed twice, plus an unused tanh: every pass has work.
void trace_busy(Graph& g) {
  TracingContext tc(g);
  ContextScope scope(tc);
  Tensor x = tc.add_input("x", DType::kFloat32, Shape({2}));
  Tensor unused = tanh(x);
  (void)unused;
  Tensor k = Tensor(2.f) * Tensor(3.f);
  Tensor a = x * 1.f + k;
  Tensor b = x * 1.f + k;
  add_output(g, identity(a * b));
}

TEST(Optimize, RunsThePipelineInOrderAndReports) {
  EXPECT_EQ(std::vector<std::string_view>(pass_names().begin(), pass_names().end()),
            (std::vector<std::string_view>{"inline", "prune", "fold_constants", "cse", "simplify",
                                           "fold_pad", "conv_float_filters", "matmul_float_weights",
                                           "prune", "cse", "fuse_attention", "fuse_rnn", "prune",
                                           "fuse_conv", "fuse", "schedule_collectives"}));
  Graph g("busy");
  trace_busy(g);
  ASSERT_EQ(g.listing(),
            "[] -> x\n['x'] -> Tanh\n[] -> Const\n[] -> Const_1\n['Const', 'Const_1'] -> mul\n"
            "[] -> Const_2\n['x', 'Const_2'] -> mul_1\n['mul_1', 'mul'] -> add\n[] -> Const_3\n"
            "['x', 'Const_3'] -> mul_2\n['mul_2', 'mul'] -> add_1\n['add', 'add_1'] -> mul_3\n"
            "['mul_3'] -> Identity\n");
  OptimizeReport rep = optimize(g);
  EXPECT_EQ(g.listing(),
            "[] -> x\n[] -> mul\n['x', 'mul'] -> add\n['add', 'add'] -> mul_3\n"
            "['mul_3'] -> Identity\n");
  EXPECT_EQ(rep.to_string(),
            "optimize 'busy': 13 -> 5 nodes\n"
            "  inline: no change\n"
            "  prune: removed 1 ('Tanh' (Tanh))\n"
            "  fold_constants: rewritten 1 ('mul' (Mul -> Const))\n"
            "  cse: removed 3 ('Const_3' (Const), 'mul_2' (Mul), 'add_1' (AddV2))\n"
            "  simplify: removed 1 ('mul_1' (Mul))\n"
            "  fold_pad: no change\n"
            "  conv_float_filters: no change\n"
            "  matmul_float_weights: no change\n"
            "  prune: removed 3 ('Const' (Const), 'Const_1' (Const), 'Const_2' (Const))\n"
            "  cse: no change\n"
            "  fuse_attention: no change\n"
            "  fuse_rnn: no change\n"
            "  prune: no change\n"
            "  fuse_conv: no change\n"
            "  fuse: no change\n"
            "  schedule_collectives: no change\n");
  ASSERT_EQ(rep.passes.size(), 16u);
  EXPECT_EQ(rep.unused_ops(), (std::vector<NodeRef>{{"Tanh", "Tanh"}}));
  for (const PassResult& p : rep.passes) EXPECT_GE(p.millis, 0.0);
}

TEST(Optimize, PassesCanBeSwitchedOffByName) {
  Graph g("busy");
  trace_busy(g);
  OptimizeOptions opts;
  opts.disabled = {"fold_constants", "simplify"};
  OptimizeReport rep = optimize(g, opts);
  ASSERT_EQ(rep.passes.size(), 14u);
  EXPECT_EQ(rep.passes[0].pass, "inline");
  EXPECT_EQ(rep.passes[1].pass, "prune");
  EXPECT_EQ(rep.passes[2].pass, "cse");
  EXPECT_EQ(rep.passes[3].pass, "fold_pad");
  EXPECT_EQ(rep.passes[4].pass, "conv_float_filters");
  EXPECT_EQ(rep.passes[5].pass, "matmul_float_weights");
  EXPECT_EQ(rep.passes[6].pass, "prune");
  EXPECT_EQ(rep.passes[7].pass, "cse");
  EXPECT_EQ(rep.passes[8].pass, "fuse_attention");
  EXPECT_EQ(rep.passes[9].pass, "fuse_rnn");
  EXPECT_EQ(rep.passes[10].pass, "prune");
  EXPECT_EQ(rep.passes[11].pass, "fuse_conv");
  EXPECT_EQ(rep.passes[12].pass, "fuse");
  // fuse merged x * 2 + mul into the node named after its root, 'add'.
  EXPECT_EQ(g.listing(),
            "[] -> x\n[] -> Const\n[] -> Const_1\n['Const', 'Const_1'] -> mul\n"
            "[] -> Const_2\n['x', 'Const_2', 'mul'] -> add\n"
            "['add', 'add'] -> mul_3\n['mul_3'] -> Identity\n");

  Graph g2("busy");
  trace_busy(g2);
  opts.disabled = {"inline",
                   "prune",
                   "fold_constants",
                   "cse",
                   "simplify",
                   "fuse",
                   "fold_pad",
                   "conv_float_filters",
                   "matmul_float_weights",
                   "schedule_collectives"};
  rep = optimize(g2, opts);
  EXPECT_TRUE(rep.passes.empty());
  EXPECT_EQ(rep.nodes_before, rep.nodes_after);
  EXPECT_TRUE(rep.unused_ops().empty());
  EXPECT_EQ(rep.to_string(), "optimize 'busy': 13 -> 13 nodes\n");

  opts.disabled = {"fold"};
  expect_error([&] { optimize(g2, opts); }, Code::kInvalidArgument,
               {"unknown pass 'fold'", "fold_constants"});
}

TEST(Optimize, SeedZeroFunctionReportsItsUnusedOps) {
  Tensor shifting = reshape(cast(range(7, -1, -1), DType::kUInt8), {1, 1, 8});
  Tensor selection_bit = constant(1, DType::kUInt8);
  Graph g("fun");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kUInt8, Shape({64, 400}));
    cast(reshape(bitwise_and(right_shift(expand_dims(x, 2), shifting), selection_bit), {64, 3200}),
         DType::kFloat32);
  }
  OptimizeReport rep = optimize(g);
  EXPECT_EQ(g.listing(), "[] -> x\n");
  EXPECT_EQ(rep.unused_ops(), (std::vector<NodeRef>{{"ExpandDims", "ExpandDims"},
                                                    {"RightShift", "RightShift"},
                                                    {"BitwiseAnd", "BitwiseAnd"},
                                                    {"Reshape", "Reshape"},
                                                    {"Cast", "Cast"}}));
  EXPECT_EQ(rep.passes[1].removed.size(), 8u);  // prune, with the three constants
}

TEST(Optimize, ALongTracedChainOptimizesToAValidGraph) {
  Graph g("chain");
  const auto t0 = std::chrono::steady_clock::now();
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({10, 10}));
    Tensor y = x;
    for (int i = 0; i < 333; ++i) y = tanh(y) * 1.5f + x;  // 3 ops + 1 const each
    add_output(g, identity(y));
  }
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_GE(g.num_nodes(), 1000u);
  OptimizeOptions opts;
  opts.verify = false;
  opts.disabled = {"fuse"};  // checked on its own in fuse_test.cpp
  OptimizeReport rep = optimize(g, opts);
  const auto t2 = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(g.verify());
  // The 333 equal 1.5f constants merge into one.
  EXPECT_EQ(testing::count_ops(g, OpId::Const), 1);
  EXPECT_EQ(g.num_nodes(), 1u + 1u + 3u * 333u + 1u);
  std::printf("trace %.2f ms, optimize %.2f ms (%zu -> %zu nodes)\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count(), rep.nodes_before,
              rep.nodes_after);
  // With verification after every pass it still works.
  EXPECT_FALSE(optimize(g).passes.empty());
}

}  // namespace
}  // namespace kiln
