// TensorArray: the C++ front of the TensorList ops (src/ops/tensor_array_ops.cpp).
#include <mutex>

#include "kiln/context.h"
#include "kiln/control_flow.h"
#include "ops/tensor_list.h"

namespace kiln {

// What the traced writes of a TensorArray's family taught: the shape they
// have in common (nullopt before the first). Shared by every TensorArray
// derived from one constructor call, like TensorFlow's shared element shape.
struct TensorArray::Learned {
  std::mutex mu;
  std::optional<Shape> shape;
  bool size_changed = false;  // a traced unstack gave another static size
};

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

// What two shapes have in common: dims that agree, else unknown.
Shape relax(const Shape& a, const Shape& b) {
  if (!a.rank_known() || !b.rank_known() || a.rank() != b.rank()) return Shape::unknown_rank();
  Shape m = a;
  for (int64_t d = 0; d < m.rank(); ++d)
    if (m[d] != b[d]) m.set_dim(d, Shape::kUnknownDim);
  return m;
}

// The value of an int scalar when known now (concrete, or a constant
// recorded in a trace), else -1.
int64_t known_int(const Tensor& t) {
  const Tensor* v = &t;
  if (t.is_symbolic()) v = t.impl()->symbol->constant_value(t.impl()->output_index);
  if (!v || v->is_symbolic() || v->rank() != 0) return -1;
  if (v->dtype() == DType::kInt32) return v->item<int32_t>();
  if (v->dtype() == DType::kInt64) return v->item<int64_t>();
  return -1;
}

}  // namespace

TensorArray::TensorArray(DType dtype, const Tensor& size, bool dynamic_size, Shape element_shape,
                         bool infer_shape)
    : dtype_(dtype),
      element_shape_(std::move(element_shape)),
      learned_(std::make_shared<Learned>()),
      dynamic_size_(dynamic_size),
      infer_shape_(infer_shape) {
  const Shape& s = element_shape_;
  const Attrs a{dtype, s.rank_known() ? s.to_vector() : std::vector<int64_t>{}, !s.rank_known(),
                dynamic_size, infer_shape};
  handle_ = call_op1(OpId::TensorListReserve, {size}, a);
  if (!dynamic_size && size.defined()) static_size_ = known_int(size);
}

TensorArray::TensorArray(DType dtype, int64_t size, bool dynamic_size, Shape element_shape,
                         bool infer_shape)
    : TensorArray(dtype, Tensor(size), dynamic_size, std::move(element_shape), infer_shape) {}

TensorArray TensorArray::with_handle(Tensor handle) const {
  if (!handle.defined() || handle.dtype() != DType::kResource)
    throw InvalidArgumentError("TensorArray.with_handle: expected a TensorArray handle (resource)");
  TensorArray t = *this;
  t.handle_ = std::move(handle);
  if (t.handle_.is_symbolic() && learned_) {
    std::lock_guard<std::mutex> lock(learned_->mu);
    if (learned_->size_changed) t.static_size_ = -1;
  }
  // A concrete list (an eager loop's result) knows its size and its
  // elements' shape.
  if (!t.handle_.is_symbolic()) {
    const auto* l = dynamic_cast<const detail::TensorList*>(t.handle_.resource());
    if (l) t.static_size_ = dynamic_size_ ? -1 : l->size();
    if (l && infer_shape_ && l->dtype == dtype_ &&
        l->element_shape.is_compatible_with(element_shape_))
      t.element_shape_ = merge(element_shape_, l->element_shape);
  }
  return t;
}

void TensorArray::learn(const Shape& value_shape) const {
  if (!learned_) return;
  std::lock_guard<std::mutex> lock(learned_->mu);
  learned_->shape = learned_->shape ? relax(*learned_->shape, value_shape) : value_shape;
}

Shape TensorArray::element_shape() const {
  if (!learned_) return element_shape_;
  std::lock_guard<std::mutex> lock(learned_->mu);
  if (!learned_->shape || !learned_->shape->is_compatible_with(element_shape_))
    return element_shape_;
  return merge(element_shape_, *learned_->shape);
}

TensorArray TensorArray::write(const Tensor& index, const Tensor& value) const {
  if (!value.defined()) throw InvalidArgumentError("TensorArray.write: value is undefined");
  const Shape elem = element_shape();
  if (!elem.is_compatible_with(value.shape()))
    throw InvalidArgumentError(str_cat("TensorArray.write: value has shape ", value.shape(),
                                       " but the elements have shape ", elem));
  TensorArray t = *this;
  t.handle_ = call_op1(OpId::TensorListSetItem, {handle_, index, value}, {dtype_});
  if (infer_shape_) {
    t.element_shape_ = merge(element_shape_, value.shape());
    if (t.handle_.is_symbolic()) learn(value.shape());
  }
  return t;
}

TensorArray TensorArray::write(int64_t index, const Tensor& value) const {
  return write(Tensor(index), value);
}

Tensor TensorArray::read(const Tensor& index) const {
  return call_op1(OpId::TensorListGetItem, {handle_, index}, shape_attrs(dtype_, element_shape()));
}

Tensor TensorArray::read(int64_t index) const {
  return read(Tensor(index));
}

Tensor TensorArray::stack() const {
  const Shape s = element_shape();
  const Attrs a{dtype_, s.rank_known() ? s.to_vector() : std::vector<int64_t>{}, !s.rank_known(),
                static_size_};  // num_elements
  return call_op1(OpId::TensorListStack, {handle_}, a);
}

TensorArray TensorArray::unstack(const Tensor& value) const {
  if (!value.defined() || value.dtype() != dtype_)
    throw InvalidArgumentError(str_cat("TensorArray.unstack: value must be ", dtype_name(dtype_),
                                       ", got ",
                                       value.defined() ? dtype_name(value.dtype()) : "nothing"));
  TensorArray t = *this;
  t.handle_ = call_op1(OpId::TensorListFromTensor, {value});
  Shape elem = value.shape();
  t.static_size_ = -1;
  if (elem.rank_known()) {  // rank >= 1: checked by the op
    if (!dynamic_size_) t.static_size_ = elem[0];
    elem.erase(0);
  }
  if (!element_shape().is_compatible_with(elem))
    throw InvalidArgumentError(str_cat("TensorArray.unstack: value has shape ", value.shape(),
                                       " (elements of shape ", elem,
                                       ") but the elements have shape ", element_shape()));
  if (learned_ && t.handle_.is_symbolic() && t.static_size_ != static_size_) {
    // The family's size is no longer certain (unstacked in a loop body, say):
    // later rewrapped handles get no static size.
    std::lock_guard<std::mutex> lock(learned_->mu);
    learned_->size_changed = true;
  }
  if (infer_shape_) {
    t.element_shape_ = merge(element_shape_, elem);
    if (t.handle_.is_symbolic()) learn(elem);
  }
  return t;
}

Tensor TensorArray::size() const {
  return call_op1(OpId::TensorListLength, {handle_});
}

}  // namespace kiln
