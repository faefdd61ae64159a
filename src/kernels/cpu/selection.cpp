// CPU kernels for TopKV2 (a partial sort of each row's indices, rows split
// across threads) and Where (coordinates of the non-zero elements).
#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernel_util.h"

namespace kiln::cpu {
namespace {

// a ranks before b: larger first, NaN above every number.
template <typename T>
bool ranks_before(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return b == b;
  }
  return a > b;
}

template <typename T>
void top_k_rows(const T* x, int64_t rows, int64_t n, int64_t k, T* values, int32_t* indices) {
  const int64_t grain = std::max<int64_t>(1, config().parallel_grain / std::max<int64_t>(1, n));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> order(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = x + r * n;
      std::iota(order.begin(), order.end(), 0);
      // Ties keep the lower index first, so the result does not depend on the sort.
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t a, int32_t b) {
        if (ranks_before(row[a], row[b])) return true;
        if (ranks_before(row[b], row[a])) return false;
        return a < b;
      });
      for (int64_t j = 0; j < k; ++j) {
        values[r * k + j] = row[order[static_cast<size_t>(j)]];
        indices[r * k + j] = order[static_cast<size_t>(j)];
      }
    }
  });
}

void top_k_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& values = c.allocate_output(0);
  Tensor& indices = c.allocate_output(1);
  const int64_t n = x.shape().dim(x.shape().rank() - 1);
  const int64_t k = values.shape().dim(values.shape().rank() - 1);
  if (n > INT32_MAX) c.fail("rows of ", n, " elements are too long for int32 indices");
  if (values.num_elements() == 0) return;
  const int64_t rows = x.num_elements() / n;
  visit_numeric(x.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      top_k_rows(x.data<T>(), rows, n, k, values.mutable_data<T>(),
                 indices.mutable_data<int32_t>());
  });
}

template <typename T>
void write_coordinates(const T* p, const Shape& shape, int64_t* out) {
  const int64_t rank = shape.rank();
  std::vector<int64_t> at(static_cast<size_t>(rank), 0);
  for (int64_t i = 0, e = shape.num_elements(); i < e; ++i) {
    if (p[i] != T(0)) out = std::copy(at.begin(), at.end(), out);
    for (int64_t d = rank - 1; d >= 0; --d) {  // next row-major coordinate
      if (++at[static_cast<size_t>(d)] < shape.dim(d)) break;
      at[static_cast<size_t>(d)] = 0;
    }
  }
}

void where_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  visit_numeric(x.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    write_coordinates(x.data<T>(), x.shape(), out.mutable_data<int64_t>());
  });
}

}  // namespace

void bind_selection_kernels(OpTableBuilder& t) {
  t.kernel(OpId::TopKV2, top_k_kernel);
  t.kernel(OpId::Where, where_kernel);
}

}  // namespace kiln::cpu
