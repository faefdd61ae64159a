// ONNX import rules: shapes, indexing, creation, reductions.
#include <algorithm>
#include <limits>
#include <set>

#include "onnx/import.h"

namespace kiln::onnx::detail {
namespace {

using C = ImportContext;
constexpr int64_t kHuge = int64_t{1} << 62;

Tensor i64(const std::vector<int64_t>& v) {
  return constant(v, Shape{static_cast<int64_t>(v.size())});
}
Tensor shape64(const Tensor& x) {
  return shape(x, DType::kInt64);
}

// Axes given by attribute (older opsets) or by input `index` (newer).
std::optional<std::vector<int64_t>> axes_of(C& c, int64_t input_since, size_t index) {
  if (c.opset() < input_since) {
    if (!c.has_attr("axes")) return std::nullopt;
    return c.attr_ints("axes");
  }
  if (!c.has_input(index)) return std::nullopt;
  return c.ints(index, "axes");
}

std::vector<int64_t> normalized(C& c, std::vector<int64_t> axes, int64_t rank) {
  std::set<int64_t> seen;
  for (int64_t& a : axes) {
    a = normalize_axis(c, a, rank);
    if (!seen.insert(a).second) c.fail("axis ", a, " is repeated");
  }
  return axes;
}

void reshape_rule(C& c) {
  const Tensor& x = c.input(0);
  const bool allow_zero = c.attr_int("allowzero", 0) != 0;
  if (c.opset() < 5 || c.value(1)) {
    std::vector<int64_t> s = c.opset() < 5 ? c.attr_ints("shape") : c.ints(1, "shape");
    bool dynamic = false;
    for (size_t i = 0; i < s.size() && !allow_zero; ++i) {
      if (s[i] != 0) continue;
      if (!x.shape().rank_known() || static_cast<int64_t>(i) >= x.rank())
        c.fail("shape entry ", i, " is 0 (copy) beyond the input's known rank");
      s[i] = x.dim(static_cast<int64_t>(i));
      dynamic |= s[i] < 0;
    }
    if (!dynamic) {
      c.set_output(0, reshape(x, s));
      return;
    }
  }
  // The shape at run time; a 0 entry copies the input's dim (unless allowzero).
  Tensor s = c.opset() < 5 ? i64(c.attr_ints("shape")) : cast(c.input(1), DType::kInt64);
  if (!allow_zero) {
    const int64_t k = s.shape().rank_known() && s.rank() == 1 ? s.dim(0) : -1;
    const int64_t r = x.shape().rank_known() ? x.rank() : -1;
    if (k < 0 || r < 0) c.fail("a run-time shape needs a known length and input rank");
    Tensor dims = shape64(x);
    dims = k <= r ? slice(dims, {0}, {k}) : concat({dims, i64(std::vector<int64_t>(k - r, 0))}, 0);
    s = where(equal(s, constant(int64_t{0}, DType::kInt64)), dims, s);
  }
  c.set_output(0, reshape(x, s));
}

void flatten(C& c) {
  const Tensor& x = c.input(0);
  const int64_t rank = known_rank(c, 0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) c.fail("axis ", axis, " is out of range for rank ", rank);
  const Tensor s = shape64(x);
  const Tensor outer = reduce_prod(slice(s, {0}, {axis}), {0}, true);
  const Tensor inner = reduce_prod(slice(s, {axis}, {rank - axis}), {0}, true);
  c.set_output(0, reshape(x, concat({outer, inner}, 0)));
}

void squeeze_rule(C& c) {
  auto axes = axes_of(c, 13, 1);
  if (!axes) {
    c.set_output(0, squeeze(c.input(0)));
    return;
  }
  c.set_output(0, squeeze(c.input(0), normalized(c, *axes, known_rank(c, 0))));
}

void unsqueeze(C& c) {
  auto axes = axes_of(c, 13, 1);
  if (!axes) c.fail("axes are required");
  const int64_t out_rank = known_rank(c, 0) + static_cast<int64_t>(axes->size());
  std::vector<int64_t> a = normalized(c, *axes, out_rank);
  std::sort(a.begin(), a.end());
  Tensor y = c.input(0);
  for (int64_t k : a) y = expand_dims(y, k);
  c.set_output(0, a.empty() ? identity(y) : y);
}

void transpose_rule(C& c) {
  std::vector<int64_t> perm;
  if (c.has_attr("perm")) {
    perm = c.attr_ints("perm");
  } else {
    const int64_t r = known_rank(c, 0);
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  c.set_output(0, transpose(c.input(0), perm));
}

void concat_rule(C& c) {
  std::vector<Tensor> xs(c.inputs().begin(), c.inputs().end());
  c.set_output(0, concat(xs, c.attr_int("axis")));
}

// Split with sizes known at run time only: one slice per output.
void split_at_run_time(C& c, const Tensor& x, int64_t axis, Tensor sizes) {
  const int64_t rank = known_rank(c, 0);
  const Tensor offsets = cumsum(sizes, 0, true);
  for (size_t k = 0; k < c.num_outputs(); ++k) {
    const int64_t kk = static_cast<int64_t>(k);
    std::vector<Tensor> b, n;
    for (int64_t d = 0; d < rank; ++d) {
      b.push_back(d == axis ? slice(offsets, {kk}, {1}) : i64({0}));
      n.push_back(d == axis ? slice(sizes, {kk}, {1}) : i64({-1}));
    }
    c.set_output(k, slice(x, concat(b, 0), concat(n, 0)));
  }
}

void split_rule(C& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), known_rank(c, 0));
  std::vector<int64_t> sizes;
  if (c.opset() < 13 && c.has_attr("split")) sizes = c.attr_ints("split");
  if (c.opset() >= 13 && c.has_input(1) && !c.value(1)) {
    split_at_run_time(c, x, axis, cast(c.input(1), DType::kInt64));
    return;
  }
  if (c.opset() >= 13 && c.has_input(1)) sizes = c.ints(1, "split");
  const int64_t n = static_cast<int64_t>(c.num_outputs());
  std::vector<Tensor> parts;
  if (!sizes.empty()) {
    parts = split(x, sizes, axis);
  } else {
    const int64_t d = x.dim(axis);
    if (d < 0) {  // equal parts of a dim known at run time: min(chunk, d - k * chunk)
      const Tensor dim = reshape(slice(shape64(x), {axis}, {1}), std::vector<int64_t>{});
      const Tensor chunk =
          floordiv(dim + constant(n - 1, DType::kInt64), constant(n, DType::kInt64));
      const Tensor k = range(int64_t{0}, n, int64_t{1}, DType::kInt64);
      const Tensor sz =
          maximum(minimum(chunk, dim - k * chunk), constant(int64_t{0}, DType::kInt64));
      split_at_run_time(c, x, axis, sz);
      return;
    }
    const int64_t chunk = (d + n - 1) / n;  // the last part may be smaller (opset 18)
    for (int64_t k = 0; k < n; ++k)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, d - k * chunk)));
    parts = split(x, sizes, axis);
  }
  if (static_cast<int64_t>(parts.size()) != n)
    c.fail("split gives ", parts.size(), " parts for ", n, " outputs");
  for (size_t k = 0; k < parts.size(); ++k) c.set_output(k, parts[k]);
}

// Slice with starts/ends known at run time only (axes and steps constant):
// begin/end tensors gather them into the sliced axes' places.
void slice_at_run_time(C& c, const Tensor& x, int64_t rank) {
  const Tensor starts = cast(c.input(1), DType::kInt64), ends = cast(c.input(2), DType::kInt64);
  const int64_t n = starts.shape().rank_known() && starts.rank() == 1 ? starts.dim(0) : -1;
  if (n < 0) c.fail("run-time starts need a known length");
  std::vector<int64_t> axes, steps;
  if (c.has_input(3)) axes = c.ints(3, "axes");
  if (c.has_input(4)) steps = c.ints(4, "steps");
  if (axes.empty())
    for (int64_t i = 0; i < n; ++i) axes.push_back(i);
  if (steps.empty()) steps.assign(static_cast<size_t>(n), 1);
  if (static_cast<int64_t>(axes.size()) != n || static_cast<int64_t>(steps.size()) != n)
    c.fail("starts, axes and steps differ in length");
  axes = normalized(c, axes, rank);
  std::vector<Tensor> b, e;
  std::vector<int64_t> s(rank, 1);
  int64_t mask = (int64_t{1} << rank) - 1;
  for (int64_t d = 0; d < rank; ++d) {
    auto it = std::find(axes.begin(), axes.end(), d);
    if (it == axes.end()) {
      b.push_back(i64({0}));
      e.push_back(i64({0}));
      continue;
    }
    const int64_t k = it - axes.begin();
    if (steps[k] == 0) c.fail("a step is 0");
    b.push_back(slice(starts, {k}, {1}));
    e.push_back(slice(ends, {k}, {1}));
    s[d] = steps[k];
    mask &= ~(int64_t{1} << d);
  }
  c.set_output(0, strided_slice(x, concat(b, 0), concat(e, 0), i64(s), mask, mask));
}

// Slice: per sliced axis begin/end/step; other axes whole (masks).
void slice_rule(C& c) {
  const Tensor& x = c.input(0);
  const int64_t rank = known_rank(c, 0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() >= 10 && (!c.value(1) || !c.value(2))) {
    slice_at_run_time(c, x, rank);
    return;
  }
  if (c.opset() < 10) {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes", std::vector<int64_t>{});
  } else {
    starts = c.ints(1, "starts");
    ends = c.ints(2, "ends");
    if (c.has_input(3)) axes = c.ints(3, "axes");
    if (c.has_input(4)) steps = c.ints(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  axes = normalized(c, axes, rank);
  std::vector<int64_t> b(rank, 0), e(rank, 0), s(rank, 1);
  int64_t begin_mask = (int64_t{1} << rank) - 1, end_mask = begin_mask;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k];
    if (steps[k] == 0) c.fail("a step is 0");
    b[a] = std::clamp(starts[k], -kHuge, kHuge);
    e[a] = std::clamp(ends[k], -kHuge, kHuge);
    s[a] = steps[k];
    begin_mask &= ~(int64_t{1} << a);
    end_mask &= ~(int64_t{1} << a);
  }
  c.set_output(0, strided_slice(x, b, e, s, begin_mask, end_mask));
}

// Negative indices count from the end of `axis`.
Tensor wrap_indices(const Tensor& idx, const Tensor& x, int64_t axis) {
  const Tensor dim = cast(slice(shape64(x), {axis}, {1}), idx.dtype());
  return where(less(idx, constant(0, idx.dtype())), idx + reshape(dim, std::vector<int64_t>{}),
               idx);
}

void gather_rule(C& c) {
  const Tensor& x = c.input(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), known_rank(c, 0));
  c.set_output(0, gather(x, wrap_indices(c.input(1), x, axis), axis));
}

// GatherElements: out[i] = x[i with axis coordinate indices[i]], as one
// gather from the flattened input; strides and coordinates from the shapes at
// run time (known ranks).
void gather_elements(C& c) {
  const Tensor &x = c.input(0), &idx = c.input(1);
  const int64_t r = known_rank(c, 0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), r);
  if (!idx.shape().rank_known() || idx.rank() != r) c.fail("indices must have the input's rank");
  const Tensor wrapped = cast(wrap_indices(idx, x, axis), DType::kInt64);
  const Tensor xs = shape64(x), is = shape64(idx);
  const Tensor one = constant(int64_t{1}, DType::kInt64);
  Tensor flat, stride = one;
  for (int64_t d = r - 1; d >= 0; --d) {
    std::vector<int64_t> shape(r, 1);
    shape[d] = -1;
    const Tensor n = reshape(slice(is, {d}, {1}), std::vector<int64_t>{});
    const Tensor coord =
        d == axis ? wrapped : reshape(range(constant(int64_t{0}, DType::kInt64), n, one), shape);
    const Tensor term = coord * stride;
    flat = flat.defined() ? flat + term : term;
    stride = stride * reshape(slice(xs, {d}, {1}), std::vector<int64_t>{});
  }
  flat = flat + zeros_like(wrapped);  // the indices' full shape
  c.set_output(0, gather(reshape(x, std::vector<int64_t>{-1}), flat, 0));
}

void tile_rule(C& c) {
  c.set_output(0, tile(c.input(0), cast(c.input(1), DType::kInt64)));
}

void expand(C& c) {
  // Bidirectional broadcasting of x against `shape`: a select that takes x
  // everywhere broadcasts both.
  const Tensor& x = c.input(0);
  const Tensor mask = fill(cast(c.input(1), DType::kInt64), true);
  c.set_output(0, where(mask, x, x));
}

// The shape as a constant when fully known, else computed at run time.
Tensor shape_or_constant(const Tensor& x) {
  if (x.shape().rank_known() && x.shape().is_fully_defined()) return i64(x.shape().to_vector());
  return shape64(x);
}

void shape_rule(C& c) {
  Tensor s = shape_or_constant(c.input(0));
  if (c.has_attr("start") || c.has_attr("end")) {
    const int64_t r = known_rank(c, 0);
    auto clampi = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
    const int64_t b = clampi(c.attr_int("start", 0)), e = clampi(c.attr_int("end", r));
    s = slice(s, {b}, {std::max<int64_t>(0, e - b)});
  }
  c.set_output(0, s);
}

void size_rule(C& c) {
  const Shape& s = c.input(0).shape();
  c.set_output(0, s.rank_known() && s.is_fully_defined() ? constant(s.num_elements(), DType::kInt64)
                                                         : size(c.input(0), DType::kInt64));
}

void constant_of_shape(C& c) {
  Tensor v = c.has_attr("value") ? c.attr_tensor("value") : constant(0.0, DType::kFloat32);
  if (v.num_elements() != 1) c.fail("value must hold one element");
  c.set_output(0, fill(cast(c.input(0), DType::kInt64), reshape(v, std::vector<int64_t>{})));
}

void constant_rule(C& c) {
  Tensor v;
  if (c.has_attr("value")) {
    v = c.attr_tensor("value");
  } else if (c.has_attr("value_float")) {
    v = constant(c.attr_float("value_float"), DType::kFloat32);
  } else if (c.has_attr("value_int")) {
    v = constant(c.attr_int("value_int"), DType::kInt64);
  } else if (c.has_attr("value_floats")) {
    std::vector<float> f;
    for (double d : c.attr_floats("value_floats")) f.push_back(static_cast<float>(d));
    v = constant(f, Shape{static_cast<int64_t>(f.size())});
  } else if (c.has_attr("value_ints")) {
    v = i64(c.attr_ints("value_ints"));
  } else if (c.has_attr("value_string")) {
    v = constant(Tensor::from_vector<std::string>({c.attr_string("value_string")}, Shape{}));
  } else if (c.has_attr("value_strings")) {
    const auto s = c.attr_strings("value_strings");
    v = constant(Tensor::from_vector<std::string>(s, Shape{static_cast<int64_t>(s.size())}));
  } else {
    c.fail("no supported value attribute (sparse values are not supported)");
  }
  c.set_output(0, v);
}

void range_rule(C& c) {
  const DType dt = c.input(0).dtype();
  if (dt == DType::kFloat16 || dt == DType::kBFloat16) {  // counted in float32
    auto f = [](const Tensor& t) { return cast(t, DType::kFloat32); };
    c.set_output(0, cast(range(f(c.input(0)), f(c.input(1)), f(c.input(2))), dt));
    return;
  }
  c.set_output(0, range(c.input(0), c.input(1), c.input(2)));
}

// Edge, reflect and wrap padding: per padded axis, a gather of source
// indices (static dims).
Tensor pad_by_gather(C& c, Tensor x, const std::vector<std::pair<int64_t, int64_t>>& p,
                     const std::string& mode) {
  for (int64_t a = 0; a < static_cast<int64_t>(p.size()); ++a) {
    const auto [before, after] = p[a];
    if (!before && !after) continue;
    const int64_t d = x.dim(a);
    if (d <= 0) c.fail("mode '", mode, "' needs a known, non-empty dimension ", a);
    if (before > (int64_t{1} << 24) || after > (int64_t{1} << 24)) c.fail("pads are too large");
    std::vector<int64_t> idx;
    for (int64_t j = -before; j < d + after; ++j) {
      int64_t k = j;
      if (mode == "edge") {
        k = std::clamp<int64_t>(j, 0, d - 1);
      } else if (mode == "wrap") {
        k = ((j % d) + d) % d;
      } else if (d == 1) {
        k = 0;
      } else {  // reflect, without repeating the edge
        const int64_t period = 2 * (d - 1);
        k = ((j % period) + period) % period;
        if (k >= d) k = period - k;
      }
      idx.push_back(k);
    }
    x = gather(x, i64(idx), a);
  }
  return x;
}

void pad_rule(C& c) {
  const Tensor& x = c.input(0);
  const int64_t rank = known_rank(c, 0);
  const std::string mode = c.attr_string("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    c.fail("mode '", mode, "' is not supported");
  Tensor value = constant(0, x.dtype());
  if (c.opset() < 11)
    value = constant(c.attr_float("value", 0.0), x.dtype());
  else if (c.has_input(2))
    value = reshape(c.input(2), std::vector<int64_t>{});
  if (c.opset() >= 11 && !c.value(1)) {  // pads known at run time only
    std::vector<int64_t> axes;
    if (c.has_input(3)) axes = normalized(c, c.ints(3, "axes"), rank);
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    const int64_t n = static_cast<int64_t>(axes.size());
    // [b0, b1, ..., e0, e1, ...] -> [[b0, e0], [b1, e1], ...], zeros for other axes
    const Tensor p =
        transpose(reshape(cast(c.input(1), DType::kInt64), std::vector<int64_t>{2, n}), {1, 0});
    std::vector<Tensor> rows;
    for (int64_t d = 0; d < rank; ++d) {
      auto it = std::find(axes.begin(), axes.end(), d);
      rows.push_back(it == axes.end() ? i64({0, 0})
                                      : reshape(slice(p, {it - axes.begin(), 0}, {1, 2}),
                                                std::vector<int64_t>{2}));
    }
    c.set_output(0, pad(x, stack(rows, 0), value));
    return;
  }
  std::vector<int64_t> pads = c.opset() < 11 ? c.attr_ints("pads") : c.ints(1, "pads");
  std::vector<int64_t> axes;
  if (c.opset() >= 18 && c.has_input(3)) axes = normalized(c, c.ints(3, "axes"), rank);
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size()) c.fail(pads.size(), " pads for ", axes.size(), " axes");
  std::vector<std::pair<int64_t, int64_t>> p(rank, {0, 0});
  for (size_t k = 0; k < axes.size(); ++k) {
    p[axes[k]] = {pads[k], pads[k + axes.size()]};
    if (pads[k] < 0 || pads[k + axes.size()] < 0) c.fail("negative pads are not supported");
  }
  if (mode != "constant") {
    c.set_output(0, pad_by_gather(c, x, p, mode));
    return;
  }
  c.set_output(0, pad(x, p, value));
}

void non_zero(C& c) {
  const Tensor& x = c.input(0);
  const Tensor mask = x.dtype() == DType::kBool ? x : not_equal(x, constant(0, x.dtype()));
  c.set_output(0, transpose(where(mask), {1, 0}));
}

void cumsum_rule(C& c) {
  const std::vector<int64_t> a = c.ints(1, "axis");
  if (a.size() != 1) c.fail("axis must hold one value");
  c.set_output(0, cumsum(c.input(0), normalize_axis(c, a[0], known_rank(c, 0)),
                         c.attr_int("exclusive", 0) != 0, c.attr_int("reverse", 0) != 0));
}

// ReduceX: axes by attribute before `input_since`, by input after.
template <Tensor (*F)(const Tensor&, const std::vector<int64_t>&, bool), int64_t kInputSince>
Tensor reduce_with(C& c, const Tensor& x) {
  const bool keep = c.attr_int("keepdims", 1) != 0;
  auto axes = axes_of(c, kInputSince, 1);
  if (!axes || axes->empty()) {
    if (c.attr_int("noop_with_empty_axes", 0) != 0) return identity(x);
    std::vector<int64_t> all;
    for (int64_t i = 0; i < known_rank(c, 0); ++i) all.push_back(i);
    return F(x, all, keep);
  }
  return F(x, normalized(c, *axes, known_rank(c, 0)), keep);
}
template <Tensor (*F)(const Tensor&, const std::vector<int64_t>&, bool), int64_t kSince>
void reduce(C& c) {
  c.set_output(0, reduce_with<F, kSince>(c, c.input(0)));
}
Tensor sum_f(const Tensor& x, const std::vector<int64_t>& a, bool k) {
  return reduce_sum(x, a, k);
}
Tensor mean_f(const Tensor& x, const std::vector<int64_t>& a, bool k) {
  return reduce_mean(x, a, k);
}
Tensor max_f(const Tensor& x, const std::vector<int64_t>& a, bool k) {
  return x.dtype() == DType::kBool ? reduce_any(x, a, k) : reduce_max(x, a, k);
}
Tensor min_f(const Tensor& x, const std::vector<int64_t>& a, bool k) {
  return x.dtype() == DType::kBool ? reduce_all(x, a, k) : reduce_min(x, a, k);
}
Tensor prod_f(const Tensor& x, const std::vector<int64_t>& a, bool k) {
  return reduce_prod(x, a, k);
}
void reduce_l1(C& c) {
  c.set_output(0, reduce_with<sum_f, 18>(c, abs(c.input(0))));
}
void reduce_l2(C& c) {
  c.set_output(0, sqrt(reduce_with<sum_f, 18>(c, square(c.input(0)))));
}
void reduce_sum_square(C& c) {
  c.set_output(0, reduce_with<sum_f, 18>(c, square(c.input(0))));
}
void reduce_log_sum(C& c) {
  c.set_output(0, log(reduce_with<sum_f, 18>(c, c.input(0))));
}
void reduce_log_sum_exp(C& c) {
  const Tensor& x = c.input(0);  // max-shifted for stability
  Tensor m = reduce_with<max_f, 18>(c, x);
  const bool keep = c.attr_int("keepdims", 1) != 0;
  Tensor mk = m;
  if (!keep) {  // the max with reduced dims kept, to broadcast against x
    auto axes = axes_of(c, 18, 1);
    std::vector<int64_t> a =
        axes && !axes->empty() ? normalized(c, *axes, known_rank(c, 0)) : std::vector<int64_t>{};
    if (a.empty())
      for (int64_t i = 0; i < known_rank(c, 0); ++i) a.push_back(i);
    mk = reduce_max(x, a, true);
  }
  const Tensor finite = where(is_finite(m), m, constant(0, m.dtype()));
  const Tensor finite_k = where(is_finite(mk), mk, constant(0, mk.dtype()));
  c.set_output(0, log(reduce_with<sum_f, 18>(c, exp(x - finite_k))) + finite);
}

template <bool kMax>
void arg_reduce(C& c) {
  const Tensor& x = c.input(0);
  const int64_t rank = known_rank(c, 0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), rank);
  Tensor in = x;
  const bool last = c.attr_int("select_last_index", 0) != 0;
  const int64_t d = x.dim(axis);
  if (last) {
    if (d < 0) c.fail("select_last_index needs a known dimension");
    std::vector<int64_t> b(rank, 0), e(rank, 0), s(rank, 1);
    s[axis] = -1;
    in = strided_slice(x, b, e, s, (int64_t{1} << rank) - 1, (int64_t{1} << rank) - 1);
  }
  Tensor idx = kMax ? argmax(in, axis, DType::kInt64) : argmin(in, axis, DType::kInt64);
  if (last) idx = constant(d - 1, DType::kInt64) - idx;
  if (c.attr_int("keepdims", 1) != 0) idx = expand_dims(idx, axis);
  c.set_output(0, idx);
}

void top_k_rule(C& c) {
  const Tensor& x = c.input(0);
  const int64_t rank = known_rank(c, 0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank);
  const std::vector<int64_t> k =
      c.opset() < 10 ? std::vector<int64_t>{c.attr_int("k")} : c.ints(1, "K");
  if (k.size() != 1 || k[0] < 0) c.fail("K must be one non-negative value");
  const bool largest = c.attr_int("largest", 1) != 0;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[axis], perm[rank - 1]);
  Tensor in = axis == rank - 1 ? x : transpose(x, perm);
  if (!largest) in = negative(in);
  auto [values, indices] = top_k(in, k[0], true);
  if (!largest) values = negative(values);
  indices = cast(indices, DType::kInt64);
  if (axis != rank - 1) {
    values = transpose(values, perm);
    indices = transpose(indices, perm);
  }
  c.set_output(0, values);
  c.set_output(1, indices);
}

void one_hot_rule(C& c) {
  const Tensor& idx = c.input(0);
  const std::vector<int64_t> depth = c.ints(1, "depth");
  if (depth.size() != 1) c.fail("depth must hold one value");
  const Tensor& values = c.input(2);
  const int64_t rank = known_rank(c, 0);
  int64_t axis = c.attr_int("axis", -1);
  if (axis < 0) axis += rank + 1;
  if (axis < 0 || axis > rank) c.fail("axis is out of range");
  const Tensor d = constant(depth[0], idx.dtype());
  const Tensor wrapped = where(less(idx, constant(0, idx.dtype())), idx + d, idx);
  const Tensor off = slice(values, {0}, {1}), on = slice(values, {1}, {1});
  c.set_output(
      0, one_hot(cast(wrapped, DType::kInt64), constant(depth[0], DType::kInt32),
                 reshape(on, std::vector<int64_t>{}), reshape(off, std::vector<int64_t>{}), axis));
}

constexpr ImportRule kRules[] = {
    {"Reshape", reshape_rule},
    {"Flatten", flatten},
    {"Squeeze", squeeze_rule, 0b10},
    {"Unsqueeze", unsqueeze, 0b10},
    {"Transpose", transpose_rule},
    {"Concat", concat_rule},
    {"Split", split_rule, 0b10},
    {"Slice", slice_rule, 0b11110},
    {"Gather", gather_rule},
    {"GatherElements", gather_elements},
    {"Tile", tile_rule},
    {"Expand", expand},
    {"Shape", shape_rule},
    {"Size", size_rule},
    {"ConstantOfShape", constant_of_shape},
    {"Constant", constant_rule},
    {"Range", range_rule},
    {"Pad", pad_rule, 0b1010},
    {"NonZero", non_zero},
    {"CumSum", cumsum_rule, 0b10},
    {"ReduceSum", reduce<sum_f, 13>, 0b10},
    {"ReduceMean", reduce<mean_f, 18>, 0b10},
    {"ReduceMax", reduce<max_f, 18>, 0b10},
    {"ReduceMin", reduce<min_f, 18>, 0b10},
    {"ReduceProd", reduce<prod_f, 18>, 0b10},
    {"ReduceL1", reduce_l1, 0b10},
    {"ReduceL2", reduce_l2, 0b10},
    {"ReduceSumSquare", reduce_sum_square, 0b10},
    {"ReduceLogSum", reduce_log_sum, 0b10},
    {"ReduceLogSumExp", reduce_log_sum_exp, 0b10},
    {"ArgMax", arg_reduce<true>},
    {"ArgMin", arg_reduce<false>},
    {"TopK", top_k_rule, 0b10},
    {"OneHot", one_hot_rule, 0b10},
};

}  // namespace

std::span<const ImportRule> shape_import_rules() {
  return kRules;
}

}  // namespace kiln::onnx::detail
