// CPU kernels for the unsorted segment reductions: rows of data combined
// (sum, max, min, prod) into the output row named by their segment id
// (negative ids dropped). Ids are checked before
// anything is written; large rows are split by columns across threads, so
// every output element has one writer and the sum order is fixed.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "functors.h"
#include "kernel_util.h"

namespace kiln::cpu {
namespace {

template <typename Op, typename T, typename I>
void segment_reduce(const T* data, const I* ids, int64_t rows, int64_t inner, T* out) {
  parallel_for(inner, std::max<int64_t>(64, config().parallel_grain / std::max<int64_t>(1, rows)),
               [&](int64_t c0, int64_t c1) {
                 for (int64_t r = 0; r < rows; ++r) {
                   const int64_t id = static_cast<int64_t>(ids[r]);
                   if (id < 0) continue;
                   const T* src = data + r * inner;
                   T* dst = out + id * inner;
                   for (int64_t k = c0; k < c1; ++k) dst[k] = Op()(dst[k], src[k]);
                 }
               });
}

template <typename I>
void check_ids(const KernelContext& c, const I* ids, int64_t rows, int64_t num_segments) {
  for (int64_t r = 0; r < rows; ++r)
    if (static_cast<int64_t>(ids[r]) >= num_segments)
      c.fail("segment_ids[", r, "] = ", static_cast<int64_t>(ids[r]), " is out of range [0, ",
             num_segments, ")");
}

// The value of an empty segment.
template <typename Op, typename T>
T identity_of() {
  if constexpr (std::is_same_v<Op, fn::Maximum>) return std::numeric_limits<T>::lowest();
  if constexpr (std::is_same_v<Op, fn::Minimum>) return std::numeric_limits<T>::max();
  if constexpr (std::is_same_v<Op, fn::Mul>) return T(1);
  return T(0);
}

template <typename Op>
void unsorted_segment_kernel(KernelContext& c) {
  const Tensor& data = c.input(0);
  const Tensor& ids = c.input(1);
  const int64_t rows = ids.num_elements();
  const int64_t num_segments = c.output_spec(0).shape.dim(0);
  const bool i32 = ids.dtype() == DType::kInt32;
  if (i32)
    check_ids(c, ids.data<int32_t>(), rows, num_segments);
  else
    check_ids(c, ids.data<int64_t>(), rows, num_segments);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  const int64_t inner = out.num_elements() / num_segments;
  visit_numeric(data.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      T* o = out.mutable_data<T>();
      std::fill(o, o + out.num_elements(), identity_of<Op, T>());
      if (rows == 0) return;
      if (i32)
        segment_reduce<Op>(data.data<T>(), ids.data<int32_t>(), rows, inner, o);
      else
        segment_reduce<Op>(data.data<T>(), ids.data<int64_t>(), rows, inner, o);
    }
  });
}

}  // namespace

void bind_segment_kernels(OpTableBuilder& t) {
  t.kernel(OpId::UnsortedSegmentSum, unsorted_segment_kernel<fn::Add>);
  t.kernel(OpId::UnsortedSegmentMax, unsorted_segment_kernel<fn::Maximum>);
  t.kernel(OpId::UnsortedSegmentMin, unsorted_segment_kernel<fn::Minimum>);
  t.kernel(OpId::UnsortedSegmentProd, unsorted_segment_kernel<fn::Mul>);
}

}  // namespace kiln::cpu
