// fold_pad: a zero Pad before a VALID convolution that pads what SAME would
// becomes the convolution's SAME padding; every other Pad stays. Results are
// checked against the graph before the pass.
#include <string>
#include <utility>
#include <vector>

#include "kiln/executor.h"
#include "kiln/ops.h"
#include "pass_test_util.h"

namespace kiln {
namespace {
using testing::count_ops;
using testing::expect_tensor_near;
using testing::trace;
using testing::wave;
using Pads = std::vector<std::pair<int64_t, int64_t>>;

struct Case {
  Shape x, f;
  int64_t stride, dilation;
  Pads pads;  // [4] pairs, NHWC
  bool depthwise;
};

std::string name_of(const Case& c) {
  std::string p;
  for (const auto& [a, b] : c.pads) p += str_cat("(", a, ",", b, ")");
  return str_cat(c.depthwise ? "depthwise " : "conv ", c.x.debug_string(), " ", c.f.debug_string(),
                 " s", c.stride, " d", c.dilation, " pads ", p);
}

Tensor conv_valid(const Case& c, const Tensor& x, const Tensor& f) {
  const std::vector<int64_t> s = {c.stride, c.stride}, d = {c.dilation, c.dilation};
  return c.depthwise ? depthwise_conv2d(x, f, s, "VALID", d) : conv2d(x, f, s, "VALID", d);
}

// Traces conv(pad(x)), runs fold_pad; checks the outputs against the graph
// before the pass and returns the rewritten count.
size_t fold_and_compare(const Case& c, const Tensor& fill = Tensor(0.f)) {
  const std::vector<Tensor> in = {wave(c.x, 0.37), wave(c.f, 0.91, 0.3, 0.5)};
  auto g = trace(in, [&](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{conv_valid(c, pad(a[0], c.pads, fill), a[1])};
  });
  const std::vector<Tensor> want = Plan::compile(*g)->run(in);
  const PassResult r = fold_pad(*g);
  g->verify();
  prune(*g);
  const std::vector<Tensor> got = Plan::compile(*g)->run(in);
  expect_tensor_near<float>(got[0], want[0].shape(), want[0].to_vector<float>(), 1e-5);
  EXPECT_EQ(count_ops(*g, OpId::Pad), r.rewritten.empty() ? 1 : 0);
  return r.rewritten.size();
}

TEST(FoldPad, PadsThatSamePaddingMakesFold) {
  // Keras' correct_pad before strided convolutions (even and odd sizes, 3x3 and
  // 5x5: MobileNetV3, EfficientNet), stride 1, dilation, rectangular windows.
  const std::vector<Case> cases = {
      {{1, 8, 8, 3}, {3, 3, 3, 4}, 2, 1, {{0, 0}, {0, 1}, {0, 1}, {0, 0}}, false},
      {{1, 9, 7, 3}, {3, 3, 3, 4}, 2, 1, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, false},
      {{2, 12, 12, 4}, {5, 5, 4, 1}, 2, 1, {{0, 0}, {1, 2}, {1, 2}, {0, 0}}, true},
      {{1, 11, 11, 4}, {5, 5, 4, 2}, 2, 1, {{0, 0}, {2, 2}, {2, 2}, {0, 0}}, true},
      {{1, 6, 7, 2}, {3, 3, 2, 5}, 1, 1, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, false},
      {{1, 10, 10, 2}, {3, 3, 2, 3}, 1, 2, {{0, 0}, {2, 2}, {2, 2}, {0, 0}}, false},
      {{1, 9, 10, 2}, {1, 3, 2, 3}, 1, 1, {{0, 0}, {0, 0}, {1, 1}, {0, 0}}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(name_of(c));
    EXPECT_EQ(fold_and_compare(c), 1u);
  }
}

TEST(FoldPad, OtherPadsStay) {
  const std::vector<Case> cases = {
      // ResNet's 3 each side before a 7x7 stride-2 convolution: SAME pads (2, 3).
      {{1, 16, 16, 3}, {7, 7, 3, 4}, 2, 1, {{0, 0}, {3, 3}, {3, 3}, {0, 0}}, false},
      {{1, 8, 8, 3}, {3, 3, 3, 4}, 2, 1, {{0, 0}, {1, 0}, {1, 0}, {0, 0}}, false},  // before
      {{1, 8, 8, 3}, {3, 3, 3, 4}, 2, 1, {{0, 0}, {0, 1}, {0, 2}, {0, 0}}, false},  // more
      {{1, 8, 8, 3}, {3, 3, 3, 4}, 2, 1, {{1, 0}, {0, 1}, {0, 1}, {0, 0}}, false},  // batch
      {{1, 8, 8, 3}, {3, 3, 4, 1}, 2, 1, {{0, 0}, {0, 1}, {0, 1}, {0, 1}}, true},   // channels
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(name_of(c));
    EXPECT_EQ(fold_and_compare(c), 0u);
  }
  const Case& same = {{1, 8, 8, 3}, {3, 3, 3, 4}, 2, 1, {{0, 0}, {0, 1}, {0, 1}, {0, 0}}, false};
  EXPECT_EQ(fold_and_compare(same, Tensor(0.5f)), 0u);  // not zeros
  EXPECT_EQ(fold_and_compare(same, Tensor(-0.f)), 0u);  // -0 is kept as written
}

TEST(FoldPad, AConvolutionAlreadySameOrOfUnknownSizeIsLeftAlone) {
  const Tensor x = wave({1, 8, 8, 3}, 0.3), f = wave({3, 3, 3, 4}, 0.7);
  const Pads pads = {{0, 0}, {0, 1}, {0, 1}, {0, 0}};
  auto g = trace({x, f}, [&](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{conv2d(pad(a[0], pads), a[1], {2, 2}, "SAME")};
  });
  EXPECT_FALSE(fold_pad(*g).changed());
  // Height and width known only at run time.
  auto gu = std::make_unique<Graph>("f");
  {
    TracingContext tc(*gu);
    ContextScope scope(tc);
    const Tensor xu = tc.add_input("x", DType::kFloat32, Shape{1, -1, -1, 3});
    const Tensor fu = tc.add_input("f", DType::kFloat32, Shape{3, 3, 3, 4});
    gu->outputs().push_back(tc.edge_for(conv2d(pad(xu, pads), fu, {2, 2}, "VALID")));
  }
  EXPECT_FALSE(fold_pad(*gu).changed());
}

TEST(FoldPad, APadWithOtherUsersStaysForThem) {
  const Tensor x = wave({1, 8, 8, 3}, 0.3), f = wave({3, 3, 3, 4}, 0.7);
  const Pads pads = {{0, 0}, {0, 1}, {0, 1}, {0, 0}};
  const std::vector<Tensor> in = {x, f};
  auto g = trace(in, [&](const std::vector<Tensor>& a) {
    const Tensor p = pad(a[0], pads);
    return std::vector<Tensor>{conv2d(p, a[1], {2, 2}, "VALID"), p * 2.f};
  });
  const std::vector<Tensor> want = Plan::compile(*g)->run(in);
  const PassResult r = fold_pad(*g);
  ASSERT_EQ(r.rewritten.size(), 1u);
  EXPECT_EQ(r.rewritten[0].second, "Conv2D of zero PadV2 'Pad' -> SAME padding");
  prune(*g);
  EXPECT_EQ(count_ops(*g, OpId::Pad), 1);
  const std::vector<Tensor> got = Plan::compile(*g)->run(in);
  for (size_t i = 0; i < 2; ++i)
    expect_tensor_near<float>(got[i], want[i].shape(), want[i].to_vector<float>(), 1e-5);
}

}  // namespace
}  // namespace kiln
