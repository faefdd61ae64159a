#include "kiln/shape.h"

#include <sstream>

#include "kiln/status.h"

namespace kiln {

bool Shape::is_fully_defined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_)
    if (d < 0) return false;
  return true;
}

int64_t Shape::num_elements() const {
  if (!is_fully_defined())
    throw InvalidArgumentError(str_cat("shape ", debug_string(), " is not fully defined"));
  int64_t n = 1;
  for (int64_t d : dims_)
    if (__builtin_mul_overflow(n, d, &n))
      throw InvalidArgumentError(
          str_cat("shape ", debug_string(), " has too many elements (int64 overflow)"));
  return n;
}

int64_t Shape::num_elements_or_unknown() const {
  if (!is_fully_defined()) return -1;
  return num_elements();
}

bool Shape::is_compatible_with(const Shape& o) const {
  if (unknown_rank_ || o.unknown_rank_) return true;
  if (dims_.size() != o.dims_.size()) return false;
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] >= 0 && o.dims_[i] >= 0 && dims_[i] != o.dims_[i]) return false;
  return true;
}

bool Shape::fits(const Shape& inv) const {
  if (!inv.rank_known()) return true;
  if (!rank_known() || rank() != inv.rank()) return false;
  for (int64_t d = 0; d < inv.rank(); ++d)
    if (inv.dim(d) != kUnknownDim && inv.dim(d) != dim(d)) return false;
  return true;
}

Shape Shape::most_specific_common(const Shape& o) const {
  if (unknown_rank_ || o.unknown_rank_ || dims_.size() != o.dims_.size()) return unknown_rank();
  Shape r = *this;
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] != o.dims_[i]) r.dims_[i] = kUnknownDim;
  return r;
}

std::string Shape::to_string() const {
  if (unknown_rank_) return "<unknown>";
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += dims_[i] < 0 ? "None" : std::to_string(dims_[i]);
  }
  if (dims_.size() == 1) s += ",";
  return s + ")";
}

std::string Shape::debug_string() const {
  if (unknown_rank_) return "<unknown>";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return s + "]";
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << s.debug_string();
}

SmallVec<int64_t, 6> contiguous_strides(const Shape& s) {
  SmallVec<int64_t, 6> st(static_cast<size_t>(s.rank()));
  int64_t acc = 1;
  for (int64_t i = s.rank() - 1; i >= 0; --i) {
    st[static_cast<size_t>(i)] = acc;
    acc *= s.dim(i);
  }
  return st;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const char* op, const char* what) {
  if (axis < -rank || axis >= rank)
    throw InvalidArgumentError(str_cat(op, ": ", what, " ", axis, " is out of range for rank ",
                                       rank, " (expected [", -rank, ", ", rank, "))"));
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  if (!a.rank_known() || !b.rank_known()) return Shape::unknown_rank();
  const int64_t r = std::max(a.rank(), b.rank());
  Shape out;
  for (int64_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.rank() ? 1 : a.dim(i - (r - a.rank()));
    int64_t db = i < r - b.rank() ? 1 : b.dim(i - (r - b.rank()));
    int64_t d;
    if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (da < 0 || db < 0)
      d = da < 0 ? db : da;  // unknown vs known (!=1): the known one, if compatible
    else if (da == db)
      d = da;
    else
      throw InvalidArgumentError(str_cat(op, ": incompatible shapes for broadcasting: ",
                                         a.debug_string(), " vs. ", b.debug_string()));
    out.push_back(d);
  }
  return out;
}

}  // namespace kiln
