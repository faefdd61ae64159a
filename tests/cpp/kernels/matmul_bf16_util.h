// Shared by the bfloat16 MatMul tests (oneDNN's bf16 kernels, and the float32
// fallback of CPUs without them): cases covering every way MatMul splits a
// product, and a float64 reference of the same bf16 values.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "kiln/ops.h"
#include "test_util.h"

namespace kiln::testing {

struct MatMulBf16Case {
  Shape a, b;
  bool ta = false, tb = false;
};

inline std::string mm_case_name(const MatMulBf16Case& p) {
  return str_cat(p.a.debug_string(), p.ta ? "^T" : "", " x ", p.b.debug_string(), p.tb ? "^T" : "");
}

/// With 4 threads: one call; blocks of rows and of columns (transposed or not);
/// small batches spread over the pool, large ones split each; broadcast batch
/// dims; a rank-3 x rank-2 product folded into one; a long reduction.
inline const std::vector<MatMulBf16Case>& mm_bf16_cases() {
  static const std::vector<MatMulBf16Case> c = {
      {{3, 5}, {5, 7}},
      {{512, 96}, {96, 160}},
      {{96, 512}, {160, 96}, true, true},
      {{16, 256}, {256, 1024}},
      {{256, 16}, {1024, 256}, true, true},
      {{6, 20, 16}, {6, 16, 24}},
      {{3, 192, 64}, {3, 128, 64}, false, true},
      {{2, 1, 40, 16}, {1, 3, 16, 8}},
      {{4, 64, 32}, {32, 48}},
      {{64, 4096}, {4096, 32}},
  };
  return c;
}

/// A smooth, sign-changing float32 pattern.
inline Tensor mm_wave(const Shape& s, double freq) {
  std::vector<float> v(static_cast<size_t>(s.num_elements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(0.5 * std::sin(freq * static_cast<double>(i) + 0.3));
  return Tensor::from_vector(v, s);
}

/// The bf16 product of `p` against float64 on the same (bf16) values: the
/// products are exact in float32, so the error is float32 accumulation and the
/// output's rounding.
inline void check_bf16_matmul(const MatMulBf16Case& p) {
  const Tensor a = cast(mm_wave(p.a, 0.7), DType::kBFloat16);
  const Tensor b = cast(mm_wave(p.b, 1.3), DType::kBFloat16);
  const Tensor got = matmul(a, b, p.ta, p.tb);
  ASSERT_EQ(got.dtype(), DType::kBFloat16);
  const Tensor want = matmul(cast(a, DType::kFloat64), cast(b, DType::kFloat64), p.ta, p.tb);
  expect_tensor_near<float>(cast(got, DType::kFloat32), want.shape(),
                            cast(want, DType::kFloat32).to_vector<float>(), 8e-3);
}

}  // namespace kiln::testing
