// StridedSlice canonicalization, following TensorFlow's ValidateStridedSliceOp:
// the sparse spec (what the user wrote, with `...` and new axes) becomes a
// dense spec with one entry per input dimension, then each entry is clamped
// with Python's slicing rules.
#include "slice_spec.h"

#include <algorithm>

#include "kiln/status.h"

namespace kiln {
namespace {

constexpr int64_t kNewAxisDim = kSliceNewAxis;
constexpr int64_t kShrinkDim = kSliceShrunk;

struct DenseEntry {
  int64_t begin = 0, end = 0, stride = 1;
  bool begin_masked = true, end_masked = true, shrink = false;
  bool values_known = true;
  int64_t sparse_index = -1;  // -1: filled in by an ellipsis
};

template <typename... Args>
[[noreturn]] void fail(const char* op, const Args&... args) {
  throw InvalidArgumentError(str_cat(op, ": ", args...));
}

// Python slice length of begin:end:stride after clamping (stride != 0).
int64_t slice_length(int64_t begin, int64_t end, int64_t stride) {
  if (stride > 0) return end > begin ? (end - begin - 1) / stride + 1 : 0;
  const uint64_t step = uint64_t{0} - static_cast<uint64_t>(stride);
  return begin > end ? static_cast<int64_t>(static_cast<uint64_t>(begin - end - 1) / step) + 1 : 0;
}

}  // namespace

StridedSliceSpec canonicalize_strided_slice(const Shape& input, int64_t n, const int64_t* begin,
                                            const int64_t* end, const int64_t* strides,
                                            const StridedSliceMasks& masks, const char* op) {
  if (n > 64) fail(op, "the slice spec has ", n, " entries; at most 64 are supported");
  const uint64_t valid = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  const uint64_t begin_mask = static_cast<uint64_t>(masks.begin) & valid;
  const uint64_t end_mask = static_cast<uint64_t>(masks.end) & valid;
  const uint64_t ellipsis_mask = static_cast<uint64_t>(masks.ellipsis) & valid;
  const uint64_t new_axis_mask = static_cast<uint64_t>(masks.new_axis) & valid;
  const uint64_t shrink_mask = static_cast<uint64_t>(masks.shrink_axis) & valid;
  if (ellipsis_mask & (ellipsis_mask - 1))
    fail(op, "ellipsis_mask ", masks.ellipsis,
         " marks more than one ellipsis; at most one is allowed");
  const bool known = begin && end && strides;
  auto bit = [](uint64_t m, int64_t i) { return ((m >> i) & 1) != 0; };

  // Validate strides of the entries that are ranges or indices.
  if (known)
    for (int64_t i = 0; i < n; ++i) {
      if (bit(ellipsis_mask, i) || bit(new_axis_mask, i)) continue;
      const int64_t s = strides[i];
      if (s == 0) fail(op, "strides[", i, "] must be non-zero");
      if (bit(shrink_mask, i) && s < 0)
        fail(op, "strides[", i, "] = ", s,
             " is not allowed for an integer index (shrink_axis_mask bit ", i,
             "); it must be positive");
    }

  StridedSliceSpec out;
  if (!input.rank_known()) {
    out.shape = Shape::unknown_rank();
    return out;
  }
  const int64_t rank = input.rank();

  // Sparse entries; without an explicit ellipsis one is implied at the end.
  const bool has_ellipsis = ellipsis_mask != 0;
  const int64_t sparse_n = has_ellipsis ? n : n + 1;
  auto is_ellipsis = [&](int64_t i) { return i == n || bit(ellipsis_mask, i); };
  int64_t new_axes_after_ellipsis = 0;
  {
    bool seen = false;
    for (int64_t i = 0; i < sparse_n; ++i) {
      if (is_ellipsis(i))
        seen = true;
      else if (seen && bit(new_axis_mask, i))
        ++new_axes_after_ellipsis;
    }
  }

  SmallVec<DenseEntry, 8> dense(static_cast<size_t>(rank), DenseEntry{});
  SliceInts& gather = out.gather;  // output dims: dense index, kNewAxisDim or kShrinkDim
  int64_t full = 0;
  for (int64_t i = 0; i < sparse_n; ++i) {
    if (is_ellipsis(i)) {
      const int64_t next = std::min(rank - (sparse_n - i) + 1 + new_axes_after_ellipsis, rank);
      for (; full < next; ++full) gather.push_back(full);
    } else if (bit(new_axis_mask, i)) {
      gather.push_back(kNewAxisDim);
    } else {
      if (full >= rank)
        fail(op, "slice spec entry ", i, " indexes dimension ", full, " but the input has rank ",
             rank, " (shape ", input.debug_string(), ")");
      DenseEntry& e = dense[static_cast<size_t>(full)];
      e.sparse_index = i;
      e.values_known = known;
      if (known) {
        e.begin = begin[i];
        e.end = end[i];
        e.stride = strides[i];
      }
      e.begin_masked = bit(begin_mask, i);
      e.end_masked = bit(end_mask, i);
      e.shrink = bit(shrink_mask, i);
      gather.push_back(e.shrink ? kShrinkDim : full);
      ++full;
    }
  }

  out.begin.resize(static_cast<size_t>(rank));
  out.stride.resize(static_cast<size_t>(rank));
  out.size.resize(static_cast<size_t>(rank));
  for (int64_t k = 0; k < rank; ++k) {
    const DenseEntry& e = dense[static_cast<size_t>(k)];
    const int64_t d = input.dim(k);
    int64_t& b = out.begin[static_cast<size_t>(k)];
    int64_t& s = out.stride[static_cast<size_t>(k)];
    int64_t& sz = out.size[static_cast<size_t>(k)];
    b = 0;
    s = 1;
    if (e.shrink) {
      sz = 1;
      if (!e.values_known || d < 0) continue;
      const int64_t x = e.begin < 0 ? e.begin + d : e.begin;
      if (x < 0 || x >= d)
        fail(op, "index ", e.begin, " (begin[", e.sparse_index,
             "]) is out of bounds for dimension ", k, " of size ", d, " (input shape ",
             input.debug_string(), "; expected [", -d, ", ", d, "))");
      b = x;
      continue;
    }
    if (!e.values_known || d < 0) {
      sz = d == 0 ? 0 : -1;  // any slice of an empty dimension is empty
      if (e.values_known && e.stride == 1 && (e.begin_masked || e.begin == 0) && e.end_masked &&
          k < 64)
        out.whole |= uint64_t{1} << k;
      continue;
    }
    s = e.stride;
    const int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? d : d - 1;
    auto canonical = [&](int64_t x, bool is_begin, bool masked) {
      if (masked) return (s > 0) == is_begin ? lo : hi;
      const int64_t fwd = x < 0 ? x + d : x;
      return std::clamp(fwd, lo, hi);
    };
    b = canonical(e.begin, true, e.begin_masked);
    const int64_t en = canonical(e.end, false, e.end_masked);
    sz = slice_length(b, en, s);
    if (b == 0 && s == 1 && sz == d && k < 64) out.whole |= uint64_t{1} << k;
  }

  for (int64_t g : gather) {
    if (g == kShrinkDim) continue;
    out.shape.push_back(g == kNewAxisDim ? 1 : out.size[static_cast<size_t>(g)]);
  }
  return out;
}

}  // namespace kiln
