// The FusedElementwise kernel (src/kernels/cpu/fused.cpp) called directly
// with hand-written programs: register reuse, the per-thread cache of
// prepared programs, broadcast scalars, block boundaries and threads.
#include <cmath>
#include <thread>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_tensor_near;

int64_t op(OpId id) {
  return static_cast<int64_t>(id);
}

Tensor fused(std::vector<Tensor> inputs, std::vector<int64_t> program) {
  return call_op1(OpId::FusedElementwise, std::span<const Tensor>(inputs), Attrs{program});
}

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(0.37f * i) * scale;
  return v;
}

// r1 = tanh(x); r2 = r1 * r1; r3 = exp(x); out = r2 + r3. r1 dies at the
// instruction that reads it twice: its scratch slot must be freed once, or
// r2 and r3 would share a buffer.
std::vector<int64_t> square_program() {
  return {op(OpId::Tanh), 0, -1, op(OpId::Mul), 1, 1, op(OpId::Exp), 0, -1, op(OpId::Add), 2, 3};
}

TEST(FusedKernel, RegisterReadTwiceIsFreedOnce) {
  for (int64_t n : {1, 7, 100, 512, 513, 2000}) {
    SCOPED_TRACE(n);
    std::vector<float> xs = ramp(n, 2.f), want(xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
      want[i] = static_cast<float>(std::pow(std::tanh(double{xs[i]}), 2) + std::exp(double{xs[i]}));
    Tensor got = fused({Tensor::from_vector(xs, {n})}, square_program());
    expect_tensor_near<float>(got, {n}, want, 1e-6);
  }
}

TEST(FusedKernel, BroadcastScalarsAndPreparedProgramsPerKey) {
  // out = (x * s) + y with s a scalar: the same program runs with s as a
  // broadcast scalar and, for a 1-element x, with nothing broadcast (the
  // prepared-program cache is keyed on both).
  const std::vector<int64_t> prog = {op(OpId::Mul), 0, 1, op(OpId::Add), 2, 2};
  const std::vector<int64_t> prog2 = {op(OpId::Mul), 0, 1, op(OpId::Add), 2, 0};
  Tensor s = Tensor(3.f);
  for (int round = 0; round < 3; ++round) {  // repeated calls hit the cache
    std::vector<float> xs = ramp(1000, 1.f), want(xs.size()), want2(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      want[i] = 2.f * (xs[i] * 3.f);
      want2[i] = xs[i] * 3.f + xs[i];
    }
    Tensor x = Tensor::from_vector(xs, {10, 100});
    expect_tensor_near<float>(fused({x, s}, prog), {10, 100}, want, 1e-6);
    expect_tensor_near<float>(fused({x, s}, prog2), {10, 100}, want2, 1e-6);
    expect_tensor_near<float>(fused({Tensor({2.f}), s}, prog), {1}, {12.f}, 1e-6);
  }
}

TEST(FusedKernel, ManyProgramsOnManyThreads) {
  // More distinct programs than the per-thread cache holds, from several
  // threads at once: each result matches its own program.
  constexpr int kPrograms = 12;
  std::vector<float> xs = ramp(300, 1.5f);
  Tensor x = Tensor::from_vector(xs, {300});
  auto program = [](int k) {
    std::vector<int64_t> p;
    int64_t reg = 0;
    for (int i = 0; i <= k; ++i) {  // k + 1 times: reg = tanh(reg) * x
      p.insert(p.end(), {op(OpId::Tanh), reg, -1});
      p.insert(p.end(), {op(OpId::Mul), reg + 1, 0});
      reg += 2;
    }
    return p;
  };
  auto reference = [&](int k) {
    std::vector<float> out(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      double v = xs[i];
      for (int j = 0; j <= k; ++j) v = std::tanh(v) * xs[i];
      out[i] = static_cast<float>(v);
    }
    return out;
  };
  std::vector<std::vector<float>> want;
  for (int k = 0; k < kPrograms; ++k) want.push_back(reference(k));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep)
        for (int k = 0; k < kPrograms; ++k) {
          std::vector<float> got = fused({x}, program((k + t) % kPrograms)).to_vector<float>();
          const auto& w = want[static_cast<size_t>((k + t) % kPrograms)];
          for (size_t i = 0; i < got.size(); ++i)
            if (std::fabs(got[i] - w[i]) > 1e-5f * (1.f + std::fabs(w[i]))) ++failures[t];
        }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(FusedKernel, BadProgramsAreRejectedBeforeRunning) {
  Tensor x = Tensor::from_vector(ramp(8, 1.f), {8});
  testing::expect_error(
      [&] {
        fused({x}, {op(OpId::Tanh), 1, -1});
      },
      Code::kInvalidArgument, {"not yet written"});
  testing::expect_error(
      [&] {
        fused({x}, {op(OpId::Mul), 0, -1});
      },
      Code::kInvalidArgument, {"wrong arity"});
  testing::expect_error(
      [&] {
        fused({x}, {op(OpId::MatMul), 0, 0});
      },
      Code::kInvalidArgument, {"cannot be fused"});
  testing::expect_error([&] { fused({x}, {}); }, Code::kInvalidArgument, {"non-empty"});
}

}  // namespace
}  // namespace kiln
