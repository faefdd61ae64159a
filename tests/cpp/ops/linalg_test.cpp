// Linear algebra ops against their defining properties (a = q r, a = u s v^T,
// a v = v diag(e), l l^T = a, a x = b), known values, batches and errors;
// plus Cumprod.
#include <cmath>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace {

using testing::expect_error;
using testing::expect_tensor;
using testing::expect_tensor_near;

// A [b, n, n] batch of well-conditioned float64 matrices (diagonally dominant).
Tensor matrices(int64_t b, int64_t m, int64_t n, double diag = 4, uint32_t seed = 1) {
  std::vector<double> v(static_cast<size_t>(b * m * n));
  uint32_t s = seed;
  for (size_t i = 0; i < v.size(); ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = static_cast<double>(s >> 8) / static_cast<double>(1u << 24) - 0.5;
  }
  for (int64_t k = 0; k < b; ++k)
    for (int64_t i = 0; i < std::min(m, n); ++i)
      v[static_cast<size_t>((k * m + i) * n + i)] += diag;
  return Tensor::from_vector(v, Shape{b, m, n});
}

// max |a - b| over all elements.
double max_diff(const Tensor& a, const Tensor& b) {
  const auto x = cast(a, DType::kFloat64).to_vector<double>();
  const auto y = cast(b, DType::kFloat64).to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double d = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) d = std::max(d, std::fabs(x[i] - y[i]));
  return d;
}

Tensor eye_batch(int64_t b, int64_t n) {
  return matrix_band_part(ones(Shape{b, n, n}, DType::kFloat64), 0, 0);
}

TEST(Linalg, DeterminantAndLogDeterminant) {
  const Tensor a = Tensor::from_vector(std::vector<double>{2, 1, 0, 1, 3, 1, 0, 1, 4}, {3, 3});
  expect_tensor_near<double>(matrix_determinant(a), {}, {18}, 1e-12);
  const Tensor swapped = Tensor::from_vector(std::vector<double>{0, 1, 1, 0}, {2, 2});
  expect_tensor_near<double>(matrix_determinant(swapped), {}, {-1}, 1e-12);
  auto [sign, logabs] = log_matrix_determinant(swapped);
  expect_tensor_near<double>(sign, {}, {-1}, 0);
  expect_tensor_near<double>(logabs, {}, {0}, 1e-12);
  const Tensor singular = Tensor::from_vector(std::vector<float>{1, 2, 2, 4}, {2, 2});
  expect_tensor_near<float>(matrix_determinant(singular), {}, {0}, 0);
  auto [s0, l0] = log_matrix_determinant(singular);
  EXPECT_EQ(s0.item<float>(), 0.f);
  EXPECT_TRUE(std::isinf(l0.item<float>()) && l0.item<float>() < 0);
  // An empty matrix has determinant 1; batches keep their leading dims.
  expect_tensor_near<double>(matrix_determinant(Tensor::empty(DType::kFloat64, {2, 0, 0})), {2},
                             {1, 1}, 0);
}

TEST(Linalg, InverseAndSolve) {
  const Tensor a = matrices(3, 4, 4);
  EXPECT_LT(max_diff(matmul(a, matrix_inverse(a)), eye_batch(3, 4)), 1e-12);
  EXPECT_LT(max_diff(matmul(a, matrix_inverse(a, true), true, false), eye_batch(3, 4)), 1e-12);
  const Tensor b = matrices(3, 4, 2, 0, 7);
  EXPECT_LT(max_diff(matmul(a, matrix_solve(a, b)), b), 1e-12);
  EXPECT_LT(max_diff(matmul(a, matrix_solve(a, b, true), true, false), b), 1e-12);
  const Tensor l = matrix_band_part(a, -1, 0), u = matrix_band_part(a, 0, -1);
  EXPECT_LT(max_diff(matmul(l, matrix_triangular_solve(a, b)), b), 1e-12);
  EXPECT_LT(max_diff(matmul(u, matrix_triangular_solve(a, b, false)), b), 1e-12);
  EXPECT_LT(max_diff(matmul(l, matrix_triangular_solve(a, b, true, true), true, false), b), 1e-12);
  // float32 runs the same routines.
  const Tensor a32 = cast(a, DType::kFloat32);
  EXPECT_LT(max_diff(matmul(a32, matrix_inverse(a32)), eye_batch(3, 4)), 1e-5);
}

TEST(Linalg, Decompositions) {
  const Tensor a = matrices(2, 4, 4);
  const Tensor spd = matmul(a, a, false, true);
  const Tensor l = cholesky(spd);
  EXPECT_LT(max_diff(matmul(l, l, false, true), spd), 1e-12);
  EXPECT_EQ(max_diff(matrix_band_part(l, -1, 0), l), 0);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{5, 3}, {3, 5}, {4, 4}})
    for (bool full : {false, true}) {
      SCOPED_TRACE(::testing::Message() << m << "x" << n << " full " << full);
      const Tensor x = matrices(2, m, n, 2, 3);
      const int64_t p = std::min(m, n);
      auto [q, r] = qr(x, full);
      EXPECT_EQ(q.shape(), Shape({2, m, full ? m : p}));
      EXPECT_EQ(r.shape(), Shape({2, full ? m : p, n}));
      EXPECT_LT(max_diff(matmul(q, r), x), 1e-12);
      EXPECT_LT(max_diff(matmul(q, q, true, false), eye_batch(2, full ? m : p)), 1e-12);
      EXPECT_EQ(max_diff(matrix_band_part(r, 0, -1), r), 0);
      auto [s, u, v] = svd(x, true, full);
      EXPECT_EQ(s.shape(), Shape({2, p}));
      EXPECT_EQ(u.shape(), Shape({2, m, full ? m : p}));
      EXPECT_EQ(v.shape(), Shape({2, n, full ? n : p}));
      const auto sv = s.to_vector<double>();
      for (size_t i = 1; i < sv.size(); ++i)
        if (static_cast<int64_t>(i) % p) EXPECT_GE(sv[i - 1], sv[i]);
      const Tensor u1 = full ? slice(u, {0, 0, 0}, {-1, -1, p}) : u;
      const Tensor v1 = full ? slice(v, {0, 0, 0}, {-1, -1, p}) : v;
      EXPECT_LT(max_diff(matmul(u1 * expand_dims(s, 1), v1, false, true), x), 1e-12);
      auto [s_only, nu, nv] = svd(x, false);
      EXPECT_LT(max_diff(s_only, s), 1e-12);
      EXPECT_EQ(nu.shape(), Shape({0}));
    }
  auto [e, v] = self_adjoint_eig(spd);
  EXPECT_LT(max_diff(matmul(spd, v), v * expand_dims(e, 1)), 1e-11);
  const auto ev = e.to_vector<double>();
  for (size_t i = 1; i < 4; ++i) EXPECT_LE(ev[i - 1], ev[i]);
  // Only the lower triangle is read.
  auto [e2, v2] = self_adjoint_eig(matrix_band_part(spd, -1, 0), false);
  EXPECT_LT(max_diff(e2, e), 1e-12);
  EXPECT_EQ(v2.shape(), Shape({0}));
}

TEST(Linalg, BandPart) {
  const Tensor x =
      Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
  expect_tensor<int32_t>(matrix_band_part(x, 1, 0), {3, 4}, {1, 0, 0, 0, 5, 6, 0, 0, 0, 10, 11, 0});
  expect_tensor<int32_t>(matrix_band_part(x, 0, -1), {3, 4},
                         {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  expect_tensor<int32_t>(matrix_band_part(x, -1, -1), {3, 4},
                         {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  expect_error([&] { matrix_band_part(x, 4, 0); }, Code::kInvalidArgument,
               {"MatrixBandPart", "num_lower", "rows (3)"});
  expect_error([&] { matrix_band_part(x, 0, 5); }, Code::kInvalidArgument,
               {"MatrixBandPart", "num_upper", "columns (4)"});
}

TEST(Linalg, Errors) {
  const Tensor singular = Tensor::from_vector(std::vector<double>{1, 2, 2, 4}, {2, 2});
  expect_error([&] { matrix_inverse(singular); }, Code::kInvalidArgument, {"not invertible"});
  expect_error([&] { matrix_solve(singular, singular); }, Code::kInvalidArgument,
               {"not invertible"});
  const Tensor indefinite = Tensor::from_vector(std::vector<double>{1, 2, 2, 1}, {2, 2});
  expect_error([&] { cholesky(indefinite); }, Code::kInvalidArgument,
               {"Cholesky decomposition was not successful"});
  const Tensor wide = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  expect_error([&] { matrix_determinant(wide); }, Code::kInvalidArgument, {"square"});
  expect_error([&] { matrix_inverse(Tensor({1.0, 2.0})); }, Code::kInvalidArgument, {"rank >= 2"});
  expect_error(
      [&] {
        cholesky(Tensor({{1, 2}, {3, 4}}));
      },
      Code::kInvalidArgument, {"float32 or float64", "int32"});
  expect_error([&] { matrix_solve(matrices(1, 3, 3), matrices(1, 2, 1)); }, Code::kInvalidArgument,
               {"rows"});
}

TEST(Cumprod, ValuesAndErrors) {
  expect_tensor<int32_t>(cumprod(Tensor({1, 2, 3, 4})), {4}, {1, 2, 6, 24});
  expect_tensor<int32_t>(cumprod(Tensor({1, 2, 3}), 0, true), {3}, {1, 1, 2});
  expect_tensor<int32_t>(cumprod(Tensor({1, 2, 3}), 0, false, true), {3}, {6, 6, 3});
  expect_tensor<int32_t>(cumprod(Tensor({1, 2, 3}), 0, true, true), {3}, {6, 3, 1});
  expect_tensor<float>(cumprod(Tensor({{1.f, 2.f}, {3.f, 4.f}}), 0), {2, 2}, {1, 2, 3, 8});
  std::vector<float> wide(2 * 1100, 1.0f);
  wide[1100 + 5] = 2;
  const Tensor w = cumprod(Tensor::from_vector(wide, {2, 1100}), 0);
  EXPECT_EQ(w.to_vector<float>()[1100 + 5], 2.f);
  expect_error([] { cumprod(Tensor(1)); }, Code::kInvalidArgument, {"Cumprod", "rank"});
}

}  // namespace
}  // namespace kiln
