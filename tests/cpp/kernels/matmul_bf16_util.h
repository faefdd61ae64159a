// Shared by the bfloat16 MatMul tests (oneDNN's bf16 kernels, and the float32
// fallback of CPUs without them): cases covering every way MatMul splits a
// product, and a float64 reference of the same bf16 values.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kiln/executor.h"
#include "kiln/ops.h"
#include "kiln/passes.h"
#include "kiln/trace.h"
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

/// A mixed_bfloat16 Dense as kiln's Keras writes it: x (bf16) times float32
/// weights cast to bf16, the bias added in float32 between Casts (BiasAdd, or
/// AddV2 with the bias first), then optionally relu between Casts. With
/// `rows`, x's rows folded into a matrix and the product's unfolded again
/// (TensorFlow's tensordot: a Dense on rank 3); with a bias of rank 2 too, the
/// product's last dim split as the bias is (EinsumDense's [heads, dim]).
inline Tensor mixed_dense(const Tensor& x, const Tensor& w, const Tensor& b, bool bias_add_op,
                          bool relu_too, bool rows = false) {
  const auto f32 = [](const Tensor& t) { return cast(t, DType::kFloat32); };
  const auto bf16 = [](const Tensor& t) { return cast(t, DType::kBFloat16); };
  Tensor p;
  if (rows) {
    std::vector<int64_t> out = x.shape().to_vector();
    const int64_t k = out.back();
    out.pop_back();
    for (int64_t d : b.shape().dims()) out.push_back(d);
    p = reshape(
        matmul(reshape(x, {x.shape().num_elements() / std::max<int64_t>(k, 1), k}), bf16(w)), out);
  } else {
    p = matmul(x, bf16(w));
  }
  const Tensor s = f32(p);
  Tensor y = bf16(bias_add_op ? bias_add(s, b) : b + s);
  if (relu_too) y = bf16(relu(f32(y)));
  return y;
}

/// matmul_float_weights absorbs mixed_dense's bias and relu into the
/// _FusedMatMul (`absorbed` of them), which adds them to the float32 sums
/// before its one rounding: within a bf16 rounding of float64 on the same
/// bf16 values (the unfused ops round twice).
inline void check_fused_epilogues() {
  struct C {
    Shape x;
    int64_t n;
    bool bias_add_op, relu_too, rows = false;
    int64_t heads = 0;  // the bias as [heads, n / heads] (AddV2, rows)
  };
  // (The fifth: no depth, so the bias alone, through its relu; the last two:
  // the product's rows regrouped by a Reshape before the epilogue.)
  for (const C& c :
       {C{{300, 64}, 96, true, true}, C{{4, 70, 32}, 48, false, false}, C{{5, 7}, 3, true, false},
        C{{40, 256}, 1024, false, true}, C{{6, 0}, 5, true, true},
        C{{4, 70, 32}, 48, true, true, true}, C{{2, 3, 5, 16}, 24, false, false, true},
        C{{2, 16, 32}, 32, false, false, true, 2}, C{{3, 10, 8}, 24, false, true, true, 4}}) {
    SCOPED_TRACE(str_cat(c.x.debug_string(), " n ", c.n, c.bias_add_op ? " BiasAdd" : " AddV2",
                         c.relu_too ? " relu" : "", c.rows ? " rows regrouped" : "",
                         c.heads ? " heads" : ""));
    const int64_t k = c.x.dim(c.x.rank() - 1);
    const Shape bias_shape = c.heads ? Shape({c.heads, c.n / c.heads}) : Shape({c.n});
    const std::vector<Tensor> in = {cast(mm_wave(c.x, 0.7), DType::kBFloat16),
                                    mm_wave({k, c.n}, 1.3), mm_wave(bias_shape, 2.1)};
    Graph g("f");
    {
      TracingContext tc(g);
      ContextScope scope(tc);
      std::vector<Tensor> a;
      for (size_t i = 0; i < in.size(); ++i)
        a.push_back(tc.add_input(str_cat("a", i), in[i].dtype(), in[i].shape()));
      g.outputs().push_back(
          tc.edge_for(mixed_dense(a[0], a[1], a[2], c.bias_add_op, c.relu_too, c.rows)));
    }
    const PassResult r = matmul_float_weights(g);
    g.verify();
    ASSERT_EQ(r.rewritten.size(), 2u);  // the product, then its epilogue
    prune(g);
    std::vector<OpId> left;  // besides the inputs, the weights' Cast and the shapes
    for (const auto& node : g.nodes())
      if (node->op().id != OpId::Placeholder && node->op().id != OpId::Cast &&
          node->op().id != OpId::Const)
        left.push_back(node->op().id);
    std::vector<OpId> want_ops{OpId::FusedMatMul};
    if (c.rows) want_ops = {OpId::Reshape, OpId::FusedMatMul, OpId::Reshape};
    if (c.heads) want_ops.insert(want_ops.begin() + 1, OpId::Reshape);  // the flat bias
    ASSERT_EQ(left, want_ops);
    const std::vector<Tensor> got = Plan::compile(g)->run(in);
    ASSERT_EQ(got[0].dtype(), DType::kBFloat16);
    std::vector<int64_t> out_dims = c.x.to_vector();
    out_dims.pop_back();
    for (int64_t d : bias_shape.dims()) out_dims.push_back(d);
    ASSERT_EQ(got[0].shape(), Shape(out_dims));
    const std::vector<float> out = cast(got[0], DType::kFloat32).to_vector<float>();
    const std::vector<float> xv = cast(in[0], DType::kFloat32).to_vector<float>();
    const std::vector<float> wv =
        cast(cast(in[1], DType::kBFloat16), DType::kFloat32).to_vector<float>();
    const std::vector<float> bv = in[2].to_vector<float>();
    int64_t m = 1;  // x's rows
    for (int d = 0; d + 1 < c.x.rank(); ++d) m *= c.x.dim(d);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double want = bv[static_cast<size_t>(j)];
        for (int64_t t = 0; t < k; ++t)
          want += static_cast<double>(xv[static_cast<size_t>(i * k + t)]) *
                  wv[static_cast<size_t>(t * c.n + j)];
        if (c.relu_too) want = std::max(want, 0.0);
        ASSERT_NEAR(out[static_cast<size_t>(i * c.n + j)], want, std::abs(want) / 256 + 1e-5)
            << i << ", " << j;
      }
  }
}

}  // namespace kiln::testing
