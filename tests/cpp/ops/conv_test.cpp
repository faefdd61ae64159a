// conv2d and depthwise_conv2d and their backprops against plain reference
// loops (NHWC), with TensorFlow's SAME/VALID arithmetic (conv_test_util.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "conv_test_util.h"
#include "kiln/function.h"
#include "test_util.h"

namespace kiln {
namespace {
// A budget of 4 threads (before the pool starts), so large convolutions run as
// row blocks on any machine.
const bool kFourThreads = (config().num_threads = 4, true);
using testing::expect_error;
using testing::expect_tensor;
using testing::expect_tensor_near;

using testing::dot;
using testing::Out1;
using testing::sizes_of;
using testing::tf_out;
using testing::wave;

struct ConvCase {
  int64_t n, h, w, c;
  int64_t kh, kw, oc;  // oc = channel multiplier for depthwise
  int64_t sh, sw, dh, dw;
  bool same;
};

// Reference conv (depthwise when `dw`), accumulating in double.
template <typename T>
std::vector<T> ref_conv(const ConvCase& p, bool depthwise, const std::vector<T>& x,
                        const std::vector<T>& f, Shape& shape) {
  const Out1 oh = tf_out(p.h, p.kh, p.sh, p.dh, p.same);
  const Out1 ow = tf_out(p.w, p.kw, p.sw, p.dw, p.same);
  const int64_t oc = depthwise ? p.c * p.oc : p.oc;
  shape = Shape{p.n, oh.size, ow.size, oc};
  std::vector<T> out(p.n * oh.size * ow.size * oc);
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t i = 0; i < oh.size; ++i)
      for (int64_t j = 0; j < ow.size; ++j)
        for (int64_t o = 0; o < oc; ++o) {
          double acc = 0;
          for (int64_t ki = 0; ki < p.kh; ++ki)
            for (int64_t kj = 0; kj < p.kw; ++kj) {
              const int64_t y = i * p.sh - oh.pad + ki * p.dh;
              const int64_t z = j * p.sw - ow.pad + kj * p.dw;
              if (y < 0 || y >= p.h || z < 0 || z >= p.w) continue;
              const T* px = x.data() + ((b * p.h + y) * p.w + z) * p.c;
              if (depthwise) {
                const int64_t ci = o / p.oc, m = o % p.oc;
                acc += static_cast<double>(px[ci]) *
                       static_cast<double>(f[((ki * p.kw + kj) * p.c + ci) * p.oc + m]);
              } else {
                for (int64_t ci = 0; ci < p.c; ++ci)
                  acc += static_cast<double>(px[ci]) *
                         static_cast<double>(f[((ki * p.kw + kj) * p.c + ci) * p.oc + o]);
              }
            }
          out[((b * oh.size + i) * ow.size + j) * oc + o] = static_cast<T>(acc);
        }
  return out;
}

// A tensor of `shape` filled with `v` (built directly, no ops involved).
template <typename T>
Tensor full(const Shape& shape, T v) {
  return Tensor::from_vector(std::vector<T>(shape.num_elements(), v), shape);
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> c = {
      {1, 5, 5, 1, 3, 3, 1, 1, 1, 1, 1, false},
      {1, 5, 5, 1, 3, 3, 1, 1, 1, 1, 1, true},
      {2, 7, 6, 3, 3, 2, 4, 1, 1, 1, 1, true},
      {2, 7, 6, 3, 3, 2, 4, 2, 2, 1, 1, true},
      {2, 7, 6, 3, 3, 2, 4, 2, 3, 1, 1, false},
      {1, 4, 4, 2, 3, 3, 2, 2, 2, 1, 1, true},  // asymmetric SAME padding (0 before, 1 after)
      {1, 9, 8, 2, 3, 3, 3, 1, 1, 2, 2, true},  // dilation
      {1, 9, 8, 2, 3, 2, 3, 1, 1, 2, 3, false},
      {3, 6, 6, 5, 1, 1, 7, 1, 1, 1, 1, false},  // 1x1
      {1, 5, 5, 3, 5, 5, 2, 1, 1, 1, 1, false},  // kernel == input
      {1, 3, 3, 2, 5, 5, 2, 1, 1, 1, 1, true},   // kernel > input with SAME
      {2, 12, 10, 16, 3, 3, 8, 2, 1, 1, 1, true},
      {1, 10, 10, 8, 3, 3, 16, 3, 3, 1, 1, true},
      // Large enough to run as blocks of output rows on the pool (first, middle
      // and last blocks differ in their padding).
      {1, 48, 40, 32, 3, 3, 32, 1, 1, 1, 1, true},
      {2, 45, 33, 24, 3, 3, 40, 2, 2, 1, 1, true},
      {1, 50, 30, 16, 5, 3, 48, 1, 1, 2, 1, false},  // dilated, VALID
      {1, 64, 64, 8, 7, 7, 16, 3, 3, 1, 1, true},    // stride 3, 7x7
      {4, 20, 20, 32, 1, 1, 64, 1, 1, 1, 1, false},  // 1x1, a batch
      // Too few pixels per image for enough row blocks: blocks of output channels
      // too (the last one narrower), of one image and of a batch.
      {1, 7, 7, 64, 3, 3, 200, 1, 1, 1, 1, true},
      {2, 7, 7, 64, 3, 3, 144, 1, 1, 1, 1, true},
      {1, 7, 7, 256, 1, 1, 384, 1, 1, 1, 1, false},
      {1, 14, 14, 64, 3, 3, 208, 1, 1, 1, 1, true},   // 2 row blocks for 4 threads
      {1, 1, 1, 1024, 1, 1, 520, 1, 1, 1, 1, false},  // one pixel, a 2 MB filter
  };
  return c;
}

Tensor run_conv(const ConvCase& p, bool depthwise, const Tensor& x, const Tensor& f,
                int stride_form) {
  std::vector<int64_t> st = {p.sh, p.sw}, dl = {p.dh, p.dw};
  if (stride_form == 4) {
    st = {1, p.sh, p.sw, 1};
    dl = {1, p.dh, p.dw, 1};
  } else if (stride_form == 1 && p.sh == p.sw && p.dh == p.dw) {
    st = {p.sh};
    dl = {p.dh};
  }
  const std::string pad = p.same ? "SAME" : "VALID";
  return depthwise ? depthwise_conv2d(x, f, st, pad, dl) : conv2d(x, f, st, pad, dl);
}

template <typename T>
void check_conv(bool depthwise) {
  int form = 0;
  for (const ConvCase& p : conv_cases()) {
    form = (form + 1) % 3;
    const int stride_form = form == 0 ? 1 : form == 1 ? 2 : 4;
    SCOPED_TRACE(::testing::Message()
                 << "N" << p.n << " H" << p.h << " W" << p.w << " C" << p.c << " k" << p.kh << "x"
                 << p.kw << " oc/mult " << p.oc << " s" << p.sh << "," << p.sw << " d" << p.dh
                 << "," << p.dw << (p.same ? " SAME" : " VALID") << " form " << stride_form);
    const Shape xs{p.n, p.h, p.w, p.c}, fs{p.kh, p.kw, p.c, p.oc};
    const auto x = wave<T>(xs.num_elements(), 0.7);
    const auto f = wave<T>(fs.num_elements(), 1.3);
    Shape s;
    const auto want = ref_conv(p, depthwise, x, f, s);
    const Tensor got =
        run_conv(p, depthwise, Tensor::from_vector(x, xs), Tensor::from_vector(f, fs), stride_form);
    expect_tensor_near<T>(got, s, want, std::is_same_v<T, float> ? 1e-4 : 1e-12);
  }
}

TEST(Conv2D, Float32MatchesReference) {
  check_conv<float>(false);
}
TEST(Conv2D, Float64MatchesReference) {
  check_conv<double>(false);
}
TEST(DepthwiseConv2D, Float32MatchesReference) {
  check_conv<float>(true);
}
TEST(DepthwiseConv2D, Float64MatchesReference) {
  check_conv<double>(true);
}

TEST(Conv2D, SamePaddingByHand) {
  // 4x4 input of ones, 3x3 kernel of ones, stride 2, SAME: out 2x2, padding
  // 0 before and 1 after, so the windows hold 9, 6, 6 and 4 ones.
  const Tensor x = full<float>({1, 4, 4, 1}, 1.f);
  const Tensor f = full<float>({3, 3, 1, 1}, 1.f);
  expect_tensor<float>(conv2d(x, f, {2, 2}, "SAME"), {1, 2, 2, 1}, {9, 6, 6, 4});
  expect_tensor<float>(conv2d(x, f, {1, 1}, "VALID"), {1, 2, 2, 1}, {9, 9, 9, 9});
  expect_tensor<float>(depthwise_conv2d(x, f, {2}, "SAME"), {1, 2, 2, 1}, {9, 6, 6, 4});
}

TEST(Conv2D, EmptyTensors) {
  const Tensor f = full<float>({3, 3, 2, 4}, 1.f);
  expect_tensor<float>(conv2d(Tensor::empty(DType::kFloat32, {0, 5, 5, 2}), f, {1, 1}, "SAME"),
                       {0, 5, 5, 4}, {});
  // No input channels: every output is an empty sum.
  expect_tensor<float>(conv2d(full<float>({1, 2, 2, 0}, 1.f),
                              Tensor::empty(DType::kFloat32, {1, 1, 0, 3}), {1, 1}, "VALID"),
                       {1, 2, 2, 3}, std::vector<float>(12, 0.f));
  expect_tensor<double>(conv2d(full<double>({1, 2, 2, 2}, 1.0),
                               Tensor::empty(DType::kFloat64, {1, 1, 2, 0}), {1, 1}, "VALID"),
                        {1, 2, 2, 0}, {});
  expect_tensor<float>(
      depthwise_conv2d(Tensor::empty(DType::kFloat32, {2, 0, 3, 2}), f, {1, 1}, "SAME"),
      {2, 0, 3, 8}, {});
}

TEST(Conv2D, CachedPrimitivesSeeNewFilters) {
  const Tensor x = full<float>({1, 3, 3, 1}, 1.f);
  for (float v : {1.f, 2.f, -0.5f}) {
    const Tensor f = full<float>({2, 2, 1, 1}, v);
    expect_tensor<float>(conv2d(x, f, {1, 1}, "VALID"), {1, 2, 2, 1}, std::vector<float>(4, 4 * v));
  }
}

// Row blocks shorter than the SAME padding: the blocks after the first and
// before the last also reach into the padding (InceptionV3's 5x5 and 7x7 at
// small sizes gave wrong values and NaNs when those blocks shared one shape).
TEST(Conv2D, RowBlocksShorterThanThePadding) {
  for (const ConvCase& p : {ConvCase{1, 8, 8, 48, 5, 5, 64, 1, 1, 1, 1, true},
                            ConvCase{1, 9, 9, 48, 5, 5, 64, 1, 1, 1, 1, true},
                            ConvCase{1, 15, 15, 48, 5, 5, 64, 1, 1, 1, 1, true},
                            ConvCase{1, 12, 12, 48, 7, 7, 64, 1, 1, 1, 1, true},
                            ConvCase{1, 17, 17, 32, 7, 1, 48, 1, 1, 1, 1, true}}) {
    SCOPED_TRACE(::testing::Message() << "H" << p.h << " k" << p.kh << "x" << p.kw);
    const Shape xs{p.n, p.h, p.w, p.c}, fs{p.kh, p.kw, p.c, p.oc};
    const auto x = wave<float>(xs.num_elements(), 0.7);
    const auto f = wave<float>(fs.num_elements(), 1.3);
    Shape s;
    const auto want = ref_conv(p, false, x, f, s);
    expect_tensor_near<float>(
        run_conv(p, false, Tensor::from_vector(x, xs), Tensor::from_vector(f, fs), 2), s, want,
        1e-3);
  }
}

// Channel blocks pack slices of the filter: a rewritten filter is repacked, and a
// filter without a buffer version (wrapped memory) runs as row blocks instead.
TEST(Conv2D, ChannelBlocksFollowFilterContents) {
  const ConvCase p{1, 7, 7, 64, 3, 3, 200, 1, 1, 1, 1, true};
  const Shape xs{p.n, p.h, p.w, p.c}, fs{p.kh, p.kw, p.c, p.oc};
  const auto xv = wave<float>(xs.num_elements(), 0.7);
  const Tensor x = Tensor::from_vector(xv, xs);
  auto fv = wave<float>(fs.num_elements(), 1.3);
  Tensor f = Tensor::from_vector(fv, fs);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(str_cat("round ", round));
    Shape s;
    expect_tensor_near<float>(run_conv(p, false, x, f, 2), s, ref_conv(p, false, xv, fv, s), 1e-3);
    for (auto& v : fv) v = -0.5f * v + 0.125f;
    std::copy(fv.begin(), fv.end(), f.mutable_data<float>());
  }
  Buffer* b = Buffer::wrap(fv.data(), fv.size() * sizeof(float), [] {});
  const Tensor wrapped = Tensor::from_buffer(b, 0, DType::kFloat32, fs);
  b->unref();
  Shape s;
  expect_tensor_near<float>(run_conv(p, false, x, wrapped, 2), s, ref_conv(p, false, xv, fv, s),
                            1e-3);
}

TEST(Conv2D, PackedWeightsFollowFilterContents) {
  const ConvCase p{1, 9, 9, 8, 3, 3, 16, 1, 1, 1, 1, true};
  const Shape xs{p.n, p.h, p.w, p.c}, fs{p.kh, p.kw, p.c, p.oc};
  const auto xv = wave<float>(xs.num_elements(), 0.7);
  const Tensor x = Tensor::from_vector(xv, xs);
  for (bool depthwise : {false, true}) {
    const Shape fshape = depthwise ? Shape{3, 3, 8, 2} : fs;
    ConvCase q = p;
    if (depthwise) q.oc = 2;
    for (double freq : {1.3, 0.4, 1.3, 2.1}) {
      auto fv = wave<float>(fshape.num_elements(), freq);
      Tensor f = Tensor::from_vector(fv, fshape);
      Shape s;
      expect_tensor_near<float>(run_conv(q, depthwise, x, f, 2), s,
                                ref_conv(q, depthwise, xv, fv, s), 1e-4);
      // The same buffer rewritten in place must not reuse the old packing.
      for (auto& v : fv) v = -2 * v + 0.25f;
      std::copy(fv.begin(), fv.end(), f.mutable_data<float>());
      expect_tensor_near<float>(run_conv(q, depthwise, x, f, 2), s,
                                ref_conv(q, depthwise, xv, fv, s), 1e-4);
    }
  }
}

// Wrapped memory (a NumPy array) can change without kiln seeing a write: its
// packing is reused only while the bytes match.
TEST(Conv2D, PackedWeightsOfWrappedMemoryFollowTheBytes) {
  const ConvCase q{1, 9, 9, 8, 3, 3, 16, 1, 1, 1, 1, true};
  const Shape xs{q.n, q.h, q.w, q.c}, fs{q.kh, q.kw, q.c, q.oc};
  const auto xv = wave<float>(xs.num_elements(), 0.7);
  const Tensor x = Tensor::from_vector(xv, xs);
  std::vector<float> storage = wave<float>(fs.num_elements(), 1.1);
  Buffer* b = Buffer::wrap(storage.data(), storage.size() * sizeof(float), [] {});
  const Tensor f = Tensor::from_buffer(b, 0, DType::kFloat32, fs);
  b->unref();
  for (int round = 0; round < 3; ++round) {
    Shape s;
    expect_tensor_near<float>(run_conv(q, false, x, f, 2), s, ref_conv(q, false, xv, storage, s),
                              1e-4);
    for (auto& v : storage) v = 0.5f * v - 0.125f;  // behind kiln's back
  }
}

TEST(Conv2D, ConcurrentCalls) {
  const ConvCase p{2, 12, 10, 16, 3, 3, 8, 2, 1, 1, 1, true};
  const Shape xs{p.n, p.h, p.w, p.c}, fs{p.kh, p.kw, p.c, p.oc};
  const Tensor x = Tensor::from_vector(wave<float>(xs.num_elements(), 0.7), xs);
  const Tensor f = Tensor::from_vector(wave<float>(fs.num_elements(), 1.3), fs);
  const std::vector<float> want = conv2d(x, f, {2, 1}, "SAME").to_vector<float>();
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      bool same = true;
      for (int i = 0; i < 10; ++i)
        same = same && conv2d(x, f, {2, 1}, "SAME").to_vector<float>() == want;
      ok[t] = same;
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << t;
}

TEST(Conv2D, Errors) {
  const Tensor x = Tensor::empty(DType::kFloat32, {1, 5, 5, 3});
  const Tensor f = Tensor::empty(DType::kFloat32, {3, 3, 3, 2});
  expect_error(
      [&] {
        conv2d(x, f, {1, 1}, "same");
      },
      Code::kInvalidArgument, {"Conv2D", "padding", "'SAME'", "'VALID'", "'same'"});
  expect_error(
      [&] {
        conv2d(x, f, {1, 0}, "SAME");
      },
      Code::kInvalidArgument, {"strides", "positive", "[1, 0]"});
  expect_error(
      [&] {
        conv2d(x, f, {1, 1, 1}, "SAME");
      },
      Code::kInvalidArgument, {"strides", "1, 2 or 4", "3"});
  expect_error(
      [&] {
        conv2d(x, f, {2, 1, 1, 1}, "SAME");
      },
      Code::kInvalidArgument, {"strides", "batch and channel"});
  expect_error(
      [&] {
        conv2d(x, f, {1, 1}, "SAME", {0, 1});
      },
      Code::kInvalidArgument, {"dilations", "positive"});
  expect_error(
      [&] {
        conv2d(Tensor::empty(DType::kFloat32, {5, 5, 3}), f, {1, 1}, "SAME");
      },
      Code::kInvalidArgument, {"input", "4-D", "[5,5,3]"});
  expect_error(
      [&] {
        conv2d(x, Tensor::empty(DType::kFloat32, {3, 3, 3}), {1, 1}, "SAME");
      },
      Code::kInvalidArgument, {"filter", "4-D", "[3,3,3]"});
  expect_error(
      [&] {
        conv2d(x, Tensor::empty(DType::kFloat32, {3, 3, 4, 2}), {1}, "SAME");
      },
      Code::kInvalidArgument, {"input channels 3", "in_channels 4", "[1,5,5,3]"});
  expect_error(
      [&] {
        conv2d(x, Tensor::empty(DType::kFloat32, {6, 3, 3, 2}), {1}, "VALID");
      },
      Code::kInvalidArgument, {"negative", "height", "6", "5", "VALID"});
  expect_error(
      [&] {
        conv2d(x, Tensor::empty(DType::kFloat32, {3, 3, 3, 2}), {1}, "VALID", {1, 3});
      },
      Code::kInvalidArgument, {"negative", "width", "effective size 7"});
  expect_error(
      [&] {
        conv2d(x, Tensor::empty(DType::kFloat32, {0, 3, 3, 2}), {1}, "SAME");
      },
      Code::kInvalidArgument, {"filter height and width must be positive"});
  expect_error(
      [&] {
        conv2d(x, Tensor::empty(DType::kFloat64, {3, 3, 3, 2}), {1}, "SAME");
      },
      Code::kInvalidArgument, {"Conv2D", "float32", "float64"});
  expect_error(
      [] {
        conv2d(Tensor::empty(DType::kInt32, {1, 5, 5, 3}),
               Tensor::empty(DType::kInt32, {3, 3, 3, 2}), {1}, "SAME");
      },
      Code::kInvalidArgument, {"input", "float32 or float64", "int32"});
  expect_error(
      [&] {
        depthwise_conv2d(x, Tensor::empty(DType::kFloat32, {3, 3, 2, 2}), {1}, "SAME");
      },
      Code::kInvalidArgument, {"DepthwiseConv2dNative", "channels 3", "channels 2"});
  expect_error([&] { depthwise_conv2d(x, f, {1}, "FULL"); }, Code::kInvalidArgument,
               {"padding", "'SAME', 'VALID'"});
}

// ---- inference with unknown dims ----

class FakeSymbol : public Symbol {
 public:
  std::string tensor_name(int32_t i) const override { return "x:" + std::to_string(i); }
  std::string describe() const override { return "fake"; }
};

TEST(Conv2D, InferenceWithUnknownDims) {
  auto infer = [](OpId id, std::vector<Shape> shapes, Attrs attrs) {
    const OpDef& op = op_def(id);
    std::vector<Tensor> in;
    for (const Shape& s : shapes)
      in.push_back(Tensor::symbolic(new FakeSymbol, 0, DType::kFloat32, s));
    complete_attrs(op, attrs);
    InferContext c(op, in, attrs);
    op.infer(c);
    return c.output(0).shape;
  };
  const std::vector<int64_t> s2 = {2, 2};
  EXPECT_EQ(infer(OpId::Conv2D, {{-1, 10, -1, 3}, {3, 3, 3, 8}}, {s2, std::string("SAME")}),
            Shape({-1, 5, -1, 8}));
  EXPECT_EQ(
      infer(OpId::DepthwiseConv2D, {{1, 10, 10, -1}, {3, 3, 4, 2}}, {s2, std::string("VALID")}),
      Shape({1, 4, 4, 8}));
  EXPECT_EQ(infer(OpId::MaxPool, {{-1, -1, 9, 3}}, {s2, s2, std::string("VALID")}),
            Shape({-1, -1, 4, 3}));
  EXPECT_EQ(infer(OpId::Conv2D, {Shape::unknown_rank(), {3, 3, 3, 8}}, {s2, std::string("SAME")}),
            Shape({-1, -1, -1, -1}));
  expect_error(
      [&] {
        infer(OpId::Conv2D, {{-1, 2, -1, 3}, {3, 3, 3, 8}}, {s2, std::string("VALID")});
      },
      Code::kInvalidArgument, {"negative"});
}

// ---- backward ops ----
// The backprop ops are the adjoints of the forward ops:
// <conv(x, f), dy> = <x, backprop_input(dy)> = <f, backprop_filter(x, dy)>,
// checked in float64 (direct loops); float32 (oneDNN) is compared with it.

struct Backprop {
  Tensor dx, df;
};
Backprop run_backprop(const ConvCase& p, bool depthwise, const Tensor& x, const Tensor& f,
                      const Tensor& dy) {
  const std::vector<int64_t> st = {p.sh, p.sw}, dl = {p.dh, p.dw};
  const std::string pad = p.same ? "SAME" : "VALID";
  if (depthwise)
    return {depthwise_conv2d_backprop_input(sizes_of(x.shape()), f, dy, st, pad, dl),
            depthwise_conv2d_backprop_filter(x, sizes_of(f.shape()), dy, st, pad, dl)};
  return {conv2d_backprop_input(sizes_of(x.shape()), f, dy, st, pad, dl),
          conv2d_backprop_filter(x, sizes_of(f.shape()), dy, st, pad, dl)};
}

// The float64 gradients are adjoints of the forward op; float32 (oneDNN) is
// within 1e-4 of them.
void check_backprop(const ConvCase& p, bool depthwise) {
  SCOPED_TRACE(::testing::Message()
               << (depthwise ? "depthwise" : "conv") << " N" << p.n << " H" << p.h << " W" << p.w
               << " C" << p.c << " k" << p.kh << "x" << p.kw << " oc/mult " << p.oc << " s" << p.sh
               << "," << p.sw << " d" << p.dh << "," << p.dw << (p.same ? " SAME" : " VALID"));
  const Shape xs{p.n, p.h, p.w, p.c}, fs{p.kh, p.kw, p.c, p.oc};
  const Tensor x = Tensor::from_vector(wave<double>(xs.num_elements(), 0.7), xs);
  const Tensor f = Tensor::from_vector(wave<double>(fs.num_elements(), 1.3), fs);
  const Tensor y = run_conv(p, depthwise, x, f, 2);
  const Tensor dy = Tensor::from_vector(wave<double>(y.shape().num_elements(), 0.45), y.shape());
  const Backprop b = run_backprop(p, depthwise, x, f, dy);
  ASSERT_EQ(b.dx.shape(), xs);
  ASSERT_EQ(b.df.shape(), fs);
  const double want = dot(y, dy);
  EXPECT_NEAR(dot(x, b.dx), want, 1e-10 * (1 + std::fabs(want)));
  EXPECT_NEAR(dot(f, b.df), want, 1e-10 * (1 + std::fabs(want)));
  const Backprop b32 = run_backprop(p, depthwise, cast(x, DType::kFloat32),
                                    cast(f, DType::kFloat32), cast(dy, DType::kFloat32));
  expect_tensor_near<float>(b32.dx, xs, cast(b.dx, DType::kFloat32).to_vector<float>(), 1e-4);
  expect_tensor_near<float>(b32.df, fs, cast(b.df, DType::kFloat32).to_vector<float>(), 1e-4);
}

TEST(ConvBackprop, AdjointsAndFloat32) {
  for (bool depthwise : {false, true})
    for (const ConvCase& p : conv_cases()) check_backprop(p, depthwise);
}

// Large enough to run as parts on the pool (4 threads): blocks of dx rows or
// dy rows of single images below a batch of 8, blocks of whole images from 8.
TEST(ConvBackprop, PartsOnThePool) {
  const std::vector<ConvCase> cases = {
      {1, 57, 31, 16, 3, 3, 32, 1, 1, 1, 1, true},
      {3, 41, 23, 16, 3, 3, 24, 2, 2, 1, 1, true},  // stride 2
      {8, 19, 17, 16, 3, 3, 16, 1, 1, 1, 1, false},
      {9, 21, 17, 16, 3, 3, 16, 2, 1, 1, 1, true},   // uneven last block of images
      {1, 50, 30, 16, 5, 3, 24, 1, 1, 2, 2, false},  // dilation 2
      {3, 92, 65, 16, 1, 1, 64, 2, 2, 1, 1,
       false},  // stride past the window: a row no window reads
      {1, 97, 64, 16, 2, 2, 64, 3, 3, 1, 1, false},  // ... two rows
  };
  for (const ConvCase& p : cases) check_backprop(p, false);
  // Depthwise (multiplier 1, oneDNN's depthwise kernels), and the cases above with multipliers.
  const std::vector<ConvCase> depthwise = {
      {1, 112, 96, 32, 3, 3, 1, 1, 1, 1, 1, true},
      {8, 48, 48, 64, 3, 3, 1, 2, 2, 1, 1, true},
      {3, 64, 64, 32, 5, 5, 1, 1, 1, 2, 2, true},
      {9, 40, 40, 64, 3, 3, 1, 1, 1, 1, 1, false},
  };
  for (const ConvCase& p : depthwise) check_backprop(p, true);
  for (const ConvCase& p : cases) check_backprop(p, true);
}

// They run on the pool's threads alone: no OpenMP team joins them.
TEST(ConvBackprop, AddNoThreadsBeyondThePool) {
  auto threads = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                         std::filesystem::directory_iterator{});
  };
  const auto before = threads();
  for (bool depthwise : {false, true}) {
    const ConvCase p{2, 40, 40, 32, 3, 3, depthwise ? 1 : 32, 1, 1, 1, 1, true};
    const Shape xs{p.n, p.h, p.w, p.c}, fs{p.kh, p.kw, p.c, p.oc};
    const Tensor x = Tensor::from_vector(wave<float>(xs.num_elements(), 0.7), xs);
    const Tensor f = Tensor::from_vector(wave<float>(fs.num_elements(), 1.3), fs);
    run_backprop(p, depthwise, x, f, run_conv(p, depthwise, x, f, 2));
  }
  EXPECT_LE(threads() - before, 3);
}

// A 3x3 all-ones kernel, stride 2, SAME on 4x4 (pads 0 before, 1 after): the
// input gradient of all-ones dy counts the windows covering each pixel.
TEST(ConvBackprop, ByHand) {
  const Tensor f = full<float>({3, 3, 1, 1}, 1.f);
  const Tensor dy = full<float>({1, 2, 2, 1}, 1.f);
  expect_tensor<float>(conv2d_backprop_input(Tensor({1, 4, 4, 1}), f, dy, {2, 2}, "SAME"),
                       {1, 4, 4, 1}, {1, 1, 2, 1, 1, 1, 2, 1, 2, 2, 4, 2, 1, 1, 2, 1});
  const Tensor x = reshape(range(1.f, 17.f), {1, 4, 4, 1});
  // Filter tap (i, j) sums the input pixels it reads: rows/cols {i-0, i+2} - 0.
  expect_tensor<float>(conv2d_backprop_filter(x, Tensor({3, 3, 1, 1}), dy, {2, 2}, "SAME"),
                       {3, 3, 1, 1},
                       {1 + 3 + 9 + 11, 2 + 4 + 10 + 12, 3 + 11, 5 + 7 + 13 + 15, 6 + 8 + 14 + 16,
                        7 + 15, 9 + 11, 10 + 12, 11});
}

TEST(ConvBackprop, EmptyTensors) {
  const Tensor f = full<float>({3, 3, 2, 4}, 1.f);
  expect_tensor<float>(
      conv2d_backprop_input(Tensor({0, 5, 5, 2}), f, Tensor::empty(DType::kFloat32, {0, 5, 5, 4}),
                            {1, 1}, "SAME"),
      {0, 5, 5, 2}, {});
  // No output channels: the input gradient is an empty sum.
  expect_tensor<double>(
      conv2d_backprop_input(Tensor({1, 2, 2, 2}), Tensor::empty(DType::kFloat64, {1, 1, 2, 0}),
                            Tensor::empty(DType::kFloat64, {1, 2, 2, 0}), {1, 1}, "VALID"),
      {1, 2, 2, 2}, std::vector<double>(8, 0.0));
  // Empty batch: the filter gradient is zero.
  expect_tensor<float>(
      conv2d_backprop_filter(Tensor::empty(DType::kFloat32, {0, 3, 3, 1}), Tensor({1, 1, 1, 2}),
                             Tensor::empty(DType::kFloat32, {0, 3, 3, 2}), {1, 1}, "VALID"),
      {1, 1, 1, 2}, {0, 0});
  expect_tensor<float>(
      avg_pool_grad(Tensor({0, 4, 4, 2}), Tensor::empty(DType::kFloat32, {0, 2, 2, 2}), {2, 2},
                    {2, 2}, "VALID"),
      {0, 4, 4, 2}, {});
}

// The backward ops are graph ops: traced with sizes from a Shape op and
// unknown dims, they resolve per call.
TEST(ConvBackprop, InAFunction) {
  FunctionOptions opts;
  opts.input_signature = std::vector<ArgSpec>{ArgSpec{DType::kFloat32, Shape{-1, -1, -1, 3}, "x"},
                                              ArgSpec{DType::kFloat32, Shape{3, 3, 3, 4}, "f"},
                                              ArgSpec{DType::kFloat32, Shape{-1, -1, -1, 4}, "dy"}};
  auto body = [](const Tensor& x, const Tensor& f, const Tensor& dy) {
    const std::vector<int64_t> st = {2, 2};
    return std::vector<Tensor>{conv2d_backprop_input(shape(x), f, dy, st, "SAME"),
                               conv2d_backprop_filter(x, shape(f), dy, st, "SAME"),
                               avg_pool_grad(shape(x), x, {1, 1}, {1, 1}, "VALID")};
  };
  Function fn(
      [&](const std::vector<Value>& a) {
        auto r = body(a[0].tensor(), a[1].tensor(), a[2].tensor());
        return Value::list({r[0], r[1], r[2]});
      },
      opts);
  for (int64_t h : {5, 8}) {
    const Shape xs{2, h, 6, 3}, ys{2, (h + 1) / 2, 3, 4}, fs{3, 3, 3, 4};
    const Tensor x = Tensor::from_vector(wave<float>(xs.num_elements(), 0.7), xs);
    const Tensor f = Tensor::from_vector(wave<float>(fs.num_elements(), 1.1), fs);
    const Tensor dy = Tensor::from_vector(wave<float>(ys.num_elements(), 0.3), ys);
    const auto want = body(x, f, dy);
    const Value got = fn({x, f, dy});
    for (size_t i = 0; i < 3; ++i)
      expect_tensor_near<float>(got.items()[i].tensor(), want[i].shape(),
                                want[i].to_vector<float>(), 1e-6);
  }
}

TEST(ConvBackprop, ConcurrentCalls) {
  const ConvCase p{2, 12, 10, 16, 3, 3, 8, 2, 1, 1, 1, true};
  const Shape xs{p.n, p.h, p.w, p.c}, fs{p.kh, p.kw, p.c, p.oc};
  const Tensor x = Tensor::from_vector(wave<float>(xs.num_elements(), 0.7), xs);
  const Tensor f = Tensor::from_vector(wave<float>(fs.num_elements(), 1.3), fs);
  const Tensor dy = Tensor::from_vector(wave<float>(2 * 6 * 10 * 8, 0.2), {2, 6, 10, 8});
  const Backprop want = run_backprop(p, false, x, f, dy);
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      bool same = true;
      for (int i = 0; i < 10; ++i) {
        const Backprop b = run_backprop(p, false, x, f, dy);
        same = same && b.dx.to_vector<float>() == want.dx.to_vector<float>() &&
               b.df.to_vector<float>() == want.df.to_vector<float>();
      }
      ok[t] = same;
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << t;
}

}  // namespace
}  // namespace kiln
