// Internal: the value behind a TensorArray handle (a scalar resource
// tensor). Lists have value semantics (TensorArray's, as TF2's TensorList):
// a write makes a new list and every other list keeps its items. The items
// live in a persistent 32-way trie whose nodes lists share, so a write
// copies one root-to-leaf path (O(log n)) instead of every item. A list that
// nothing else can observe (its handle uniquely owned, see unique()) is
// written in place, changing only the nodes it alone holds.
#pragma once
#include <array>
#include <string>

#include "kiln/op.h"

namespace kiln::detail {

/// A trie node: a leaf holds kWidth items, an inner node kWidth children.
/// Null children and undefined items were never written.
struct ListNode : RefCounted {
  static constexpr int kBits = 5;
  static constexpr int64_t kWidth = int64_t{1} << kBits;
  static constexpr int64_t kMask = kWidth - 1;
};
struct ListLeaf final : ListNode {
  std::array<Tensor, kWidth> items;
};
struct ListInner final : ListNode {
  std::array<Ref<ListNode>, kWidth> kids;
};

class TensorList final : public Resource {
 public:
  DType dtype = DType::kInvalid;
  Shape element_shape = Shape::unknown_rank();  ///< merged from the writes
  bool dynamic_size = false;
  /// The first write fixes element_shape (TensorArray's infer_shape); off
  /// for the gradient accumulators of loop variables whose shape varies.
  bool infer_shape = true;

  std::string debug_name() const override {
    return str_cat("TensorArray(", dtype_name(dtype), ", size=", size_, ")");
  }

  int64_t size() const { return size_; }
  /// Grows the list to `n` items (unwritten); never shrinks it.
  void grow(int64_t n) {
    if (n > size_) size_ = n;
  }
  /// Item `i` in [0, size()); undefined when never written.
  Tensor get(int64_t i) const;
  /// Sets item `i` (>= 0), growing the list past its end. Changes this list:
  /// only for one no other handle sees (new, or unique()). Nodes shared with
  /// other lists are copied, never changed.
  void set(int64_t i, Tensor value);
  /// Calls fn(begin, leaf) for every written leaf in index order; the leaf
  /// holds items [begin, begin + kWidth) (those past size() are undefined).
  template <typename F>
  void for_each_leaf(F&& fn) const {
    if (root_) visit(root_.get(), shift_, 0, fn);
  }
  /// A new list (refcount 1) with this one's attributes and items; shares
  /// every node, O(1).
  TensorList* copy() const;
  /// A new list like this one (attributes, size) with no item written.
  TensorList* empty_like() const;
  /// Item-wise combination into `out` (a new list, as long as the longer):
  /// where only one list has item k it is taken as is; where both do,
  /// both(k, a_k, b_k) gives it. Subtrees only one list wrote are shared.
  static void merge(const TensorList& a, const TensorList& b, TensorList& out,
                    Tensor (*both)(int64_t, const Tensor&, const Tensor&));

  /// The shape every element has: element_shape when fully known, else
  /// that of the first written element. False when no element fixes it.
  bool common_shape(Shape& out) const;

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
  /// The list behind `handle` (checked by of()) when nothing else can
  /// observe it: the handle tensor, its buffer and the list each have a
  /// single owner, so the caller holds the only way to reach the list and
  /// may write it in place. nullptr otherwise.
  static TensorList* unique(const Tensor& handle);

 private:
  template <typename F>
  static void visit(const ListNode* n, int shift, int64_t begin, F& fn) {
    if (shift == 0) return fn(begin, static_cast<const ListLeaf&>(*n));
    const auto& kids = static_cast<const ListInner*>(n)->kids;
    for (int64_t k = 0; k < ListNode::kWidth; ++k)
      if (kids[static_cast<size_t>(k)])
        visit(kids[static_cast<size_t>(k)].get(), shift - ListNode::kBits, begin + (k << shift),
              fn);
  }
  int64_t capacity() const { return int64_t{1} << (shift_ + ListNode::kBits); }

  int64_t size_ = 0;
  int shift_ = 0;       // index bits below the root's level (0: the root is a leaf)
  Ref<ListNode> root_;  // null: nothing written
};

}  // namespace kiln::detail
