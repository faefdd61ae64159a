// CPU kernel for batched matmul: OpenBLAS gemm for float64 and float32, oneDNN
// for bfloat16 and for large float32 products where it has a brgemm kernel
// (matmul_onednn.cpp), a blocked loop for integers.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "gemm.h"
#include "gemv.h"
#include "kernel_util.h"
#include "threading.h"

namespace kiln::cpu {
namespace {

// Problem sizes and the per-batch operand offsets (batch dims broadcast).
struct MatMulPlan {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  int64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0;  // as stored
  std::vector<int64_t> a_off, b_off;                       // element offsets per batch
};

MatMulPlan plan(const Tensor& a, const Tensor& b, const Shape& out, bool ta, bool tb) {
  MatMulPlan p;
  p.ta = ta;
  p.tb = tb;
  const int64_t ra = a.rank(), rb = b.rank(), ro = out.rank();
  p.a_rows = a.dim(ra - 2);
  p.a_cols = a.dim(ra - 1);
  p.b_rows = b.dim(rb - 2);
  p.b_cols = b.dim(rb - 1);
  p.m = ta ? p.a_cols : p.a_rows;
  p.k = ta ? p.a_rows : p.a_cols;
  p.n = tb ? p.b_rows : p.b_cols;
  // Batch index -> operand offsets, right-aligned broadcasting.
  const int64_t nb = ro - 2;
  int64_t batches = 1;
  for (int64_t d = 0; d < nb; ++d) batches *= out.dim(d);
  p.a_off.assign(static_cast<size_t>(batches), 0);
  p.b_off.assign(static_cast<size_t>(batches), 0);
  const int64_t a_mat = p.a_rows * p.a_cols, b_mat = p.b_rows * p.b_cols;
  auto fill = [&](const Shape& s, int64_t mat, std::vector<int64_t>& off) {
    const int64_t sb = s.rank() - 2;
    std::vector<int64_t> stride(static_cast<size_t>(nb), 0);
    int64_t acc = mat;
    for (int64_t d = sb - 1; d >= 0; --d) {
      const int64_t od = d + (nb - sb);
      stride[static_cast<size_t>(od)] = s.dim(d) == 1 ? 0 : acc;
      acc *= s.dim(d);
    }
    for (int64_t i = 0; i < batches; ++i) {
      int64_t rem = i, o = 0;
      for (int64_t d = nb - 1; d >= 0; --d) {
        o += (rem % out.dim(d)) * stride[static_cast<size_t>(d)];
        rem /= out.dim(d);
      }
      off[static_cast<size_t>(i)] = o;
    }
  };
  fill(a.shape(), a_mat, p.a_off);
  fill(b.shape(), b_mat, p.b_off);
  // [batch, m, k] x [k, n] with a shared y is one [batch * m, k] x [k, n]
  // product (the dense-layer case).
  bool fold = batches > 1 && !ta;
  for (int64_t i = 0; fold && i < batches; ++i)
    fold = p.b_off[static_cast<size_t>(i)] == 0 && p.a_off[static_cast<size_t>(i)] == i * a_mat;
  if (fold) {
    p.m *= batches;
    p.a_rows = p.m;
    p.a_off.assign(1, 0);
    p.b_off.assign(1, 0);
  }
  return p;
}

// Products below this many multiply-adds run as one call; batches of such small
// products are spread over the kiln pool instead.
constexpr int64_t kSmallGemm = 1 << 18;
// A block of a split product has at least this many rows (columns): OpenBLAS packs
// the other operand again for every call.
constexpr int64_t kMinBlockRows = 64;

// One single-threaded product, row-major C[m, n] = op(A) op(B): oneDNN's
// brgemm (float32, f32_gemm_onednn; B packed with `b_version`) or OpenBLAS.
template <typename T>
void gemm_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
               const T* b, int64_t ldb, T* c, int64_t ldc, uint64_t b_version = 0,
               int64_t min_onednn_macs = kMinOneDnnMacs) {
  if constexpr (std::is_same_v<T, float>) {
    if (!ta && static_cast<double>(m) * n * k >= min_onednn_macs &&
        f32_gemm_onednn({ta, tb, m, n, k, a, lda, b, ldb, c, ldc}, b_version))
      return;
  }
  openblas_single_threaded();
  const auto cta = ta ? CblasTrans : CblasNoTrans, ctb = tb ? CblasTrans : CblasNoTrans;
  const auto i = [](int64_t v) { return static_cast<blasint>(v); };
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, cta, ctb, i(m), i(n), i(k), 1.f, a, i(lda), b, i(ldb), 0.f, c,
                i(ldc));
  else
    cblas_dgemm(CblasRowMajor, cta, ctb, i(m), i(n), i(k), 1.0, a, i(lda), b, i(ldb), 0.0, c,
                i(ldc));
}

// A bfloat16 product on oneDNN, split as float32 products are.
void gemm_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const BFloat16* a, int64_t lda,
               const BFloat16* b, int64_t ldb, BFloat16* c, int64_t ldc, uint64_t = 0,
               int64_t = 0) {
  LibrariesSingleThreaded single;
  bf16_gemm_call({ta, tb, m, n, k, a, lda, b, ldb, c, ldc});
}

// How many blocks of C a product splits into on the pool, and whether they are
// blocks of rows (else of columns): small products never start the pool (its
// size stays settable until large work).
struct Split {
  int64_t blocks = 1;
  bool by_rows = true;
};
Split split_of(int64_t m, int64_t n, int64_t macs) {
  Split s;
  s.by_rows = m >= n;
  const int64_t extent = s.by_rows ? m : n;
  const bool large = macs >= 2 * kSmallGemm && extent >= 2 * kMinBlockRows;
  const int threads = large ? ThreadPool::global().num_threads() : 1;
  s.blocks = std::min<int64_t>({threads * 2, extent / kMinBlockRows, macs / kSmallGemm});
  return s;
}

int64_t macs_of(int64_t m, int64_t n, int64_t k) {
  int64_t macs;
  if (__builtin_mul_overflow(m * n, k, &macs)) macs = std::numeric_limits<int64_t>::max();
  return macs;
}

// Whole products of a batch spread over the pool (for_batches) run on oneDNN
// from this many multiply-adds: an attention's [128, 128] x [128, 64] and
// [128, 64] x [64, 128]^T per head took 0.68x OpenBLAS's time.
constexpr int64_t kMinOneDnnBatchMacs = 1 << 19;

// One product of the plan. Few rows of float32 (a dense layer at batch 1) run
// as gemv_rows. A large one runs as blocks of C's rows (or of its columns,
// when C has few rows) on kiln's pool, each a single-threaded call: the one
// thread budget, and a descheduled thread delays only its own block. `whole`:
// one call (a task of a batch spread over the pool).
template <typename T>
void gemm(const MatMulPlan& p, const T* a, const T* b, T* c, int64_t macs, uint64_t b_version = 0,
          bool whole = false) {
  const int64_t lda = std::max<int64_t>(1, p.a_cols), ldb = std::max<int64_t>(1, p.b_cols);
  const int64_t ldc = std::max<int64_t>(1, p.n);
  if constexpr (std::is_same_v<T, float>) {
    if (!p.ta && !p.tb && p.m <= kGemvMaxRows) {  // read B in place, once (gemv.h)
      gemv_rows(p.m, p.n, p.k, a, lda, b, ldb, c, ldc);
      return;
    }
  }
  const Split s = whole ? Split{} : split_of(p.m, p.n, macs);
  const int64_t extent = s.by_rows ? p.m : p.n;
  if (s.blocks < 2) {
    gemm_call(p.ta, p.tb, p.m, p.n, p.k, a, lda, b, ldb, c, ldc, b_version,
              whole ? kMinOneDnnBatchMacs : kMinOneDnnMacs);
    return;
  }
  const int64_t step = (extent + s.blocks - 1) / s.blocks;
  parallel_for(s.blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i) {
      const int64_t lo = i * step, len = std::min(extent, lo + step) - lo;
      if (len <= 0) continue;
      if (s.by_rows)  // rows lo.. of op(A) and of C
        gemm_call(p.ta, p.tb, len, p.n, p.k, a + (p.ta ? lo : lo * lda), lda, b, ldb, c + lo * ldc,
                  ldc, b_version);
      else  // columns lo.. of op(B) and of C
        gemm_call(p.ta, p.tb, p.m, len, p.k, a, lda, b + (p.tb ? lo * ldb : lo), ldb, c + lo, ldc);
    }
  });
}

// The plan of a single product (no batch dims).
template <typename T>
MatMulPlan plan_of(const GemmArgs<T>& g) {
  MatMulPlan p;
  p.ta = g.ta;
  p.tb = g.tb;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.a_rows = g.ta ? g.k : g.m;
  p.a_cols = g.ta ? g.m : g.k;
  p.b_rows = g.tb ? g.n : g.k;
  p.b_cols = g.tb ? g.k : g.n;
  return p;
}

// Products of fewer multiply-adds, in batches of at least two per thread, run
// whole, spread over the pool (an attention's [128, 128] x [128, 64] per
// head), instead of each split over the pool in turn.
constexpr int64_t kSpreadBatchMacs = 1 << 23;

// Runs one(i, whole) for each of `batches` products of `macs` multiply-adds:
// small ones, and many of moderate size, spread over the pool (`whole`: one
// call each), large ones in turn (each splits itself).
template <typename F>
void for_batches(int64_t batches, int64_t macs, F&& one) {
  if (batches > 1 && macs < kSmallGemm) {
    parallel_for(batches, std::max<int64_t>(1, kSmallGemm / std::max<int64_t>(1, macs)),
                 [&](int64_t b0, int64_t b1) {
                   for (int64_t i = b0; i < b1; ++i) one(i, true);
                 });
  } else if (batches > 1 && macs < kSpreadBatchMacs &&  // large work: may start the pool
             batches >= 2 * ThreadPool::global().num_threads()) {
    parallel_for(batches, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) one(i, true);
    });
  } else {
    for (int64_t i = 0; i < batches; ++i) one(i, false);
  }
}

template <typename T>
void blas_matmul(const MatMulPlan& p, const T* a, const T* b, T* c, uint64_t b_version = 0) {
  const int64_t mat_c = p.m * p.n;
  const int64_t macs = macs_of(p.m, p.n, p.k);
  for_batches(static_cast<int64_t>(p.a_off.size()), macs, [&](int64_t i, bool whole) {
    gemm<T>(p, a + p.a_off[static_cast<size_t>(i)], b + p.b_off[static_cast<size_t>(i)],
            c + i * mat_c, macs, b_version, whole);
  });
}

// B's version when the products may read B packed: float32, not A-transposed,
// one B for all of them (gemm_packable_b; gemm() reads it packed in whole
// products and row blocks only).
uint64_t packable_b(const MatMulPlan& p, const Tensor& b) {
  if (p.ta || std::any_of(p.b_off.begin(), p.b_off.end(), [](int64_t o) { return o != 0; }))
    return 0;
  return gemm_packable_b(b, p.m, p.n, p.k);
}

// Copies the stored [rows, cols] matrix as [cols, rows].
template <typename T>
void transpose_into(const T* src, int64_t rows, int64_t cols, T* dst) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile)
      for (int64_t i = i0; i < std::min(rows, i0 + kTile); ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j)
          dst[j * rows + i] = src[i * cols + j];
}

// Integer matmul: C[m, n] = A[m, k] B[k, n] in wrapping unsigned arithmetic,
// blocked over k and n so a B tile stays in cache while rows stream past.
template <typename T>
void int_matmul(const MatMulPlan& p, const T* a, const T* b, T* c) {
  using U = std::make_unsigned_t<T>;
  constexpr int64_t kKb = 128, kNb = 512, kRows = 16;
  const int64_t batches = static_cast<int64_t>(p.a_off.size());
  const int64_t m = p.m, n = p.n, k = p.k;
  // Transposed operands are materialized once per distinct matrix.
  std::unique_ptr<T[]> at, bt;
  const int64_t a_mat = p.a_rows * p.a_cols, b_mat = p.b_rows * p.b_cols;
  auto a_of = [&](int64_t i) -> const T* { return a + p.a_off[static_cast<size_t>(i)]; };
  auto b_of = [&](int64_t i) -> const T* { return b + p.b_off[static_cast<size_t>(i)]; };
  if (p.ta) {
    const int64_t na = a_mat ? (*std::max_element(p.a_off.begin(), p.a_off.end())) / a_mat + 1 : 0;
    at.reset(new T[static_cast<size_t>(na * a_mat)]);
    for (int64_t j = 0; j < na; ++j)
      transpose_into(a + j * a_mat, p.a_rows, p.a_cols, at.get() + j * a_mat);
  }
  if (p.tb) {
    const int64_t nbm = b_mat ? (*std::max_element(p.b_off.begin(), p.b_off.end())) / b_mat + 1 : 0;
    bt.reset(new T[static_cast<size_t>(nbm * b_mat)]);
    for (int64_t j = 0; j < nbm; ++j)
      transpose_into(b + j * b_mat, p.b_rows, p.b_cols, bt.get() + j * b_mat);
  }
  const int64_t row_blocks = (m + kRows - 1) / kRows;
  const int64_t work_per_task = kRows * n * k;
  parallel_for(batches * row_blocks,
               std::max<int64_t>(1, config().parallel_grain / std::max<int64_t>(1, work_per_task)),
               [&](int64_t t0, int64_t t1) {
                 for (int64_t t = t0; t < t1; ++t) {
                   const int64_t bi = t / row_blocks, r0 = (t % row_blocks) * kRows;
                   const int64_t r1 = std::min(m, r0 + kRows);
                   const T* A = p.ta ? at.get() + p.a_off[static_cast<size_t>(bi)] : a_of(bi);
                   const T* B = p.tb ? bt.get() + p.b_off[static_cast<size_t>(bi)] : b_of(bi);
                   U* C = reinterpret_cast<U*>(c + bi * m * n);
                   for (int64_t i = r0; i < r1; ++i) std::fill(C + i * n, C + (i + 1) * n, U(0));
                   for (int64_t j0 = 0; j0 < n; j0 += kNb) {
                     const int64_t j1 = std::min(n, j0 + kNb);
                     for (int64_t k0 = 0; k0 < k; k0 += kKb) {
                       const int64_t k1 = std::min(k, k0 + kKb);
                       for (int64_t i = r0; i < r1; ++i) {
                         U* crow = C + i * n;
                         for (int64_t kk = k0; kk < k1; ++kk) {
                           const U av = static_cast<U>(A[i * k + kk]);
                           const T* brow = B + kk * n;
                           for (int64_t j = j0; j < j1; ++j)
                             crow[j] = static_cast<U>(crow[j] + av * static_cast<U>(brow[j]));
                         }
                       }
                     }
                   }
                 }
               });
}

// bfloat16: oneDNN's kernels, or (a CPU without them) float32 copies with the
// result rounded once, as kHalfInFloat ops compute.
void bf16_matmul(const MatMulPlan& p, const Tensor& a, const Tensor& b, Tensor& out) {
  if (bf16_gemm_native()) {
    blas_matmul<BFloat16>(p, a.data<BFloat16>(), b.data<BFloat16>(), out.mutable_data<BFloat16>());
    return;
  }
  const Tensor af = as_float32(a, "MatMul"), bf = as_float32(b, "MatMul");
  Tensor y = Tensor::empty(DType::kFloat32, out.shape());
  blas_matmul<float>(p, af.data<float>(), bf.data<float>(), y.mutable_data<float>());
  round_to_half(y.data<float>(), out);
}

void matmul_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  Tensor& out = c.allocate_output(0);
  const MatMulPlan p = plan(a, b, out.shape(), c.attr_bool("adj_x"), c.attr_bool("adj_y"));
  if (out.num_elements() == 0) return;
  if (p.k == 0) {
    std::memset(out.mutable_raw_data(), 0, out.nbytes());
    return;
  }
  constexpr int64_t kBlasMax = std::numeric_limits<blasint>::max();
  const bool is_float =
      a.dtype() == DType::kBFloat16 || a.dtype() == DType::kFloat32 || a.dtype() == DType::kFloat64;
  if (is_float && std::max({p.m, p.n, p.k, p.a_cols, p.b_cols}) > kBlasMax)
    throw UnimplementedError(str_cat(c.op().type_name, ": matrix dimension above ", kBlasMax,
                                     " is not supported by the BLAS backend"));
  if (a.dtype() == DType::kBFloat16) {
    bf16_matmul(p, a, b, out);
    return;
  }
  visit_numeric(a.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      blas_matmul<T>(p, a.data<T>(), b.data<T>(), out.mutable_data<T>(), packable_b(p, b));
    } else if constexpr (std::is_floating_point_v<T>) {
      blas_matmul<T>(p, a.data<T>(), b.data<T>(), out.mutable_data<T>());
    } else if constexpr (!std::is_same_v<T, bool>)
      int_matmul<T>(p, a.data<T>(), b.data<T>(), out.mutable_data<T>());
  });
}

}  // namespace

template <typename T>
void gemm_batches(const GemmArgs<T>& g, int64_t batches, int64_t a_step, int64_t b_step, T* c) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    std::fill(c, c + batches * g.m * g.n, T(0));
    return;
  }
  const MatMulPlan p = plan_of(g);
  const int64_t macs = macs_of(g.m, g.n, g.k);
  for_batches(batches, macs, [&](int64_t i, bool whole) {
    gemm<T>(p, g.a + i * a_step, g.b + i * b_step, c + i * g.m * g.n, macs,
            b_step ? 0 : g.b_version, whole);
  });
}

template <typename T>
void gemm_product(const GemmArgs<T>& g, T* c) {
  gemm_batches(g, 1, 0, 0, c);
}

template <typename T>
void gemm_product_rows(const GemmArgs<T>& g, int64_t r0, int64_t r1, T* c) {
  if (r1 <= r0 || g.n == 0) return;
  if (g.k == 0) {
    std::fill(c, c + (r1 - r0) * g.n, T(0));
    return;
  }
  const MatMulPlan p = plan_of(g);
  const int64_t lda = std::max<int64_t>(1, p.a_cols), ldb = std::max<int64_t>(1, p.b_cols);
  gemm_call(g.ta, g.tb, r1 - r0, g.n, g.k, g.a + (g.ta ? r0 : r0 * lda), lda, g.b, ldb, c,
            std::max<int64_t>(1, g.n), g.b_version);
}

template void gemm_product<float>(const GemmArgs<float>&, float*);
template void gemm_product<double>(const GemmArgs<double>&, double*);
template void gemm_product<BFloat16>(const GemmArgs<BFloat16>&, BFloat16*);
template void gemm_batches<float>(const GemmArgs<float>&, int64_t, int64_t, int64_t, float*);
template void gemm_batches<double>(const GemmArgs<double>&, int64_t, int64_t, int64_t, double*);
template void gemm_product_rows<float>(const GemmArgs<float>&, int64_t, int64_t, float*);
template void gemm_product_rows<double>(const GemmArgs<double>&, int64_t, int64_t, double*);
template void gemm_batches<BFloat16>(const GemmArgs<BFloat16>&, int64_t, int64_t, int64_t,
                                     BFloat16*);
template void gemm_product_rows<BFloat16>(const GemmArgs<BFloat16>&, int64_t, int64_t, BFloat16*);

void f32_gemm_call(const GemmCall<float>& g) {
  gemm_call(g.ta, g.tb, g.m, g.n, g.k, g.a, g.lda, g.b, g.ldb, g.c, g.ldc, 0, kMinOneDnnBatchMacs);
}

int64_t gemm_row_blocks(int64_t m, int64_t n, int64_t k) {
  const Split s = split_of(m, n, macs_of(m, n, k));
  return s.blocks >= 2 && s.by_rows ? s.blocks : 0;
}

int64_t gemm_kernel_row_blocks(int64_t m, int64_t n, int64_t k, int64_t b_bytes,
                               int64_t kernel_work) {
  constexpr int64_t kMinRows = 8, kCachedB = 256 << 10;
  int64_t work;
  if (__builtin_add_overflow(macs_of(m, n, k), std::max<int64_t>(0, kernel_work), &work))
    work = std::numeric_limits<int64_t>::max();
  const Split s = split_of(m, n, work);
  if (s.blocks < 2) return 0;
  if (s.by_rows) return s.blocks;
  // One block of rows per thread: smaller ones run the product below speed.
  const int64_t blocks =
      std::min({s.blocks, m / kMinRows, int64_t{ThreadPool::global().num_threads()}});
  return blocks >= 2 && b_bytes <= kCachedB ? blocks : 0;
}

bool gemm_fits(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kBlasMax = std::numeric_limits<blasint>::max();
  return std::max({m, n, k}) <= kBlasMax;
}

void bind_fused_matmul_kernel(OpTableBuilder& t);  // matmul_onednn.cpp

void bind_matmul_kernels(OpTableBuilder& t) {
  t.kernel(OpId::MatMul, matmul_kernel);
  bind_fused_matmul_kernel(t);
}

}  // namespace kiln::cpu
