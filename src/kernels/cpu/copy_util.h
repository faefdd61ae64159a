// Data-movement helpers for the shape kernels: dispatch on element size (plain
// dtypes move as same-size integers, strings by assignment) and a strided
// copy engine that handles transpose, slicing, broadcasting, tiling and
// padding with contiguous-run, fill and tiled-transpose inner loops.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "kiln/op.h"
#include "kiln/small_vector.h"

namespace kiln::cpu {

// Plain elements move as opaque values of their size; may_alias makes the
// accesses valid whatever the real element type is.
using ElemU8 = uint8_t;
struct __attribute__((__may_alias__)) ElemU16 {
  uint16_t v;
};
struct __attribute__((__may_alias__)) ElemU32 {
  uint32_t v;
};
struct __attribute__((__may_alias__)) ElemU64 {
  uint64_t v;
};
struct __attribute__((__may_alias__)) ElemU128 {  // complex128
  uint64_t v[2];
};

template <typename T>
struct ElemTag {
  using type = T;
};

/// Calls f(ElemTag<E>{}) with E an integer type of the dtype's element size,
/// or std::string for strings. Throws for resource/invalid dtypes.
template <typename F>
void visit_elem(DType dt, const char* op, F&& f) {
  if (dt == DType::kString) return f(ElemTag<std::string>{});
  if (!is_object(dt) && dt != DType::kInvalid) {
    switch (dtype_size(dt)) {
      case 1: return f(ElemTag<ElemU8>{});
      case 2: return f(ElemTag<ElemU16>{});
      case 4: return f(ElemTag<ElemU32>{});
      case 8: return f(ElemTag<ElemU64>{});
      case 16: return f(ElemTag<ElemU128>{});
      default: break;
    }
  }
  throw InvalidArgumentError(str_cat(op, ": unsupported dtype ", dtype_name(dt)));
}

/// Copies n contiguous elements.
template <typename T>
inline void copy_run(const T* s, T* d, int64_t n) {
  if constexpr (std::is_same_v<T, std::string>)
    std::copy(s, s + n, d);
  else
    std::memcpy(d, s, static_cast<size_t>(n) * sizeof(T));
}

using Dims = SmallVec<int64_t, 8>;

/// A copy of a box of elements: for every multi-index i < size,
/// dst[sum i[d] * dst_stride[d]] = src[sum i[d] * src_stride[d]] (strides in
/// elements; src strides may be 0 (broadcast) or negative).
struct CopyPlan {
  Dims size, src_stride, dst_stride;
  void add(int64_t n, int64_t src, int64_t dst) {
    size.push_back(n);
    src_stride.push_back(src);
    dst_stride.push_back(dst);
  }
};

/// One tile of a transpose on the calling thread: d[i * dk + j] = s[i + j *
/// ss] for i < m, j < n, over values of `dt` (4- and 8-byte values go
/// through registers in 4x4 and 2x2 blocks).
void transpose_block(DType dt, const void* s, void* d, int64_t m, int64_t n, int64_t ss,
                     int64_t dk);

/// Runs `plan` for dtype `dt` (src/dst point at the box's first element).
/// Splits large copies over the thread pool.
void strided_copy(DType dt, const void* src, void* dst, CopyPlan plan);

/// True when the box of `plan` is one contiguous run of the source (so a
/// slice can be returned as a view).
bool is_contiguous_source(const CopyPlan& plan);

/// Row-major element strides of a fully defined shape.
Dims strides_of(const Shape& s);

/// A tensor viewing `in`'s buffer from element `offset` with `shape`.
Tensor sub_view(const Tensor& in, int64_t offset, const Shape& shape);

/// Binds slice, strided_slice, gather, concat, stack, unstack and split
/// (slicing.cpp); called by bind_shape_kernels.
void bind_slicing_kernels(OpTableBuilder& t);

}  // namespace kiln::cpu
