// CPU kernels for linear algebra on the last two dimensions: LAPACK routines
// from OpenBLAS (LU, Cholesky, QR, divide-and-conquer SVD and symmetric
// eigensolver) and BLAS's triangular solve. LAPACK is column-major: each
// matrix is copied transposed into a work buffer and back. Matrices of a
// batch run in parallel on kiln's pool (OpenBLAS itself single-threaded).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "kernel_util.h"
#include "threading.h"

// LAPACK's Fortran entry points (OpenBLAS exports them; Debian ships no
// LAPACKE header with it). Character arguments take a trailing hidden length.
extern "C" {
void sgetrf_(const int*, const int*, float*, const int*, int*, int*);
void dgetrf_(const int*, const int*, double*, const int*, int*, int*);
void sgetrs_(const char*, const int*, const int*, const float*, const int*, const int*, float*,
             const int*, int*, size_t);
void dgetrs_(const char*, const int*, const int*, const double*, const int*, const int*, double*,
             const int*, int*, size_t);
void spotrf_(const char*, const int*, float*, const int*, int*, size_t);
void dpotrf_(const char*, const int*, double*, const int*, int*, size_t);
void sgeqrf_(const int*, const int*, float*, const int*, float*, float*, const int*, int*);
void dgeqrf_(const int*, const int*, double*, const int*, double*, double*, const int*, int*);
void sorgqr_(const int*, const int*, const int*, float*, const int*, const float*, float*,
             const int*, int*);
void dorgqr_(const int*, const int*, const int*, double*, const int*, const double*, double*,
             const int*, int*);
void sgesdd_(const char*, const int*, const int*, float*, const int*, float*, float*, const int*,
             float*, const int*, float*, const int*, int*, int*, size_t);
void dgesdd_(const char*, const int*, const int*, double*, const int*, double*, double*, const int*,
             double*, const int*, double*, const int*, int*, int*, size_t);
void ssyevd_(const char*, const char*, const int*, float*, const int*, float*, float*, const int*,
             int*, const int*, int*, size_t, size_t);
void dsyevd_(const char*, const char*, const int*, double*, const int*, double*, double*,
             const int*, int*, const int*, int*, size_t, size_t);
}

namespace kiln::cpu {
namespace {

// ---- typed LAPACK ----
namespace lapack {
#define KILN_LAPACK_PAIR(name, sig_f, sig_d, call) \
  inline void name sig_f {                         \
    s##name##_ call;                               \
  }                                                \
  inline void name sig_d {                         \
    d##name##_ call;                               \
  }
KILN_LAPACK_PAIR(getrf, (int m, int n, float* a, int* ipiv, int* info),
                 (int m, int n, double* a, int* ipiv, int* info), (&m, &n, a, &m, ipiv, info))
KILN_LAPACK_PAIR(getrs,
                 (char tr, int n, int k, const float* a, const int* ipiv, float* b, int* info),
                 (char tr, int n, int k, const double* a, const int* ipiv, double* b, int* info),
                 (&tr, &n, &k, a, &n, ipiv, b, &n, info, 1))
KILN_LAPACK_PAIR(potrf, (int n, float* a, int* info), (int n, double* a, int* info),
                 ("L", &n, a, &n, info, 1))
KILN_LAPACK_PAIR(geqrf, (int m, int n, float* a, float* tau, float* w, int lw, int* info),
                 (int m, int n, double* a, double* tau, double* w, int lw, int* info),
                 (&m, &n, a, &m, tau, w, &lw, info))
KILN_LAPACK_PAIR(orgqr,
                 (int m, int n, int k, float* a, const float* tau, float* w, int lw, int* info),
                 (int m, int n, int k, double* a, const double* tau, double* w, int lw, int* info),
                 (&m, &n, &k, a, &m, tau, w, &lw, info))
KILN_LAPACK_PAIR(gesdd,
                 (char job, int m, int n, float* a, float* s, float* u, int ldu, float* vt,
                  int ldvt, float* w, int lw, int* iw, int* info),
                 (char job, int m, int n, double* a, double* s, double* u, int ldu, double* vt,
                  int ldvt, double* w, int lw, int* iw, int* info),
                 (&job, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, w, &lw, iw, info, 1))
KILN_LAPACK_PAIR(
    syevd, (char job, int n, float* a, float* e, float* w, int lw, int* iw, int liw, int* info),
    (char job, int n, double* a, double* e, double* w, int lw, int* iw, int liw, int* info),
    (&job, "L", &n, a, &n, e, w, &lw, iw, &liw, info, 1, 1))
#undef KILN_LAPACK_PAIR
inline void trsm(bool lower, bool trans, int n, int k, const float* a, float* b) {
  cblas_strsm(CblasRowMajor, CblasLeft, lower ? CblasLower : CblasUpper,
              trans ? CblasTrans : CblasNoTrans, CblasNonUnit, n, k, 1.0f, a, n, b, k);
}
inline void trsm(bool lower, bool trans, int n, int k, const double* a, double* b) {
  cblas_dtrsm(CblasRowMajor, CblasLeft, lower ? CblasLower : CblasUpper,
              trans ? CblasTrans : CblasNoTrans, CblasNonUnit, n, k, 1.0, a, n, b, k);
}
}  // namespace lapack

// ---- batches ----

// Rows and columns of the input's matrices, and how many there are.
struct Batch {
  int64_t count, m, n;
};

Batch batch_of(KernelContext& c, const Tensor& t) {
  const Shape& s = t.shape();
  const int64_t r = s.rank();
  Batch b{1, s.dim(r - 2), s.dim(r - 1)};
  for (int64_t i = 0; i + 2 < r; ++i) b.count *= s.dim(i);
  if (b.m > std::numeric_limits<int>::max() / std::max<int64_t>(1, b.n))
    c.fail("matrices of ", b.m, " x ", b.n, " are too large for LAPACK");
  return b;
}

// Runs f(i) for each matrix of a batch on the pool.
template <typename F>
void for_each_matrix(int64_t count, F&& f) {
  openblas_single_threaded();
  parallel_for(count, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i) f(i);
  });
}

// Row-major [m, n] -> column-major, and back.
template <typename T>
void to_columns(const T* rm, int64_t m, int64_t n, T* cm) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) cm[i + j * m] = rm[i * n + j];
}
template <typename T>
void from_columns(const T* cm, int64_t m, int64_t n, T* rm) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) rm[i * n + j] = cm[i + j * m];
}

// f.template operator()<T>() for the float dtype of input 0.
template <typename F>
void visit_float(KernelContext& c, F&& f) {
  if (c.input(0).dtype() == DType::kFloat64)
    f(double{});
  else
    f(float{});
}

// ---- LU: determinants, inverse, solve ----

// The LU factors of the row-major n x n `a` (column-major in `lu`, pivots in
// `piv`); false when the matrix is singular.
template <typename T>
bool lu_factor(const T* a, int64_t n, std::vector<T>& lu, std::vector<int>& piv) {
  lu.resize(static_cast<size_t>(n * n));
  piv.assign(static_cast<size_t>(std::max<int64_t>(1, n)), 0);
  to_columns(a, n, n, lu.data());
  int info = 0;
  const int ni = static_cast<int>(n);
  if (n > 0) lapack::getrf(ni, ni, lu.data(), piv.data(), &info);
  return info == 0;
}

void determinant_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const bool log = c.op().outputs.size() == 2;
  const Batch b = batch_of(c, a);
  visit_float(c, [&](auto tag) {
    using T = decltype(tag);
    T* det = c.allocate_output(0).mutable_data<T>();
    T* logabs = log ? c.allocate_output(1).mutable_data<T>() : nullptr;
    const int n = static_cast<int>(b.n);
    for_each_matrix(b.count, [&](int64_t i) {
      std::vector<T> lu;
      std::vector<int> piv;
      lu_factor(a.data<T>() + i * b.n * b.n, b.n, lu, piv);  // singular: a zero on U's diagonal
      T parity = 1, value = 1, sign = 1, sum = 0;
      for (int k = 0; k < n; ++k) {
        const T u = lu[static_cast<size_t>(k) * static_cast<size_t>(b.n + 1)];
        if (piv[static_cast<size_t>(k)] != k + 1) parity = -parity;
        value *= u;
        sign *= u < 0 ? T(-1) : u > 0 ? T(1) : T(0);
        sum += std::log(std::abs(u));
      }
      if (log) {
        det[i] = parity * sign;
        logabs[i] = sign == 0 ? -std::numeric_limits<T>::infinity() : sum;
      } else {
        det[i] = parity * value;
      }
    });
  });
}

void inverse_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const bool adjoint = c.attr_bool("adjoint");
  const Batch b = batch_of(c, a);
  visit_float(c, [&](auto tag) {
    using T = decltype(tag);
    T* out = c.allocate_output(0).mutable_data<T>();
    const int n = static_cast<int>(b.n);
    for_each_matrix(b.count, [&](int64_t i) {
      std::vector<T> lu, x(static_cast<size_t>(b.n * b.n), T(0));
      std::vector<int> piv;
      if (!lu_factor(a.data<T>() + i * b.n * b.n, b.n, lu, piv)) c.fail("Input is not invertible.");
      for (int k = 0; k < n; ++k) x[static_cast<size_t>(k) * (b.n + 1)] = 1;
      int info = 0;
      if (n > 0) lapack::getrs(adjoint ? 'T' : 'N', n, n, lu.data(), piv.data(), x.data(), &info);
      from_columns(x.data(), b.n, b.n, out + i * b.n * b.n);
    });
  });
}

void solve_kernel(KernelContext& c) {
  const Tensor &a = c.input(0), &rhs = c.input(1);
  const bool adjoint = c.attr_bool("adjoint");
  const Batch b = batch_of(c, a), r = batch_of(c, rhs);
  if (b.count != r.count || b.n != r.m)
    c.fail("matrix and rhs must have the same batch dimensions and rows, got ",
           a.shape().debug_string(), " and ", rhs.shape().debug_string());
  visit_float(c, [&](auto tag) {
    using T = decltype(tag);
    T* out = c.allocate_output(0).mutable_data<T>();
    const int n = static_cast<int>(b.n), k = static_cast<int>(r.n);
    for_each_matrix(b.count, [&](int64_t i) {
      std::vector<T> lu, x(static_cast<size_t>(r.m * r.n));
      std::vector<int> piv;
      if (!lu_factor(a.data<T>() + i * b.n * b.n, b.n, lu, piv))
        c.fail("Input matrix is not invertible.");
      to_columns(rhs.data<T>() + i * r.m * r.n, r.m, r.n, x.data());
      int info = 0;
      if (n > 0 && k > 0)
        lapack::getrs(adjoint ? 'T' : 'N', n, k, lu.data(), piv.data(), x.data(), &info);
      from_columns(x.data(), r.m, r.n, out + i * r.m * r.n);
    });
  });
}

void triangular_solve_kernel(KernelContext& c) {
  const Tensor &a = c.input(0), &rhs = c.input(1);
  const bool lower = c.attr_bool("lower"), adjoint = c.attr_bool("adjoint");
  const Batch b = batch_of(c, a), r = batch_of(c, rhs);
  if (b.count != r.count || b.n != r.m)
    c.fail("matrix and rhs must have the same batch dimensions and rows, got ",
           a.shape().debug_string(), " and ", rhs.shape().debug_string());
  visit_float(c, [&](auto tag) {
    using T = decltype(tag);
    T* out = c.allocate_output(0).mutable_data<T>();
    std::copy(rhs.data<T>(), rhs.data<T>() + rhs.num_elements(), out);
    if (b.n == 0 || r.n == 0) return;
    for_each_matrix(b.count, [&](int64_t i) {
      lapack::trsm(lower, adjoint, static_cast<int>(b.n), static_cast<int>(r.n),
                   a.data<T>() + i * b.n * b.n, out + i * r.m * r.n);
    });
  });
}

// ---- decompositions ----

void cholesky_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Batch b = batch_of(c, a);
  visit_float(c, [&](auto tag) {
    using T = decltype(tag);
    T* out = c.allocate_output(0).mutable_data<T>();
    const int n = static_cast<int>(b.n);
    for_each_matrix(b.count, [&](int64_t i) {
      std::vector<T> l(static_cast<size_t>(b.n * b.n));
      to_columns(a.data<T>() + i * b.n * b.n, b.n, b.n, l.data());
      int info = 0;
      if (n > 0) lapack::potrf(n, l.data(), &info);
      if (info != 0)
        c.fail("Cholesky decomposition was not successful. The input might not be valid.");
      T* o = out + i * b.n * b.n;
      for (int64_t r = 0; r < b.n; ++r)
        for (int64_t k = 0; k < b.n; ++k) o[r * b.n + k] = k <= r ? l[r + k * b.n] : T(0);
    });
  });
}

// LAPACK's workspace size query (lwork = -1) result.
template <typename T>
int work_size(T w) {
  return std::max(1, static_cast<int>(w));
}

void qr_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const bool full = c.attr_bool("full_matrices");
  const Batch b = batch_of(c, a);
  const int64_t p = std::min(b.m, b.n), qc = full ? b.m : p;
  visit_float(c, [&](auto tag) {
    using T = decltype(tag);
    T* q = c.allocate_output(0).mutable_data<T>();
    T* r = c.allocate_output(1).mutable_data<T>();
    const int m = static_cast<int>(b.m), n = static_cast<int>(b.n);
    for_each_matrix(b.count, [&](int64_t i) {
      // Reflectors in the first n columns of an m x max(n, qc) buffer.
      const int64_t cols = std::max(b.n, qc);
      std::vector<T> w(static_cast<size_t>(std::max<int64_t>(1, b.m * cols)), T(0));
      std::vector<T> tau(static_cast<size_t>(std::max<int64_t>(1, p)));
      to_columns(a.data<T>() + i * b.m * b.n, b.m, b.n, w.data());
      int info = 0;
      if (p > 0) {
        T size = 0;
        lapack::geqrf(m, n, w.data(), tau.data(), &size, -1, &info);
        std::vector<T> work(static_cast<size_t>(work_size(size)));
        lapack::geqrf(m, n, w.data(), tau.data(), work.data(), static_cast<int>(work.size()),
                      &info);
      }
      T* ro = r + i * qc * b.n;
      for (int64_t row = 0; row < qc; ++row)
        for (int64_t k = 0; k < b.n; ++k)
          ro[row * b.n + k] = row <= k && row < p ? w[row + k * b.m] : T(0);
      T* qo = q + i * b.m * qc;
      if (b.m == 0 || qc == 0) return;
      if (p == 0) {  // no reflectors: q is the identity
        for (int64_t row = 0; row < b.m; ++row)
          for (int64_t k = 0; k < qc; ++k) qo[row * qc + k] = row == k ? T(1) : T(0);
        return;
      }
      T size = 0;
      const int qn = static_cast<int>(qc), kk = static_cast<int>(p);
      lapack::orgqr(m, qn, kk, w.data(), tau.data(), &size, -1, &info);
      std::vector<T> work(static_cast<size_t>(work_size(size)));
      lapack::orgqr(m, qn, kk, w.data(), tau.data(), work.data(), static_cast<int>(work.size()),
                    &info);
      from_columns(w.data(), b.m, qc, qo);
    });
  });
}

// s (descending), u [m, uc], v [n, vc] of one matrix (column-major `w`, destroyed).
template <typename T>
void svd_one(std::vector<T>& w, int64_t m, int64_t n, char job, T* s, T* u, int64_t uc, T* v,
             int64_t vc) {
  const int64_t p = std::min(m, n);
  const int64_t ldvt = std::max<int64_t>(1, job == 'A' ? n : p);
  std::vector<T> uw(static_cast<size_t>(std::max<int64_t>(1, m * uc)));
  std::vector<T> vt(static_cast<size_t>(std::max<int64_t>(1, ldvt * n)));
  std::vector<int> iw(static_cast<size_t>(std::max<int64_t>(1, 8 * p)));
  const int mi = static_cast<int>(m), ni = static_cast<int>(n);
  const int ldu = static_cast<int>(std::max<int64_t>(1, m)), ldv = static_cast<int>(ldvt);
  int info = 0;
  T size = 0;
  lapack::gesdd(job, mi, ni, w.data(), s, uw.data(), ldu, vt.data(), ldv, &size, -1, iw.data(),
                &info);
  std::vector<T> work(static_cast<size_t>(work_size(size)));
  lapack::gesdd(job, mi, ni, w.data(), s, uw.data(), ldu, vt.data(), ldv, work.data(),
                static_cast<int>(work.size()), iw.data(), &info);
  if (info != 0) throw InternalError("Svd: LAPACK's gesdd did not converge");
  if (!u) return;
  from_columns(uw.data(), m, uc, u);
  for (int64_t r = 0; r < n; ++r)  // v = vt^T: v[r][k] = vt[k][r]
    for (int64_t k = 0; k < vc; ++k) v[r * vc + k] = vt[k + r * ldvt];
}

void svd_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const bool uv = c.attr_bool("compute_uv"), full = c.attr_bool("full_matrices");
  const Batch b = batch_of(c, a);
  const int64_t p = std::min(b.m, b.n);
  const int64_t uc = full ? b.m : p, vc = full ? b.n : p;
  visit_float(c, [&](auto tag) {
    using T = decltype(tag);
    T* s = c.allocate_output(0).mutable_data<T>();
    T* u = c.allocate_output(1).mutable_data<T>();
    T* v = c.allocate_output(2).mutable_data<T>();
    for_each_matrix(b.count, [&](int64_t i) {
      T* ui = uv ? u + i * b.m * uc : nullptr;
      T* vi = uv ? v + i * b.n * vc : nullptr;
      if (p == 0) {  // nothing to decompose: u and v are identities
        for (int64_t r = 0; ui && r < b.m; ++r)
          for (int64_t k = 0; k < uc; ++k) ui[r * uc + k] = r == k ? T(1) : T(0);
        for (int64_t r = 0; vi && r < b.n; ++r)
          for (int64_t k = 0; k < vc; ++k) vi[r * vc + k] = r == k ? T(1) : T(0);
        return;
      }
      std::vector<T> w(static_cast<size_t>(b.m * b.n));
      to_columns(a.data<T>() + i * b.m * b.n, b.m, b.n, w.data());
      svd_one(w, b.m, b.n, !uv ? 'N' : full ? 'A' : 'S', s + i * p, ui, uc, vi, vc);
    });
  });
}

void eig_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const bool want_v = c.attr_bool("compute_v");
  const Batch b = batch_of(c, a);
  visit_float(c, [&](auto tag) {
    using T = decltype(tag);
    T* e = c.allocate_output(0).mutable_data<T>();
    T* v = c.allocate_output(1).mutable_data<T>();
    const int n = static_cast<int>(b.n);
    if (n == 0) return;
    for_each_matrix(b.count, [&](int64_t i) {
      std::vector<T> w(static_cast<size_t>(b.n * b.n));
      to_columns(a.data<T>() + i * b.n * b.n, b.n, b.n, w.data());
      const char job = want_v ? 'V' : 'N';
      int info = 0, isize = 0;
      T size = 0;
      lapack::syevd(job, n, w.data(), e + i * b.n, &size, -1, &isize, -1, &info);
      std::vector<T> work(static_cast<size_t>(work_size(size)));
      std::vector<int> iwork(static_cast<size_t>(std::max(1, isize)));
      lapack::syevd(job, n, w.data(), e + i * b.n, work.data(), static_cast<int>(work.size()),
                    iwork.data(), static_cast<int>(iwork.size()), &info);
      if (info != 0) c.fail("Self-adjoint eigen decomposition was not successful.");
      if (want_v) from_columns(w.data(), b.n, b.n, v + i * b.n * b.n);
    });
  });
}

// ---- band part ----

int64_t band_count(KernelContext& c, size_t i) {
  const Tensor& t = c.input(i);
  return t.dtype() == DType::kInt64 ? t.data<int64_t>()[0] : t.data<int32_t>()[0];
}

void band_part_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  Tensor& out = c.allocate_output(0);
  const Batch b = batch_of(c, a);
  const int64_t lo = band_count(c, 1), hi = band_count(c, 2);
  if (lo > b.m)
    c.fail("num_lower must be negative or less or equal to number of rows (", b.m, ") got: ", lo);
  if (hi > b.n)
    c.fail("num_upper must be negative or less or equal to number of columns (", b.n,
           ") got: ", hi);
  if (is_object(a.dtype())) c.fail("input must have a numeric or bool dtype");
  const size_t es = dtype_size(a.dtype());
  const char* src = static_cast<const char*>(a.raw_data());
  char* dst = static_cast<char*>(out.mutable_raw_data());
  std::fill(dst, dst + out.nbytes(), 0);
  for (int64_t i = 0; i < b.count; ++i)
    for (int64_t r = 0; r < b.m; ++r) {
      const int64_t k0 = lo < 0 ? 0 : std::max<int64_t>(0, r - lo);
      const int64_t k1 = hi < 0 ? b.n : std::min(b.n, r + hi + 1);
      if (k1 <= k0) continue;
      const size_t off = static_cast<size_t>((i * b.m + r) * b.n + k0) * es;
      std::copy(src + off, src + off + static_cast<size_t>(k1 - k0) * es, dst + off);
    }
}

}  // namespace

void bind_linalg_kernels(OpTableBuilder& t) {
  t.kernel(OpId::MatrixDeterminant, determinant_kernel);
  t.kernel(OpId::LogMatrixDeterminant, determinant_kernel);
  t.kernel(OpId::MatrixInverse, inverse_kernel);
  t.kernel(OpId::MatrixSolve, solve_kernel);
  t.kernel(OpId::MatrixTriangularSolve, triangular_solve_kernel);
  t.kernel(OpId::Cholesky, cholesky_kernel);
  t.kernel(OpId::Qr, qr_kernel);
  t.kernel(OpId::Svd, svd_kernel);
  t.kernel(OpId::SelfAdjointEigV2, eig_kernel);
  t.kernel(OpId::MatrixBandPart, band_part_kernel);
}

}  // namespace kiln::cpu
