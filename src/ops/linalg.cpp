// Linear algebra (tf.linalg): definitions, shape inference, fronts and
// gradients. The gradients are the standard matrix adjoints (Giles, "An
// extended collection of matrix derivative results", 2008; the SVD's from
// Townsend, 2016), built from kiln ops so they run eagerly and traced.
#include "kiln/ops/linalg.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "families.h"
#include "front_util.h"
#include "grad_util.h"
#include "kiln/context.h"
#include "kiln/ops.h"

namespace kiln {
namespace {

// ---- inference ----

// Input i is a float32/float64 batch of matrices (rank >= 2).
void expect_matrices(InferContext& c, size_t i) {
  const DType dt = c.dtype(i);
  if (dt != DType::kFloat32 && dt != DType::kFloat64)
    c.fail(c.input_name(i), " must be float32 or float64, got ", dtype_name(dt));
  const Shape& s = c.shape(i);
  if (s.rank_known() && s.rank() < 2)
    c.fail(c.input_name(i), " must have rank >= 2, got shape ", s.debug_string());
}

// Input 0 is a batch of square matrices.
void expect_square(InferContext& c) {
  expect_matrices(c, 0);
  const Shape& s = c.shape(0);
  if (!s.rank_known()) return;
  const int64_t m = s.dim(s.rank() - 2), n = s.dim(s.rank() - 1);
  if (m >= 0 && n >= 0 && m != n)
    c.fail("input must be a batch of square matrices, got shape ", s.debug_string());
}

// The batch dims of input 0 (all but the last `drop`), unknown rank -> nullopt.
Shape batch_of(const Shape& s, int64_t drop) {
  if (!s.rank_known()) return Shape::unknown_rank();
  std::vector<int64_t> d(s.dims().begin(), s.dims().end() - drop);
  return Shape(d);
}

Shape with_dims(const Shape& batch, std::initializer_list<int64_t> tail) {
  if (!batch.rank_known()) return Shape::unknown_rank();
  std::vector<int64_t> d(batch.dims().begin(), batch.dims().end());
  d.insert(d.end(), tail);
  return Shape(d);
}

int64_t dim_from_end(const Shape& s, int64_t k) {
  return s.rank_known() ? s.dim(s.rank() - k) : -1;
}

void infer_determinant(InferContext& c) {
  expect_square(c);
  for (size_t i = 0; i < c.op().outputs.size(); ++i)
    c.set_output(i, c.dtype(0), batch_of(c.shape(0), 2));
}

void infer_square_same(InferContext& c) {
  expect_square(c);
  c.set_output(0, c.dtype(0), c.shape(0));
}

// (matrix [..., n, n], rhs [..., n, k]) -> [..., n, k]; equal batch dims.
void infer_solve(InferContext& c) {
  expect_square(c);
  expect_matrices(c, 1);
  c.expect_same_dtype(0, 1);
  const Shape &a = c.shape(0), &b = c.shape(1);
  if (a.rank_known() && b.rank_known()) {
    if (a.rank() != b.rank())
      c.fail("matrix and rhs must have the same rank, got ", a.debug_string(), " and ",
             b.debug_string());
    for (int64_t i = 0; i + 1 < a.rank(); ++i) {
      const int64_t x = a.dim(i), y = b.dim(i);
      if (x >= 0 && y >= 0 && x != y)
        c.fail("matrix and rhs must have the same batch dimensions and rows, got ",
               a.debug_string(), " and ", b.debug_string());
    }
  }
  c.set_output(0, c.dtype(1), b);
}

void infer_qr(InferContext& c) {
  expect_matrices(c, 0);
  const Shape& s = c.shape(0);
  const int64_t m = dim_from_end(s, 2), n = dim_from_end(s, 1);
  const int64_t p = m >= 0 && n >= 0 ? std::min(m, n) : -1;
  const bool full = c.attr_bool("full_matrices");
  const Shape batch = batch_of(s, 2);
  c.set_output(0, c.dtype(0), with_dims(batch, {m, full ? m : p}));
  c.set_output(1, c.dtype(0), with_dims(batch, {full ? m : p, n}));
}

void infer_svd(InferContext& c) {
  expect_matrices(c, 0);
  const Shape& s = c.shape(0);
  const int64_t m = dim_from_end(s, 2), n = dim_from_end(s, 1);
  const int64_t p = m >= 0 && n >= 0 ? std::min(m, n) : -1;
  const Shape batch = batch_of(s, 2);
  c.set_output(0, c.dtype(0), with_dims(batch, {p}));
  if (!c.attr_bool("compute_uv")) {
    c.set_output(1, c.dtype(0), Shape{0});
    c.set_output(2, c.dtype(0), Shape{0});
    return;
  }
  const bool full = c.attr_bool("full_matrices");
  c.set_output(1, c.dtype(0), with_dims(batch, {m, full ? m : p}));
  c.set_output(2, c.dtype(0), with_dims(batch, {n, full ? n : p}));
}

void infer_eig(InferContext& c) {
  expect_square(c);
  const Shape& s = c.shape(0);
  c.set_output(0, c.dtype(0), with_dims(batch_of(s, 2), {dim_from_end(s, 1)}));
  c.set_output(1, c.dtype(0), c.attr_bool("compute_v") ? s : Shape{0});
}

// (input [..., m, n], num_lower, num_upper: int scalars) -> input's shape.
void infer_band_part(InferContext& c) {
  const Shape& s = c.shape(0);
  if (s.rank_known() && s.rank() < 2)
    c.fail("input must have rank >= 2, got shape ", s.debug_string());
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (c.dtype(i) != DType::kInt32 && c.dtype(i) != DType::kInt64)
      c.fail(c.input_name(i), " must be int32 or int64, got ", dtype_name(c.dtype(i)));
    if (c.shape(i).rank_known() && c.shape(i).rank() != 0)
      c.fail(c.input_name(i), " must be a scalar, got shape ", c.shape(i).debug_string());
  }
  c.set_output(0, c.dtype(0), s);
}

// ---- gradient helpers ----

// The identity matrices shaped like x ([..., n, n]).
Tensor eye_like(const Tensor& x) {
  return matrix_band_part(ones_like(x), 0, 0);
}
// [..., k] -> [..., k, k] with v on the diagonal.
Tensor diag_of(const Tensor& v) {
  return matrix_band_part(expand_dims(v, -1) * ones_like(expand_dims(v, -2)), 0, 0);
}
// x's diagonal halved (the symmetric part's share of it).
Tensor halve_diagonal(const Tensor& x) {
  return x - 0.5 * x * eye_like(x);
}
// 1/x where x != 0, else 0.
Tensor safe_reciprocal(const Tensor& x) {
  const Tensor zero = equal(x, zeros_like(x));
  return where(zero, zeros_like(x), 1.0 / where(zero, ones_like(x), x));
}
// `expand(t)` for a [...] tensor as [..., 1, 1].
Tensor as_matrix_scale(const Tensor& t) {
  return expand_dims(expand_dims(t, -1), -1);
}
// The static dimension k from the end of x's shape, or Unimplemented.
int64_t static_dim(const Tensor& x, int64_t k, const char* op) {
  const Shape& s = x.shape();
  const int64_t d = s.rank_known() ? s.dim(s.rank() - k) : -1;
  if (d < 0)
    throw UnimplementedError(str_cat(op, " gradient: the matrix dimensions must be known"));
  return d;
}
// x[..., :, begin:end] for a known rank.
Tensor columns(const Tensor& x, int64_t begin, int64_t end) {
  const int64_t r = x.shape().rank();
  std::vector<int64_t> b(static_cast<size_t>(r), 0), size(static_cast<size_t>(r), -1);
  b.back() = begin;
  size.back() = end - begin;
  return slice(x, b, size);
}

// ---- gradients ----

void determinant_grad(KILN_GRAD_ARGS) {
  gi[0] = as_matrix_scale(g[0] * out[0]) * matrix_inverse(in[0], true);
}

void log_determinant_grad(KILN_GRAD_ARGS) {
  gi[0] = as_matrix_scale(g[1]) * matrix_inverse(in[0], true);
}

void inverse_grad(KILN_GRAD_ARGS) {
  const bool adj = attr_value<bool>(op, attrs, "adjoint");
  const Tensor& inv = out[0];
  gi[0] = negative(matmul(inv, matmul(g[0], inv, adj, !adj), !adj, false));
}

void solve_grad(KILN_GRAD_ARGS) {
  const bool adj = attr_value<bool>(op, attrs, "adjoint");
  const Tensor& x = out[0];
  const Tensor gb = matrix_solve(in[0], g[0], !adj);
  gi[0] = adj ? negative(matmul(x, gb, false, true)) : negative(matmul(gb, x, false, true));
  gi[1] = gb;
}

void triangular_solve_grad(KILN_GRAD_ARGS) {
  const bool adj = attr_value<bool>(op, attrs, "adjoint");
  const bool lower = attr_value<bool>(op, attrs, "lower");
  const Tensor& x = out[0];
  const Tensor gb = matrix_triangular_solve(in[0], g[0], lower, !adj);
  const Tensor ga =
      adj ? negative(matmul(x, gb, false, true)) : negative(matmul(gb, x, false, true));
  gi[0] = lower ? matrix_band_part(ga, -1, 0) : matrix_band_part(ga, 0, -1);
  gi[1] = gb;
}

void cholesky_grad(KILN_GRAD_ARGS) {
  const Tensor& l = out[0];
  const Tensor l_inv = matrix_triangular_solve(l, eye_like(l), true, false);
  const Tensor middle = matrix_band_part(halve_diagonal(matmul(l, g[0], true, false)), -1, 0);
  const Tensor ga = matmul(matmul(l_inv, middle, true, false), l_inv);
  gi[0] = 0.5 * (ga + matrix_transpose(ga));
}

// x r^-T for an upper-triangular r.
Tensor times_r_inverse_t(const Tensor& x, const Tensor& r) {
  return matrix_transpose(matrix_triangular_solve(r, matrix_transpose(x), false, false));
}

// The QR adjoint for m >= n (reduced q [m, n], r [n, n]).
Tensor qr_grad_deep(const Tensor& q, const Tensor& r, const Tensor& dq, const Tensor& dr) {
  const Tensor qdq = matmul(q, dq, true, false);
  const Tensor rdr = matmul(r, dr, false, true);
  const Tensor m =
      matrix_band_part(qdq - matrix_transpose(qdq) + rdr - matrix_transpose(rdr), -1, 0);
  return matmul(q, dr + times_r_inverse_t(m, r)) + times_r_inverse_t(dq - matmul(q, qdq), r);
}

void qr_grad(KILN_GRAD_ARGS) {
  const Tensor &q = out[0], &r = out[1];
  const int64_t m = static_dim(r, 2, "Qr"), n = static_dim(r, 1, "Qr");
  const int64_t qm = static_dim(q, 2, "Qr"), qn = static_dim(q, 1, "Qr");
  if (m > n && qm == qn)
    throw UnimplementedError(
        "Qr gradient: not implemented when rows > columns and full_matrices is true");
  if (m >= n) {
    gi[0] = qr_grad_deep(q, r, g[0], g[1]);
    return;
  }
  // Wide: a = [x | y] with x = q u square.
  const Tensor y = columns(in[0], m, n), u = columns(r, 0, m);
  const Tensor dv = columns(g[1], m, n), du = columns(g[1], 0, m);
  const Tensor dy = matmul(q, dv);
  const Tensor dx = qr_grad_deep(q, u, g[0] + matmul(y, dv, false, true), du);
  gi[0] = concat({dx, dy}, -1);
}

void eig_grad(KILN_GRAD_ARGS) {
  Tensor e = out[0], v = out[1];
  if (!attr_value<bool>(op, attrs, "compute_v")) std::tie(e, v) = self_adjoint_eig(in[0], true);
  const Tensor ge = g[0];
  Tensor inner = diag_of(ge);
  if (attr_value<bool>(op, attrs, "compute_v")) {
    const Tensor f = safe_reciprocal(expand_dims(e, -2) - expand_dims(e, -1));
    inner = inner + (f - f * eye_like(f)) * matmul(v, g[1], true, false);
  }
  const Tensor ga = matmul(v, matmul(inner, v, false, true));
  // The op reads the lower triangle only.
  gi[0] = halve_diagonal(matrix_band_part(ga + matrix_transpose(ga), -1, 0));
}

// The SVD adjoint (real matrices): s, u, v reduced, or square and full.
Tensor svd_grad_uv(Tensor s, Tensor u, Tensor v, const Tensor& gs, Tensor gu, Tensor gv, int64_t m,
                   int64_t n) {
  const bool flip = m > n;  // differentiate a^T = v s u^T, transpose at the end
  if (flip) {
    std::swap(m, n);
    std::swap(u, v);
    std::swap(gu, gv);
  }
  const Tensor s_mat = diag_of(s);
  const Tensor s_sq = s * s;
  Tensor f = safe_reciprocal(expand_dims(s_sq, -2) - expand_dims(s_sq, -1));
  f = f - f * eye_like(f);
  const Tensor v1 = m == n ? v : columns(v, 0, m), gv1 = m == n ? gv : columns(gv, 0, m);
  const Tensor fu = f * matmul(u, gu, true, false), fv = f * matmul(v1, gv1, true, false);
  const Tensor core = diag_of(gs) + matmul(fu + matrix_transpose(fu), s_mat) +
                      matmul(s_mat, fv + matrix_transpose(fv));
  Tensor ga = matmul(u, matmul(core, v1, false, true));
  if (m != n) {
    const Tensor gv1t = matrix_transpose(gv1);
    const Tensor rest = gv1t - matmul(matmul(gv1t, v1), v1, false, true);
    ga = ga + matmul(matmul(u, diag_of(safe_reciprocal(s))), rest);
  }
  return flip ? matrix_transpose(ga) : ga;
}

void svd_grad(KILN_GRAD_ARGS) {
  const Tensor& a = in[0];
  if (!attr_value<bool>(op, attrs, "compute_uv")) {
    auto [s, u, v] = svd(a, true, false);
    gi[0] = matmul(u, matmul(diag_of(g[0]), v, false, true));
    return;
  }
  const int64_t m = static_dim(a, 2, "Svd"), n = static_dim(a, 1, "Svd");
  if (attr_value<bool>(op, attrs, "full_matrices") && m != n)
    throw UnimplementedError(
        "Svd gradient: not implemented for full_matrices=True on non-square matrices");
  gi[0] = svd_grad_uv(out[0], out[1], out[2], g[0], g[1], g[2], m, n);
}

void band_part_grad(KILN_GRAD_ARGS) {
  gi[0] = matrix_band_part(g[0], in[1], in[2]);
}

void define_decompositions(OpTableBuilder& t) {
  t.def(OpId::Cholesky)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .infer(infer_square_same)
      .grad(cholesky_grad);
  t.def(OpId::Qr)
      .tf()
      .inputs({"input"})
      .outputs({"q", "r"})
      .attr("full_matrices", AttrType::kBool, false)
      .infer(infer_qr)
      .grad(qr_grad);
  t.def(OpId::Svd)
      .tf()
      .inputs({"input"})
      .outputs({"s", "u", "v"})
      .attr("compute_uv", AttrType::kBool, true)
      .attr("full_matrices", AttrType::kBool, false)
      .infer(infer_svd)
      .grad(svd_grad);
  t.def(OpId::SelfAdjointEigV2)
      .tf()
      .inputs({"input"})
      .outputs({"e", "v"})
      .attr("compute_v", AttrType::kBool, true)
      .infer(infer_eig)
      .grad(eig_grad);
}

}  // namespace

namespace {
std::vector<Tensor> run1(OpId id, const Tensor& a, Attrs attrs = {}) {
  const Tensor args[] = {a};
  return call_op(id, args, std::move(attrs));
}
}  // namespace

void define_linalg_ops(OpTableBuilder& t) {
  t.def(OpId::MatrixDeterminant)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .infer(infer_determinant)
      .grad(determinant_grad);
  t.def(OpId::LogMatrixDeterminant)
      .tf()
      .inputs({"input"})
      .outputs({"sign", "log_abs_determinant"})
      .infer(infer_determinant)
      .grad(log_determinant_grad);
  t.def(OpId::MatrixInverse)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("adjoint", AttrType::kBool, false)
      .infer(infer_square_same)
      .grad(inverse_grad);
  t.def(OpId::MatrixSolve)
      .tf()
      .inputs({"matrix", "rhs"})
      .outputs({"output"})
      .attr("adjoint", AttrType::kBool, false)
      .infer(infer_solve)
      .grad(solve_grad);
  t.def(OpId::MatrixTriangularSolve)
      .tf()
      .inputs({"matrix", "rhs"})
      .outputs({"output"})
      .attr("lower", AttrType::kBool, true)
      .attr("adjoint", AttrType::kBool, false)
      .infer(infer_solve)
      .grad(triangular_solve_grad);
  define_decompositions(t);
  t.def(OpId::MatrixBandPart)
      .tf()
      .inputs({"input", "num_lower", "num_upper"})
      .outputs({"band"})
      .infer(infer_band_part)
      .grad(band_part_grad);
}

Tensor matrix_determinant(const Tensor& a) {
  return call_op1(OpId::MatrixDeterminant, {a});
}
std::pair<Tensor, Tensor> log_matrix_determinant(const Tensor& a) {
  std::vector<Tensor> r = run1(OpId::LogMatrixDeterminant, a);
  return {std::move(r.at(0)), std::move(r.at(1))};
}
Tensor matrix_inverse(const Tensor& a, bool adjoint) {
  return call_op1(OpId::MatrixInverse, {a}, {adjoint});
}
Tensor matrix_solve(const Tensor& a, const Tensor& rhs, bool adjoint) {
  return call_op1(OpId::MatrixSolve, {a, rhs}, {adjoint});
}
Tensor matrix_triangular_solve(const Tensor& a, const Tensor& rhs, bool lower, bool adjoint) {
  return call_op1(OpId::MatrixTriangularSolve, {a, rhs}, {lower, adjoint});
}
Tensor cholesky(const Tensor& a) {
  return call_op1(OpId::Cholesky, {a});
}
std::pair<Tensor, Tensor> qr(const Tensor& a, bool full_matrices) {
  std::vector<Tensor> r = run1(OpId::Qr, a, {full_matrices});
  return {std::move(r.at(0)), std::move(r.at(1))};
}
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool compute_uv, bool full_matrices) {
  std::vector<Tensor> r = run1(OpId::Svd, a, {compute_uv, full_matrices});
  return {std::move(r.at(0)), std::move(r.at(1)), std::move(r.at(2))};
}
std::pair<Tensor, Tensor> self_adjoint_eig(const Tensor& a, bool compute_v) {
  std::vector<Tensor> r = run1(OpId::SelfAdjointEigV2, a, {compute_v});
  return {std::move(r.at(0)), std::move(r.at(1))};
}
Tensor matrix_band_part(const Tensor& a, const Tensor& num_lower, const Tensor& num_upper) {
  return call_op1(OpId::MatrixBandPart, {a, num_lower, num_upper});
}
Tensor matrix_band_part(const Tensor& a, int64_t num_lower, int64_t num_upper) {
  return matrix_band_part(a, Tensor(num_lower), Tensor(num_upper));
}
Tensor matrix_transpose(const Tensor& a) {
  if (!a.shape().rank_known())
    throw UnimplementedError("matrix_transpose: the rank must be known while tracing");
  const int64_t r = a.shape().rank();
  if (r < 2) throw InvalidArgumentError(str_cat("matrix_transpose: rank ", r, " < 2"));
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = i;
  std::swap(perm[static_cast<size_t>(r - 2)], perm[static_cast<size_t>(r - 1)]);
  return transpose(a, perm);
}

}  // namespace kiln
