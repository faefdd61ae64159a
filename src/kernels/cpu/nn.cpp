// CPU kernels for BiasAdd, Softmax and LogSoftmax; binds the NN family
// (matmul.cpp, conv.cpp, pool.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "bind.h"
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

// Stable softmax / log-softmax of each row of n elements.
template <typename T, bool kLog>
void softmax_rows(const T* in, T* out, int64_t rows, int64_t n) {
  parallel_for(rows, std::max<int64_t>(1, config().parallel_grain / (8 * n)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   const T* x = in + r * n;
                   T* o = out + r * n;
                   T m = -std::numeric_limits<T>::infinity();
                   for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
                   double sum = 0;
                   if constexpr (kLog) {
                     for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - m);
                     const T shift = m + static_cast<T>(std::log(sum));
                     for (int64_t i = 0; i < n; ++i) o[i] = x[i] - shift;
                   } else {
                     for (int64_t i = 0; i < n; ++i) {
                       o[i] = std::exp(x[i] - m);
                       sum += o[i];
                     }
                     const T inv = static_cast<T>(1.0 / sum);
                     for (int64_t i = 0; i < n; ++i) o[i] *= inv;
                   }
                 }
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
