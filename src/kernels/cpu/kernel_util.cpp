#include "kernel_util.h"

namespace kiln::cpu {

std::vector<int64_t> int_values(const Tensor& t) {
  const int64_t n = t.num_elements();
  if (t.dtype() == DType::kInt32) {
    const int32_t* p = t.data<int32_t>();
    return std::vector<int64_t>(p, p + n);
  }
  const int64_t* p = t.data<int64_t>();
  return std::vector<int64_t>(p, p + n);
}

SmallVec<int64_t, 6> broadcast_strides(const Shape& in, const Shape& out) {
  const int64_t r = out.rank(), ri = in.rank();
  SmallVec<int64_t, 6> st(static_cast<size_t>(r), 0);
  int64_t acc = 1;
  for (int64_t d = ri - 1; d >= 0; --d) {
    const int64_t od = d + (r - ri);
    st[static_cast<size_t>(od)] = in.dim(d) == 1 ? 0 : acc;
    acc *= in.dim(d);
  }
  return st;
}

}  // namespace kiln::cpu
