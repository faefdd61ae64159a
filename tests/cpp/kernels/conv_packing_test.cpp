// The budget of convolution filters kept reordered into oneDNN's layout
// (Config::packed_weights_bytes): filters of models no longer run make room for
// new ones, a model larger than the budget keeps its first filters, and every
// result stays right whichever filters are kept.
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "conv_kernel_test_util.h"
#include "kernels/cpu/conv_util.h"
#include "kiln/config.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_tensor_near;

constexpr int64_t kC = 64;                             // channels in and out
constexpr int64_t kFilterBytes = 3 * 3 * kC * kC * 4;  // 147 KB, reordered about as large

Tensor wave(const Shape& s, double freq) {
  return testing::wave(s, freq, 0.2, 0.3);
}

// Filters of one "model": 3x3 convolutions of one geometry.
std::vector<Tensor> filters(int count, double freq) {
  std::vector<Tensor> f;
  for (int i = 0; i < count; ++i) f.push_back(wave({3, 3, kC, kC}, freq + 0.01 * i));
  return f;
}

// Runs every filter on x, checking each against the float64 convolution.
void run_model(const Tensor& x, const std::vector<Tensor>& fs) {
  const Tensor x64 = cast(x, DType::kFloat64);
  for (const Tensor& f : fs) {
    const Tensor want =
        cast(conv2d(x64, cast(f, DType::kFloat64), {1, 1}, "SAME"), DType::kFloat32);
    expect_tensor_near<float>(conv2d(x, f, {1, 1}, "SAME"), want.shape(), want.to_vector<float>(),
                              1e-4);
  }
}

// Each test starts with every earlier packing idle (kPackedIdle, 1 s), so they
// make room as needed, and a budget counted in filters.
class PackedBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = config().packed_weights_bytes;
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  }
  void TearDown() override { config().packed_weights_bytes = saved_; }
  // Filters reordered while running `fs` once.
  static int64_t reorders(const Tensor& x, const std::vector<Tensor>& fs) {
    const int64_t before = cpu::filter_reorders();
    run_model(x, fs);
    return cpu::filter_reorders() - before;
  }
  int64_t saved_ = 0;
  // Direct convolutions: one packing per filter of kFilterBytes (Winograd's
  // channel blocks pack two, each larger than the filter).
  testing::ScopedTf32 direct_{false};
};

// Model a stays alive but is no longer run (an idle model; a dead one's buffers
// may be recycled, which also replaces its packings): b's filters take its room.
TEST_F(PackedBudget, FiltersNotRunLatelyMakeRoom) {
  const Tensor x = wave({1, 12, 12, kC}, 0.37);
  config().packed_weights_bytes = 10 * kFilterBytes;
  const std::vector<Tensor> a = filters(6, 0.5), b = filters(6, 0.9);
  EXPECT_EQ(reorders(x, a), 6);
  EXPECT_EQ(reorders(x, a), 0);  // all kept
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(reorders(x, b), 6);
  // Two of a's idle packings were dropped: b keeps all of its filters (without
  // that, it kept 4 and reordered 2 on every call).
  EXPECT_EQ(reorders(x, b), 0);
  EXPECT_LE(cpu::packed_filter_bytes(), config().packed_weights_bytes);
  // a again: on its first call back its idle packings make room for one another,
  // then it keeps four beside b's recent six, results unchanged throughout.
  EXPECT_LE(reorders(x, a), 6);
  for (int round = 0; round < 2; ++round) EXPECT_EQ(reorders(x, a), 2);
}

TEST_F(PackedBudget, AModelPastTheBudgetKeepsItsFirstFilters) {
  const Tensor x = wave({1, 12, 12, kC}, 0.41);
  config().packed_weights_bytes = 4 * kFilterBytes;
  const std::vector<Tensor> big = filters(10, 1.3);
  EXPECT_EQ(reorders(x, big), 10);
  for (int round = 0; round < 2; ++round) {
    // Its own packings are in use, so none is dropped for a later layer (which
    // would reorder all ten on every call): the first four stay kept.
    EXPECT_EQ(reorders(x, big), 6);
    EXPECT_LE(cpu::packed_filter_bytes(), config().packed_weights_bytes);
  }
}

TEST_F(PackedBudget, NoBudgetReordersEveryCall) {
  config().packed_weights_bytes = 0;
  const Tensor x = wave({1, 12, 12, kC}, 0.29);
  const std::vector<Tensor> fs = filters(3, 0.7);
  for (int round = 0; round < 2; ++round) EXPECT_EQ(reorders(x, fs), 3);
}

// A layer's convolution with other epilogues (graph mode's and jit_compile's
// fused steps) is another primitive with the same weights layout: it finds the
// filter's packing instead of packing it again, directly and as Winograd's.
TEST(PackedShared, OneFiltersEpiloguesShareItsPacking) {
  for (bool winograd : {false, true}) {
    testing::ScopedTf32 tf32(winograd);
    const Tensor x = wave({1, 24, 24, kC}, 0.43), f = wave({3, 3, kC, kC}, 0.61);
    const Tensor bias = wave({kC}, 0.7);
    const Attrs relu = testing::fused_conv_attrs("BiasAdd,Relu");
    const Attrs sigmoid = testing::fused_conv_attrs("BiasAdd,Sigmoid");
    const int64_t before = cpu::filter_reorders();
    conv2d(x, f, {1, 1}, "SAME");                       // direct: the filter's first call
    const Tensor plain = conv2d(x, f, {1, 1}, "SAME");  // settled: Winograd's when on
    const int64_t first = cpu::filter_reorders() - before;
    // Direct's, then Winograd's (where oneDNN has one).
    EXPECT_GE(first, winograd && cpu::winograd_available() ? 2 : 1) << winograd;
    const std::vector<Tensor> in = {x, f, bias};
    const Tensor a = call_op(OpId::FusedConv2D, in, relu)[0];
    const Tensor b = call_op(OpId::FusedConv2D, in, sigmoid)[0];
    EXPECT_EQ(cpu::filter_reorders() - before, first) << winograd;
    const std::vector<float> y = plain.to_vector<float>(), ya = a.to_vector<float>(),
                             yb = b.to_vector<float>(), bv = bias.to_vector<float>();
    for (size_t i = 0; i < y.size(); ++i) {
      const float z = y[i] + bv[i % kC];
      EXPECT_NEAR(ya[i], std::max(z, 0.f), 1e-4);
      EXPECT_NEAR(yb[i], 1 / (1 + std::exp(-z)), 1e-4);
    }
  }
}

}  // namespace
}  // namespace kiln
