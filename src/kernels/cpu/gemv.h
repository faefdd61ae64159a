// Internal: products of a few rows, C[m, n] = A[m, k] B[k, n] with m small —
// a dense layer or a one-pixel 1x1 convolution (squeeze-and-excitation, a
// classifier head) at batches up to 8. They read B once and compute little, so their
// speed is the speed B streams from memory: B is read in place (no packing) in
// contiguous chunks of its rows, one per task on kiln's pool, and the chunks'
// partial sums are added at the end.
#pragma once
#include <cstdint>

namespace kiln::cpu {

/// Rows of A up to which gemv_rows() applies (a batch of 8 images): B is read
/// once for all of them.
inline constexpr int64_t kGemvMaxRows = 8;

/// C[m, n] = A[m, k] B[k, n], float32, row-major with leading dimensions lda,
/// ldb, ldc; 1 <= m <= kGemvMaxRows. Large B splits its rows over kiln's pool.
void gemv_rows(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, float* c, int64_t ldc);

}  // namespace kiln::cpu
