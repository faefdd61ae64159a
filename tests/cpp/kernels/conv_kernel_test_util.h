// Helpers shared by the convolution kernel tests (fold, packing, Winograd).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/config.h"
#include "kiln/op.h"
#include "kiln/tensor.h"

namespace kiln::testing {

/// A float32 tensor of shape `s`: amp * sin(freq * i + phase) at flat index i.
inline Tensor wave(const Shape& s, double freq, double phase = 0.2, double amp = 0.5) {
  std::vector<float> v(static_cast<size_t>(s.num_elements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(amp * std::sin(freq * static_cast<double>(i) + phase));
  return Tensor::from_vector(v, s);
}

/// Attributes of a stride-1 _FusedConv2D / _FusedDepthwiseConv2dNative with
/// steps `ops` ("BiasAdd,Relu"), Clip bounds 0 and 6.
inline Attrs fused_conv_attrs(const std::string& ops, const std::string& padding = "SAME") {
  return {std::vector<int64_t>{1, 1}, padding, std::vector<int64_t>{1, 1}, ops, 0.0, 6.0};
}

/// Sets Config::tensor_float_32 (Winograd's switch) for a scope.
struct ScopedTf32 {
  explicit ScopedTf32(bool on) : saved(config().tensor_float_32) { config().tensor_float_32 = on; }
  ~ScopedTf32() { config().tensor_float_32 = saved; }
  ScopedTf32(const ScopedTf32&) = delete;
  ScopedTf32& operator=(const ScopedTf32&) = delete;
  bool saved;
};

}  // namespace kiln::testing
