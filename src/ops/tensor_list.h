// Internal: the value behind a TensorArray handle (a scalar resource
// tensor). Lists are immutable once a handle to them exists: every write
// makes a new list (TensorArray's value semantics, as TF2's TensorList).
#pragma once
#include <string>
#include <vector>

#include "kiln/op.h"

namespace kiln::detail {

class TensorList final : public Resource {
 public:
  DType dtype = DType::kInvalid;
  Shape element_shape = Shape::unknown_rank();  ///< merged from the writes
  bool dynamic_size = false;
  /// The first write fixes element_shape (TensorArray's infer_shape); off
  /// for the gradient accumulators of loop variables whose shape varies.
  bool infer_shape = true;
  std::vector<Tensor> items;  ///< undefined = never written (reads as zeros)

  std::string debug_name() const override {
    return str_cat("TensorArray(", dtype_name(dtype), ", size=", items.size(), ")");
  }

  /// A scalar resource tensor owning a new reference to `list`.
  static Tensor handle(TensorList* list) {
    Tensor t = Tensor::empty(DType::kResource, Shape());
    *static_cast<Resource**>(t.mutable_raw_data()) = list;  // the buffer adopts it
    return t;
  }
  /// The list behind a concrete handle; InvalidArgument for other resources.
  static const TensorList& of(const Tensor& handle, const char* op) {
    const auto* l = dynamic_cast<const TensorList*>(handle.resource());
    if (!l)
      throw InvalidArgumentError(
          str_cat(op, ": the handle is not a TensorArray but ", handle.resource()->debug_name()));
    return *l;
  }
  /// The shape every element has: element_shape when fully known, else
  /// that of the written elements. False when no element fixes it.
  bool common_shape(Shape& out) const {
    if (element_shape.is_fully_defined()) {
      out = element_shape;
      return true;
    }
    for (const Tensor& t : items)
      if (t.defined()) {
        out = t.shape();
        return true;
      }
    return false;
  }
};

}  // namespace kiln::detail
