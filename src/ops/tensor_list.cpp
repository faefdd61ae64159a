// The persistent item trie behind TensorArray handles (tensor_list.h).
#include "tensor_list.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kiln/buffer.h"

namespace kiln::detail {
namespace {

constexpr int kBits = ListNode::kBits;
constexpr int64_t kMask = ListNode::kMask;

size_t slot_of(int64_t i, int shift) {
  return static_cast<size_t>((i >> shift) & kMask);
}

// Makes `slot` a node only this path holds: a new one when empty, a copy
// when shared with another list (whose nodes never change).
template <typename N>
N& writable(Ref<ListNode>& slot) {
  if (!slot) {
    slot = Ref<ListNode>::adopt(new N());
  } else if (slot->use_count() > 1) {
    auto* copy = new N();
    if constexpr (std::is_same_v<N, ListLeaf>)
      copy->items = static_cast<const ListLeaf&>(*slot).items;
    else
      copy->kids = static_cast<const ListInner&>(*slot).kids;
    slot = Ref<ListNode>::adopt(copy);
  }
  return static_cast<N&>(*slot);
}

// `root` (at `shift`) wrapped in inner nodes up to `target` (as child 0).
Ref<ListNode> lift(Ref<ListNode> root, int shift, int target) {
  for (; shift < target; shift += kBits) {
    if (!root) continue;
    auto* n = new ListInner();
    n->kids[0] = std::move(root);
    root = Ref<ListNode>::adopt(n);
  }
  return root;
}

using BothFn = Tensor (*)(int64_t index, const Tensor&, const Tensor&);

Ref<ListNode> merge_nodes(const Ref<ListNode>& a, const Ref<ListNode>& b, int shift, int64_t begin,
                          BothFn both) {
  if (!a) return b;
  if (!b) return a;
  if (shift == 0) {
    const auto& x = static_cast<const ListLeaf&>(*a).items;
    const auto& y = static_cast<const ListLeaf&>(*b).items;
    auto* n = new ListLeaf();
    Ref<ListNode> r = Ref<ListNode>::adopt(n);
    for (size_t k = 0; k < x.size(); ++k)
      n->items[k] = !x[k].defined()   ? y[k]
                    : !y[k].defined() ? x[k]
                                      : both(begin + static_cast<int64_t>(k), x[k], y[k]);
    return r;
  }
  const auto& x = static_cast<const ListInner&>(*a).kids;
  const auto& y = static_cast<const ListInner&>(*b).kids;
  auto* n = new ListInner();
  Ref<ListNode> r = Ref<ListNode>::adopt(n);
  for (size_t k = 0; k < x.size(); ++k)
    n->kids[k] =
        merge_nodes(x[k], y[k], shift - kBits, begin + (static_cast<int64_t>(k) << shift), both);
  return r;
}

// The first written item under `n` in index order, or nullptr.
const Tensor* first_written(const ListNode* n, int shift) {
  if (!n) return nullptr;
  if (shift == 0) {
    for (const Tensor& t : static_cast<const ListLeaf*>(n)->items)
      if (t.defined()) return &t;
    return nullptr;
  }
  for (const Ref<ListNode>& k : static_cast<const ListInner*>(n)->kids)
    if (const Tensor* t = first_written(k.get(), shift - kBits)) return t;
  return nullptr;
}

}  // namespace

Tensor TensorList::get(int64_t i) const {
  if (i < 0 || i >= capacity()) return Tensor();
  const ListNode* n = root_.get();
  for (int s = shift_; n && s > 0; s -= kBits)
    n = static_cast<const ListInner*>(n)->kids[slot_of(i, s)].get();
  return n ? static_cast<const ListLeaf*>(n)->items[slot_of(i, 0)] : Tensor();
}

void TensorList::set(int64_t i, Tensor value) {
  if (i < 0 || i > int64_t{INT32_MAX})
    throw InvalidArgumentError(
        str_cat("TensorArray: index ", i, " is out of range [0, ", INT32_MAX, "]"));
  if (i >= capacity()) {
    int target = shift_;
    while (i >= (int64_t{1} << (target + kBits))) target += kBits;
    root_ = lift(std::move(root_), shift_, target);
    shift_ = target;
  }
  grow(i + 1);
  Ref<ListNode>* slot = &root_;
  for (int s = shift_; s > 0; s -= kBits) slot = &writable<ListInner>(*slot).kids[slot_of(i, s)];
  writable<ListLeaf>(*slot).items[slot_of(i, 0)] = std::move(value);
}

TensorList* TensorList::copy() const {
  TensorList* l = empty_like();
  l->shift_ = shift_;
  l->root_ = root_;
  return l;
}

TensorList* TensorList::empty_like() const {
  auto* l = new TensorList();
  l->dtype = dtype;
  l->element_shape = element_shape;
  l->dynamic_size = dynamic_size;
  l->infer_shape = infer_shape;
  l->size_ = size_;
  return l;
}

void TensorList::merge(const TensorList& a, const TensorList& b, TensorList& out, BothFn both) {
  const int shift = std::max(a.shift_, b.shift_);
  out.root_ =
      merge_nodes(lift(a.root_, a.shift_, shift), lift(b.root_, b.shift_, shift), shift, 0, both);
  out.shift_ = shift;
  out.size_ = std::max(a.size_, b.size_);
}

bool TensorList::common_shape(Shape& out) const {
  if (element_shape.is_fully_defined()) {
    out = element_shape;
    return true;
  }
  const Tensor* t = first_written(root_.get(), shift_);
  if (t) out = t->shape();
  return t != nullptr;
}

TensorList* TensorList::unique(const Tensor& handle) {
  const detail::TensorImpl* impl = handle.impl();
  if (!impl || handle.is_symbolic() || impl->refs.load(std::memory_order_acquire) != 1 ||
      !handle.buffer()->unique())
    return nullptr;
  auto* l = const_cast<TensorList*>(&of(handle, "TensorArray"));
  return l->use_count() == 1 ? l : nullptr;
}

}  // namespace kiln::detail
