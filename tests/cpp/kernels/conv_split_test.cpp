// How forward convolutions split over kiln's pool (kernels/cpu/conv_split.h):
// small convolutions (MobileNetV3Small's 1-3M multiply-adds) as one block per
// thread, large ones as four per thread (a busy machine's balance), the
// smallest not at all; and the split results against float64.
#include "kernels/cpu/conv_split.h"

#include <string>
#include <vector>

#include "conv_kernel_test_util.h"
#include "kiln/config.h"
#include "kiln/ops.h"
#include "kiln/thread_pool.h"
#include "test_util.h"

namespace kiln {
namespace {
const bool kTwoThreads = (config().num_threads = 2, true);
using testing::wave;

// NHWC geometry of a stride-1 SAME convolution.
cpu::ConvGeom geom(int64_t n, int64_t h, int64_t c, int64_t k, int64_t oc) {
  const int64_t pad = (k - 1) / 2;
  return cpu::ConvGeom{n, h, h, c, k,   k,   oc,          1,           h,    h,
                       1, 1, 1, 1, pad, pad, k - 1 - pad, k - 1 - pad, false};
}

int64_t blocks(const cpu::Split& s, const cpu::ConvGeom& g) {
  if (s.rows == 0) return 1;
  return g.n * s.per_image * (s.oc_block ? cpu::ceil_div(g.oc, s.oc_block) : 1);
}

TEST(ConvSplit, BlocksFollowTheWork) {
  ASSERT_EQ(ThreadPool::global().num_threads(), 2);
  struct Case {
    cpu::ConvGeom g;
    int64_t want;
    std::string what;
  };
  const std::vector<Case> cases = {
      {geom(1, 7, 96, 1, 576), 2, "7x7 96->576 (2.7M): channel blocks, one per thread"},
      {geom(1, 28, 88, 1, 24), 2, "28x28 88->24 (1.7M): row blocks, one per thread"},
      {geom(1, 14, 96, 1, 576), 2, "14x14 96->576 (10.8M): two blocks"},
      {geom(1, 56, 64, 3, 64), 8, "56x56 64->64 3x3 (116M): four per thread"},
      {geom(1, 7, 16, 1, 16), 1, "7x7 16->16 (12.5K): one call"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(blocks(cpu::split_of(c.g, true), c.g), c.want);
  }
}

TEST(ConvSplit, SmallSplitConvolutionsMatchFloat64) {
  for (const auto& [x, f] : std::vector<std::pair<Shape, Shape>>{{{1, 7, 7, 96}, {1, 1, 96, 576}},
                                                                 {{1, 28, 28, 88}, {1, 1, 88, 24}},
                                                                 {{1, 14, 14, 40}, {1, 1, 40, 240}},
                                                                 {{2, 7, 7, 32}, {3, 3, 32, 72}}}) {
    SCOPED_TRACE(x.to_string() + " " + f.to_string());
    const Tensor xt = wave(x, 0.37), ft = wave(f, 0.91);
    const std::vector<double> want =
        conv2d(cast(xt, DType::kFloat64), cast(ft, DType::kFloat64), {1, 1}, "SAME")
            .to_vector<double>();
    const std::vector<float> got = conv2d(xt, ft, {1, 1}, "SAME").to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    double err = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err = std::max(err, std::abs(got[i] - want[i]));
      scale = std::max(scale, std::abs(want[i]));
    }
    EXPECT_LT(err / scale, 1e-5);
  }
}

}  // namespace
}  // namespace kiln
