// float32 3x3 stride-1 convolutions computed by Winograd's algorithm
// (Config::tensor_float_32, on by default) once their filter is settled (the
// same version as at its previous call): results within float32 tolerance of
// a float64 reference in every split (row blocks, channel blocks, batches, one
// block), with every epilogue (fused post-ops or activations after the
// convolution); a filter that changes every call (training), other
// convolutions, and all of them with the switch off, run directly. On a CPU
// where oneDNN has no Winograd (2.6: below AVX-512) every one runs directly.
#include <cmath>
#include <string>
#include <vector>

#include "conv_kernel_test_util.h"
#include "kernels/cpu/conv_util.h"
#include "kernels/cpu/gemm.h"
#include "kiln/config.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln {
namespace {
// A budget of 2 threads (before the pool starts): this machine's, and enough
// for row and channel blocks.
const bool kTwoThreads = (config().num_threads = 2, true);
using testing::fused_conv_attrs;
using testing::wave;

using Tf32 = testing::ScopedTf32;

struct Case {
  Shape x, f;
  std::string padding;
};

// Row blocks (56 rows, 28 rows), channel blocks over whole images (14x14,
// 7x7), a batch, channels no multiple of 16, a short wide image, VALID.
const std::vector<Case> kCases = {
    {{1, 56, 56, 32}, {3, 3, 32, 32}, "SAME"},   {{1, 28, 28, 64}, {3, 3, 64, 48}, "SAME"},
    {{1, 14, 14, 128}, {3, 3, 128, 96}, "SAME"}, {{1, 7, 7, 256}, {3, 3, 256, 128}, "SAME"},
    {{4, 20, 20, 32}, {3, 3, 32, 32}, "SAME"},   {{1, 30, 30, 20}, {3, 3, 20, 36}, "SAME"},
    {{1, 9, 130, 24}, {3, 3, 24, 40}, "SAME"},   {{1, 34, 34, 16}, {3, 3, 16, 64}, "VALID"},
};

// The convolution in float64, then `ops` (each of args: [C]).
std::vector<double> reference(const Case& c, const Tensor& x, const Tensor& f,
                              const std::vector<std::string>& ops,
                              const std::vector<Tensor>& args) {
  std::vector<double> y =
      conv2d(cast(x, DType::kFloat64), cast(f, DType::kFloat64), {1, 1}, c.padding)
          .to_vector<double>();
  const size_t oc = static_cast<size_t>(c.f.dim(3));
  std::vector<std::vector<float>> a;
  for (const Tensor& t : args) a.push_back(t.to_vector<float>());
  for (size_t i = 0; i < y.size(); ++i) {
    size_t k = 0;
    for (const std::string& op : ops) {
      double& v = y[i];
      if (op == "Relu")
        v = std::max(v, 0.0);
      else if (op == "Clip")
        v = std::min(std::max(v, 0.0), 6.0);
      else if (op == "Swish")
        v = v / (1.0 + std::exp(-v));
      else if (op == "Mul")
        v *= a[k++][i % oc];
      else
        v += a[k++][i % oc];  // BiasAdd, Add
    }
  }
  return y;
}

std::string joined(const std::vector<std::string>& ops) {
  std::string s;
  for (const std::string& op : ops) s += (s.empty() ? "" : ",") + op;
  return s;
}

Tensor run(const Case& c, const Tensor& x, const Tensor& f, const std::vector<std::string>& ops,
           const std::vector<Tensor>& args) {
  if (ops.empty()) return conv2d(x, f, {1, 1}, c.padding);
  std::vector<Tensor> in = {x, f};
  in.insert(in.end(), args.begin(), args.end());
  return call_op(OpId::FusedConv2D, in, fused_conv_attrs(joined(ops), c.padding))[0];
}

// The direct float32 convolution's bound on relative_error.
constexpr double kDirect = 1e-5;

// Largest |got - want| over the output's largest |want|.
double relative_error(const Tensor& got, const std::vector<double>& want) {
  const std::vector<float> g = got.to_vector<float>();
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(g[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / scale;
}

struct Epilogue {
  std::vector<std::string> ops;
  bool winograd;  // whether oneDNN's Winograd takes it
};

// Fused post-ops (bias, ReLU), activations after the convolution (Swish,
// Clip(0, 6)), a batch norm folded into the filter, and a per-channel step after
// an activation (no Winograd: direct).
const std::vector<Epilogue> kEpilogues = {
    {{}, true},
    {{"BiasAdd", "Relu"}, true},
    {{"Mul", "Add", "Swish"}, true},
    {{"BiasAdd", "Clip"}, true},
    {{"Mul", "Relu", "Add"}, false},
};

TEST(ConvWinograd, MatchesTheFloat64ReferenceInEverySplit) {
  Tf32 on(true);
  for (const Case& c : kCases) {
    const Tensor x = wave(c.x, 0.37);
    const int64_t oc = c.f.dim(3);
    for (const Epilogue& e : kEpilogues) {
      const Tensor f = wave(c.f, 0.91, 0.3, 0.2);  // a new filter: its first call direct
      SCOPED_TRACE(str_cat(c.x.debug_string(), " ", c.f.debug_string(), " ", joined(e.ops)));
      std::vector<Tensor> args;
      for (size_t k = 0; k < e.ops.size(); ++k)
        if (e.ops[k] == "Mul" || e.ops[k] == "Add" || e.ops[k] == "BiasAdd")
          args.push_back(wave({oc}, 0.7 + 0.3 * static_cast<double>(k), 0.1) +
                         (e.ops[k] == "Mul" ? 1.f : 0.f));
      const std::vector<double> want = reference(c, x, f, e.ops, args);
      // The first call of a filter is direct; from the second, Winograd's error
      // is ~1e-5 of the output's scale (direct float32: ~1e-6 on AVX-512, up
      // to ~6e-6 on AVX2's kernels over 2304 terms).
      EXPECT_LT(relative_error(run(c, x, f, e.ops, args), want), kDirect);
      const int64_t before = cpu::winograd_blocks();
      const Tensor y = run(c, x, f, e.ops, args);
      const bool winograd = e.winograd && cpu::winograd_available();
      EXPECT_EQ(cpu::winograd_blocks() > before, winograd);
      EXPECT_LT(relative_error(y, want), winograd ? 5e-5 : kDirect);
    }
  }
}

TEST(ConvWinograd, FollowsANewFilterOfTheSameGeometry) {
  Tf32 on(true);
  const Case& c = kCases[0];
  const Tensor x = wave(c.x, 0.37);
  for (double freq : {0.91, 0.53, 0.91}) {
    const Tensor f = wave(c.f, freq, 0.3, 0.2);
    conv2d(x, f, {1, 1}, "SAME");
    const int64_t before = cpu::winograd_blocks();
    const Tensor y = conv2d(x, f, {1, 1}, "SAME");
    EXPECT_EQ(cpu::winograd_blocks() > before, cpu::winograd_available());
    EXPECT_LT(relative_error(y, reference(c, x, f, {}, {})), 5e-5) << freq;
  }
}

// A training step writes the filter before every call: it stays direct (its
// Winograd packing would be transformed anew each call), and turns Winograd's
// once it stops changing.
TEST(ConvWinograd, AFilterWrittenBeforeEveryCallStaysDirect) {
  Tf32 on(true);
  const Case& c = kCases[3];  // channel blocks: the slowest to repack
  const Tensor x = wave(c.x, 0.37);
  Tensor f = wave(c.f, 0.91, 0.3, 0.2);
  const int64_t before = cpu::winograd_blocks();
  for (int step = 0; step < 4; ++step) {
    f.mutable_data<float>()[step] += 0.125f;  // a new version of the buffer
    const Tensor y = conv2d(x, f, {1, 1}, "SAME");
    EXPECT_LT(relative_error(y, reference(c, x, f, {}, {})), kDirect) << step;
  }
  EXPECT_EQ(cpu::winograd_blocks(), before);
  const Tensor y = conv2d(x, f, {1, 1}, "SAME");  // unchanged since the last call
  EXPECT_EQ(cpu::winograd_blocks() > before, cpu::winograd_available());
  EXPECT_LT(relative_error(y, reference(c, x, f, {}, {})), 5e-5);
}

TEST(ConvWinograd, OnlyFloat32ThreeByThreeStrideOneWhenAllowed) {
  struct Other {
    Shape x, f;
    std::vector<int64_t> strides, dilations;
    bool depthwise = false;
    DType dtype = DType::kFloat32;
  };
  const std::vector<Other> others = {
      {{1, 56, 56, 32}, {3, 3, 32, 32}, {2, 2}, {1, 1}},       // stride 2
      {{1, 56, 56, 32}, {5, 5, 32, 32}, {1, 1}, {1, 1}},       // 5x5
      {{1, 56, 56, 32}, {3, 3, 32, 32}, {1, 1}, {2, 2}},       // dilated
      {{1, 56, 56, 32}, {3, 3, 32, 1}, {1, 1}, {1, 1}, true},  // depthwise
      {{1, 8, 8, 32}, {3, 3, 32, 32}, {1, 1}, {1, 1}},         // too little work
      {{1, 56, 56, 8}, {3, 3, 8, 32}, {1, 1}, {1, 1}},         // too few channels
      {{1, 56, 56, 32}, {3, 3, 32, 32}, {1, 1}, {1, 1}, false, DType::kBFloat16},
  };
  Tf32 on(true);
  for (const Other& o : others) {
    SCOPED_TRACE(str_cat(o.x.debug_string(), " ", o.f.debug_string()));
    const Tensor x = cast(wave(o.x, 0.37), o.dtype), f = cast(wave(o.f, 0.91), o.dtype);
    const int64_t before = cpu::winograd_blocks();
    for (int call = 0; call < 2; ++call)  // the second with a settled filter
      o.depthwise ? depthwise_conv2d(x, f, o.strides, "SAME", o.dilations)
                  : conv2d(x, f, o.strides, "SAME", o.dilations);
    EXPECT_EQ(cpu::winograd_blocks(), before);
  }
  // The switch off: every convolution direct, to float32's own precision.
  Tf32 off(false);
  for (const Case& c : kCases) {
    const Tensor x = wave(c.x, 0.37), f = wave(c.f, 0.91, 0.3, 0.2);
    const int64_t before = cpu::winograd_blocks();
    conv2d(x, f, {1, 1}, c.padding);
    const Tensor y = conv2d(x, f, {1, 1}, c.padding);
    EXPECT_EQ(cpu::winograd_blocks(), before);
    EXPECT_LT(relative_error(y, reference(c, x, f, {}, {})), kDirect);
  }
}

// oneDNN 2.6 has Winograd kernels for AVX-512 CPUs alone; kiln::cpu_kernels()
// reports what the kernels use.
TEST(ConvWinograd, AvailableExactlyWithAvx512) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  EXPECT_EQ(cpu::winograd_available(), avx512);
  const CpuKernels k = cpu_kernels();
  EXPECT_EQ(k.winograd, avx512);
  EXPECT_EQ(k.bf16_products, cpu::bf16_gemm_native());
  EXPECT_EQ(k.bf16_convolutions, cpu::conv_bf16_native());
  EXPECT_EQ(k.f32_onednn_products, cpu::f32_gemm_native());
  if (!avx512) {
    EXPECT_FALSE(k.bf16_products || k.bf16_convolutions || k.f32_onednn_products);
  }
}

}  // namespace
}  // namespace kiln
