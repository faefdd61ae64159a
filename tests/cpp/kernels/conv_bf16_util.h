// Shared by the bfloat16 convolution tests (native kernels, and the float32
// fallback of CPUs without bf16 kernels): cases covering every way the
// convolution kernel splits its work, and a float64 reference.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kiln/context.h"
#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/ops.h"
#include "kiln/trace.h"
#include "test_util.h"

namespace kiln::testing {

struct Bf16Case {
  int64_t n, h, w, c, k, out;  // out = filters, or the multiplier when depthwise
  bool depthwise;
  std::string padding;
};

inline std::string bf16_case_name(const Bf16Case& p) {
  return str_cat(p.depthwise ? "depthwise " : "conv ", p.n, "x", p.h, "x", p.w, "x", p.c, " k", p.k,
                 " out ", p.out, " ", p.padding);
}

/// With 4 threads: one thread, row blocks, channel blocks (7x7, one pixel with a
/// 2 MB filter, 14x14 in two row blocks, a batch), depthwise row blocks.
inline const std::vector<Bf16Case>& bf16_cases() {
  static const std::vector<Bf16Case> c = {
      {1, 9, 9, 8, 3, 16, false, "SAME"},      {2, 10, 8, 4, 3, 6, false, "VALID"},
      {1, 48, 40, 32, 3, 32, false, "SAME"},   {1, 7, 7, 64, 3, 200, false, "SAME"},
      {2, 7, 7, 64, 3, 144, false, "SAME"},    {1, 14, 14, 64, 3, 208, false, "SAME"},
      {1, 1, 1, 1024, 1, 520, false, "VALID"}, {1, 14, 14, 96, 3, 1, true, "SAME"},
      {2, 10, 9, 4, 3, 2, true, "SAME"},       {1, 64, 64, 32, 3, 1, true, "SAME"},
  };
  return c;
}

/// A smooth, sign-changing float32 pattern.
inline Tensor bf16_wave(const Shape& s, double freq) {
  std::vector<float> v(static_cast<size_t>(s.num_elements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(0.5 * std::sin(freq * static_cast<double>(i) + 0.3));
  return Tensor::from_vector(v, s);
}

/// The bf16 convolution of `p` against float64 on the same (bf16) values: the
/// products are exact in float32, so the error is the output's rounding.
inline void check_bf16_conv(const Bf16Case& p) {
  const Tensor x = cast(bf16_wave({p.n, p.h, p.w, p.c}, 0.7), DType::kBFloat16);
  const Tensor f = cast(bf16_wave({p.k, p.k, p.c, p.out}, 1.3), DType::kBFloat16);
  auto run = [&](const Tensor& a, const Tensor& b) {
    return p.depthwise ? depthwise_conv2d(a, b, {1, 1}, p.padding)
                       : conv2d(a, b, {1, 1}, p.padding);
  };
  const Tensor got = run(x, f);
  ASSERT_EQ(got.dtype(), DType::kBFloat16);
  const Tensor want = run(cast(x, DType::kFloat64), cast(f, DType::kFloat64));
  expect_tensor_near<float>(cast(got, DType::kFloat32), want.shape(),
                            cast(want, DType::kFloat32).to_vector<float>(), 8e-3);
  // Called again (packed filters reused): the same values.
  EXPECT_EQ(cast(run(x, f), DType::kFloat32).to_vector<float>(),
            cast(got, DType::kFloat32).to_vector<float>());
}

/// The bf16 gradients of `p`'s convolution (Conv2DBackpropInput/Filter or the
/// depthwise ones) against float64 on the same (bf16) values: float32
/// accumulation, each gradient rounded once; the cases' sizes run them in one
/// primitive and as parts on the pool.
inline void check_bf16_conv_backprop(const Bf16Case& p) {
  const auto bf = DType::kBFloat16, f64 = DType::kFloat64;
  const Tensor x = cast(bf16_wave({p.n, p.h, p.w, p.c}, 0.7), bf);
  const Tensor f = cast(bf16_wave({p.k, p.k, p.c, p.out}, 1.3), bf);
  const Shape ys =
      (p.depthwise ? depthwise_conv2d(x, f, {1, 1}, p.padding) : conv2d(x, f, {1, 1}, p.padding))
          .shape();
  const Tensor dy = cast(bf16_wave(ys, 0.45), bf);
  auto sizes = [](const Shape& s) { return Tensor::from_vector(s.to_vector(), Shape{s.rank()}); };
  auto grads = [&](const Tensor& a, const Tensor& b, const Tensor& d) {
    if (p.depthwise)
      return std::pair{depthwise_conv2d_backprop_input(sizes(a.shape()), b, d, {1, 1}, p.padding),
                       depthwise_conv2d_backprop_filter(a, sizes(b.shape()), d, {1, 1}, p.padding)};
    return std::pair{conv2d_backprop_input(sizes(a.shape()), b, d, {1, 1}, p.padding),
                     conv2d_backprop_filter(a, sizes(b.shape()), d, {1, 1}, p.padding)};
  };
  const auto [dx, df] = grads(x, f, dy);
  const auto [want_dx, want_df] = grads(cast(x, f64), cast(f, f64), cast(dy, f64));
  for (const auto& [got, want] : {std::pair{dx, want_dx}, std::pair{df, want_df}}) {
    ASSERT_EQ(got.dtype(), bf);
    expect_tensor_near<float>(cast(got, DType::kFloat32), want.shape(),
                              cast(want, DType::kFloat32).to_vector<float>(), 8e-3);
  }
}

/// One fused epilogue of the bf16 cases: its steps, whether the filter stays
/// float32 (conv_float_filters' form: the leading affine steps fold into its
/// packing) and which step's operand is a residual (-1: none).
struct Bf16Epilogue {
  std::vector<std::string> ops;
  bool f32_filter;
  int residual = -1;
};

inline const std::vector<Bf16Epilogue>& bf16_epilogues() {
  static const std::vector<Bf16Epilogue> e = {
      {{"BiasAdd", "Mul", "Add", "Swish"}, true},   // folded, then swish
      {{"BiasAdd", "Mul", "Add", "Swish"}, false},  // all post-ops (a bf16 filter)
      {{"Mul", "Add", "Add", "Relu"}, true, 2},     // batch norm, residual, relu
      {{"Sub", "Sigmoid", "Mul"}, false},          {{"BiasAdd", "Clip"}, true},
  };
  return e;
}

/// `p`'s convolution fused with `e` (_FusedConv2D / _FusedDepthwiseConv2dNative
/// on a bf16 input, float32 per-channel operands, a bf16 residual) against
/// float64 on the same values: the convolution of the bf16 input by the
/// filter's bf16 values, the steps after it, rounded once. Allowed error: the
/// output's rounding, plus (a float32 filter) the factors folded in before the
/// filter's rounding, at most 2^-8 of the absolute terms' sum times the factor.
inline void check_bf16_fused_conv(const Bf16Case& p, const Bf16Epilogue& e) {
  const auto bf = DType::kBFloat16, f64 = DType::kFloat64;
  const Tensor x = cast(bf16_wave({p.n, p.h, p.w, p.c}, 0.7), bf);
  const Tensor f32 = bf16_wave({p.k, p.k, p.c, p.out}, 1.3);
  const Tensor f = e.f32_filter ? f32 : cast(f32, bf);
  auto conv = [&](const Tensor& a, const Tensor& b) {
    return p.depthwise ? depthwise_conv2d(a, b, {1, 1}, p.padding)
                       : conv2d(a, b, {1, 1}, p.padding);
  };
  const Tensor f_values = cast(cast(f32, bf), f64);  // the filter's bf16 values
  const std::vector<double> y = conv(cast(x, f64), f_values).to_vector<double>();
  const std::vector<double> mag = conv(abs(cast(x, f64)), abs(f_values)).to_vector<double>();
  const Shape ys = conv(cast(x, f64), f_values).shape();
  const int64_t oc = ys.dim(3);
  std::vector<Tensor> args;
  for (size_t k = 0; k < e.ops.size(); ++k) {
    const std::string& op = e.ops[k];
    if (op == "Swish" || op == "Relu" || op == "Sigmoid" || op == "Clip") continue;
    if (static_cast<int>(k) == e.residual)  // one pixel: a float32 [1, 1, 1, C] operand
      args.push_back(ys.dim(0) * ys.dim(1) * ys.dim(2) == 1 ? bf16_wave(ys, 0.53)
                                                            : cast(bf16_wave(ys, 0.53), bf));
    else if (op == "Sub")
      args.push_back(Tensor(0.25f));  // one element
    else
      args.push_back(bf16_wave({oc}, 0.9 + 0.2 * static_cast<double>(k)) +
                     (op == "Mul" ? 1.f : 0.f));
  }
  std::vector<std::vector<double>> a;
  for (const Tensor& t : args) a.push_back(cast(t, f64).to_vector<double>());
  std::string joined;
  for (const std::string& op : e.ops) joined += (joined.empty() ? "" : ",") + op;
  std::vector<Tensor> in = {x, f};
  in.insert(in.end(), args.begin(), args.end());
  const Attrs attrs = {
      std::vector<int64_t>{1, 1}, p.padding, std::vector<int64_t>{1, 1}, joined, 0.0, 1.5};
  const OpId id = p.depthwise ? OpId::FusedDepthwiseConv2D : OpId::FusedConv2D;
  const Tensor got = call_op1(id, in, attrs);
  ASSERT_EQ(got.dtype(), bf);
  ASSERT_EQ(got.shape(), ys);
  const std::vector<float> g = cast(got, DType::kFloat32).to_vector<float>();
  for (size_t i = 0; i < y.size(); ++i) {
    double v = y[i], err = 0, factor = 1;
    size_t k = 0;
    for (const std::string& op : e.ops) {
      const bool takes = op == "BiasAdd" || op == "Mul" || op == "Add" || op == "Sub";
      const std::vector<double>* arg = takes ? &a[k++] : nullptr;
      const double q = arg ? (*arg)[arg->size() == 1          ? 0
                                    : arg->size() == y.size() ? i
                                                              : i % static_cast<size_t>(oc)]
                           : 0.0;
      if (op == "Mul") factor *= std::fabs(q), v *= q;
      if (op == "Add" || op == "BiasAdd") v += q;
      if (op == "Sub") v -= q;
      if (op == "Relu") v = std::max(v, 0.0);
      if (op == "Clip") v = std::clamp(v, 0.0, 1.5);
      if (op == "Sigmoid") v = 1.0 / (1.0 + std::exp(-v));
      if (op == "Swish") v = v / (1.0 + std::exp(-v));
    }
    if (e.f32_filter) err = std::ldexp(mag[i] * factor, -8);
    ASSERT_NEAR(g[i], v, std::ldexp(std::fabs(v), -8) + 1.1 * err + 1e-6) << "at flat index " << i;
  }
  // Called again (packed filters reused): the same values.
  EXPECT_EQ(cast(call_op1(id, in, attrs), DType::kFloat32).to_vector<float>(), g);
}

}  // namespace kiln::testing
