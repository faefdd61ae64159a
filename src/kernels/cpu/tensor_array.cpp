// TensorArray kernels. A write returns a new list sharing the input's
// nodes (one path copied, O(log n)), or writes the input in place when
// nothing else can observe it (TensorList::unique): either way every other
// handle keeps its items (src/ops/tensor_list.h).
#include <algorithm>
#include <cstring>

#include "bind.h"
#include "kiln/context.h"
#include "ops/tensor_list.h"

namespace kiln::cpu {
namespace {

using detail::TensorList;

int64_t index_of(const Tensor& t) {
  return t.dtype() == DType::kInt32 ? t.item<int32_t>() : t.item<int64_t>();
}

void reserve_kernel(KernelContext& c) {
  const int64_t n = index_of(c.input(0));
  if (n < 0) c.fail("size must be >= 0, got ", n);
  auto* l = new TensorList();
  Tensor h = TensorList::handle(l);
  l->dtype = c.attr_dtype("element_dtype");
  l->element_shape =
      c.attr_bool("unknown_rank") ? Shape::unknown_rank() : Shape(c.attr_ints("element_shape"));
  l->dynamic_size = c.attr_bool("dynamic_size");
  l->infer_shape = c.attr_bool("infer_shape");
  l->grow(n);
  c.set_output(0, std::move(h));
}

void set_item_kernel(KernelContext& c) {
  const TensorList& in = TensorList::of(c.input(0), c.op().type_name);
  const int64_t i = index_of(c.input(1));
  const Tensor& v = c.input(2);
  const int64_t n = in.size();
  if (in.dtype != v.dtype())
    c.fail("value is ", dtype_name(v.dtype()), " but the TensorArray holds ", dtype_name(in.dtype));
  if (i < 0 || (i >= n && !in.dynamic_size))
    c.fail("index ", i, " is out of range [0, ", n, ")",
           i >= n ? " (the size is fixed: use dynamic_size)" : "");
  if (!in.element_shape.is_compatible_with(v.shape()))
    c.fail("value has shape ", v.shape(), " but the elements have shape ", in.element_shape);
  // In place when this step holds the only reference (the executor moved
  // the handle in at its last use), else a new list sharing the nodes.
  Tensor h;
  TensorList* l = TensorList::unique(c.input(0));
  if (l)
    h = c.input(0);
  else
    h = TensorList::handle(l = in.copy());
  // Concrete: fixes the shape of every element (unless shapes may vary).
  if (l->infer_shape) l->element_shape = v.shape();
  l->set(i, v);
  c.set_output(0, std::move(h));
}

// Copies `src` (or zeros when undefined) into out at element offset `at`.
void copy_into(const Tensor& out, int64_t at, const Tensor& src, int64_t count) {
  if (count == 0) return;
  if (out.dtype() == DType::kString) {
    std::string* o = out.mutable_data<std::string>() + at;
    if (src.defined()) {
      const std::string* s = src.data<std::string>();
      for (int64_t k = 0; k < count; ++k) o[k] = s[k];
    }
    return;
  }
  const size_t sz = dtype_size(out.dtype());
  char* o = static_cast<char*>(out.mutable_raw_data()) + static_cast<size_t>(at) * sz;
  if (src.defined())
    std::memcpy(o, src.raw_data(), static_cast<size_t>(count) * sz);
  else
    std::memset(o, 0, static_cast<size_t>(count) * sz);
}

void get_item_kernel(KernelContext& c) {
  const TensorList& l = TensorList::of(c.input(0), c.op().type_name);
  const int64_t i = index_of(c.input(1));
  const int64_t n = l.size();
  if (i < 0 || i >= n) c.fail("index ", i, " is out of range [0, ", n, ")");
  Tensor v = l.get(i);
  if (v.defined()) {
    c.set_output(0, v);
    return;
  }
  if (l.dtype == DType::kResource) c.fail("element ", i, " was never written");
  // Never written: zeros of the element shape (known, else inference failed).
  Tensor& out = c.allocate_output(0);
  copy_into(out, 0, Tensor(), out.num_elements());
}

void stack_kernel(KernelContext& c) {
  const TensorList& l = TensorList::of(c.input(0), c.op().type_name);
  Tensor& out = c.allocate_output(0);
  // The static count (num_elements) is only checked when inference could
  // not see the list.
  if (out.dim(0) != l.size())
    c.fail("expected ", out.dim(0), " elements (the TensorArray's static size) but the list has ",
           l.size());
  const int64_t per = l.size() > 0 ? out.num_elements() / l.size() : 0;
  Shape elem = out.shape();
  elem.erase(0);
  int64_t next = 0;  // items before it are filled
  auto zero_until = [&](int64_t end) {
    if (end > next) copy_into(out, next * per, Tensor(), (end - next) * per);
    next = std::max(next, end);
  };
  l.for_each_leaf([&](int64_t begin, const detail::ListLeaf& leaf) {
    zero_until(begin);
    const int64_t end = std::min(l.size(), begin + detail::ListNode::kWidth);
    for (int64_t k = begin; k < end; ++k) {
      const Tensor& t = leaf.items[static_cast<size_t>(k - begin)];
      if (t.defined() && t.shape() != elem)
        c.fail("element ", k, " has shape ", t.shape(), " but element 0 has shape ", elem);
      copy_into(out, k * per, t, per);
    }
    next = end;
  });
  zero_until(l.size());
}

void from_tensor_kernel(KernelContext& c) {
  const Tensor& t = c.input(0);
  auto* l = new TensorList();
  Tensor h = TensorList::handle(l);
  l->dtype = t.dtype();
  Shape elem = t.shape();
  elem.erase(0);
  l->element_shape = elem;
  const int64_t n = t.dim(0);
  const int64_t per = elem.num_elements();
  for (int64_t k = 0; k < n; ++k) {
    Tensor e = Tensor::empty(t.dtype(), elem);
    if (t.dtype() == DType::kString) {
      const std::string* s = t.data<std::string>() + k * per;
      std::string* o = e.mutable_data<std::string>();
      for (int64_t j = 0; j < per; ++j) o[j] = s[j];
    } else if (per > 0) {
      const size_t sz = dtype_size(t.dtype());
      std::memcpy(e.mutable_raw_data(),
                  static_cast<const char*>(t.raw_data()) + static_cast<size_t>(k * per) * sz,
                  static_cast<size_t>(per) * sz);
    }
    l->set(k, std::move(e));
  }
  l->grow(n);
  c.set_output(0, std::move(h));
}

void length_kernel(KernelContext& c) {
  const TensorList& l = TensorList::of(c.input(0), c.op().type_name);
  c.set_output(0, Tensor(static_cast<int32_t>(l.size())));
}

// Gradient lists: unwritten items and items past the end are zeros.

// Both lists' item k (TensorList::merge takes a plain function, so the op
// is named through its row).
Tensor add_items(int64_t k, const Tensor& x, const Tensor& y) {
  if (x.shape() != y.shape())
    throw InvalidArgumentError(str_cat(op_def(OpId::TensorListAdd).type_name, ": ", "element ", k,
                                       " has shape ", x.shape(), " in one list and ", y.shape(),
                                       " in the other"));
  const Tensor xy[2] = {x, y};
  std::vector<Tensor> sum;
  run_kernel(op_def(OpId::Add), xy, {}, sum);
  return std::move(sum[0]);
}

void list_add_kernel(KernelContext& c) {
  const TensorList& a = TensorList::of(c.input(0), c.op().type_name);
  const TensorList& b = TensorList::of(c.input(1), c.op().type_name);
  if (a.dtype != b.dtype || a.dtype == DType::kResource || a.dtype == DType::kString)
    c.fail("cannot add a TensorArray of ", dtype_name(a.dtype), " to one of ", dtype_name(b.dtype));
  // Subtrees only one list wrote are shared, so adding a list with a few
  // items (a read's gradient) costs O(log n), not O(n).
  TensorList* l = (a.size() >= b.size() ? a : b).empty_like();
  Tensor h = TensorList::handle(l);
  TensorList::merge(a, b, *l, add_items);
  c.set_output(0, std::move(h));
}

// A list like the input (dtype, size, element shape) with every item zero.
void list_zeros_like_kernel(KernelContext& c) {
  const TensorList& in = TensorList::of(c.input(0), c.op().type_name);
  c.set_output(0, TensorList::handle(in.empty_like()));
}

}  // namespace

void bind_tensor_array_kernels(OpTableBuilder& t) {
  t.kernel(OpId::TensorListReserve, reserve_kernel);
  t.kernel(OpId::TensorListSetItem, set_item_kernel);
  t.kernel(OpId::TensorListGetItem, get_item_kernel);
  t.kernel(OpId::TensorListStack, stack_kernel);
  t.kernel(OpId::TensorListFromTensor, from_tensor_kernel);
  t.kernel(OpId::TensorListLength, length_kernel);
  t.kernel(OpId::TensorListAdd, list_add_kernel);
  t.kernel(OpId::TensorListZerosLike, list_zeros_like_kernel);
}

}  // namespace kiln::cpu
