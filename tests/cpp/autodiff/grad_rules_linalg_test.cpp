// Numeric gradient checks for the linear algebra rules (src/ops/linalg.cpp)
// and Cumprod. Losses through u, v of the SVD and the eigenvectors are
// invariant to the sign each singular/eigen vector may take.
#include <functional>

#include "grad_check.h"

namespace kiln {
namespace {

using testing::check_gradients;
using testing::FnUnderTest;
using testing::GradCheckOptions;
using testing::random_f64;

using V = const std::vector<Tensor>&;

// A well-conditioned [2, m, n] input: random plus `diag` on the diagonal.
Tensor well_conditioned(int64_t m, int64_t n, uint32_t seed, double diag = 3) {
  Tensor r = random_f64(Shape{2, m, n}, seed);
  Tensor d = matrix_band_part(ones(Shape{2, m, n}, DType::kFloat64), 0, 0);
  return Tensor::from_vector((r + d * diag).to_vector<double>(), Shape{2, m, n});
}

// Symmetric positive definite with well-separated eigenvalues.
Tensor spd(int64_t n, uint32_t seed) {
  const Tensor a = well_conditioned(n, n, seed);
  return Tensor::from_vector(matmul(a, a, false, true).to_vector<double>(), Shape{2, n, n});
}

TEST(GradRulesLinalg, LuFamily) {
  const Tensor a = well_conditioned(3, 3, 1), b = random_f64(Shape{2, 3, 2}, 2);
  check_gradients("det", [](V x) { return matrix_determinant(x[0]); }, {a});
  check_gradients("logdet", [](V x) { return log_matrix_determinant(x[0]).second; }, {a});
  for (bool adj : {false, true}) {
    check_gradients("inverse", [adj](V x) { return matrix_inverse(x[0], adj); }, {a});
    check_gradients("solve", [adj](V x) { return matrix_solve(x[0], x[1], adj); }, {a, b});
    for (bool lower : {false, true})
      check_gradients("triangular_solve",
                      [adj, lower](V x) { return matrix_triangular_solve(x[0], x[1], lower, adj); },
                      {a, b});
  }
}

TEST(GradRulesLinalg, Cholesky) {
  // Through a symmetric input (the op reads the lower triangle only).
  check_gradients("cholesky", [](V x) { return cholesky(matmul(x[0], x[0], false, true)); },
                  {well_conditioned(3, 3, 4)});
}

TEST(GradRulesLinalg, Qr) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{4, 4}, {5, 3}, {3, 5}}) {
    const Tensor a = well_conditioned(m, n, 5);
    check_gradients("qr q", [](V x) { return qr(x[0]).first; }, {a});
    check_gradients("qr r", [](V x) { return qr(x[0]).second; }, {a});
  }
}

TEST(GradRulesLinalg, Svd) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{3, 3}, {4, 3}, {3, 4}}) {
    const Tensor a = well_conditioned(m, n, 6);
    check_gradients("svd s", [](V x) { return std::get<0>(svd(x[0], false)); }, {a});
    check_gradients("svd s (uv)", [](V x) { return std::get<0>(svd(x[0])); }, {a});
    // u diag(s) v^T rebuilt, and u u^T (sign-free) exercise the u, v paths.
    check_gradients("svd usv",
                    [](V x) {
                      auto [s, u, v] = svd(x[0]);
                      return matmul(u * expand_dims(s, 1), v, false, true);
                    },
                    {a});
    check_gradients("svd uu",
                    [](V x) {
                      auto [s, u, v] = svd(x[0]);
                      const Tensor uu = matmul(u, u, false, true);
                      const Tensor vsv = matmul(v * expand_dims(s, 1), v, false, true);
                      return concat({reshape(uu, {2, -1}), reshape(vsv, {2, -1})}, 1);
                    },
                    {a});
  }
}

TEST(GradRulesLinalg, SelfAdjointEig) {
  const Tensor a = spd(3, 7);
  auto sym = [](const Tensor& x) { return x + matrix_transpose(x); };
  check_gradients("eig e", [&](V x) { return self_adjoint_eig(sym(x[0]), false).first; }, {a});
  check_gradients("eig vv",
                  [&](V x) {
                    auto [e, v] = self_adjoint_eig(sym(x[0]));
                    return matmul(v * expand_dims(e, 1), v, false, true) + v * v;
                  },
                  {a});
}

TEST(GradRulesLinalg, BandPartAndCumprod) {
  check_gradients("band_part", [](V x) { return matrix_band_part(x[0], 1, 0); },
                  {random_f64(Shape{2, 3, 4}, 8)});
  const Tensor x = testing::random_away_from_zero(Shape{3, 4}, 9);
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true})
      check_gradients("cumprod", [=](V v) { return cumprod(v[0], 1, exclusive, reverse); }, {x});
}

}  // namespace
}  // namespace kiln
