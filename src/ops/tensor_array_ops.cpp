// TensorArray ops (TF2's TensorList ops): lists of same-dtype tensors held by
// scalar resource handles, with value semantics (every write returns a new
// handle), so they can be while_loop variables. Front: src/function/tensor_array.cpp.
#include "families.h"
#include "tensor_list.h"

namespace kiln {
namespace {

using detail::TensorList;

void expect_index(const InferContext& c, size_t i) {
  if ((c.dtype(i) != DType::kInt32 && c.dtype(i) != DType::kInt64) ||
      (c.shape(i).rank_known() && c.shape(i).rank() != 0))
    c.fail(c.input_name(i), " must be an int32 or int64 scalar, got ", dtype_name(c.dtype(i)), " ",
           c.shape(i));
}

void expect_handle(const InferContext& c, size_t i) {
  if (c.dtype(i) != DType::kResource)
    c.fail(c.input_name(i), " must be a TensorArray handle (resource), got ",
           dtype_name(c.dtype(i)));
}

// attrs [first]: element_dtype, [first+1]: element_shape, [first+2]: unknown_rank.
Shape attr_shape(const InferContext& c, size_t first) {
  if (c.attr_bool(first + 2)) return Shape::unknown_rank();
  for (int64_t d : c.attr_ints(first + 1))
    if (d < -1) c.fail("element_shape dims must be >= -1 (unknown), got ", d);
  return Shape(c.attr_ints(first + 1));
}

DType attr_element_dtype(const InferContext& c, size_t i) {
  const DType d = c.attr_dtype(i);
  if (d == DType::kInvalid || d == DType::kResource)
    c.fail("element_dtype must be a value dtype, got ", dtype_name(d));
  return d;
}

// The list when the handle's value is known (eagerly, per call).
const TensorList* known_list(const InferContext& c, size_t i) {
  const Tensor* v = c.value(i);
  if (!v) return nullptr;
  const TensorList& l = TensorList::of(*v, c.op().type_name);
  if (l.dtype != c.attr_dtype(0))
    c.fail("the TensorArray holds ", dtype_name(l.dtype), ", not ", dtype_name(c.attr_dtype(0)));
  return &l;
}

// inputs: num_elements; attrs: element_dtype, element_shape, unknown_rank, dynamic_size.
void infer_reserve(InferContext& c) {
  expect_index(c, 0);
  attr_element_dtype(c, 0);
  attr_shape(c, 0);
  std::vector<int64_t> n;
  if (c.int_values(0, n) && n[0] < 0) c.fail("size must be >= 0, got ", n[0]);
  c.set_output(0, DType::kResource, Shape());
}

// inputs: handle, index, item; attrs: element_dtype.
void infer_set_item(InferContext& c) {
  expect_handle(c, 0);
  expect_index(c, 1);
  const DType d = attr_element_dtype(c, 0);
  if (c.dtype(2) != d)
    c.fail("value is ", dtype_name(c.dtype(2)), " but the TensorArray holds ", dtype_name(d));
  c.set_output(0, DType::kResource, Shape());
}

// inputs: handle, index; attrs: element_dtype, element_shape, unknown_rank.
void infer_get_item(InferContext& c) {
  expect_handle(c, 0);
  expect_index(c, 1);
  const DType d = attr_element_dtype(c, 0);
  Shape s = attr_shape(c, 0);
  if (const TensorList* l = known_list(c, 0)) {
    if (!l->common_shape(s))
      c.fail(
          "cannot read from a TensorArray with no written element and an unknown "
          "element_shape");
  }
  c.set_output(0, d, std::move(s));
}

// inputs: handle; attrs: element_dtype, element_shape, unknown_rank.
void infer_stack(InferContext& c) {
  expect_handle(c, 0);
  const DType d = attr_element_dtype(c, 0);
  Shape s = attr_shape(c, 0);
  int64_t n = Shape::kUnknownDim;
  if (const TensorList* l = known_list(c, 0)) {
    if (!l->common_shape(s))
      c.fail("cannot stack a TensorArray with no written element and an unknown element_shape");
    n = static_cast<int64_t>(l->items.size());
  }
  if (s.rank_known()) s.insert(0, n);
  c.set_output(0, d, std::move(s));
}

// inputs: tensor (split along axis 0).
void infer_from_tensor(InferContext& c) {
  if (c.dtype(0) == DType::kResource) c.fail("tensor cannot be a resource");
  if (c.shape(0).rank_known() && c.shape(0).rank() < 1)
    c.fail("tensor must have rank >= 1 to unstack, got shape ", c.shape(0));
  c.set_output(0, DType::kResource, Shape());
}

void infer_length(InferContext& c) {
  expect_handle(c, 0);
  c.set_output(0, DType::kInt32, Shape());
}

}  // namespace

void define_tensor_array_ops(OpTableBuilder& t) {
  t.def(OpId::TensorListReserve)
      .inputs({"size"})
      .outputs({"handle"})
      .attr("element_dtype", AttrType::kDType)
      .attr("element_shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("unknown_rank", AttrType::kBool, true)
      .attr("dynamic_size", AttrType::kBool, false)
      .traits(kNoGradient)
      .infer(infer_reserve);
  t.def(OpId::TensorListSetItem)
      .inputs({"handle", "index", "value"})
      .outputs({"handle"})
      .attr("element_dtype", AttrType::kDType)
      .infer(infer_set_item);
  t.def(OpId::TensorListGetItem)
      .inputs({"handle", "index"})
      .outputs({"value"})
      .attr("element_dtype", AttrType::kDType)
      .attr("element_shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("unknown_rank", AttrType::kBool, true)
      .infer(infer_get_item);
  t.def(OpId::TensorListStack)
      .inputs({"handle"})
      .outputs({"tensor"})
      .attr("element_dtype", AttrType::kDType)
      .attr("element_shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("unknown_rank", AttrType::kBool, true)
      .infer(infer_stack);
  t.def(OpId::TensorListFromTensor).inputs({"tensor"}).outputs({"handle"}).infer(infer_from_tensor);
  t.def(OpId::TensorListLength)
      .inputs({"handle"})
      .outputs({"length"})
      .traits(kNoGradient)
      .infer(infer_length);
}

}  // namespace kiln
