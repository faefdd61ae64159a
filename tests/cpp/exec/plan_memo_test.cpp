// Values a plan computes from variables alone, kept between runs (Plan::Memo,
// src/exec/plan_memo.cpp): a batch norm's scale and shift are computed once
// and reused while their variables are unchanged; every kind of write (assign,
// in-place assign_add, assigning an earlier value back) is seen on the next
// call; functions that write state keep nothing; the switch and the give-up
// after runs that always change the variables work; graph and jit agree with
// eager code throughout.
#include <thread>

#include "jit/jit_test_util.h"
#include "kiln/executor.h"
#include "kiln/profiler.h"
#include "kiln/variable.h"
#include "test_util.h"

namespace kiln {
namespace {
using jit::testing::make;
using testing::expect_tensor_near;

class PlanMemo : public ::testing::TestWithParam<bool> {
 protected:
  void TearDown() override { config().memoize_variable_values = true; }
};

std::vector<float> ramp(int64_t n, float start, float step) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + step * static_cast<float>(i);
  return v;
}

// Keras's inference batch norm over the last axis of x [4, 8], then a product
// with a weight matrix that is also read by derived math (w * 0.5 summed).
struct Model {
  Variable gamma{Tensor::from_vector(ramp(8, 0.5f, 0.1f), {8}), "gamma"};
  Variable beta{Tensor::from_vector(ramp(8, -0.2f, 0.05f), {8}), "beta"};
  Variable mean{Tensor::from_vector(ramp(8, 0.1f, 0.02f), {8}), "mean"};
  Variable var{Tensor::from_vector(ramp(8, 1.f, 0.25f), {8}), "var"};
  Variable w{Tensor::from_vector(ramp(64, -1.f, 0.03f), {8, 8}), "w"};

  Value operator()(const std::vector<Value>& a) const {
    const Tensor& x = a[0].tensor();
    const Tensor scale = gamma.read_value() * rsqrt(var.read_value() + 1e-3f);
    const Tensor shift = beta.read_value() - mean.read_value() * scale;
    const Tensor wv = w.read_value();
    const Tensor y = matmul(x * scale + shift, wv) + reduce_sum(wv * 0.5f, {0});
    return Value::list({Value(y), Value(scale)});
  }
};

void expect_near(const Tensor& got, const Tensor& want, float tol = 1e-5f) {
  ASSERT_EQ(got.shape(), want.shape());
  const auto g = got.to_vector<float>(), w = want.to_vector<float>();
  for (size_t j = 0; j < g.size(); ++j)
    EXPECT_NEAR(g[j], w[j], tol * (1.f + std::abs(w[j]))) << "element " << j;
}

void expect_matches_eager(Function& f, const Model& m, const Tensor& x) {
  const Value got = f({Value(x)}), want = m({Value(x)});
  for (size_t i = 0; i < 2; ++i) expect_near(got.items()[i].tensor(), want.items()[i].tensor());
}

const Plan& plan_of(Function& f, const Tensor& x) {
  return f.get_concrete_function({Value(x)})->plan();
}

TEST_P(PlanMemo, BatchNormMathIsKeptUntilAVariableChanges) {
  Model m;
  Function f = make([&](const std::vector<Value>& a) { return m(a); }, GetParam());
  const Tensor x = Tensor::from_vector(ramp(32, -2.f, 0.13f), {4, 8});
  expect_matches_eager(f, m, x);
  const Plan& plan = plan_of(f, x);
  ASSERT_GT(plan.num_memoized_steps(), 0u) << plan.debug_string();
  const int64_t hits0 = plan.memo_hits();
  for (int i = 0; i < 3; ++i) expect_matches_eager(f, m, x);
  EXPECT_GE(plan.memo_hits(), hits0 + 2);

  // Every kind of write is seen by the next call.
  m.var.assign(Tensor::from_vector(ramp(8, 2.f, 0.5f), {8}));
  int64_t before = plan.memo_hits();
  expect_matches_eager(f, m, x);
  EXPECT_EQ(plan.memo_hits(), before);
  expect_matches_eager(f, m, x);
  EXPECT_EQ(plan.memo_hits(), before + 1);

  m.gamma.assign_add(Tensor::from_vector(ramp(8, 0.3f, 0.f), {8}));  // in place when unshared
  expect_matches_eager(f, m, x);
  m.w.assign_sub(Tensor::from_vector(ramp(64, 0.01f, 0.f), {8, 8}));
  expect_matches_eager(f, m, x);

  // A value assigned back (the same buffer at the same version as before).
  const Tensor first = Tensor::from_vector(ramp(8, -0.2f, 0.05f), {8});
  const Tensor second = Tensor::from_vector(ramp(8, 0.4f, -0.1f), {8});
  for (const Tensor& t : {first, second, first, second}) {
    m.beta.assign(t);
    expect_matches_eager(f, m, x);
    expect_matches_eager(f, m, x);
  }
}

// A run reusing the kept values shows as one "kept values" event; the steps it
// skipped have no kernel events.
TEST_P(PlanMemo, TheProfilerShowsTheReuse) {
  Model m;
  Function f = make([&](const std::vector<Value>& a) { return m(a); }, GetParam());
  const Tensor x = Tensor::from_vector(ramp(32, 0.2f, 0.1f), {4, 8});
  for (int i = 0; i < 2; ++i) expect_matches_eager(f, m, x);
  auto profile = [&] {
    profiler::start();
    expect_matches_eager(f, m, x);
    return profiler::stop();
  };
  auto kernels = [](const profiler::Profile& p) {
    int n = 0;
    for (const profiler::Event& e : p.events) n += e.category == "kernel";
    return n;
  };
  const profiler::Profile on = profile();
  config().memoize_variable_values = false;
  const profiler::Profile off = profile();
  const profiler::Event* kept = nullptr;
  for (const profiler::Event& e : on.events)
    if (e.name == "kept values") kept = &e;
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->category, "executor");
  ASSERT_EQ(kept->args.size(), 2u);
  const size_t skipped = plan_of(f, x).num_memoized_steps();
  EXPECT_EQ(kept->args[0],
            (std::pair<std::string, std::string>("skipped steps", str_cat(skipped))));
  EXPECT_EQ(kernels(off) - kernels(on), static_cast<int>(skipped));
  for (const profiler::Event& e : off.events) EXPECT_NE(e.name, "kept values");
}

TEST_P(PlanMemo, TheSwitchTurnsItOff) {
  Model m;
  Function f = make([&](const std::vector<Value>& a) { return m(a); }, GetParam());
  const Tensor x = Tensor::from_vector(ramp(32, 1.f, -0.07f), {4, 8});
  expect_matches_eager(f, m, x);
  const Plan& plan = plan_of(f, x);
  config().memoize_variable_values = false;
  const int64_t hits = plan.memo_hits();
  for (int i = 0; i < 3; ++i) expect_matches_eager(f, m, x);
  m.mean.assign(Tensor::from_vector(ramp(8, 1.f, 0.f), {8}));
  expect_matches_eager(f, m, x);
  EXPECT_EQ(plan.memo_hits(), hits);
  config().memoize_variable_values = true;
  for (int i = 0; i < 3; ++i) expect_matches_eager(f, m, x);
  EXPECT_GT(plan.memo_hits(), hits);
}

TEST_P(PlanMemo, VariablesChangingOnEveryRunStopTheKeeping) {
  Model m;
  Function f = make([&](const std::vector<Value>& a) { return m(a); }, GetParam());
  const Tensor x = Tensor::from_vector(ramp(32, 0.5f, 0.01f), {4, 8});
  for (int i = 0; i < 12; ++i) {
    m.var.assign_add(Tensor::from_vector(ramp(8, 0.01f, 0.f), {8}));  // scale is returned
    expect_matches_eager(f, m, x);
  }
  const Plan& plan = plan_of(f, x);
  EXPECT_EQ(plan.memo_hits(), 0);
  for (int i = 0; i < 3; ++i) expect_matches_eager(f, m, x);  // correct, nothing kept
  EXPECT_EQ(plan.memo_hits(), 0);
}

TEST_P(PlanMemo, FunctionsThatWriteStateKeepNothing) {
  Variable v(Tensor::from_vector(std::vector<float>{1.f, 2.f}, {2}), "v");
  Variable step(Tensor(0.f), "step");
  Function f = make(
      [&](const std::vector<Value>& a) {
        const Tensor r = a[0].tensor() * exp(v.read_value());
        step.assign_add(Tensor(1.f));
        return Value(r);
      },
      GetParam());
  const Tensor x = Tensor::from_vector(std::vector<float>{3.f, 4.f}, {2});
  for (int i = 0; i < 3; ++i)
    expect_tensor_near<float>(f({Value(x)}).tensor(), {2},
                              {3.f * std::exp(1.f), 4.f * std::exp(2.f)});
  EXPECT_EQ(plan_of(f, x).num_memoized_steps(), 0u);
  expect_tensor_near<float>(step.read_value(), {}, {3.f});
}

TEST_P(PlanMemo, AValueComputedOnlyFromVariablesMayBeTheOutput) {
  Variable v(Tensor::from_vector(std::vector<float>{0.f, 1.f, 2.f}, {3}), "v");
  Function f = make([&](const std::vector<Value>&) { return Value(tanh(v.read_value()) * 2.f); },
                    GetParam());
  const Tensor unused(1.f);
  for (float shift : {0.f, 0.f, 1.f, 1.f, -3.f}) {
    if (shift != 0.f)
      v.assign_add(Tensor::from_vector(std::vector<float>{shift, shift, shift}, {3}));
    const Tensor want = tanh(v.read_value()) * 2.f;
    expect_near(f({Value(unused)}).tensor(), want);
  }
}

TEST_P(PlanMemo, ConcurrentCallersAgree) {
  Model m;
  Function f = make([&](const std::vector<Value>& a) { return m(a); }, GetParam());
  const Tensor x = Tensor::from_vector(ramp(32, -1.f, 0.05f), {4, 8});
  const Tensor want = m({Value(x)}).items()[0].tensor();
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const Tensor got = f({Value(x)}).items()[0].tensor();
        const auto g = got.to_vector<float>(), w = want.to_vector<float>();
        for (size_t j = 0; j < g.size(); ++j)
          bad[static_cast<size_t>(t)] += std::abs(g[j] - w[j]) > 1e-5f * (1.f + std::abs(w[j]));
      }
    });
  for (auto& th : threads) th.join();
  for (int b : bad) EXPECT_EQ(b, 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, PlanMemo, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Jit" : "Graph"; });

}  // namespace
}  // namespace kiln
