// CPU kernels for BiasAdd, Softmax and LogSoftmax; binds the NN family
// (matmul.cpp, conv.cpp, pool.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "bind.h"
#include "elementwise_util.h"
#include "functors.h"
#include "kernel_util.h"
#include "softmax.h"

#ifdef KILN_X86_CLONES
#include <immintrin.h>
#endif

namespace kiln::cpu {
void bind_matmul_kernels(OpTableBuilder& t);
void bind_conv_kernels(OpTableBuilder& t);
void bind_pool_kernels(OpTableBuilder& t);
void bind_attention_kernels(OpTableBuilder& t);
void bind_rnn_kernels(OpTableBuilder& t);

namespace {

template <typename T>
T wrap_add(T a, T b) {
  return fn::Add()(a, b);  // integers wrap, as everywhere in kiln
}

void bias_add_kernel(KernelContext& c) {
  const Tensor& v = c.input(0);
  const Tensor& b = c.input(1);
  Tensor& out = c.allocate_output(0, 0);
  const int64_t n = out.num_elements();
  const int64_t cols = b.num_elements();
  if (n == 0) return;
  visit_numeric(v.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = v.data<T>();
      const T* bias = b.data<T>();
      T* o = out.mutable_data<T>();
      const int64_t rows = n / cols;
      parallel_for(rows, std::max<int64_t>(1, config().parallel_grain / cols),
                   [&](int64_t r0, int64_t r1) {
                     for (int64_t r = r0; r < r1; ++r) {
                       const T* xr = x + r * cols;
                       T* orow = o + r * cols;
                       for (int64_t j = 0; j < cols; ++j) orow[j] = wrap_add(xr[j], bias[j]);
                     }
                   });
    }
  });
}

// One row of softmax / log-softmax: m = max(x), o = exp(x - m) summed on the way,
// then a scale by 1/sum (softmax) or o = x - m - log(sum) (log-softmax).
// float32 uses the vectorized polynomial exp; when the first pass finds the row
// finite with min(x) - m >= kExpNormalLo (every e^(x - m) a normal float: no
// masked -inf/-1e9 entries) it uses exp_f32_normal, the same bits with ~40 %
// fewer instructions. Reductions use kLanes accumulators (`omp simd`: GCC folds
// max/min one scalar at a time without it), which also rounds less than one. A
// row stays in L1 between its passes; `o` may be `x` (the executor reuses a dead
// input's buffer). NaN in -> NaN row.
constexpr int64_t kLanes = 16;
constexpr int64_t kChunk = 256;       // a multiple of kLanes
constexpr int64_t kStreamRow = 4096;  // longest row streamed from a stack row buffer

// o[i] = a[i] * s (kScale) or a[i] - s, with non-temporal stores (no read for
// ownership of o's lines): for outputs too large to stay in cache. n % 8 == 0,
// o 32-byte aligned; the caller fences. Inlined into each clone (AVX: 8 lanes).
#ifdef KILN_X86_CLONES
template <bool kScale>
__attribute__((always_inline)) inline void stream_row_sse(const float* a, float s, float* o,
                                                          int64_t n) {
  const __m128 v = _mm_set1_ps(s);
  for (int64_t i = 0; i < n; i += 4) {
    const __m128 x = _mm_loadu_ps(a + i);
    _mm_stream_ps(o + i, kScale ? _mm_mul_ps(x, v) : _mm_sub_ps(x, v));
  }
}
template <bool kScale>
__attribute__((always_inline, target("avx"))) inline void stream_row_avx(const float* a, float s,
                                                                         float* o, int64_t n) {
  const __m256 v = _mm256_set1_ps(s);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 x = _mm256_loadu_ps(a + i);
    _mm256_stream_ps(o + i, kScale ? _mm256_mul_ps(x, v) : _mm256_sub_ps(x, v));
  }
}
#define KILN_STREAM_ROW_BASE stream_row_sse
#else
template <bool kScale>
inline void stream_row_plain(const float* a, float s, float* o, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = kScale ? a[i] * s : a[i] - s;
}
#define KILN_STREAM_ROW_BASE stream_row_plain
#endif

// exp_f32_normal as a functor (float rows in the normal range only).
struct ExpNormal {
  float operator()(float x) const { return fn::detail::exp_f32_normal(x); }
  double operator()(double x) const { return fn::Exp{}(x); }  // never chosen: no double fast path
};

// e[i] = f(x[i] - m) for one chunk, summed on the way into the 16 lanes (and the
// tail into sum) in one pass. Inlined into each clone.
template <typename T, typename F>
__attribute__((always_inline)) inline void exp_sum_chunk(const T* x, T m, T* e, int64_t len,
                                                         T* lane, T& sum, F f) {
  const int64_t full = len - len % kLanes;
  for (int64_t i = 0; i < full; i += kLanes)
#pragma omp simd
    for (int64_t j = 0; j < kLanes; ++j) {
      const T v = f(x[i + j] - m);
      e[i + j] = v;
      lane[j] += v;
    }
  for (int64_t i = full; i < len; ++i) sum += e[i] = f(x[i] - m);
}

#define KILN_SOFTMAX_ROW(name, attrs, streamer)                                                    \
  template <typename T, bool kLog>                                                                 \
  attrs void name(const T* x, T* o, int64_t n, bool stream) {                                      \
    using fn::detail::select;                                                                      \
    const int64_t full = n - n % kLanes;                                                           \
    /* max, min, and sum(x * 0): 0 when finite, NaN for inf/NaN */                                 \
    T hi[kLanes], lo[kLanes], chk[kLanes];                                                         \
    std::fill(hi, hi + kLanes, -std::numeric_limits<T>::infinity());                               \
    std::fill(lo, lo + kLanes, std::numeric_limits<T>::infinity());                                \
    std::fill(chk, chk + kLanes, T(0));                                                            \
    for (int64_t i = 0; i < full; i += kLanes)                                                     \
      _Pragma("omp simd") for (int64_t j = 0; j < kLanes; ++j) {                                   \
        const T v = x[i + j];                                                                      \
        hi[j] = v > hi[j] ? v : hi[j];                                                             \
        lo[j] = v < lo[j] ? v : lo[j];                                                             \
        chk[j] += v * T(0);                                                                        \
      }                                                                                            \
    T m = hi[0], mn = lo[0], ck = chk[0];                                                          \
    for (int64_t j = 1; j < kLanes; ++j) {                                                         \
      m = select(hi[j] > m, hi[j], m);                                                             \
      mn = select(lo[j] < mn, lo[j], mn);                                                          \
      ck += chk[j];                                                                                \
    }                                                                                              \
    for (int64_t i = full; i < n; ++i) {                                                           \
      m = select(x[i] > m, x[i], m);                                                               \
      mn = select(x[i] < mn, x[i], mn);                                                            \
      ck += x[i] * T(0);                                                                           \
    }                                                                                              \
    const bool normal = std::is_same_v<T, float> && ck == 0 && mn - m >= fn::detail::kExpNormalLo; \
    T* lane = chk;                                                                                 \
    std::fill(lane, lane + kLanes, T(0));                                                          \
    T sum = 0;                                                                                     \
    /* exp(x - m) in chunks: into o (softmax), or a stack buffer (log-softmax, whose */            \
    /* last pass reads x again, and o may be x's own buffer; a streamed softmax row) */            \
    alignas(64) T buf[kStreamRow];                                                                 \
    for (int64_t c = 0; c < n; c += kChunk) {                                                      \
      const int64_t len = std::min(kChunk, n - c);                                                 \
      T* e = kLog ? buf : stream ? buf + c : o + c;                                                \
      /* the next row's lines load while this one computes (past the end: harmless) */             \
      for (int64_t i = 0; i < len; i += 64 / sizeof(T)) __builtin_prefetch(x + n + c + i);         \
      if (normal)                                                                                  \
        exp_sum_chunk(x + c, m, e, len, lane, sum, ExpNormal{});                                   \
      else                                                                                         \
        exp_sum_chunk(x + c, m, e, len, lane, sum, fn::Exp{});                                     \
    }                                                                                              \
    for (int64_t j = 0; j < kLanes; ++j) sum += lane[j];                                           \
    if constexpr (kLog) {                                                                          \
      const T shift = m + std::log(sum);                                                           \
      if constexpr (std::is_same_v<T, float>)                                                      \
        if (stream) return streamer<false>(x, shift, o, n);                                        \
      _Pragma("GCC ivdep") for (int64_t i = 0; i < n; ++i) o[i] = x[i] - shift;                    \
    } else {                                                                                       \
      const T inv = T(1) / sum;                                                                    \
      if constexpr (std::is_same_v<T, float>)                                                      \
        if (stream) return streamer<true>(buf, inv, o, n);                                         \
      _Pragma("GCC ivdep") for (int64_t i = 0; i < n; ++i) o[i] *= inv;                            \
    }                                                                                              \
  }
KILN_SOFTMAX_ROW(softmax_row, , KILN_STREAM_ROW_BASE)
#ifdef KILN_X86_CLONES
KILN_SOFTMAX_ROW(softmax_row_avx2, KILN_AVX2_TARGET, stream_row_avx)
KILN_SOFTMAX_ROW(softmax_row_avx512, KILN_AVX512_TARGET, stream_row_avx)
#endif
#undef KILN_STREAM_ROW_BASE
#undef KILN_SOFTMAX_ROW

// The row function for this CPU (float32: its widest clone).
template <typename T, bool kLog>
auto softmax_row_fn() {
  auto row = softmax_row<T, kLog>;
#ifdef KILN_X86_CLONES
  if constexpr (std::is_same_v<T, float>) {
    switch (detail::simd_level()) {
      case detail::SimdLevel::kAvx512: row = softmax_row_avx512<T, kLog>; break;
      case detail::SimdLevel::kAvx2: row = softmax_row_avx2<T, kLog>; break;
      case detail::SimdLevel::kBase: break;
    }
  }
#endif
  return row;
}

template <typename T, bool kLog>
void softmax_rows(const T* in, T* out, int64_t rows, int64_t n) {
  const auto row = softmax_row_fn<T, kLog>();
  // Outputs too large for the cache are streamed (rows from a row buffer).
  bool stream = false;
#ifdef KILN_X86_CLONES
  stream = std::is_same_v<T, float> && static_cast<size_t>(rows * n * 4) >= stream_bytes() &&
           n <= kStreamRow && n % 8 == 0 && reinterpret_cast<uintptr_t>(out) % 32 == 0;
#endif
  parallel_for(rows, std::max<int64_t>(1, config().parallel_grain / (8 * n)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) row(in + r * n, out + r * n, n, stream);
#ifdef KILN_X86_CLONES
                 if (stream) _mm_sfence();  // order the streamed rows before the join
#endif
               });
}

template <bool kLog>
void softmax_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0, 0);
  const int64_t n = x.dim(x.rank() - 1);
  const int64_t total = out.num_elements();
  if (total == 0) return;
  if (x.dtype() == DType::kFloat32)
    softmax_rows<float, kLog>(x.data<float>(), out.mutable_data<float>(), total / n, n);
  else
    softmax_rows<double, kLog>(x.data<double>(), out.mutable_data<double>(), total / n, n);
}

}  // namespace

void softmax_rows_in_place(float* x, int64_t rows, int64_t n) {
  const auto row = softmax_row_fn<float, false>();
  for (int64_t r = 0; r < rows; ++r) row(x + r * n, x + r * n, n, false);
}

void bind_nn_kernels(OpTableBuilder& t) {
  bind_matmul_kernels(t);
  bind_conv_kernels(t);
  bind_pool_kernels(t);
  bind_attention_kernels(t);
  bind_rnn_kernels(t);
  t.kernel(OpId::BiasAdd, bias_add_kernel);
  t.kernel(OpId::Softmax, softmax_kernel<false>);
  t.kernel(OpId::LogSoftmax, softmax_kernel<true>);
}

}  // namespace kiln::cpu
