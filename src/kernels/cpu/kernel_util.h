// Helpers shared by the CPU kernels: typed dispatch on dtype, parallel
// elementwise maps, and broadcasting binary maps.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "kiln/config.h"
#include "kiln/op.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {

/// Calls f(T{}) for the C++ type of a numeric or bool dtype; throws
/// InvalidArgumentError naming `op` for other dtypes.
template <typename F>
void visit_numeric(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::kBool: f(bool{}); return;
    case DType::kInt8: f(int8_t{}); return;
    case DType::kUInt8: f(uint8_t{}); return;
    case DType::kInt32: f(int32_t{}); return;
    case DType::kInt64: f(int64_t{}); return;
    case DType::kFloat32: f(float{}); return;
    case DType::kFloat64: f(double{}); return;
    default:
      throw InvalidArgumentError(str_cat(op, ": unsupported dtype ", dtype_name(dt)));
  }
}

/// out[i] = f(in[i]) over n elements, split across the pool when large.
template <typename T, typename U, typename F>
void map_unary(const T* in, U* out, int64_t n, F f) {
  parallel_for(n, 0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = f(in[i]);
  });
}

/// Strides of `in` broadcast to `out` (0 on broadcast dims), right-aligned.
SmallVec<int64_t, 6> broadcast_strides(const Shape& in, const Shape& out);

/// out = f(a, b) with NumPy broadcasting. T: input type, U: output type.
template <typename T, typename U, typename F>
void map_binary(const Tensor& ta, const Tensor& tb, Tensor& tout, F f) {
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  U* out = tout.mutable_data<U>();
  const int64_t n = tout.num_elements();
  const int64_t na = ta.num_elements(), nb = tb.num_elements();
  if (n == 0) return;
  if (na == n && nb == n) {
    parallel_for(n, 0, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) out[i] = f(a[i], b[i]);
    });
    return;
  }
  if (na == 1 && nb == n) {
    const T av = a[0];
    parallel_for(n, 0, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) out[i] = f(av, b[i]);
    });
    return;
  }
  if (nb == 1 && na == n) {
    const T bv = b[0];
    parallel_for(n, 0, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) out[i] = f(a[i], bv);
    });
    return;
  }
  // General case: iterate rows of the last output dim.
  const Shape& os = tout.shape();
  const int64_t r = os.rank();
  const auto sa = broadcast_strides(ta.shape(), os);
  const auto sb = broadcast_strides(tb.shape(), os);
  const int64_t inner = os.dim(r - 1);
  const int64_t ia = sa[static_cast<size_t>(r - 1)], ib = sb[static_cast<size_t>(r - 1)];
  const int64_t rows = n / inner;
  parallel_for(rows, std::max<int64_t>(1, config().parallel_grain / inner),
               [&](int64_t rb, int64_t re) {
                 SmallVec<int64_t, 6> idx(static_cast<size_t>(r), 0);
                 // Decompose the starting row into a multi-index over dims [0, r-1).
                 int64_t rem = rb;
                 for (int64_t d = r - 2; d >= 0; --d) {
                   idx[static_cast<size_t>(d)] = rem % os.dim(d);
                   rem /= os.dim(d);
                 }
                 for (int64_t row = rb; row < re; ++row) {
                   int64_t oa = 0, ob = 0;
                   for (int64_t d = 0; d < r - 1; ++d) {
                     oa += idx[static_cast<size_t>(d)] * sa[static_cast<size_t>(d)];
                     ob += idx[static_cast<size_t>(d)] * sb[static_cast<size_t>(d)];
                   }
                   U* o = out + row * inner;
                   const T* pa = a + oa;
                   const T* pb = b + ob;
                   if (ia == 1 && ib == 1) {
                     for (int64_t i = 0; i < inner; ++i) o[i] = f(pa[i], pb[i]);
                   } else if (ia == 1) {
                     const T bv = pb[0];
                     for (int64_t i = 0; i < inner; ++i) o[i] = f(pa[i], bv);
                   } else if (ib == 1) {
                     const T av = pa[0];
                     for (int64_t i = 0; i < inner; ++i) o[i] = f(av, pb[i]);
                   } else {
                     const U v = f(pa[0], pb[0]);
                     for (int64_t i = 0; i < inner; ++i) o[i] = v;
                   }
                   for (int64_t d = r - 2; d >= 0; --d) {
                     if (++idx[static_cast<size_t>(d)] < os.dim(d)) break;
                     idx[static_cast<size_t>(d)] = 0;
                   }
                 }
               });
}

}  // namespace kiln::cpu
