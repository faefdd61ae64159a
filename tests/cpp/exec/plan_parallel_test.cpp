// Parallel regions of a Plan (kiln/executor.h): independent heavy branches
// run concurrently and give the same results as running in order; small or
// dependent graphs stay sequential; stateful ops keep program order on the
// calling thread; errors in a branch propagate; the config switch works;
// plans with unknown dims find their regions after the first run.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/trace.h"
#include "kiln/variable.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor_near;

// At least two pool threads, whatever the machine (set before first use).
const bool kPoolThreads = (config().num_threads = 4, true);

// Restores the process-wide switch after each test.
class PlanParallel : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kPoolThreads); }
  void TearDown() override { config().parallel_branches = true; }
};

template <typename F>
std::unique_ptr<Plan> compile(std::vector<std::pair<std::string, TensorSpec>> args, F body,
                              const char* name = "f") {
  Graph g(name);
  {
    TracingContext tc(g);
    ContextScope scope(tc);
    std::vector<Tensor> in;
    for (auto& [n, spec] : args) in.push_back(tc.add_input(n, spec.dtype, spec.shape));
    for (const Tensor& t : body(in)) g.outputs().push_back(tc.edge_for(t));
  }
  return Plan::compile(g);
}

// 24 elementwise ops: on 128x128 about 4e5 element-operations, a heavy branch.
Tensor branch(const Tensor& x, float k) {
  Tensor y = x;
  for (int i = 0; i < 12; ++i) y = tanh(y * k) + x;
  return y;
}

std::vector<float> values(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(0.1f * i) * scale;
  return v;
}

void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>()) << "output " << i;
  }
}

TEST_F(PlanParallel, IndependentHeavyBranchesMatchSequentialAndEager) {
  const TensorSpec spec{DType::kFloat32, Shape({128, 128})};
  auto plan = compile({{"x", spec}, {"y", spec}}, [](std::vector<Tensor> a) {
    Tensor p = branch(a[0], 0.5f), q = branch(a[1], -0.25f);
    return std::vector<Tensor>{p + q, p, q};
  });
  ASSERT_EQ(plan->num_parallel_regions(), 1u) << plan->debug_string();
  EXPECT_NE(plan->debug_string().find("region 0.."), std::string::npos) << plan->debug_string();
  Tensor x = Tensor::from_vector(values(128 * 128, 2.f), {128, 128});
  Tensor y = Tensor::from_vector(values(128 * 128, -1.f), {128, 128});
  for (int rep = 0; rep < 20; ++rep) {
    config().parallel_branches = true;
    std::vector<Tensor> par = plan->run(std::vector<Tensor>{x, y});
    config().parallel_branches = false;
    std::vector<Tensor> seq = plan->run(std::vector<Tensor>{x, y});
    expect_same(par, seq);
  }
  Tensor p = branch(x, 0.5f), q = branch(y, -0.25f);
  std::vector<Tensor> got = plan->run(std::vector<Tensor>{x, y});
  expect_tensor_near<float>(got[0], {128, 128}, (p + q).to_vector<float>(), 1e-6);
  // The caller's tensors are untouched (no branch wrote into an input).
  EXPECT_EQ(x.to_vector<float>(), values(128 * 128, 2.f));
}

TEST_F(PlanParallel, OneInputFeedingBothBranchesIsNotMovedAway) {
  // The shared intermediate s is read by both chains: neither may move it.
  const TensorSpec spec{DType::kFloat32, Shape({128, 128})};
  auto plan = compile({{"x", spec}}, [](std::vector<Tensor> a) {
    Tensor s = exp(a[0] * 0.1f);
    return std::vector<Tensor>{branch(s, 0.5f) - branch(s, 2.f)};
  });
  ASSERT_EQ(plan->num_parallel_regions(), 1u) << plan->debug_string();
  Tensor x = Tensor::from_vector(values(128 * 128, 3.f), {128, 128});
  Tensor s = exp(x * 0.1f);
  const std::vector<float> want = (branch(s, 0.5f) - branch(s, 2.f)).to_vector<float>();
  for (int rep = 0; rep < 20; ++rep)
    expect_tensor_near<float>(plan->run(std::vector<Tensor>{x})[0], {128, 128}, want, 1e-6);
}

TEST_F(PlanParallel, SmallOrDependentGraphsStaySequential) {
  auto small = compile({{"x", {DType::kFloat32, Shape({10, 10})}}}, [](std::vector<Tensor> a) {
    return std::vector<Tensor>{branch(a[0], 0.5f) + branch(a[0], 2.f)};
  });
  EXPECT_EQ(small->num_parallel_regions(), 0u);
  // Heavy but one chain: every step needs the one before.
  auto chain = compile({{"x", {DType::kFloat32, Shape({128, 128})}}}, [](std::vector<Tensor> a) {
    return std::vector<Tensor>{branch(branch(a[0], 0.5f), 2.f)};
  });
  EXPECT_EQ(chain->num_parallel_regions(), 0u);
  // Two big matmuls: OpenBLAS already uses every core for each, so running
  // them side by side is not predicted to be faster.
  auto mm = compile(
      {{"a", {DType::kFloat32, Shape({512, 512})}}, {"b", {DType::kFloat32, Shape({512, 512})}}},
      [](std::vector<Tensor> a) {
        return std::vector<Tensor>{matmul(a[0], a[0]) + matmul(a[1], a[1])};
      });
  EXPECT_EQ(mm->num_parallel_regions(), 0u) << mm->debug_string();
}

TEST_F(PlanParallel, StatefulOpsKeepProgramOrder) {
  Variable v(Tensor(0.f));
  const TensorSpec spec{DType::kFloat32, Shape({128, 128})};
  auto plan = compile({{"x", spec}}, [&](std::vector<Tensor> a) {
    Tensor p = branch(a[0], 0.5f);
    v.assign_add(reduce_sum(p, {0, 1}) * 0.f + 1.f);  // v += 1
    Tensor q = branch(a[0], 2.f);
    v.assign(v.read_value() * 10.f + reduce_sum(q, {0, 1}) * 0.f);  // v *= 10
    return std::vector<Tensor>{v.read_value(), p, q};
  });
  ASSERT_EQ(plan->num_parallel_regions(), 1u) << plan->debug_string();
  Tensor x = Tensor::from_vector(values(128 * 128, 1.f), {128, 128});
  float want = 0.f;
  for (int rep = 0; rep < 10; ++rep) {
    want = (want + 1.f) * 10.f;
    std::vector<Tensor> out = plan->run(std::vector<Tensor>{x});
    EXPECT_EQ(out[0].item<float>(), want) << "run " << rep;
  }
}

TEST_F(PlanParallel, AnErrorInABranchPropagatesAndThePlanStaysUsable) {
  const TensorSpec ispec{DType::kInt32, Shape({128, 128})};
  auto int_branch = [](const Tensor& x, int k) {
    Tensor y = x;
    for (int i = 0; i < 12; ++i) y = y * k + x;
    return y;
  };
  auto plan = compile(
      {{"x", ispec}, {"d", ispec}, {"e", ispec}},
      [&](std::vector<Tensor> a) {
        return std::vector<Tensor>{floordiv(int_branch(a[0], 3), a[1]) +
                                   floordiv(int_branch(a[0], 5), a[2])};
      },
      "two_divisions");
  ASSERT_EQ(plan->num_parallel_regions(), 1u) << plan->debug_string();
  std::vector<int32_t> ones(128 * 128, 1), with_zero = ones;
  with_zero[777] = 0;
  Tensor x = Tensor::from_vector(std::vector<int32_t>(128 * 128, 1), {128, 128});
  Tensor good = Tensor::from_vector(ones, {128, 128});
  Tensor bad = Tensor::from_vector(with_zero, {128, 128});
  for (int rep = 0; rep < 5; ++rep) {
    // Either branch failing, or both at once.
    expect_error(
        [&] {
          plan->run(std::vector<Tensor>{x, bad, good});
        },
        Code::kInvalidArgument, {"division by zero", "of function 'two_divisions'"});
    expect_error(
        [&] {
          plan->run(std::vector<Tensor>{x, good, bad});
        },
        Code::kInvalidArgument, {"division by zero", "node 'floordiv"});
    expect_error(
        [&] {
          plan->run(std::vector<Tensor>{x, bad, bad});
        },
        Code::kInvalidArgument, {"division by zero"});
    std::vector<Tensor> out = plan->run(std::vector<Tensor>{x, good, good});
    Tensor want = int_branch(x, 3) + int_branch(x, 5);
    EXPECT_EQ(out[0].to_vector<int32_t>(), want.to_vector<int32_t>());
  }
}

// A body for PartitionedCall (a call op without state, so it may run on a
// chain) that records the thread running it; with `meet`, the first caller
// waits (up to 5 s) for a second one, so two chains must overlap in time.
class Probe final : public Subgraph {
 public:
  Probe(TensorSpec spec, bool meet) : spec_(std::move(spec)), meet_(meet) {}
  const std::string& name() const override { return name_; }
  std::span<const TensorSpec> input_specs() const override { return {&spec_, 1}; }
  std::span<const TensorSpec> output_specs() const override { return {&spec_, 1}; }
  std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
    std::unique_lock<std::mutex> lock(mu_);
    threads_.insert(std::this_thread::get_id());
    ++arrived_;
    cv_.notify_all();
    if (meet_) cv_.wait_for(lock, std::chrono::seconds(5), [&] { return arrived_ % 2 == 0; });
    return {inputs[0]};
  }
  std::set<std::thread::id> threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_;
  }

 private:
  std::string name_ = "probe";
  TensorSpec spec_;
  bool meet_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::set<std::thread::id> threads_;
  mutable int arrived_ = 0;
};

std::unique_ptr<Plan> probed_plan(const Ref<Subgraph>& probe) {
  const TensorSpec spec{DType::kFloat32, Shape({128, 128})};
  return compile({{"x", spec}}, [&](std::vector<Tensor> a) {
    Tensor p = call_op1(OpId::PartitionedCall, {branch(a[0], 0.5f)}, Attrs{probe});
    Tensor q = call_op1(OpId::PartitionedCall, {branch(a[0], 2.f)}, Attrs{probe});
    return std::vector<Tensor>{p + q};
  });
}

TEST_F(PlanParallel, BranchesRunOnTwoThreadsAndTheSwitchTurnsThatOff) {
  Tensor x = Tensor::from_vector(values(128 * 128, 1.f), {128, 128});
  const TensorSpec spec{DType::kFloat32, Shape({128, 128})};
  auto* meet = new Probe(spec, true);
  Ref<Subgraph> meet_ref = Ref<Subgraph>::adopt(meet);
  auto plan = probed_plan(meet_ref);
  ASSERT_EQ(plan->num_parallel_regions(), 1u) << plan->debug_string();
  plan->run(std::vector<Tensor>{x});
  EXPECT_EQ(meet->threads().size(), 2u);

  auto* alone = new Probe(spec, false);
  Ref<Subgraph> alone_ref = Ref<Subgraph>::adopt(alone);
  auto plan2 = probed_plan(alone_ref);
  config().parallel_branches = false;
  plan2->run(std::vector<Tensor>{x});
  EXPECT_EQ(alone->threads(), std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_F(PlanParallel, UnknownDimsAreAnalysedAfterTheFirstRun) {
  const TensorSpec spec{DType::kFloat32, Shape({-1, 128})};
  auto plan = compile({{"x", spec}}, [](std::vector<Tensor> a) {
    return std::vector<Tensor>{branch(a[0], 0.5f) * branch(a[0], 2.f)};
  });
  EXPECT_EQ(plan->num_parallel_regions(), 0u);  // costs unknown until a run
  Tensor x = Tensor::from_vector(values(128 * 128, 1.f), {128, 128});
  const std::vector<float> want = (branch(x, 0.5f) * branch(x, 2.f)).to_vector<float>();
  expect_tensor_near<float>(plan->run(std::vector<Tensor>{x})[0], {128, 128}, want, 1e-6);
  EXPECT_EQ(plan->num_parallel_regions(), 1u) << plan->debug_string();
  // Later runs (other sizes too) use the region and stay correct.
  for (int64_t rows : {128, 3, 256}) {
    Tensor xr = Tensor::from_vector(values(rows * 128, 1.f), {rows, 128});
    expect_tensor_near<float>(plan->run(std::vector<Tensor>{xr})[0], {rows, 128},
                              (branch(xr, 0.5f) * branch(xr, 2.f)).to_vector<float>(), 1e-6);
  }
}

TEST_F(PlanParallel, ConcurrentCallsOfOnePlan) {
  // Several threads run the same plan (regions and all) at once.
  const TensorSpec spec{DType::kFloat32, Shape({128, 128})};
  auto plan = compile({{"x", spec}}, [](std::vector<Tensor> a) {
    return std::vector<Tensor>{branch(a[0], 0.5f) + branch(a[0], 2.f)};
  });
  ASSERT_EQ(plan->num_parallel_regions(), 1u);
  Tensor x = Tensor::from_vector(values(128 * 128, 1.f), {128, 128});
  const std::vector<float> want = plan->run(std::vector<Tensor>{x})[0].to_vector<float>();
  std::vector<int> mismatches(3, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 10; ++rep)
        mismatches[static_cast<size_t>(t)] +=
            plan->run(std::vector<Tensor>{x})[0].to_vector<float>() != want;
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST_F(PlanParallel, FunctionsUseRegionsForFusedBranches) {
  // Through kiln::Function: each branch becomes one FusedElementwise node
  // (the reductions keep the fusion pass from merging them into one).
  FunctionOptions o;
  o.name = "two_chains";
  auto body = [](const Tensor& x) {
    return reduce_sum(branch(x, 0.5f), {1}) + reduce_sum(branch(x, 2.f), {1});
  };
  Function f([&](const std::vector<Value>& a) { return Value(body(a[0].tensor())); }, o);
  Tensor x = Tensor::from_vector(values(128 * 128, 1.f), {128, 128});
  auto cf = f.get_concrete_function({Value(x)});
  EXPECT_EQ(cf->plan().num_parallel_regions(), 1u) << cf->plan().debug_string();
  expect_tensor_near<float>(f({Value(x)}).tensor(), {128}, body(x).to_vector<float>(), 1e-5);
}

}  // namespace
}  // namespace kiln
