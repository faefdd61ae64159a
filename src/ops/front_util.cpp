#include "front_util.h"

namespace kiln {

Tensor scalar_like(Scalar s, const Tensor& like) {
  if (!like.defined()) throw InvalidArgumentError("operand is an undefined tensor");
  return Tensor(s, like.dtype());
}

Tensor int64_vector(std::span<const int64_t> v) {
  return Tensor::from_span<int64_t>(v, Shape{static_cast<int64_t>(v.size())});
}

}  // namespace kiln
