// Tensor shapes. A value's shape is fully known; a spec's shape (tracing,
// input signatures) may have unknown dims (-1) or an unknown rank.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "kiln/small_vector.h"

namespace kiln {

class Shape {
 public:
  static constexpr int64_t kUnknownDim = -1;

  /// Scalar shape ().
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::span<const int64_t> dims) : dims_(dims.data(), dims.size()) {}
  explicit Shape(const std::vector<int64_t>& dims) : dims_(dims.data(), dims.size()) {}
  /// A shape whose rank is not known (TensorFlow's `TensorShape(None)`).
  static Shape unknown_rank() {
    Shape s;
    s.unknown_rank_ = true;
    return s;
  }

  bool rank_known() const { return !unknown_rank_; }
  /// Number of dims; -1 when the rank is unknown.
  int64_t rank() const { return unknown_rank_ ? -1 : static_cast<int64_t>(dims_.size()); }
  int64_t dim(int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t operator[](int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  void set_dim(int64_t i, int64_t v) { dims_[static_cast<size_t>(i)] = v; }
  std::span<const int64_t> dims() const { return {dims_.data(), dims_.size()}; }
  std::vector<int64_t> to_vector() const { return {dims_.begin(), dims_.end()}; }
  void push_back(int64_t d) { dims_.push_back(d); }
  void insert(int64_t pos, int64_t d) { dims_.insert(static_cast<size_t>(pos), d); }
  void erase(int64_t pos) { dims_.erase(static_cast<size_t>(pos)); }

  /// True when the rank and every dim are known.
  bool is_fully_defined() const;
  /// Product of dims, overflow-checked (throws InvalidArgumentError); requires
  /// a fully defined shape.
  int64_t num_elements() const;
  /// Product of dims, or -1 when unknown; never throws except on overflow.
  int64_t num_elements_or_unknown() const;
  /// Whether a value of shape `other` fits this spec (unknowns match anything).
  bool is_compatible_with(const Shape& other) const;
  /// Whether every value this shape admits also fits `invariant` (a
  /// while_loop shape invariant): same rank, and a known dim of `invariant`
  /// is known and equal here. Unknown rank in `invariant` admits anything.
  bool fits(const Shape& invariant) const;
  /// The most specific shape that both this and `other` fit: equal dims kept,
  /// differing dims become unknown, differing ranks give unknown rank.
  Shape most_specific_common(const Shape& other) const;

  /// "(2, 3)", "(None, 3)", "<unknown>" (TensorFlow's TensorShape str).
  std::string to_string() const;
  /// "[2,3]" / "[?,3]" (compact form for error messages and graph listings).
  std::string debug_string() const;

  bool operator==(const Shape& o) const {
    return unknown_rank_ == o.unknown_rank_ && dims_ == o.dims_;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  SmallVec<int64_t, 6> dims_;
  bool unknown_rank_ = false;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

/// Row-major strides (in elements) of a fully defined shape.
SmallVec<int64_t, 6> contiguous_strides(const Shape& s);

/// Normalizes a possibly negative axis into [0, rank); throws
/// InvalidArgumentError naming `op` and `what` when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* op, const char* what = "axis");

/// NumPy broadcasting of two shapes (unknown dims allowed); throws
/// InvalidArgumentError naming `op` when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace kiln
