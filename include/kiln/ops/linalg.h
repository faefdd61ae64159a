// Linear algebra on the last two dimensions (tf.linalg): determinants,
// inverses, solves and the Cholesky, QR, SVD and symmetric eigen
// decompositions, float32/float64, batched over leading dimensions. CPU
// kernels call LAPACK (OpenBLAS's); every op has a gradient (the SVD's
// through u and v for reduced or square decompositions).
#pragma once
#include <cstdint>
#include <tuple>
#include <utility>

#include "kiln/tensor.h"

namespace kiln {

/// det(a) for a [..., n, n] -> [...].
Tensor matrix_determinant(const Tensor& a);
/// (sign(det a), log|det a|); a singular matrix gives (0, -inf).
std::pair<Tensor, Tensor> log_matrix_determinant(const Tensor& a);
/// a^-1 (adjoint: (a^H)^-1); InvalidArgument "Input is not invertible." when singular.
Tensor matrix_inverse(const Tensor& a, bool adjoint = false);
/// x with a x = rhs (adjoint: a^H x = rhs); a [..., n, n], rhs [..., n, k].
Tensor matrix_solve(const Tensor& a, const Tensor& rhs, bool adjoint = false);
/// x with a x = rhs for triangular a (only its lower or upper triangle is read).
Tensor matrix_triangular_solve(const Tensor& a, const Tensor& rhs, bool lower = true,
                               bool adjoint = false);
/// The lower-triangular l with l l^H = a (a's lower triangle is read).
Tensor cholesky(const Tensor& a);
/// (q, r) with a = q r; reduced ([..., m, min(m,n)], [..., min(m,n), n]) unless full_matrices.
std::pair<Tensor, Tensor> qr(const Tensor& a, bool full_matrices = false);
/// (s, u, v) with a = u diag(s) v^H, s descending; u and v are shape [0] unless compute_uv.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool compute_uv = true,
                                       bool full_matrices = false);
/// (e, v): ascending eigenvalues and eigenvectors (columns) of a symmetric a
/// (its lower triangle is read); v is shape [0] unless compute_v.
std::pair<Tensor, Tensor> self_adjoint_eig(const Tensor& a, bool compute_v = true);
/// a with the elements more than num_lower below or num_upper above the
/// diagonal set to zero (a negative count keeps that whole triangle).
Tensor matrix_band_part(const Tensor& a, int64_t num_lower, int64_t num_upper);
Tensor matrix_band_part(const Tensor& a, const Tensor& num_lower, const Tensor& num_upper);
/// a with its last two dimensions swapped.
Tensor matrix_transpose(const Tensor& a);

}  // namespace kiln
