#include "kernel_util.h"

#include <algorithm>

namespace kiln::cpu {

namespace {
template <typename Out>
Out ints_of(const Tensor& t) {
  const int64_t n = t.num_elements();
  Out out(static_cast<size_t>(n));
  if (t.dtype() == DType::kInt32)
    std::copy_n(t.data<int32_t>(), n, out.data());
  else
    std::copy_n(t.data<int64_t>(), n, out.data());
  return out;
}
}  // namespace

std::vector<int64_t> int_values(const Tensor& t) {
  return ints_of<std::vector<int64_t>>(t);
}

SmallVec<int64_t, 8> int_list(const Tensor& t) {
  return ints_of<SmallVec<int64_t, 8>>(t);
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
