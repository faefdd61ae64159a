// TensorArray: the C++ front of the TensorList ops (src/ops/tensor_array_ops.cpp).
#include "kiln/context.h"
#include "kiln/control_flow.h"

namespace kiln {
namespace {

Attrs shape_attrs(DType dtype, const Shape& s) {
  return Attrs{dtype, s.rank_known() ? s.to_vector() : std::vector<int64_t>{}, !s.rank_known()};
}

// The more specific of two compatible shapes, dim by dim.
Shape merge(const Shape& a, const Shape& b) {
  if (!a.rank_known()) return b;
  if (!b.rank_known()) return a;
  Shape m = a;
  for (int64_t d = 0; d < m.rank(); ++d)
    if (m[d] == Shape::kUnknownDim) m.set_dim(d, b[d]);
  return m;
}

}  // namespace

TensorArray::TensorArray(DType dtype, const Tensor& size, bool dynamic_size, Shape element_shape)
    : dtype_(dtype), element_shape_(std::move(element_shape)), dynamic_size_(dynamic_size) {
  const Shape& s = element_shape_;
  const Attrs a{dtype, s.rank_known() ? s.to_vector() : std::vector<int64_t>{}, !s.rank_known(),
                dynamic_size};
  handle_ = call_op1(OpId::TensorListReserve, {size}, a);
}

TensorArray::TensorArray(DType dtype, int64_t size, bool dynamic_size, Shape element_shape)
    : TensorArray(dtype, Tensor(size), dynamic_size, std::move(element_shape)) {}

TensorArray TensorArray::with_handle(Tensor handle) const {
  if (!handle.defined() || handle.dtype() != DType::kResource)
    throw InvalidArgumentError("TensorArray.with_handle: expected a TensorArray handle (resource)");
  TensorArray t = *this;
  t.handle_ = std::move(handle);
  return t;
}

TensorArray TensorArray::write(const Tensor& index, const Tensor& value) const {
  if (!value.defined()) throw InvalidArgumentError("TensorArray.write: value is undefined");
  if (!element_shape_.is_compatible_with(value.shape()))
    throw InvalidArgumentError(str_cat("TensorArray.write: value has shape ", value.shape(),
                                       " but the elements have shape ", element_shape_));
  TensorArray t = *this;
  t.handle_ = call_op1(OpId::TensorListSetItem, {handle_, index, value}, {dtype_});
  t.element_shape_ = merge(element_shape_, value.shape());
  return t;
}

TensorArray TensorArray::write(int64_t index, const Tensor& value) const {
  return write(Tensor(index), value);
}

Tensor TensorArray::read(const Tensor& index) const {
  return call_op1(OpId::TensorListGetItem, {handle_, index}, shape_attrs(dtype_, element_shape_));
}

Tensor TensorArray::read(int64_t index) const {
  return read(Tensor(index));
}

Tensor TensorArray::stack() const {
  return call_op1(OpId::TensorListStack, {handle_}, shape_attrs(dtype_, element_shape_));
}

TensorArray TensorArray::unstack(const Tensor& value) const {
  if (!value.defined() || value.dtype() != dtype_)
    throw InvalidArgumentError(str_cat("TensorArray.unstack: value must be ", dtype_name(dtype_),
                                       ", got ",
                                       value.defined() ? dtype_name(value.dtype()) : "nothing"));
  TensorArray t = *this;
  t.handle_ = call_op1(OpId::TensorListFromTensor, {value});
  Shape elem = value.shape();
  if (elem.rank_known() && elem.rank() > 0) elem.erase(0);
  t.element_shape_ = merge(element_shape_, elem);
  return t;
}

Tensor TensorArray::size() const {
  return call_op1(OpId::TensorListLength, {handle_});
}

}  // namespace kiln
