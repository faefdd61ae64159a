// Shape and data-movement ops: reshape, transpose, concat, split, slicing,
// gather, tile, pad, one_hot... They work on every dtype (string and bool
// included) unless noted. Shape-like arguments ("shape", "begin", "multiples",
// ...) are int32/int64 tensors as in TensorFlow; each has C++ list overloads
// that build an int64 tensor. Axis-like arguments are plain integers.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

/// `tensor` with a new shape (same elements, no copy: the result shares the
/// buffer). One dimension may be -1: it is inferred from the element count.
Tensor reshape(const Tensor& tensor, const Tensor& shape);
Tensor reshape(const Tensor& tensor, const std::vector<int64_t>& shape);
Tensor reshape(const Tensor& tensor, std::initializer_list<int64_t> shape);
Tensor reshape(const Tensor& tensor, const Shape& shape);

/// Inserts a dimension of size 1 at `axis` in [-rank-1, rank] (a view).
Tensor expand_dims(const Tensor& input, int64_t axis);

/// Removes dimensions of size 1: those listed in `axis`, or all when empty.
/// Listing a dimension whose size is not 1 is an error (a view).
Tensor squeeze(const Tensor& input, const std::vector<int64_t>& axis = {});

/// Permutes dimensions: output dim i is input dim perm[i]. An empty `perm`
/// reverses the dimensions (matrix transpose for rank 2).
Tensor transpose(const Tensor& input, const std::vector<int64_t>& perm = {});

/// Joins tensors of the same dtype and rank along `axis`; all other
/// dimensions must agree.
Tensor concat(const std::vector<Tensor>& values, int64_t axis);

/// Stacks N tensors of the same dtype and shape into one with a new
/// dimension of size N at `axis` in [-rank-1, rank].
Tensor stack(const std::vector<Tensor>& values, int64_t axis = 0);

/// Splits `value` along `axis` into its slices (the inverse of stack). `num`,
/// when given, must equal the dimension; it is required while tracing if that
/// dimension is unknown.
std::vector<Tensor> unstack(const Tensor& value, int64_t axis = 0, int64_t num = -1);

/// Splits `value` along `axis` into `num_splits` equal parts (the dimension
/// must be divisible by it).
std::vector<Tensor> split(const Tensor& value, int64_t num_splits, int64_t axis = 0);
/// Splits `value` along `axis` into parts of the given sizes; one size may be
/// -1 (the remainder). The sizes must add up to the dimension.
std::vector<Tensor> split(const Tensor& value, const std::vector<int64_t>& size_splits,
                          int64_t axis = 0);
std::vector<Tensor> split(const Tensor& value, std::initializer_list<int64_t> size_splits,
                          int64_t axis = 0);

/// The block starting at `begin` with `size` elements per dimension (-1 = to
/// the end). begin and size need one entry per dimension.
Tensor slice(const Tensor& input, const Tensor& begin, const Tensor& size);
Tensor slice(const Tensor& input, const std::vector<int64_t>& begin,
             const std::vector<int64_t>& size);
Tensor slice(const Tensor& input, std::initializer_list<int64_t> begin,
             std::initializer_list<int64_t> size);

/// Python-style slicing (TensorFlow's StridedSlice). Entry i of
/// begin/end/strides is a slice begin:end:stride, modified by bit i of the
/// masks: begin_mask / end_mask ignore begin / end (take the widest range),
/// ellipsis_mask makes the entry a `...`, new_axis_mask a new dimension of
/// size 1, shrink_axis_mask an integer index (begin) that removes the
/// dimension. Negative indices count from the end, out-of-range slice bounds
/// are clamped, and an out-of-range integer index is an error. Dimensions
/// past the spec are kept whole. Prefer `index()` below from C++.
Tensor strided_slice(const Tensor& input, const Tensor& begin, const Tensor& end,
                     const Tensor& strides, int64_t begin_mask = 0, int64_t end_mask = 0,
                     int64_t ellipsis_mask = 0, int64_t new_axis_mask = 0,
                     int64_t shrink_axis_mask = 0);
/// Empty `strides` means all ones.
Tensor strided_slice(const Tensor& input, const std::vector<int64_t>& begin,
                     const std::vector<int64_t>& end, const std::vector<int64_t>& strides = {},
                     int64_t begin_mask = 0, int64_t end_mask = 0, int64_t ellipsis_mask = 0,
                     int64_t new_axis_mask = 0, int64_t shrink_axis_mask = 0);
Tensor strided_slice(const Tensor& input, std::initializer_list<int64_t> begin,
                     std::initializer_list<int64_t> end, std::initializer_list<int64_t> strides,
                     int64_t begin_mask = 0, int64_t end_mask = 0, int64_t ellipsis_mask = 0,
                     int64_t new_axis_mask = 0, int64_t shrink_axis_mask = 0);

/// Python's `None` in a Slice: the bound is absent.
inline constexpr std::nullopt_t None = std::nullopt;

/// A Python slice `start:stop:step` for index(); absent parts take Python's
/// defaults. `Slice()` is `:`, `Slice(1, None)` is `1:`,
/// `Slice().step(-1)` is `::-1`, `Slice(None, 4, 2)` is `:4:2`.
struct Slice {
  std::optional<int64_t> start_, stop_, step_;
  constexpr Slice() = default;
  constexpr Slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                  std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step) {}
  constexpr Slice& start(int64_t v) {
    start_ = v;
    return *this;
  }
  constexpr Slice& stop(int64_t v) {
    stop_ = v;
    return *this;
  }
  constexpr Slice& step(int64_t v) {
    step_ = v;
    return *this;
  }
};

/// `None` / `np.newaxis` in an index: inserts a dimension of size 1.
struct NewAxis {};
inline constexpr NewAxis kNewAxis{};
/// `...` in an index: as many full slices as needed.
struct Ellipsis {};
inline constexpr Ellipsis kEllipsis{};

/// One entry of an index(): an integer (removes the dimension), a Slice,
/// kNewAxis or kEllipsis.
class IndexItem {
 public:
  enum Kind { kIndex, kSlice, kNewAxis, kEllipsis };
  IndexItem(int64_t i) : kind_(kIndex), index_(i) {}       // NOLINT: implicit by design
  IndexItem(int i) : kind_(kIndex), index_(i) {}           // NOLINT
  IndexItem(const Slice& s) : kind_(kSlice), slice_(s) {}  // NOLINT
  IndexItem(NewAxis) : kind_(kNewAxis) {}                  // NOLINT
  IndexItem(Ellipsis) : kind_(kEllipsis) {}                // NOLINT

  Kind kind() const { return kind_; }
  int64_t index() const { return index_; }
  const Slice& slice() const { return slice_; }

 private:
  Kind kind_;
  int64_t index_ = 0;
  Slice slice_;
};

/// NumPy/TensorFlow basic indexing, lowered to strided_slice:
/// `index(x, {Slice(1, None), Slice().step(2)})` is `x[1:, ::2]`,
/// `index(x, {kEllipsis, kNewAxis, 0})` is `x[..., None, 0]`.
Tensor index(const Tensor& input, std::initializer_list<IndexItem> items);
Tensor index(const Tensor& input, const std::vector<IndexItem>& items);

/// Gathers slices of `params` along `axis` at `indices` (int32/int64, any
/// shape): the result has shape params[:axis] + indices.shape +
/// params[axis+1:]. An index outside [0, params.dim(axis)) is an error.
Tensor gather(const Tensor& params, const Tensor& indices, int64_t axis = 0);

/// Repeats `input` multiples[i] times along dimension i.
Tensor tile(const Tensor& input, const Tensor& multiples);
Tensor tile(const Tensor& input, const std::vector<int64_t>& multiples);
Tensor tile(const Tensor& input, std::initializer_list<int64_t> multiples);

/// Broadcasts `input` to `shape` (NumPy rules; the result is a copy).
Tensor broadcast_to(const Tensor& input, const Tensor& shape);
Tensor broadcast_to(const Tensor& input, const std::vector<int64_t>& shape);
Tensor broadcast_to(const Tensor& input, std::initializer_list<int64_t> shape);
Tensor broadcast_to(const Tensor& input, const Shape& shape);

/// Pads dimension i with paddings[i].first elements before and .second
/// after, all equal to `constant_values` (a scalar of input's dtype; the
/// number 0 means false for bool and "" for string). `paddings` as a tensor
/// is int32/int64 of shape [rank, 2]. Negative paddings are an error.
Tensor pad(const Tensor& input, const Tensor& paddings, const Tensor& constant_values);
Tensor pad(const Tensor& input, const Tensor& paddings, Scalar constant_values = 0);
Tensor pad(const Tensor& input, const std::vector<std::pair<int64_t, int64_t>>& paddings,
           Scalar constant_values = 0);
Tensor pad(const Tensor& input, std::initializer_list<std::pair<int64_t, int64_t>> paddings,
           Scalar constant_values = 0);
Tensor pad(const Tensor& input, const std::vector<std::pair<int64_t, int64_t>>& paddings,
           const Tensor& constant_values);
Tensor pad(const Tensor& input, std::initializer_list<std::pair<int64_t, int64_t>> paddings,
           const Tensor& constant_values);

/// The shape of `input` as a vector of `out_type` (int32 or int64).
Tensor shape(const Tensor& input, DType out_type = DType::kInt32);
/// The element count of `input` as a scalar of `out_type` (int32 or int64).
Tensor size(const Tensor& input, DType out_type = DType::kInt32);
/// The rank of `input` as an int32 scalar.
Tensor rank(const Tensor& input);

/// One-hot encoding: a new dimension of size `depth` at `axis` (-1 = last)
/// holding on_value where the index matches and off_value elsewhere.
/// Indices are uint8/int8/int32/int64; indices outside [0, depth) give a row
/// of off_value. The result has dtype `dtype`.
Tensor one_hot(const Tensor& indices, int64_t depth, Scalar on_value = 1, Scalar off_value = 0,
               int64_t axis = -1, DType dtype = DType::kFloat32);
/// Tensor form: depth is an int32/int64 scalar, on/off are scalars of the
/// output dtype.
Tensor one_hot(const Tensor& indices, const Tensor& depth, const Tensor& on_value,
               const Tensor& off_value, int64_t axis = -1);

}  // namespace kiln
