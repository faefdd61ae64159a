// The collective ops with one worker (identity): rows, inference errors,
// gradients, inside a function, and the schedule_collectives pass.
// Two workers: tests/cpp/comm/comm_mpi_main.cpp (CTest comm_mpi_*).
#include "../function/tensor_fn_util.h"
#include "kiln/gradient_tape.h"
#include "kiln/kiln.h"
#include "kiln/passes.h"
#include "kiln/trace.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

const OpId kCollectives[] = {OpId::CollectiveAllReduce, OpId::CollectiveAllGather,
                             OpId::CollectiveBroadcast, OpId::CollectiveAllReduceStart,
                             OpId::CollectiveAllReduceDone};

TEST(Collective, RowsAreStatefulSoTheyRunInProgramOrder) {
  for (OpId id : kCollectives) {
    EXPECT_TRUE(op_def(id).has(kStateful)) << op_def(id).type_name;
    EXPECT_NE(op_def(id).cpu_kernel, nullptr) << op_def(id).type_name;
  }
  EXPECT_NE(op_def(OpId::CollectiveAllReduce).grad, nullptr);
  EXPECT_NE(op_def(OpId::CollectiveAllReduceDone).grad, nullptr);
  EXPECT_TRUE(op_def(OpId::CollectiveAllGather).has(kNoGradient));
}

TEST(Collective, OneWorkerIsTheIdentityForEveryDtype) {
  const Tensor f = Tensor::from_vector<float>({1.5f, -2}, Shape({2}));
  for (const char* r : {"sum", "mean", "max", "min"})
    EXPECT_EQ(all_reduce(f, r).to_vector<float>(), f.to_vector<float>()) << r;
  const Tensor i = Tensor::from_vector<int64_t>({3, 4}, Shape({1, 2}));
  EXPECT_EQ(all_reduce(i, "mean").to_vector<int64_t>(), i.to_vector<int64_t>());
  const Tensor h = cast(f, DType::kFloat16);
  EXPECT_EQ(all_reduce(h).dtype(), DType::kFloat16);
  EXPECT_EQ(all_gather(i).shape(), Shape({1, 2}));
  const Tensor b = cast(Tensor::from_vector<int32_t>({1, 0}, Shape({2})), DType::kBool);
  EXPECT_EQ(cast(broadcast(b), DType::kInt32).to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));
  const Tensor t = all_reduce_start(f, "max", 4);
  EXPECT_EQ(t.dtype(), DType::kInt64);
  EXPECT_EQ(all_reduce_done(f, t, "max", 4).to_vector<float>(), f.to_vector<float>());
}

TEST(Collective, BadCallsNameTheOp) {
  const Tensor s = Tensor::from_vector<std::string>({"a"}, Shape({1}));
  const Tensor f = Tensor::from_vector<float>({1}, Shape({1}));
  expect_error([&] { all_reduce(s); }, Code::kInvalidArgument, {"CollectiveAllReduce", "string"});
  expect_error([&] { all_reduce(f, "avg"); }, Code::kInvalidArgument,
               {"CollectiveAllReduce", "\"avg\""});
  expect_error([&] { all_gather(Tensor(1.0f)); }, Code::kInvalidArgument,
               {"CollectiveAllGather", "rank >= 1"});
  expect_error([&] { all_gather(s); }, Code::kInvalidArgument, {"CollectiveAllGather", "string"});
  expect_error([&] { broadcast(f, -1); }, Code::kInvalidArgument, {"CollectiveBroadcast", "root"});
  expect_error([&] { broadcast(f, 3); }, Code::kInvalidArgument,
               {"CollectiveBroadcast", "root 3 is not a worker"});
  expect_error([&] { all_reduce_done(f, Tensor(int64_t{999})); }, Code::kInvalidArgument,
               {"ticket 999"});
  expect_error([&] { all_reduce_done(f, Tensor(1.0f)); }, Code::kInvalidArgument,
               {"CollectiveAllReduceDone", "int64"});
}

TEST(Collective, GradientIsTheAllReduceOfTheGradient) {
  const Tensor x = Tensor::from_vector<float>({1, 2}, Shape({2}));
  for (const char* r : {"sum", "mean"}) {
    GradientTape tape;
    tape.watch(x);
    const Tensor y = reduce_sum(all_reduce(x * x, r));
    EXPECT_EQ(tape.gradient(y, x).to_vector<float>(), (std::vector<float>{2, 4})) << r;
  }
  GradientTape tape;
  tape.watch(x);
  const Tensor y = reduce_sum(all_reduce(x, "max"));
  expect_error([&] { tape.gradient(y, x); }, Code::kUnimplemented, {"reduction \"max\""});
}

// A bucket's start moves up to just after its gradient; its done moves down
// to just before its user; the unrelated work in between stays between.
TEST(ScheduleCollectives, StartsEarlyDonesLate) {
  Graph g("step");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({4}));
    Tensor grad = x * 2.0f;              // the bucket's gradient
    Tensor other = tanh(exp(x)) + 1.0f;  // the rest of the backward pass
    Tensor ticket = all_reduce_start(grad, "sum", 1);
    Tensor reduced = all_reduce_done(grad, ticket, "sum", 1);
    g.outputs().push_back({dynamic_cast<Node*>((reduced * other).symbol()), 0});
  }
  auto position = [&](OpId id) {
    for (size_t i = 0; i < g.num_nodes(); ++i)
      if (g.nodes()[i]->op().id == id) return static_cast<int>(i);
    return -1;
  };
  const int start_before = position(OpId::CollectiveAllReduceStart);
  PassResult r = schedule_collectives(g);
  g.verify();
  const int start = position(OpId::CollectiveAllReduceStart);
  const int done = position(OpId::CollectiveAllReduceDone);
  EXPECT_LT(start, start_before);
  EXPECT_LT(start, position(OpId::Exp));                 // before the unrelated work
  EXPECT_GT(done, position(OpId::Tanh));                 // after it
  EXPECT_EQ(done, static_cast<int>(g.num_nodes()) - 2);  // just before its user, the last
  EXPECT_TRUE(r.changed());
  EXPECT_EQ(schedule_collectives(g).rewritten.size(), 0u) << "a second run changes nothing";
}

// Two buckets: the first start runs before the second bucket's work.
TEST(ScheduleCollectives, EachStartRightAfterItsBucket) {
  Graph g("two");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({4}));
    Tensor g2 = tanh(exp(x));  // traced first, needed by the second bucket
    Tensor g1 = x * 2.0f;
    Tensor t1 = all_reduce_start(g1, "sum", 1);
    Tensor t2 = all_reduce_start(g2, "sum", 2);
    Tensor y = all_reduce_done(g1, t1, "sum", 1) + all_reduce_done(g2, t2, "sum", 2);
    g.outputs().push_back({dynamic_cast<Node*>(y.symbol()), 0});
  }
  schedule_collectives(g);
  g.verify();
  std::vector<OpId> order;
  for (const auto& n : g.nodes())
    if (n->op().id != OpId::Const && n->op().id != OpId::Placeholder) order.push_back(n->op().id);
  EXPECT_EQ(order,
            (std::vector<OpId>{OpId::Mul, OpId::CollectiveAllReduceStart, OpId::Exp, OpId::Tanh,
                               OpId::CollectiveAllReduceStart, OpId::CollectiveAllReduceDone,
                               OpId::CollectiveAllReduceDone, OpId::Add}));
}

TEST(ScheduleCollectives, OtherStatefulNodesKeepTheirOrder) {
  Graph g("effects");
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({2}));
    print({"first", x});
    Tensor y = all_reduce(x, "sum", 1);
    print({"second", y});
    Tensor ticket = all_reduce_start(x * 3.0f, "sum", 2);
    g.outputs().push_back({dynamic_cast<Node*>(all_reduce_done(x, ticket).symbol()), 0});
  }
  schedule_collectives(g);
  g.verify();
  std::vector<OpId> effects;
  for (const auto& n : g.nodes())
    if (n->op().has(kStateful)) effects.push_back(n->op().id);
  // (Tracing chains stateful nodes by control edges: the start cannot pass
  // the print before it; in a train step that is a forward variable read.)
  EXPECT_EQ(effects,
            (std::vector<OpId>{OpId::Print, OpId::CollectiveAllReduce, OpId::Print,
                               OpId::CollectiveAllReduceStart, OpId::CollectiveAllReduceDone}));
}

TEST(Collective, InsideAFunctionTheOptimizedGraphKeepsEveryCollective) {
  Function f = testing::make_fn([](const testing::Vars& a) -> testing::Vars {
    Tensor g = a[0] * 2.0f;
    Tensor t = all_reduce_start(g, "mean", 1);
    Tensor unused = all_reduce(a[0], "sum", 2);  // unused but never pruned
    (void)unused;
    return {all_reduce_done(g, t, "mean", 1) + broadcast(a[0], 0, 3)};
  });
  const Tensor x = Tensor::from_vector<float>({1, 2}, Shape({2}));
  EXPECT_EQ(testing::call(f, {x})[0].to_vector<float>(), (std::vector<float>{3, 6}));
  auto cf = f.get_concrete_function({Value(x)});
  for (OpId id : {OpId::CollectiveAllReduceStart, OpId::CollectiveAllReduceDone,
                  OpId::CollectiveAllReduce, OpId::CollectiveBroadcast})
    EXPECT_EQ(testing::count_nodes(cf->optimized_graph(), id), 1) << op_def(id).type_name;
}

}  // namespace
}  // namespace kiln
