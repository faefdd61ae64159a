// Shared by the bfloat16 convolution tests (native kernels, and the float32
// fallback of CPUs without bf16 kernels): cases covering every way the
// convolution kernel splits its work, and a float64 reference.
#pragma once
#include <cmath>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace kiln::testing
