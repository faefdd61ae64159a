// Reductions over axes, arg-max/min and cumulative sums.
//
// `axes` lists the axes to reduce (negative values count from the end);
// an EMPTY list reduces over ALL axes (unlike tf.reduce_sum(x, axis=[]),
// which reduces nothing). Duplicate axes are an InvalidArgument error.
// With `keepdims` the reduced axes stay with length 1.
//
// Reducing over an empty axis gives the operation's identity: sum 0, prod 1,
// max -inf (lowest for integers), min +inf (highest for integers), any false,
// all true, and mean NaN for floating dtypes (0 for integers).
// Integer sums and products wrap around on overflow; integer mean is the
// wrapped sum divided by the count, truncated toward zero (as TensorFlow).
// Floating max/min propagate NaN.
#pragma once
#include <concepts>
#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {
namespace detail {
/// A single axis given as a C++ integer (not bool).
template <typename I>
concept AxisIndex = std::integral<I> && !std::same_as<I, bool>;
}  // namespace detail

#define KILN_REDUCE_FRONT(name)                                                               \
  Tensor name(const Tensor& t, const std::vector<int64_t>& axes = {}, bool keepdims = false); \
  template <detail::AxisIndex I>                                                              \
  Tensor name(const Tensor& t, I axis, bool keepdims = false) {                               \
    return name(t, std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdims);               \
  }

/// Sum of elements (numeric dtypes). float32 sums are accumulated blockwise
/// with float64 partials for accuracy.
KILN_REDUCE_FRONT(reduce_sum)
/// Arithmetic mean (numeric dtypes; integer mean truncates).
KILN_REDUCE_FRONT(reduce_mean)
/// Maximum (numeric dtypes).
KILN_REDUCE_FRONT(reduce_max)
/// Minimum (numeric dtypes).
KILN_REDUCE_FRONT(reduce_min)
/// Product (numeric dtypes).
KILN_REDUCE_FRONT(reduce_prod)
/// Logical or (bool).
KILN_REDUCE_FRONT(reduce_any)
/// Logical and (bool).
KILN_REDUCE_FRONT(reduce_all)
#undef KILN_REDUCE_FRONT

/// Index of the largest element along `axis` (numeric dtypes); the axis is
/// removed from the output shape. Ties give the first occurrence. NaNs are
/// ignored as in TensorFlow's CPU kernel (a NaN is never selected unless the
/// whole slice is NaN, which gives index 0). `output_type` is int64 or
/// int32. An empty axis is an InvalidArgument error.
Tensor argmax(const Tensor& t, int64_t axis = 0, DType output_type = DType::kInt64);
/// Index of the smallest element along `axis`; same rules as argmax.
Tensor argmin(const Tensor& t, int64_t axis = 0, DType output_type = DType::kInt64);

/// Cumulative sum along `axis` (numeric dtypes, rank >= 1). `exclusive`
/// shifts by one (the first output is 0); `reverse` sums from the end.
Tensor cumsum(const Tensor& t, int64_t axis = 0, bool exclusive = false, bool reverse = false);
/// Cumulative product along `axis` (the same options as cumsum; exclusive starts at 1).
Tensor cumprod(const Tensor& t, int64_t axis = 0, bool exclusive = false, bool reverse = false);

/// TopKV2: the k largest entries of each row (last dimension) of `input`,
/// largest first when `sorted` (ties: lower index first; NaN is larger than
/// every number), and their int32 indices. k is an int32 scalar in
/// [0, last dimension].
std::pair<Tensor, Tensor> top_k(const Tensor& input, const Tensor& k, bool sorted = true);
std::pair<Tensor, Tensor> top_k(const Tensor& input, int64_t k, bool sorted = true);

}  // namespace kiln
