// CPU kernels for slicing, gathering, joining and splitting. Slices that are
// one contiguous run of the input (x[1:3], unstack/split along the first
// non-trivial axis, a gather of consecutive first-axis rows) are returned as
// views of the input's buffer.
#include <algorithm>
#include <cstring>
#include <vector>

#include "copy_util.h"
#include "jit/ir/program.h"
#include "kernel_util.h"
#include "ops/slice_spec.h"

namespace kiln::cpu {
namespace {

const char* byte_ptr(const Tensor& t, int64_t elem_offset) {
  return static_cast<const char*>(t.raw_data()) +
         static_cast<size_t>(elem_offset) * dtype_size(t.dtype());
}
char* mutable_byte_ptr(const Tensor& t, int64_t elem_offset) {
  return static_cast<char*>(t.mutable_raw_data()) +
         static_cast<size_t>(elem_offset) * dtype_size(t.dtype());
}

// Output 0 = the box `plan` of `in` starting at element `base`: a view when
// the box is contiguous in the input, else a copy.
void emit_box(KernelContext& c, size_t i, const Tensor& in, int64_t base, const CopyPlan& plan) {
  const Shape& os = c.output_spec(i).shape;
  if (os.num_elements() > 0 && is_contiguous_source(plan))
    return c.set_output(i, sub_view(in, base, os));
  Tensor& out = c.allocate_output(i);
  if (out.num_elements() == 0) return;
  strided_copy(in.dtype(), byte_ptr(in, base), out.mutable_raw_data(), plan);
}

void slice_kernel(KernelContext& c) {
  const Tensor& in = c.input(0);
  const std::vector<int64_t> begin = int_values(c.input(1));
  const Shape& os = c.output_spec(0).shape;
  const Dims is = strides_of(in.shape()), ost = strides_of(os);
  CopyPlan plan;
  int64_t base = 0;
  for (int64_t i = 0; i < in.rank(); ++i) {
    const size_t k = static_cast<size_t>(i);
    plan.add(os.dim(i), is[k], ost[k]);
    if (os.dim(i) > 0) base += begin[k] * is[k];
  }
  emit_box(c, 0, in, base, plan);
}

// The spec of a StridedSlice(Grad) call from inputs 1-3 (begin, end,
// strides) against `input`. Inference may not have seen the lengths: an
// output spec that is static (constant shape) is not re-inferred per call.
StridedSliceSpec kernel_spec(KernelContext& c, const Shape& input, const char* op) {
  const SliceInts b = int_list(c.input(1)), e = int_list(c.input(2)), s = int_list(c.input(3));
  if (e.size() != b.size() || s.size() != b.size())
    c.fail("begin, end and strides must have the same length, got ", b.size(), ", ", e.size(),
           " and ", s.size());
  const StridedSliceMasks masks{c.attr_int("begin_mask"), c.attr_int("end_mask"),
                                c.attr_int("ellipsis_mask"), c.attr_int("new_axis_mask"),
                                c.attr_int("shrink_axis_mask")};
  return canonicalize_strided_slice(input, static_cast<int64_t>(b.size()), b.data(), e.data(),
                                    s.data(), masks, op);
}

void strided_slice_kernel(KernelContext& c) {
  const Tensor& in = c.input(0);
  const StridedSliceSpec spec = kernel_spec(c, in.shape(), "StridedSlice");
  // The output, in the input's dimension order (processing shape), is
  // contiguous: new and shrunk axes have size 1.
  const Dims is = strides_of(in.shape());
  Dims ost(static_cast<size_t>(in.rank()), 0);
  int64_t acc = 1;
  for (int64_t i = in.rank() - 1; i >= 0; --i) {
    ost[static_cast<size_t>(i)] = acc;
    acc *= spec.size[static_cast<size_t>(i)];
  }
  CopyPlan plan;
  int64_t base = 0;
  bool empty = false;
  for (int64_t i = 0; i < in.rank(); ++i) {
    const size_t k = static_cast<size_t>(i);
    const int64_t n = spec.size[k];
    empty |= n == 0;
    // A stride only matters when more than one element is taken (and then
    // stride * input stride fits in int64, as it stays inside the input).
    plan.add(n, n > 1 ? spec.stride[k] * is[k] : 0, ost[k]);
    if (n > 0) base += spec.begin[k] * is[k];
  }
  emit_box(c, 0, in, empty ? 0 : base, plan);
}

// StridedSliceGrad: zeros of `shape` with dy written where StridedSlice
// reads. The begin/end/strides values may differ per call, so the spec is
// canonicalized and dy checked here even when the output spec is static.
void strided_slice_grad_kernel(KernelContext& c) {
  const Shape& xs = c.output_spec(0).shape;
  const StridedSliceSpec spec = kernel_spec(c, xs, "StridedSliceGrad");
  const Tensor& dy = c.input(4);
  if (dy.shape() != spec.shape)
    c.fail("dy has shape ", dy.shape().debug_string(), " but the slice of an input of shape ",
           xs.debug_string(), " has shape ", spec.shape.debug_string());
  const int64_t rank = xs.rank();
  // A slice that takes every element in order: the output is dy reshaped.
  bool whole = true;
  for (int64_t i = 0; i < rank; ++i) {
    const size_t k = static_cast<size_t>(i);
    whole &= spec.size[k] == xs.dim(i) && (spec.size[k] <= 1 || spec.stride[k] == 1);
  }
  if (whole && xs.num_elements() > 0) return c.set_output(0, sub_view(dy, 0, xs));
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  std::memset(out.mutable_raw_data(), 0,
              static_cast<size_t>(out.num_elements()) * dtype_size(out.dtype()));
  // dy in the input's dimension order is contiguous (new and shrunk axes
  // have size 1). Negative steps are walked backwards through dy so the
  // writes into the output go forwards.
  const Dims xst = strides_of(xs);
  Dims dst(static_cast<size_t>(rank), 0);
  int64_t acc = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    dst[static_cast<size_t>(i)] = acc;
    acc *= spec.size[static_cast<size_t>(i)];
  }
  CopyPlan plan;
  int64_t src_base = 0, dst_base = 0;
  for (int64_t i = 0; i < rank; ++i) {
    const size_t k = static_cast<size_t>(i);
    const int64_t n = spec.size[k];
    if (n == 0) return;  // empty slice: all zeros
    dst_base += spec.begin[k] * xst[k];
    if (n == 1) {
      plan.add(1, 0, 0);
      continue;
    }
    const int64_t step = spec.stride[k] * xst[k];  // stays inside the output
    if (step > 0) {
      plan.add(n, dst[k], step);
    } else {
      dst_base += (n - 1) * step;
      src_base += (n - 1) * dst[k];
      plan.add(n, -dst[k], -step);
    }
  }
  strided_copy(dy.dtype(), byte_ptr(dy, src_base), mutable_byte_ptr(out, dst_base), plan);
}

template <typename I>
void check_indices(const KernelContext& c, const Tensor& indices, int64_t limit) {
  const I* idx = indices.data<I>();
  const int64_t n = indices.num_elements();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t v = static_cast<int64_t>(idx[j]);
    if (v >= 0 && v < limit) continue;
    // Name the offending position as a multi-index into indices.
    std::string pos;
    int64_t rem = j;
    for (int64_t d = indices.rank() - 1; d >= 0; --d) {
      pos = std::to_string(rem % indices.dim(d)) + (pos.empty() ? "" : ",") + pos;
      rem /= indices.dim(d);
    }
    c.fail("indices[", pos, "] = ", v, " is not in [0, ", limit, ") (params dimension size ", limit,
           ")");
  }
}

template <typename T, typename I>
void gather_typed(const T* src, const I* idx, T* dst, int64_t outer, int64_t n, int64_t nidx,
                  int64_t inner) {
  // Row r of the output (inner elements) is row idx[r % nidx] of slab r / nidx.
  const int64_t rows = outer * nidx;
  parallel_for(
      rows, std::max<int64_t>(1, config().parallel_grain / inner), [&](int64_t b, int64_t e) {
        int64_t o = b / nidx, j = b % nidx;
        for (int64_t r = b; r < e; ++o, j = 0) {
          const T* slab = src + o * n * inner;
          const int64_t j_end = std::min(nidx, j + (e - r));
          T* d = dst + r * inner;
          if (inner == 1) {
            for (int64_t q = j; q < j_end; ++q) d[q - j] = slab[idx[q]];
          } else {
            for (int64_t q = j; q < j_end; ++q)
              copy_run(slab + static_cast<int64_t>(idx[q]) * inner, d + (q - j) * inner, inner);
          }
          r += j_end - j;
        }
      });
}

void gather_kernel(KernelContext& c) {
  const Tensor& params = c.input(0);
  const Tensor& indices = c.input(1);
  const int64_t r = params.rank();
  int64_t axis = c.attr_int("axis");
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i)
    if (i < axis)
      outer *= params.dim(i);
    else if (i > axis)
      inner *= params.dim(i);
  const int64_t n = params.dim(axis), nidx = indices.num_elements();
  const bool i32 = indices.dtype() == DType::kInt32;
  if (i32)
    check_indices<int32_t>(c, indices, n);
  else
    check_indices<int64_t>(c, indices, n);
  // Consecutive rows of the first axis (an RNN's step t of its time-major
  // inputs) are one contiguous run of params: a view.
  if (outer == 1 && nidx > 0 && c.output_spec(0).shape.num_elements() > 0) {
    const int64_t first = i32 ? indices.data<int32_t>()[0] : indices.data<int64_t>()[0];
    bool consecutive = true;
    for (int64_t q = 1; q < nidx && consecutive; ++q)
      consecutive = (i32 ? indices.data<int32_t>()[q] : indices.data<int64_t>()[q]) == first + q;
    if (consecutive)
      return c.set_output(0, sub_view(params, first * inner, c.output_spec(0).shape));
  }
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  visit_elem(params.dtype(), "GatherV2", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = static_cast<const T*>(params.raw_data());
    T* dst = static_cast<T*>(out.mutable_raw_data());
    if (i32)
      gather_typed(src, indices.data<int32_t>(), dst, outer, n, nidx, inner);
    else
      gather_typed(src, indices.data<int64_t>(), dst, outer, n, nidx, inner);
  });
}

// Concat and stack: input i fills `chunk[i]` elements of each of `outer`
// output rows of `row` elements.
void join(KernelContext& c, int64_t outer, int64_t row, const std::vector<int64_t>& chunk) {
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;
  int64_t offset = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    CopyPlan plan;
    plan.add(outer, chunk[i], row);
    plan.add(chunk[i], 1, 1);
    strided_copy(out.dtype(), c.input(i).raw_data(), mutable_byte_ptr(out, offset), plan);
    offset += chunk[i];
  }
}

void concat_kernel(KernelContext& c) {
  const Shape& os = c.output_spec(0).shape;
  if (c.num_inputs() == 1) return c.set_output(0, c.input(0));
  const int64_t r = os.rank();
  int64_t axis = c.attr_int("axis");
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= os.dim(i);
  for (int64_t i = axis + 1; i < r; ++i) inner *= os.dim(i);
  std::vector<int64_t> chunk;
  for (size_t i = 0; i < c.num_inputs(); ++i) chunk.push_back(c.input(i).dim(axis) * inner);
  join(c, outer, os.dim(axis) * inner, chunk);
}

void stack_kernel(KernelContext& c) {
  const Shape& os = c.output_spec(0).shape;
  const int64_t r = os.rank();
  int64_t axis = c.attr_int("axis");
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= os.dim(i);
  for (int64_t i = axis + 1; i < r; ++i) inner *= os.dim(i);
  const int64_t n = static_cast<int64_t>(c.num_inputs());
  join(c, outer, n * inner, std::vector<int64_t>(c.num_inputs(), inner));
}

// Unstack and split: output i takes `sizes[i]` entries of `axis`.
void cut(KernelContext& c, int64_t axis, const std::vector<int64_t>& sizes) {
  const Tensor& in = c.input(0);
  const int64_t r = in.rank();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= in.dim(i);
  for (int64_t i = axis + 1; i < r; ++i) inner *= in.dim(i);
  const int64_t row = in.dim(axis) * inner;
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    CopyPlan plan;
    plan.add(outer, row, sizes[i] * inner);
    plan.add(sizes[i] * inner, 1, 1);
    emit_box(c, i, in, offset, plan);
    offset += sizes[i] * inner;
  }
}

void unstack_kernel(KernelContext& c) {
  const int64_t r = c.input(0).rank();
  int64_t axis = c.attr_int("axis");
  if (axis < 0) axis += r;
  cut(c, axis, std::vector<int64_t>(c.num_outputs(), 1));
}

void split_kernel(KernelContext& c) {
  const int64_t r = c.input(0).rank();
  int64_t axis = c.attr_int("axis");
  if (axis < 0) axis += r;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < c.num_outputs(); ++i) sizes.push_back(c.output_spec(i).shape.dim(axis));
  cut(c, axis, sizes);
}

// A JitView node: its value read through its view (a copy, or a view of the
// buffer when the values are one run).
void jit_view_kernel(KernelContext& c) {
  const Tensor& in = c.input(0);
  const jit::View& v = c.attr_object<jit::ViewAttr>("view").view;
  std::vector<int64_t> dims(v.dims.size());
  if (const std::string why = jit::view_dims(v, in.shape(), dims.data()); !why.empty())
    c.fail("input 0 does not fit its view: ", why);
  std::vector<int64_t> strides(dims.size());
  int64_t offset = jit::view_strides(v, in.shape(), strides.data());
  if (std::count(dims.begin(), dims.end(), 0) > 0) offset = 0;  // reads nothing
  const Dims ost = strides_of(Shape(dims));
  CopyPlan plan;
  for (size_t j = 0; j < dims.size(); ++j) plan.add(dims[j], strides[j], ost[j]);
  emit_box(c, 0, in, offset, plan);
}
}  // namespace

void bind_slicing_kernels(OpTableBuilder& t) {
  t.kernel(OpId::JitView, jit_view_kernel);
  t.kernel(OpId::Slice, slice_kernel);
  t.kernel(OpId::StridedSlice, strided_slice_kernel);
  t.kernel(OpId::StridedSliceGrad, strided_slice_grad_kernel);
  t.kernel(OpId::Gather, gather_kernel);
  t.kernel(OpId::Concat, concat_kernel);
  t.kernel(OpId::Stack, stack_kernel);
  t.kernel(OpId::Unstack, unstack_kernel);
  t.kernel(OpId::Split, split_kernel);
}

}  // namespace kiln::cpu
