// Products of a few rows (gemv.h).
#include "gemv.h"

#include <algorithm>
#include <vector>

#include "elementwise_util.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

// B of fewer bytes runs on the calling thread: its read takes a few
// microseconds, about what handing out pool tasks costs.
constexpr int64_t kMinSplitBytes = 256 << 10;
// A chunk holds at least this many bytes of B.
constexpr int64_t kMinChunkBytes = 128 << 10;
constexpr int kChunksPerThread = 2;
// Rows of B summed apart before their sum joins the chunk's (accuracy).
constexpr int64_t kBlockRows = 64;

// acc[M, n] (rows lacc apart) += A[M, k0:k1] B[k0:k1, n], four rows of B at a
// time (one pass over acc for four rows read).
#define KILN_GEMV_CHUNK(name, target)                                                        \
  template <int M>                                                                           \
  target void name(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k0,     \
                   int64_t k1, int64_t n, int64_t lacc, float* __restrict acc) {             \
    int64_t k = k0;                                                                          \
    for (; k + 4 <= k1; k += 4) {                                                            \
      const float* __restrict b0 = b + k * ldb;                                              \
      const float* __restrict b1 = b0 + ldb;                                                 \
      const float* __restrict b2 = b1 + ldb;                                                 \
      const float* __restrict b3 = b2 + ldb;                                                 \
      float x[M][4];                                                                         \
      for (int i = 0; i < M; ++i)                                                            \
        for (int t = 0; t < 4; ++t) x[i][t] = a[i * lda + k + t];                            \
      _Pragma("GCC ivdep") for (int64_t j = 0; j < n; ++j) {                                 \
        const float v0 = b0[j], v1 = b1[j], v2 = b2[j], v3 = b3[j];                          \
        for (int i = 0; i < M; ++i)                                                          \
          acc[i * lacc + j] += x[i][0] * v0 + x[i][1] * v1 + x[i][2] * v2 + x[i][3] * v3;    \
      }                                                                                      \
    }                                                                                        \
    for (; k < k1; ++k) {                                                                    \
      const float* __restrict bk = b + k * ldb;                                              \
      for (int i = 0; i < M; ++i) {                                                          \
        const float x = a[i * lda + k];                                                      \
        _Pragma("GCC ivdep") for (int64_t j = 0; j < n; ++j) acc[i * lacc + j] += x * bk[j]; \
      }                                                                                      \
    }                                                                                        \
  }
KILN_GEMV_CHUNK(chunk_base, )
#ifdef KILN_X86_CLONES
KILN_GEMV_CHUNK(chunk_avx2, KILN_AVX2_TARGET)
KILN_GEMV_CHUNK(chunk_avx512, KILN_AVX512_TARGET)
#endif
#undef KILN_GEMV_CHUNK

template <int M>
void chunk(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k0, int64_t k1,
           int64_t n, int64_t lacc, float* acc) {
#ifdef KILN_X86_CLONES
  switch (detail::simd_level()) {
    case detail::SimdLevel::kAvx512: chunk_avx512<M>(a, lda, b, ldb, k0, k1, n, lacc, acc); return;
    case detail::SimdLevel::kAvx2: chunk_avx2<M>(a, lda, b, ldb, k0, k1, n, lacc, acc); return;
    case detail::SimdLevel::kBase: break;
  }
#endif
  chunk_base<M>(a, lda, b, ldb, k0, k1, n, lacc, acc);
}

void block_rows(int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k0,
                int64_t k1, int64_t n, int64_t lacc, float* acc) {
  std::fill(acc, acc + m * lacc, 0.f);
  switch (m) {
    case 1: chunk<1>(a, lda, b, ldb, k0, k1, n, lacc, acc); break;
    case 2: chunk<2>(a, lda, b, ldb, k0, k1, n, lacc, acc); break;
    case 3: chunk<3>(a, lda, b, ldb, k0, k1, n, lacc, acc); break;
    case 4: chunk<4>(a, lda, b, ldb, k0, k1, n, lacc, acc); break;
    case 5: chunk<5>(a, lda, b, ldb, k0, k1, n, lacc, acc); break;
    case 6: chunk<6>(a, lda, b, ldb, k0, k1, n, lacc, acc); break;
    case 7: chunk<7>(a, lda, b, ldb, k0, k1, n, lacc, acc); break;
    default: chunk<8>(a, lda, b, ldb, k0, k1, n, lacc, acc); break;
  }
}

// acc[m, n] (rows lacc apart) = A[m, k0:k1] B[k0:k1, n] as sums of blocks of
// kBlockRows rows: the rounding error of a sum of k terms grows with its
// length, and oneDNN's kernels (the convolutions' other path) sum in blocks too.
void chunk_rows(int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k0,
                int64_t k1, int64_t n, int64_t lacc, float* acc) {
  const int64_t first = std::min(k1, k0 + kBlockRows);
  block_rows(m, a, lda, b, ldb, k0, first, n, lacc, acc);
  if (first == k1) return;
  std::vector<float> part(static_cast<size_t>(m * lacc));
  for (int64_t r = first; r < k1; r += kBlockRows) {
    block_rows(m, a, lda, b, ldb, r, std::min(k1, r + kBlockRows), n, lacc, part.data());
    for (int64_t i = 0; i < m * lacc; ++i) acc[i] += part[static_cast<size_t>(i)];
  }
}

}  // namespace

void gemv_rows(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
               int64_t ldb, float* c, int64_t ldc) {
  const int64_t bytes = k * n * static_cast<int64_t>(sizeof(float));
  int64_t chunks = 1;
  if (bytes >= kMinSplitBytes && k >= 8) {
    const int threads = ThreadPool::global().num_threads();
    chunks =
        std::min<int64_t>({int64_t{threads} * kChunksPerThread, bytes / kMinChunkBytes, k / 4});
    chunks = std::max<int64_t>(chunks, 1);
  }
  // Sums' rows a multiple of 16 floats apart but not of 512 (2 KB): rows 4 KB
  // apart (n = 1024) share the L1's sets, and eight of them thrashed it (2x the time).
  int64_t lacc = (n + 15) / 16 * 16;
  if (lacc % 512 == 0) lacc += 16;
  std::vector<float> partial(static_cast<size_t>(chunks * m * lacc));
  // Chunks of whole groups of four rows but the last.
  const int64_t rows = (k / 4 + chunks - 1) / chunks * 4;
  auto run = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t k0 = std::min(k, t * rows), k1 = std::min(k, k0 + rows);
      chunk_rows(m, a, lda, b, ldb, k0, t + 1 == chunks ? k : k1, n, lacc,
                 partial.data() + t * m * lacc);
    }
  };
  if (chunks == 1)
    run(0, 1);
  else
    ThreadPool::global().parallel_for(chunks, 1, run);
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    const float* p0 = partial.data() + i * lacc;
    std::copy(p0, p0 + n, ci);
    for (int64_t t = 1; t < chunks; ++t) {
      const float* pt = partial.data() + (t * m + i) * lacc;
      for (int64_t j = 0; j < n; ++j) ci[j] += pt[j];
    }
  }
}

}  // namespace kiln::cpu
