// CPU kernels for the shape ops: views (reshape, expand_dims, squeeze),
// transpose, shape/size/rank, one_hot, tile, broadcast_to, pad. Inference
// has validated every argument; these only move data.
#include <algorithm>
#include <cstring>
#include <vector>

#include "bind.h"
#include "copy_util.h"
#include "kernel_util.h"
#include "ops/transpose_perm.h"

namespace kiln::cpu {
namespace {

// Reshape, ExpandDims, Squeeze: same elements, new shape.
void view_kernel(KernelContext& c) {
  c.set_output(0, c.input(0).view(c.output_spec(0).shape));
}

void transpose_kernel(KernelContext& c) {
  const Tensor& in = c.input(0);
  const Shape& os = c.output_spec(0).shape;
  const int64_t r = in.rank();
  const std::vector<int64_t> perm = transpose_perm(c.attr_ints("perm"), r);
  // Order of the non-trivial dims unchanged: the same bytes, a view.
  int64_t prev = -1;
  bool same_order = true;
  for (int64_t p : perm) {
    if (in.dim(p) == 1) continue;
    same_order &= p > prev;
    prev = p;
  }
  if (same_order) return c.set_output(0, in.view(os));
  Tensor& out = c.allocate_output(0);
  const Dims is = strides_of(in.shape()), ost = strides_of(os);
  CopyPlan plan;
  for (int64_t i = 0; i < r; ++i)
    plan.add(os.dim(i), is[static_cast<size_t>(perm[static_cast<size_t>(i)])],
             ost[static_cast<size_t>(i)]);
  strided_copy(in.dtype(), in.raw_data(), out.mutable_raw_data(), plan);
}

void shape_kernel(KernelContext& c) {
  const Shape& s = c.input(0).shape();
  Tensor& out = c.allocate_output(0);
  if (out.dtype() == DType::kInt32) {
    int32_t* o = out.mutable_data<int32_t>();
    for (int64_t i = 0; i < s.rank(); ++i) o[i] = static_cast<int32_t>(s.dim(i));
  } else {
    int64_t* o = out.mutable_data<int64_t>();
    for (int64_t i = 0; i < s.rank(); ++i) o[i] = s.dim(i);
  }
}

void size_kernel(KernelContext& c) {
  const int64_t n = c.input(0).num_elements();
  Tensor& out = c.allocate_output(0);
  if (out.dtype() == DType::kInt32)
    *out.mutable_data<int32_t>() = static_cast<int32_t>(n);
  else
    *out.mutable_data<int64_t>() = n;
}

void rank_kernel(KernelContext& c) {
  *c.allocate_output(0).mutable_data<int32_t>() = static_cast<int32_t>(c.input(0).rank());
}

// Fills all of `out` with the scalar `value`.
void fill_with(Tensor& out, const Tensor& value) {
  CopyPlan plan;
  plan.add(out.num_elements(), 0, 1);
  strided_copy(out.dtype(), value.raw_data(), out.mutable_raw_data(), plan);
}

template <typename I, typename T>
void one_hot_typed(const Tensor& indices, const Tensor& on, Tensor& out, int64_t prefix,
                   int64_t depth, int64_t suffix) {
  const I* idx = indices.data<I>();
  const T on_v = *static_cast<const T*>(on.raw_data());
  T* o = static_cast<T*>(out.mutable_raw_data());
  parallel_for(prefix * suffix, 0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t v = static_cast<int64_t>(idx[i]);
      if (v < 0 || v >= depth) continue;  // out of range: all off_value (as TF)
      const int64_t p = i / suffix, s = i % suffix;
      o[(p * depth + v) * suffix + s] = on_v;
    }
  });
}

void one_hot_kernel(KernelContext& c) {
  const Tensor& indices = c.input(0);
  const Shape& os = c.output_spec(0).shape;
  const int64_t r = indices.rank();
  int64_t axis = c.attr_int("axis");
  if (axis < 0) axis = r;
  const int64_t depth = os.dim(axis);
  int64_t prefix = 1, suffix = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? prefix : suffix) *= indices.dim(i);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  fill_with(out, c.input(3));
  visit_elem(out.dtype(), "OneHot", [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (indices.dtype()) {
      case DType::kUInt8:
        return one_hot_typed<uint8_t, T>(indices, c.input(2), out, prefix, depth, suffix);
      case DType::kInt8:
        return one_hot_typed<int8_t, T>(indices, c.input(2), out, prefix, depth, suffix);
      case DType::kInt32:
        return one_hot_typed<int32_t, T>(indices, c.input(2), out, prefix, depth, suffix);
      default: return one_hot_typed<int64_t, T>(indices, c.input(2), out, prefix, depth, suffix);
    }
  });
}

void tile_kernel(KernelContext& c) {
  const Tensor& in = c.input(0);
  const std::vector<int64_t> m = int_values(c.input(1));
  Tensor& out = c.allocate_output(0);
  const Dims is = strides_of(in.shape()), ost = strides_of(out.shape());
  CopyPlan plan;
  for (int64_t i = 0; i < in.rank(); ++i) {
    const size_t k = static_cast<size_t>(i);
    plan.add(m[k], 0, in.dim(i) * ost[k]);  // the repeats
    plan.add(in.dim(i), is[k], ost[k]);     // one copy of the input
  }
  strided_copy(in.dtype(), in.raw_data(), out.mutable_raw_data(), plan);
}

void broadcast_to_kernel(KernelContext& c) {
  const Tensor& in = c.input(0);
  const Shape& os = c.output_spec(0).shape;
  if (in.shape() == os) return c.set_output(0, in);
  Tensor& out = c.allocate_output(0);
  const auto bs = broadcast_strides(in.shape(), os);
  const Dims ost = strides_of(os);
  CopyPlan plan;
  for (int64_t i = 0; i < os.rank(); ++i)
    plan.add(os.dim(i), bs[static_cast<size_t>(i)], ost[static_cast<size_t>(i)]);
  strided_copy(in.dtype(), in.raw_data(), out.mutable_raw_data(), plan);
}

// The pad regions of the part of `out` that starts at `o` and spans dims d..:
// the slabs before and after the input along d, then the same within each of
// the input's rows along d, down to the last padded dim `last`. `fill(ptr, n)`
// writes the pad value to n elements.
template <typename Fill>
void fill_border(int64_t d, int64_t last, char* o, const Shape& in, const std::vector<int64_t>& p,
                 const Dims& ost, size_t es, const Fill& fill) {
  if (d > last) return;
  const size_t k = static_cast<size_t>(d);
  const int64_t n = in.dim(d), row = ost[k] * static_cast<int64_t>(es), before = p[2 * k];
  fill(o, before * ost[k]);
  fill(o + (before + n) * row, p[2 * k + 1] * ost[k]);
  for (int64_t i = 0; i < n; ++i)
    fill_border(d + 1, last, o + (before + i) * row, in, p, ost, es, fill);
}

void pad_kernel(KernelContext& c) {
  const Tensor& in = c.input(0);
  const std::vector<int64_t> p = int_values(c.input(1));
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  const Dims is = strides_of(in.shape()), ost = strides_of(out.shape());
  const size_t es = dtype_size(in.dtype());
  int64_t last = -1, at = 0;  // the last padded dim; the input's first element in `out`
  for (int64_t i = 0; i < in.rank(); ++i) {
    if (p[static_cast<size_t>(2 * i)] || p[static_cast<size_t>(2 * i + 1)]) last = i;
    at += p[static_cast<size_t>(2 * i)] * ost[static_cast<size_t>(i)];
  }
  if (in.dtype() == DType::kString || in.num_elements() == 0) {
    fill_with(out, c.input(2));
  } else {  // only the border: the input's copy covers the rest
    const char* v = static_cast<const char*>(c.input(2).raw_data());
    const bool zero = std::all_of(v, v + es, [](char b) { return b == 0; });
    char* o = static_cast<char*>(out.mutable_raw_data());
    fill_border(0, last, o, in.shape(), p, ost, es, [&](char* q, int64_t n) {
      if (n <= 0) return;
      if (zero) return static_cast<void>(std::memset(q, 0, static_cast<size_t>(n) * es));
      for (int64_t i = 0; i < n; ++i) std::memcpy(q + static_cast<size_t>(i) * es, v, es);
    });
  }
  CopyPlan plan;
  for (int64_t i = 0; i < in.rank(); ++i)
    plan.add(in.dim(i), is[static_cast<size_t>(i)], ost[static_cast<size_t>(i)]);
  strided_copy(in.dtype(), in.raw_data(),
               static_cast<char*>(out.mutable_raw_data()) + static_cast<size_t>(at) * es, plan);
}

}  // namespace

void bind_shape_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Reshape, view_kernel);
  t.kernel(OpId::ExpandDims, view_kernel);
  t.kernel(OpId::Squeeze, view_kernel);
  t.kernel(OpId::Transpose, transpose_kernel);
  t.kernel(OpId::ShapeOf, shape_kernel);
  t.kernel(OpId::Size, size_kernel);
  t.kernel(OpId::Rank, rank_kernel);
  t.kernel(OpId::OneHot, one_hot_kernel);
  t.kernel(OpId::Tile, tile_kernel);
  t.kernel(OpId::BroadcastTo, broadcast_to_kernel);
  t.kernel(OpId::Pad, pad_kernel);
  bind_slicing_kernels(t);
}

}  // namespace kiln::cpu
