// TensorArray ops (TF2's TensorList ops): lists of same-dtype tensors held by
// scalar resource handles, with value semantics (every write returns a new
// handle), so they can be while_loop variables. Front: src/function/tensor_array.cpp.
#include "families.h"
#include "grad_util.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "onnx_export.h"
#include "tensor_list.h"
#include "tf_import.h"

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

// The element shape of the attrs element_shape and unknown_rank.
Shape attr_shape(const InferContext& c) {
  if (c.attr_bool("unknown_rank")) return Shape::unknown_rank();
  for (int64_t d : c.attr_ints("element_shape"))
    if (d < -1) c.fail("element_shape dims must be >= -1 (unknown), got ", d);
  return Shape(c.attr_ints("element_shape"));
}

// Lists of resources (handles of other lists) only serve as the gradient
// accumulators of while loops: they can be written and read, not stacked.
DType attr_element_dtype(const InferContext& c, bool allow_resource = true) {
  const DType d = c.attr_dtype("element_dtype");
  if (d == DType::kInvalid || (d == DType::kResource && !allow_resource))
    c.fail("element_dtype must be a value dtype, got ", dtype_name(d));
  return d;
}

// The list when the handle's value is known (eagerly, per call).
const TensorList* known_list(const InferContext& c, size_t i) {
  const Tensor* v = c.value(i);
  if (!v) return nullptr;
  const TensorList& l = TensorList::of(*v, c.op().type_name);
  if (l.dtype != c.attr_dtype("element_dtype"))
    c.fail("the TensorArray holds ", dtype_name(l.dtype), ", not ",
           dtype_name(c.attr_dtype("element_dtype")));
  return &l;
}

// inputs: num_elements; attrs: element_dtype, element_shape, unknown_rank,
// dynamic_size, infer_shape.
void infer_reserve(InferContext& c) {
  expect_index(c, 0);
  attr_element_dtype(c);
  attr_shape(c);
  std::vector<int64_t> n;
  if (c.int_values(0, n) && n[0] < 0) c.fail("size must be >= 0, got ", n[0]);
  c.set_output(0, DType::kResource, Shape());
}

// inputs: handle, index, item; attrs: element_dtype.
void infer_set_item(InferContext& c) {
  expect_handle(c, 0);
  expect_index(c, 1);
  const DType d = attr_element_dtype(c);
  if (c.dtype(2) != d)
    c.fail("value is ", dtype_name(c.dtype(2)), " but the TensorArray holds ", dtype_name(d));
  c.set_output(0, DType::kResource, Shape());
}

// inputs: handle, index; attrs: element_dtype, element_shape, unknown_rank.
void infer_get_item(InferContext& c) {
  expect_handle(c, 0);
  expect_index(c, 1);
  const DType d = attr_element_dtype(c);
  Shape s = attr_shape(c);
  if (const TensorList* l = known_list(c, 0)) {
    // The item's own shape when it was written (shapes may vary by item),
    // else zeros of the element shape.
    std::vector<int64_t> i;
    Tensor item;
    if (c.int_values(1, i) && i[0] >= 0 && i[0] < l->size()) item = l->get(i[0]);
    if (item.defined())
      s = item.shape();
    else if (!l->common_shape(s) && !s.is_fully_defined())
      c.fail(
          "cannot read from a TensorArray with no written element and an unknown "
          "element_shape");
  }
  c.set_output(0, d, std::move(s));
}

// inputs: handle; attrs: element_dtype, element_shape, unknown_rank,
// num_elements (the static length, -1: unknown; TensorFlow's attr).
void infer_stack(InferContext& c) {
  expect_handle(c, 0);
  const DType d = attr_element_dtype(c, /*allow_resource=*/false);
  Shape s = attr_shape(c);
  int64_t n = c.attr_int("num_elements");
  if (n < -1) c.fail("num_elements must be >= 0, or -1 when unknown, got ", n);
  if (const TensorList* l = known_list(c, 0)) {
    if (!l->common_shape(s) && !s.is_fully_defined())
      c.fail("cannot stack a TensorArray with no written element and an unknown element_shape");
    if (n >= 0 && n != l->size())
      c.fail("expected ", n, " elements (the TensorArray's static size) but the list has ",
             l->size());
    n = l->size();
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

// inputs: handle... (the lists to add, or to take zeros like).
void infer_list_handles(InferContext& c) {
  for (size_t i = 0; i < c.num_inputs(); ++i) expect_handle(c, i);
  c.set_output(0, DType::kResource, Shape());
}

// ---- gradients ----
// The gradient of a list handle is itself a list (of the same dtype) whose
// unwritten items, and items past its end, are zeros. Lists of gradients
// add item by item (_TensorListAdd, used by the tapes).

Attrs shape_attrs(DType d, const Shape& s) {
  return Attrs{d, s.rank_known() ? s.to_vector() : std::vector<int64_t>{}, !s.rank_known()};
}

// Stack: the gradient's slices as a list.
void stack_grad(KILN_GRAD_ARGS) {
  gi[0] = call_op1(OpId::TensorListFromTensor, {g[0]});
}

// FromTensor: the list gradient stacked back (zeros where unwritten).
void from_tensor_grad(KILN_GRAD_ARGS) {
  Shape elem = in[0].shape();
  if (elem.rank_known()) elem.erase(0);
  gi[0] = call_op1(OpId::TensorListStack, {g[0]}, shape_attrs(in[0].dtype(), elem));
}

// GetItem: a list as long as the input, zeros but g at the index.
void get_item_grad(KILN_GRAD_ARGS) {
  const DType d = attr_value<DType>(op, attrs, "element_dtype");
  const Shape& s = g[0].shape();
  const Attrs ra{d, s.rank_known() ? s.to_vector() : std::vector<int64_t>{}, !s.rank_known(),
                 /*dynamic_size=*/false, /*infer_shape=*/true};
  Tensor zeros = call_op1(OpId::TensorListReserve, {call_op1(OpId::TensorListLength, {in[0]})}, ra);
  gi[0] = call_op1(OpId::TensorListSetItem, {zeros, in[1], g[0]}, {d});
}

// SetItem: the written item's gradient is read from the list gradient,
// which passes on to the input list with that item zeroed.
void set_item_grad(KILN_GRAD_ARGS) {
  const DType d = attr_value<DType>(op, attrs, "element_dtype");
  gi[2] = call_op1(OpId::TensorListGetItem, {g[0], in[1]}, shape_attrs(d, in[2].shape()));
  gi[0] = call_op1(OpId::TensorListSetItem, {g[0], in[1], zeros_like(in[2])}, {d});
}

void list_add_grad(KILN_GRAD_ARGS) {
  gi[0] = g[0];
  gi[1] = g[0];
}

// ONNX export: a TensorList is an ONNX sequence (opset 11+; writes need
// opset 13, If with sequence outputs). Reserve with a known element shape
// holds `size` zeros, as kiln's unwritten items; otherwise it starts empty
// and writes must append (index == length) or overwrite.
TensorSpec onnx_element(onnx::ExportContext& c) {
  TensorSpec e{c.attr_dtype("element_dtype"), Shape::unknown_rank()};
  if (c.op().attr_index("unknown_rank") >= 0 && !c.attr_bool("unknown_rank"))
    e.shape = Shape(c.attr_ints("element_shape"));
  return e;
}
const TensorSpec& onnx_list(onnx::ExportContext& c, const std::string& handle) {
  const TensorSpec* e = c.sequence(handle);
  if (!e) c.unsupported("its list does not come from an exported TensorList op");
  return *e;
}
void onnx_list_reserve(onnx::ExportContext& c) {
  if (c.opset() < 11) c.unsupported("sequences need opset 11");
  const TensorSpec e = onnx_element(c);
  if (e.shape.rank_known() && e.shape.is_fully_defined()) {
    const std::string n =
        c.node1("Reshape", {c.cast(c.in(0), c.input_spec(0).dtype, DType::kInt64), c.ints({1})});
    const std::string dims =
        c.node1("Concat", {n, c.ints(e.shape.to_vector())}, {{"axis", int64_t{0}}});
    const std::string zeros = c.node1("Expand", {c.scalar(0, e.dtype), dims});
    c.emit("SplitToSequence", {zeros}, {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}});
  } else {
    c.emit("SequenceEmpty", {}, {{"dtype", c.onnx_dtype(e.dtype)}});
  }
  c.set_sequence(c.out(0), e);
}
// Overwrites item `index` when it exists (erase, insert), else appends.
void onnx_list_set_item(onnx::ExportContext& c) {
  if (c.opset() < 13) c.unsupported("TensorList writes need opset 13");
  const TensorSpec e = onnx_list(c, c.in(0));
  const std::string i = c.cast(c.in(1), c.input_spec(1).dtype, DType::kInt64);
  const std::string len = c.node1("SequenceLength", {c.in(0)});
  const std::string exists = c.node1("Less", {i, len});
  auto branch = [&](bool overwrite) {
    c.begin_graph({});
    const std::string s =
        overwrite ? c.node1("SequenceInsert", {c.node1("SequenceErase", {c.in(0), i}), c.in(2), i})
                  : c.node1("SequenceInsert", {c.in(0), c.in(2)});
    c.set_sequence(s, e);
    return c.end_graph({{s, c.output_spec(0)}});
  };
  const auto then_g = branch(true);
  const auto else_g = branch(false);
  c.emit("If", {exists}, {{"then_branch", then_g}, {"else_branch", else_g}});
  c.set_sequence(c.out(0), e);
}
void onnx_list_get_item(onnx::ExportContext& c) {
  onnx_list(c, c.in(0));
  c.emit("SequenceAt", {c.in(0), c.in(1)});
}
void onnx_list_stack(onnx::ExportContext& c) {
  onnx_list(c, c.in(0));
  c.emit("ConcatFromSequence", {c.in(0)}, {{"axis", int64_t{0}}, {"new_axis", int64_t{1}}});
}
void onnx_list_from_tensor(onnx::ExportContext& c) {
  if (c.opset() < 11) c.unsupported("sequences need opset 11");
  c.emit("SplitToSequence", {c.in(0)}, {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}});
  Shape item = c.input_spec(0).shape;
  if (item.rank_known() && item.rank() > 0) item.erase(0);
  c.set_sequence(c.out(0), {c.input_spec(0).dtype, item});
}
void onnx_list_length(onnx::ExportContext& c) {
  onnx_list(c, c.in(0));
  c.emit("Cast", {c.node1("SequenceLength", {c.in(0)})}, {{"to", c.onnx_dtype(DType::kInt32)}});
}

// TensorFlow's TensorList ops take the element shape as an input: -1 (a
// scalar) for an unknown rank, -1 for an unknown dimension.
std::pair<std::vector<int64_t>, bool> tf_element_shape(tf_import::Context& c, size_t i) {
  std::vector<int64_t> dims = c.ints(i, "element_shape");
  const Tensor& t = c.input(i);
  if (t.shape().rank_known() && t.shape().rank() == 0) return {{}, true};
  return {dims, false};
}

void tf_list_reserve(tf_import::Context& c) {  // (element_shape, num_elements)
  auto [shape, unknown] = tf_element_shape(c, 0);
  c.set_output(tf_import::call_row1(OpId::TensorListReserve, {c.input(1)},
                                    {{"element_dtype", c.attr_type("element_dtype")},
                                     {"element_shape", shape},
                                     {"unknown_rank", unknown}}));
}

void tf_list_from_tensor(tf_import::Context& c) {  // (tensor, element_shape)
  c.set_output(tf_import::call_row1(OpId::TensorListFromTensor, {c.input(0)}, {}));
}

void tf_list_get_item(tf_import::Context& c) {  // (handle, index, element_shape)
  auto [shape, unknown] = tf_element_shape(c, 2);
  c.set_output(tf_import::call_row1(OpId::TensorListGetItem, {c.input(0), c.input(1)},
                                    {{"element_dtype", c.attr_type("element_dtype")},
                                     {"element_shape", shape},
                                     {"unknown_rank", unknown}}));
}

void tf_list_stack(tf_import::Context& c) {  // (handle, element_shape)
  auto [shape, unknown] = tf_element_shape(c, 1);
  c.set_output(tf_import::call_row1(OpId::TensorListStack, {c.input(0)},
                                    {{"element_dtype", c.attr_type("element_dtype")},
                                     {"element_shape", shape},
                                     {"unknown_rank", unknown},
                                     {"num_elements", c.attr_int("num_elements", -1)}}));
}

}  // namespace

void define_tensor_array_ops(OpTableBuilder& t) {
  t.def(OpId::TensorListReserve)
      .tf(tf_list_reserve)
      .tf_form({{0, "element_shape"}})
      .inputs({"size"})
      .outputs({"handle"})
      .attr("element_dtype", AttrType::kDType)
      .attr("element_shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("unknown_rank", AttrType::kBool, true)
      .attr("dynamic_size", AttrType::kBool, false)
      .attr("infer_shape", AttrType::kBool, true)
      .traits(kNoGradient)
      .infer(infer_reserve)
      .onnx(onnx_list_reserve);
  t.def(OpId::TensorListSetItem)
      .tf()
      .inputs({"handle", "index", "value"})
      .outputs({"handle"})
      .attr("element_dtype", AttrType::kDType)
      .infer(infer_set_item)
      .grad(set_item_grad)
      .onnx(onnx_list_set_item);
  t.def(OpId::TensorListGetItem)
      .tf(tf_list_get_item)
      .tf_form({{2, "element_shape"}})
      .inputs({"handle", "index"})
      .outputs({"value"})
      .attr("element_dtype", AttrType::kDType)
      .attr("element_shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("unknown_rank", AttrType::kBool, true)
      .infer(infer_get_item)
      .grad(get_item_grad)
      .onnx(onnx_list_get_item);
  t.def(OpId::TensorListStack)
      .tf(tf_list_stack)
      .tf_form({{1, "element_shape"}})
      .inputs({"handle"})
      .outputs({"tensor"})
      .attr("element_dtype", AttrType::kDType)
      .attr("element_shape", AttrType::kInts, std::vector<int64_t>{})
      .attr("unknown_rank", AttrType::kBool, true)
      .attr("num_elements", AttrType::kInt, int64_t{-1})
      .infer(infer_stack)
      .grad(stack_grad)
      .onnx(onnx_list_stack);
  t.def(OpId::TensorListFromTensor)
      .tf(tf_list_from_tensor)
      .tf_form({{1, "element_shape"}})
      .inputs({"tensor"})
      .outputs({"handle"})
      .infer(infer_from_tensor)
      .grad(from_tensor_grad)
      .onnx(onnx_list_from_tensor);
  t.def(OpId::TensorListLength)
      .tf()
      .inputs({"handle"})
      .outputs({"length"})
      .traits(kNoGradient)
      .infer(infer_length)
      .onnx(onnx_list_length);
  // Internal, for list-valued gradients: item-wise sum (the longer list's
  // length; missing items are zeros), and a list of zeros like another.
  t.def(OpId::TensorListAdd)
      .inputs({"a", "b"})
      .outputs({"sum"})
      .infer(infer_list_handles)
      .grad(list_add_grad);
  t.def(OpId::TensorListZerosLike)
      .inputs({"handle"})
      .outputs({"zeros"})
      .traits(kNoGradient)
      .infer(infer_list_handles);
}

}  // namespace kiln
