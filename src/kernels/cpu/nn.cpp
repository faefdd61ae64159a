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

namespace kiln::cpu {
void bind_matmul_kernels(OpTableBuilder& t);
void bind_conv_kernels(OpTableBuilder& t);
void bind_pool_kernels(OpTableBuilder& t);

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

// One row of softmax / log-softmax: m = max(x), o = exp(x - m) summed on the way
// (float32: the vectorized polynomial Exp), then a scale by 1/sum (softmax) or
// o = x - m - log(sum) (log-softmax). Reductions use kLanes accumulators so the
// loops vectorize (one float accumulator does not, without -ffast-math), which
// also rounds less than one. A row stays in L1 between its passes; `o` may be `x`
// (the executor reuses a dead input's buffer). NaN in -> NaN row.
constexpr int64_t kLanes = 16;
constexpr int64_t kChunk = 256;  // a multiple of kLanes

#define KILN_SOFTMAX_ROW(name, attrs)                                                 \
  template <typename T, bool kLog>                                                    \
  attrs void name(const T* x, T* o, int64_t n) {                                      \
    using fn::detail::select;                                                         \
    const int64_t full = n - n % kLanes;                                              \
    T lane[kLanes];                                                                   \
    std::fill(lane, lane + kLanes, -std::numeric_limits<T>::infinity());             \
    for (int64_t i = 0; i < full; i += kLanes)                                        \
      for (int64_t j = 0; j < kLanes; ++j) lane[j] = select(x[i + j] > lane[j], x[i + j], lane[j]); \
    T m = lane[0];                                                                    \
    for (int64_t j = 1; j < kLanes; ++j) m = select(lane[j] > m, lane[j], m);         \
    for (int64_t i = full; i < n; ++i) m = select(x[i] > m, x[i], m);                 \
    std::fill(lane, lane + kLanes, T(0));                                             \
    T sum = 0;                                                                        \
    /* exp(x - m) in chunks: into o (softmax), or a stack buffer (log-softmax, whose */ \
    /* last pass reads x again, and o may be x's own buffer) */                       \
    T buf[kChunk];                                                                    \
    for (int64_t c = 0; c < n; c += kChunk) {                                         \
      const int64_t len = std::min(kChunk, n - c);                                    \
      T* e = kLog ? buf : o + c;                                                      \
      _Pragma("GCC ivdep") for (int64_t i = 0; i < len; ++i) e[i] = fn::Exp{}(x[c + i] - m); \
      const int64_t lfull = len - len % kLanes;                                       \
      for (int64_t i = 0; i < lfull; i += kLanes)                                     \
        for (int64_t j = 0; j < kLanes; ++j) lane[j] += e[i + j];                     \
      for (int64_t i = lfull; i < len; ++i) sum += e[i];                              \
    }                                                                                 \
    for (int64_t j = 0; j < kLanes; ++j) sum += lane[j];                              \
    if constexpr (kLog) {                                                             \
      const T shift = m + std::log(sum);                                              \
      _Pragma("GCC ivdep") for (int64_t i = 0; i < n; ++i) o[i] = x[i] - shift;       \
    } else {                                                                          \
      const T inv = T(1) / sum;                                                       \
      _Pragma("GCC ivdep") for (int64_t i = 0; i < n; ++i) o[i] *= inv;               \
    }                                                                                 \
  }
KILN_SOFTMAX_ROW(softmax_row, )
#ifdef KILN_X86_CLONES
KILN_SOFTMAX_ROW(softmax_row_avx2, KILN_AVX2_TARGET)
KILN_SOFTMAX_ROW(softmax_row_avx512, KILN_AVX512_TARGET)
#endif
#undef KILN_SOFTMAX_ROW

template <typename T, bool kLog>
void softmax_rows(const T* in, T* out, int64_t rows, int64_t n) {
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
  parallel_for(rows, std::max<int64_t>(1, config().parallel_grain / (8 * n)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) row(in + r * n, out + r * n, n);
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

void bind_nn_kernels(OpTableBuilder& t) {
  bind_matmul_kernels(t);
  bind_conv_kernels(t);
  bind_pool_kernels(t);
  t.kernel(OpId::BiasAdd, bias_add_kernel);
  t.kernel(OpId::Softmax, softmax_kernel<false>);
  t.kernel(OpId::LogSoftmax, softmax_kernel<true>);
}

}  // namespace kiln::cpu
