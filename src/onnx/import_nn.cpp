// ONNX import rules: matrix products, convolution and pooling (ONNX's NCHW
// around kiln's NHWC kernels), normalizations, softmax.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "kiln/context.h"
#include "onnx/import.h"

namespace kiln::onnx::detail {
namespace {

using C = ImportContext;

Tensor lit(const Tensor& x, double v) {
  return constant(v, x.dtype());
}
Tensor to_nhwc(const Tensor& x) {
  return transpose(x, {0, 2, 3, 1});
}
Tensor to_nchw(const Tensor& x) {
  return transpose(x, {0, 3, 1, 2});
}

void matmul_rule(C& c) {
  Tensor a = c.input(0), b = c.input(1);
  const bool va = a.rank() == 1, vb = b.rank() == 1;
  if (va) a = expand_dims(a, 0);
  if (vb) b = expand_dims(b, 1);
  Tensor y = matmul(a, b);
  if (va) y = squeeze(y, {y.rank() - 2});
  if (vb) y = squeeze(y, {y.rank() - 1});
  c.set_output(0, y);
}

void gemm(C& c) {
  const Tensor &a = c.input(0), &b = c.input(1);
  Tensor y = matmul(a, b, c.attr_int("transA", 0) != 0, c.attr_int("transB", 0) != 0);
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  if (alpha != 1.0) y = y * lit(y, alpha);
  if (c.has_input(2)) y = y + (beta == 1.0 ? c.input(2) : c.input(2) * lit(y, beta));
  c.set_output(0, y);
}

// The spatial window of a conv or pool, over n spatial dims. `pads` are
// begins then ends; with padding "SAME" (SAME_UPPER: TensorFlow's SAME) they
// are zero and `same_pads` holds them explicitly when the dims are known.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads, same_pads;
  std::string padding;  // "VALID" or "SAME"
  bool one_d = false;   // a 1-D window run as 2-D with H = 1
};

// The explicit pads that give ceil(d / stride) outputs; the extra pad goes
// last (upper) or first (lower).
void same_pads(const Tensor& x, Window& w, bool upper, std::vector<int64_t>& out) {
  const size_t n = w.kernel.size();
  out.assign(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t d = x.dim(static_cast<int64_t>(i) + 2);
    const int64_t o = (d + w.strides[i] - 1) / w.strides[i];
    const int64_t eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
    const int64_t total = std::max<int64_t>(0, (o - 1) * w.strides[i] + eff - d);
    out[i] = upper ? total / 2 : total - total / 2;
    out[i + n] = total - out[i];
  }
}

bool spatial_known(const Tensor& x) {
  for (int64_t i = 2; i < x.rank(); ++i)
    if (x.dim(i) < 0) return false;
  return true;
}

Window spatial_window(C& c, const Tensor& x, std::vector<int64_t> kernel, bool ceil_mode) {
  const int64_t rank = known_rank(c, 0);
  if (rank < 3) c.fail("the input needs a spatial dim (rank ", rank, ")");
  Window w;
  const size_t n = static_cast<size_t>(rank - 2);
  if (kernel.size() != n) c.fail("kernel_shape has ", kernel.size(), " entries for ", n, " dims");
  w.kernel = kernel;
  w.strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  w.pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (w.strides.size() != n || w.dilations.size() != n || w.pads.size() != 2 * n)
    c.fail("strides, dilations or pads do not match the spatial rank");
  for (size_t i = 0; i < n; ++i)
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1)
      c.fail("kernel, strides and dilations must be positive");
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  w.padding = "VALID";
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (!spatial_known(x) && auto_pad == "SAME_LOWER")
      c.fail("SAME_LOWER needs known spatial dims");
    if (spatial_known(x)) same_pads(x, w, auto_pad == "SAME_UPPER", w.same_pads);
    if (auto_pad == "SAME_LOWER") {
      w.pads = w.same_pads;
    } else {
      w.padding = "SAME";
      std::fill(w.pads.begin(), w.pads.end(), 0);
    }
  } else if (auto_pad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (auto_pad != "NOTSET") {
    c.fail("auto_pad '", auto_pad, "' is not supported");
  }
  for (int64_t p : w.pads)
    if (p < 0) c.fail("negative pads are not supported");
  if (ceil_mode && w.padding == "VALID") {  // pad the end so the last partial window fits
    if (!spatial_known(x)) c.fail("ceil_mode needs known spatial dims");
    for (size_t i = 0; i < n; ++i) {
      const int64_t d = x.dim(static_cast<int64_t>(i) + 2);
      const int64_t eff = (kernel[i] - 1) * w.dilations[i] + 1;
      const int64_t total = d + w.pads[i] + w.pads[i + n];
      if (total < eff) continue;
      int64_t out = (total - eff + w.strides[i] - 1) / w.strides[i] + 1;
      if ((out - 1) * w.strides[i] >= d + w.pads[i]) --out;  // no window starts in the end pad
      w.pads[i + n] += std::max<int64_t>(0, (out - 1) * w.strides[i] + eff - total);
    }
  }
  return w;
}

// The window for kiln's NHWC kernels: 2-D, or 1-D as 2-D.
Window as_2d(C& c, Window w) {
  if (w.kernel.size() > 2) c.fail(w.kernel.size(), "-D windows are not supported for this op");
  if (w.kernel.size() == 1) {
    w.one_d = true;
    w.kernel = {1, w.kernel[0]};
    w.strides = {1, w.strides[0]};
    w.dilations = {1, w.dilations[0]};
    w.pads = {0, w.pads[0], 0, w.pads[1]};
  }
  return w;
}

Window window_of(C& c, const Tensor& x, std::vector<int64_t> kernel, bool ceil_mode = false) {
  return as_2d(c, spatial_window(c, x, std::move(kernel), ceil_mode));
}

// Input 0 (NCHW or NCW) as NHWC (its twin when it has one; ones of its shape
// with `ones`) with the explicit pads applied (filled with `fill`).
Tensor prepare(C& c, const Window& w, double fill, bool ones = false) {
  const Tensor& x = c.input(0);
  const Tensor* twin = w.one_d ? nullptr : c.nhwc_input(0);
  Tensor y = twin ? *twin : to_nhwc(w.one_d ? expand_dims(x, 2) : x);
  if (ones) y = ones_like(y);
  if (w.pads[0] || w.pads[1] || w.pads[2] || w.pads[3])
    y = pad(y, {{0, 0}, {w.pads[0], w.pads[2]}, {w.pads[1], w.pads[3]}, {0, 0}}, lit(y, fill));
  return y;
}

// Output 0 from the NHWC result: NCHW (or NCW), and y as its twin.
void finish(C& c, const Tensor& y, const Window& w) {
  const Tensor out = to_nchw(y);
  c.set_output(0, w.one_d ? squeeze(out, {2}) : out);
  if (!w.one_d) c.set_nhwc_output(0, y);
}

// The filter as HWIO (group 1) or depthwise [kH, kW, C, mult]; constant
// weights rearranged now, once (constant folding stops at 64K elements, which
// would leave a transpose of every large filter in each call).
Tensor conv_filter(C& c, const Window& w, int64_t group, int64_t cin, int64_t m) {
  std::optional<ContextScope> eager;
  const Tensor* known = c.value(1);
  if (known) eager.emplace(EagerContext::instance());
  Tensor filt = known ? *known : c.input(1);
  if (w.one_d) filt = expand_dims(filt, 2);  // [M, C/g, kH, kW]
  if (group == 1) return transpose(filt, {2, 3, 1, 0});
  return transpose(reshape(filt, std::vector<int64_t>{cin, m / cin, w.kernel[0], w.kernel[1]}),
                   {2, 3, 0, 1});
}

void conv(C& c) {
  const Tensor &x = c.input(0), &wt = c.input(1);
  if (!wt.shape().rank_known() || wt.rank() != known_rank(c, 0))
    c.fail("the weights' rank must match the input's");
  std::vector<int64_t> kernel;
  for (int64_t i = 2; i < wt.rank(); ++i) kernel.push_back(wt.dim(i));
  if (c.has_attr("kernel_shape")) kernel = c.attr_ints("kernel_shape");
  for (int64_t k : kernel)
    if (k < 0) c.fail("the kernel's spatial dims must be known");
  const Window w = window_of(c, x, kernel);
  const int64_t group = c.attr_int("group", 1);
  const int64_t cin = x.dim(1), m = wt.dim(0);
  if (group < 1 || cin < 0 || m < 0 || cin % group || m % group || wt.dim(1) * group != cin)
    c.fail("group ", group, " does not divide the channels (input ", cin, ", weights ", m, ")");
  Tensor in = prepare(c, w, 0.0);
  Tensor y;
  if (group == 1) {
    y = conv2d(in, conv_filter(c, w, group, cin, m), {1, w.strides[0], w.strides[1], 1}, w.padding,
               w.dilations);
  } else if (group == cin) {
    y = depthwise_conv2d(in, conv_filter(c, w, group, cin, m), {1, w.strides[0], w.strides[1], 1},
                         w.padding, w.dilations);
  } else {
    const Tensor filt = w.one_d ? expand_dims(wt, 2) : wt;
    const std::vector<Tensor> xs = split(in, group, 3), fs = split(filt, group, 0);
    std::vector<Tensor> ys;
    for (int64_t g = 0; g < group; ++g)
      ys.push_back(conv2d(xs[g], transpose(fs[g], {2, 3, 1, 0}), {1, w.strides[0], w.strides[1], 1},
                          w.padding, w.dilations));
    y = concat(ys, 3);
  }
  if (c.has_input(2)) y = y + c.input(2);  // NHWC: the bias broadcasts on the last dim
  finish(c, y, w);
}

double lowest(DType t) {
  return is_floating(t)       ? -std::numeric_limits<double>::infinity()
         : t == DType::kUInt8 ? 0.0
         : t == DType::kInt8  ? -128.0
         : t == DType::kInt32 ? -2147483648.0
                              : -9.2233720368547758e18;
}

// x padded (NC + spatial dims) with `fill`.
Tensor pad_spatial(const Tensor& x, const std::vector<int64_t>& pads, double fill) {
  const size_t n = pads.size() / 2;
  std::vector<std::pair<int64_t, int64_t>> p = {{0, 0}, {0, 0}};
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    p.push_back({pads[i], pads[i + n]});
    any |= pads[i] || pads[i + n];
  }
  return any ? pad(x, p, lit(x, fill)) : x;
}

// Calls f(slice of t) once per kernel offset: the strided slice holding that
// offset's element of every window of padded input `t` (static dims).
template <typename F>
void for_each_offset(const Tensor& t, const Window& w, F f) {
  const size_t n = w.kernel.size();
  std::vector<int64_t> out(n), offset(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
    out[i] = (t.dim(static_cast<int64_t>(i) + 2) - eff) / w.strides[i] + 1;
  }
  while (true) {
    std::vector<int64_t> b = {0, 0}, e = {0, 0}, s = {1, 1};
    for (size_t i = 0; i < n; ++i) {
      b.push_back(offset[i] * w.dilations[i]);
      e.push_back(b.back() + (out[i] - 1) * w.strides[i] + 1);
      s.push_back(w.strides[i]);
    }
    f([&](const Tensor& x) { return strided_slice(x, b, e, s, 3, 3); });
    size_t i = n;
    while (i > 0 && ++offset[i - 1] == w.kernel[i - 1]) offset[--i] = 0;
    if (i == 0) break;
  }
}

// The max or sum over the windows of padded x (any spatial rank, dilations).
Tensor window_fold(const Tensor& xp, const Window& w, bool max) {
  Tensor acc;
  for_each_offset(xp, w, [&](auto at) {
    const Tensor part = at(xp);
    acc = !acc.defined() ? part : max ? maximum(acc, part) : acc + part;
  });
  return acc;
}

// MaxPool's Indices: the flat position in x (row-major, or with
// storage_order 1 column-major over the spatial dims) of each window's first
// maximum.
Tensor window_argmax(C& c, const Tensor& x, const Tensor& xp, const Window& w) {
  const Shape& s = x.shape();
  const int64_t rank = s.rank();
  const bool column = c.attr_int("storage_order", 0) != 0;
  std::vector<int64_t> pos(static_cast<size_t>(xp.shape().num_elements()), 0);
  std::vector<int64_t> idx(rank, 0);
  const size_t n = w.kernel.size();
  for (int64_t& p : pos) {  // walks xp row-major
    bool inside = true;
    std::vector<int64_t> src(idx);
    for (size_t i = 0; i < n; ++i) {
      src[i + 2] -= w.pads[i];
      inside &= src[i + 2] >= 0 && src[i + 2] < s.dim(static_cast<int64_t>(i) + 2);
    }
    int64_t flat = src[0] * s.dim(1) + src[1];
    if (!column) {
      for (size_t i = 0; i < n; ++i) flat = flat * s.dim(static_cast<int64_t>(i) + 2) + src[i + 2];
    } else {
      int64_t sp = 0;
      for (int64_t i = static_cast<int64_t>(n) - 1; i >= 0; --i)
        sp = sp * s.dim(i + 2) + src[i + 2];
      for (size_t i = 0; i < n; ++i) flat *= s.dim(static_cast<int64_t>(i) + 2);
      flat += sp;
    }
    p = inside ? flat : -1;
    for (int64_t d = rank - 1; d >= 0 && ++idx[d] == xp.dim(d); --d) idx[d] = 0;
  }
  const Tensor positions = constant(pos, xp.shape());
  Tensor best, best_at;
  for_each_offset(xp, w, [&](auto at) {
    const Tensor v = at(xp), where_ = at(positions);
    if (!best.defined()) {
      best = v;
      best_at = where_;
      return;
    }
    const Tensor better = greater(v, best);
    best = where(better, v, best);
    best_at = where(better, where_, best_at);
  });
  return best_at;
}

template <bool kMax>
void pool_generic(C& c, const Tensor& x, Window w) {
  if (!spatial_known(x)) c.fail("this window needs known spatial dims");
  if (w.padding == "SAME") w.pads = w.same_pads;
  if (kMax) {
    const Tensor xp = pad_spatial(x, w.pads, lowest(x.dtype()));
    c.set_output(0, window_fold(xp, w, true));
    if (c.wants_output(1)) {
      if (xp.shape().num_elements() > (int64_t{1} << 24))
        c.fail("too large for the Indices output");
      c.set_output(1, window_argmax(c, x, xp, w));
    }
    return;
  }
  const Tensor sum = window_fold(pad_spatial(x, w.pads, 0.0), w, false);
  // The count: real elements, plus the pads when count_include_pad (not ceil's extra).
  std::vector<int64_t> given = w.pads;
  if (c.attr_int("count_include_pad", 0) != 0 && w.padding != "SAME") {
    given = c.attr_ints("pads", std::vector<int64_t>(w.pads.size(), 0));
    if (c.attr_string("auto_pad", "NOTSET") == "VALID") std::fill(given.begin(), given.end(), 0);
  } else {
    std::fill(given.begin(), given.end(), 0);
  }
  std::vector<int64_t> rest(w.pads.size());
  for (size_t i = 0; i < rest.size(); ++i) rest[i] = w.pads[i] - given[i];
  const Tensor ones = pad_spatial(pad_spatial(ones_like(x), given, 1.0), rest, 0.0);
  c.set_output(0, sum / window_fold(ones, w, false));
}

template <bool kMax>
void pool(C& c) {
  const Tensor& x = c.input(0);
  if (c.wants_output(1) && !kMax) c.fail("AveragePool has one output");
  const Window sw =
      spatial_window(c, x, c.attr_ints("kernel_shape"), c.attr_int("ceil_mode", 0) != 0);
  bool dilated = false;
  for (int64_t d : sw.dilations) dilated |= d != 1;
  if (dilated || sw.kernel.size() > 2 || c.wants_output(1)) {
    pool_generic<kMax>(c, x, sw);
    return;
  }
  const Window w = as_2d(c, sw);
  const std::vector<int64_t> k = {1, w.kernel[0], w.kernel[1], 1};
  const std::vector<int64_t> s = {1, w.strides[0], w.strides[1], 1};
  if (kMax) {
    const Tensor in = prepare(c, w, lowest(x.dtype()));
    finish(c, max_pool2d(in, k, s, w.padding), w);
    return;
  }
  const Tensor in = prepare(c, w, 0.0);
  Tensor y = avg_pool2d(in, k, s, w.padding);
  const bool padded = w.pads[0] || w.pads[1] || w.pads[2] || w.pads[3];
  if (padded && c.attr_int("count_include_pad", 0) == 0) {  // mean over the real elements
    y = y / avg_pool2d(prepare(c, w, 0.0, true), k, s, w.padding);
  } else if (padded && c.attr_int("ceil_mode", 0) != 0) {  // pads count, ceil's extra does not
    Window inside = w;
    inside.pads = c.attr_ints("pads", std::vector<int64_t>(4, 0));
    if (w.one_d) inside.pads = {0, inside.pads[0], 0, inside.pads[1]};
    Tensor mask =
        pad(prepare(c, inside, 1.0, true),
            {{0, 0}, {0, w.pads[2] - inside.pads[2]}, {0, w.pads[3] - inside.pads[3]}, {0, 0}},
            lit(x, 0));
    y = y / avg_pool2d(mask, k, s, w.padding);
  }
  finish(c, y, w);
}

std::vector<int64_t> spatial_axes(C& c) {
  std::vector<int64_t> a;
  for (int64_t i = 2; i < known_rank(c, 0); ++i) a.push_back(i);
  return a;
}
template <bool kMax>
void global_pool(C& c) {
  auto f = [](const Tensor& t, const std::vector<int64_t>& a) {
    return kMax ? reduce_max(t, a, true) : reduce_mean(t, a, true);
  };
  if (const Tensor* twin = c.nhwc_input(0)) {  // channels-last: H and W are axes 1, 2
    const Tensor y = f(*twin, {1, 2});
    c.set_output(0, to_nchw(y));
    c.set_nhwc_output(0, y);
    return;
  }
  c.set_output(0, f(c.input(0), spatial_axes(c)));
}

// A per-channel parameter [C] shaped to broadcast against NC... of `rank`.
Tensor per_channel(const Tensor& p, int64_t rank) {
  std::vector<int64_t> s(static_cast<size_t>(std::max<int64_t>(rank - 1, 1)), 1);
  s[0] = -1;
  return reshape(p, s);
}

void batch_norm(C& c) {
  const Tensor& x = c.input(0);
  const int64_t r = known_rank(c, 0);
  const Tensor eps = lit(x, c.attr_float("epsilon", 1e-5));
  if (c.attr_int("training_mode", 0) != 0 || c.wants_output(1)) {
    // Batch statistics over every axis but 1; outputs 1, 2: the running ones.
    std::vector<int64_t> axes = {0};
    for (int64_t i = 2; i < r; ++i) axes.push_back(i);
    const Tensor mean = reduce_mean(x, axes),
                 var = reduce_mean(square(x - per_channel(mean, r)), axes);
    const Tensor m = lit(x, c.attr_float("momentum", 0.9));
    const Tensor scale = per_channel(c.input(1) * rsqrt(var + eps), r);
    c.set_output(0, (x - per_channel(mean, r)) * scale + per_channel(c.input(2), r));
    c.set_output(1, c.input(3) * m + mean * (lit(x, 1) - m));
    c.set_output(2, c.input(4) * m + var * (lit(x, 1) - m));
    return;
  }
  const Tensor s = c.input(1) * rsqrt(c.input(4) + eps);
  if (const Tensor* twin = c.nhwc_input(0)) {  // channels-last: [C] broadcasts on the last axis
    const Tensor y = (*twin - c.input(3)) * s + c.input(2);
    c.set_output(0, to_nchw(y));
    c.set_nhwc_output(0, y);
    return;
  }
  c.set_output(0,
               (x - per_channel(c.input(3), r)) * per_channel(s, r) + per_channel(c.input(2), r));
}

void instance_norm(C& c) {
  const Tensor& x = c.input(0);
  const int64_t r = known_rank(c, 0);
  const std::vector<int64_t> axes = spatial_axes(c);
  const Tensor mean = reduce_mean(x, axes, true);
  const Tensor var = reduce_mean(square(x - mean), axes, true);
  const Tensor eps = lit(x, c.attr_float("epsilon", 1e-5));
  c.set_output(
      0, (x - mean) * rsqrt(var + eps) * per_channel(c.input(1), r) + per_channel(c.input(2), r));
}

void layer_norm(C& c) {
  const Tensor& x = c.input(0);
  const int64_t r = known_rank(c, 0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), r);
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  const Tensor mean = reduce_mean(x, axes, true);
  const Tensor var = reduce_mean(square(x - mean), axes, true);
  const Tensor inv = rsqrt(var + lit(x, c.attr_float("epsilon", 1e-5)));
  Tensor y = (x - mean) * inv * c.input(1);
  if (c.has_input(2)) y = y + c.input(2);
  c.set_output(0, y);
  c.set_output(1, mean);
  c.set_output(2, inv);
}

template <bool kLog>
void softmax_rule(C& c) {
  const Tensor& x = c.input(0);
  const int64_t r = known_rank(c, 0);
  auto f = [](const Tensor& t) { return kLog ? log_softmax(t) : softmax(t); };
  if (c.opset() < 13) {  // over the flattened dims from `axis` on
    const int64_t axis = normalize_axis(c, c.attr_int("axis", 1), r);
    const Tensor s = shape(x, DType::kInt64);
    const Tensor inner = reduce_prod(slice(s, {axis}, {r - axis}), {0}, true);
    const Tensor flat =
        reshape(x, concat({constant(std::vector<int64_t>{-1}, Shape{1}), inner}, 0));
    c.set_output(0, reshape(f(flat), s));
    return;
  }
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), r);
  if (axis == r - 1) {
    c.set_output(0, f(x));
    return;
  }
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i) perm.push_back(i);
  std::swap(perm[axis], perm[r - 1]);
  c.set_output(0, transpose(f(transpose(x, perm)), perm));
}

void dropout(C& c) {     // inference: the identity, and an all-true mask
  if (c.has_input(2)) {  // training with a ratio above 0 draws random numbers
    const bool training = c.floats(2, "training_mode") != std::vector<double>{0.0};
    const bool zero = c.has_input(1) && c.floats(1, "ratio") == std::vector<double>{0.0};
    if (training && !zero)
      c.fail("training mode is not supported (kiln imports models for inference)");
  }
  c.set_output(0, identity(c.input(0)));
  if (c.wants_output(1)) c.set_output(1, fill(shape(c.input(0), DType::kInt64), true));
}

// Resize (ONNX's nearest, linear and cubic modes, antialias, every
// coordinate mode; static input dims): separable, per resized axis a gather
// (nearest) or a product with an [out, in] weight matrix computed here.
struct ResizeSpec {
  std::string mode, coord, nearest;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
};

// Where output x samples the input (ONNX's coordinate modes); false when
// tf_crop_and_resize puts it outside the input.
bool source_coord(const ResizeSpec& r, int64_t x, int64_t in, int64_t out, double scale,
                  double roi_lo, double roi_hi, double& src) {
  const double xd = static_cast<double>(x), ind = static_cast<double>(in);
  const double out_f = scale * ind;  // the unrounded output length
  if (r.coord == "asymmetric") {
    src = xd / scale;
  } else if (r.coord == "align_corners") {
    src = out_f == 1 ? 0.0 : xd * (ind - 1) / (out_f - 1);
  } else if (r.coord == "pytorch_half_pixel") {
    src = out_f == 1 ? -0.5 : (xd + 0.5) / scale - 0.5;
  } else if (r.coord == "half_pixel_symmetric") {
    const double offset = ind / 2 * (1 - static_cast<double>(out) / out_f);
    src = offset + (xd + 0.5) / scale - 0.5;
  } else if (r.coord == "tf_crop_and_resize") {
    src = out_f == 1 ? (roi_hi - roi_lo) * (ind - 1) / 2
                     : xd * (roi_hi - roi_lo) * (ind - 1) / (out_f - 1);
    src += roi_lo * (ind - 1);
    return src >= 0 && src <= ind - 1;
  } else {
    src = (xd + 0.5) / scale - 0.5;  // half_pixel
  }
  return true;
}

int64_t nearest_index(const std::string& mode, double src) {
  if (mode == "floor") return static_cast<int64_t>(std::floor(src));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(src));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::floor(src + 0.5));
  return static_cast<int64_t>(std::ceil(src - 0.5));  // round_prefer_floor
}

double filter(const ResizeSpec& r, double d) {
  d = std::abs(d);
  if (r.mode == "linear") return std::max(0.0, 1 - d);
  const double a = r.cubic_a;
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

// Weights [out, in] (row-major) of one axis, and which outputs lie outside.
std::vector<double> resize_weights(const ResizeSpec& r, int64_t in, int64_t out, double scale,
                                   double roi_lo, double roi_hi, std::vector<bool>& outside) {
  std::vector<double> w(static_cast<size_t>(in * out), 0.0);
  outside.assign(static_cast<size_t>(out), false);
  const double s = r.antialias ? std::min(scale, 1.0) : 1.0;
  const int64_t start = static_cast<int64_t>(std::floor((r.mode == "linear" ? -1 : -2) / s) + 1);
  const int64_t end = (r.mode == "linear" ? 1 : 2) - start + (r.mode == "linear" ? 1 : 0);
  for (int64_t x = 0; x < out; ++x) {
    double src = 0;
    if (!source_coord(r, x, in, out, scale, roi_lo, roi_hi, src)) {
      outside[static_cast<size_t>(x)] = true;
      continue;
    }
    double base = std::floor(src), ratio = src - base;
    if (ratio == 0) {  // ONNX prefers the left pixel: ratio 1 from the one before
      base -= 1;
      ratio = 1;
    }
    std::vector<std::pair<int64_t, double>> taps;
    double sum = 0;
    for (int64_t i = start; i < end; ++i) {
      const int64_t at = static_cast<int64_t>(base) + i;
      double c = filter(r, s * (static_cast<double>(i) - ratio));
      if (r.exclude_outside && (at < 0 || at >= in)) c = 0;
      taps.push_back({std::clamp<int64_t>(at, 0, in - 1), c});
      sum += c;
    }
    for (auto [at, c] : taps) w[static_cast<size_t>(x * in + at)] += sum != 0 ? c / sum : 0;
  }
  return w;
}

Tensor resize_axis(const ResizeSpec& r, const Tensor& y, int64_t axis, int64_t out, double scale,
                   double roi_lo, double roi_hi) {
  const int64_t in = y.dim(axis), rank = y.rank();
  std::vector<int64_t> wshape(static_cast<size_t>(rank), 1);
  wshape[axis] = out;
  std::vector<bool> outside;
  Tensor res;
  if (r.mode == "nearest") {
    std::vector<int64_t> idx;
    outside.assign(static_cast<size_t>(out), false);
    for (int64_t x = 0; x < out; ++x) {
      double src = 0;
      outside[static_cast<size_t>(x)] = !source_coord(r, x, in, out, scale, roi_lo, roi_hi, src);
      idx.push_back(std::clamp<int64_t>(nearest_index(r.nearest, src), 0, in - 1));
    }
    res = gather(y, constant(idx, Shape{out}), axis);
  } else {
    const std::vector<double> w = resize_weights(r, in, out, scale, roi_lo, roi_hi, outside);
    const DType dt =
        is_floating(y.dtype()) && y.dtype() != DType::kFloat16 && y.dtype() != DType::kBFloat16
            ? y.dtype()
            : DType::kFloat32;
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i)
      if (i != axis) perm.push_back(i);
    perm.push_back(axis);  // the resized axis last, then back
    std::vector<int64_t> back(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) back[perm[i]] = i;
    const Tensor m = cast(constant(w, Shape{out, in}), dt);
    res = transpose(matmul(transpose(cast(y, dt), perm), m, false, true), back);
    if (dt != y.dtype()) res = cast(is_integer(y.dtype()) ? round(res) : res, y.dtype());
  }
  if (std::find(outside.begin(), outside.end(), true) != outside.end()) {
    std::vector<bool> mask = outside;
    std::vector<uint8_t> bytes(mask.begin(), mask.end());
    const Tensor out_mask = cast(
        constant(std::vector<int64_t>(bytes.begin(), bytes.end()), Shape(wshape)), DType::kBool);
    res = where(out_mask, lit(res, r.extrapolation), res);
  }
  return res;
}

void resize(C& c) {
  const Tensor& x = c.input(0);
  const int64_t rank = known_rank(c, 0);
  if (!x.shape().is_fully_defined()) c.fail("needs a static input shape");
  const bool upsample = c.node().op_type() == "Upsample";
  ResizeSpec r;
  r.mode = c.attr_string("mode", "nearest");
  if (r.mode != "nearest" && r.mode != "linear" && r.mode != "cubic" && r.mode != "bilinear")
    c.fail("mode '", r.mode, "' is not supported");
  if (r.mode == "bilinear") r.mode = "linear";
  r.coord = upsample ? "asymmetric"
                     : c.attr_string("coordinate_transformation_mode",
                                     c.opset() < 11 ? "asymmetric" : "half_pixel");
  r.nearest =
      upsample || c.opset() < 11 ? "floor" : c.attr_string("nearest_mode", "round_prefer_floor");
  r.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
  r.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  r.extrapolation = c.attr_float("extrapolation_value", 0.0);
  r.antialias = c.attr_int("antialias", 0) != 0;
  std::vector<int64_t> axes = c.attr_ints("axes", std::vector<int64_t>{});
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (int64_t& a : axes) a = normalize_axis(c, a, rank);
  const size_t n = axes.size();
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (upsample && c.opset() < 9) {
    scales = c.attr_floats("scales");
  } else {
    const size_t at = c.opset() < 11 ? 1 : 2;
    if (c.has_input(at) && c.input(at).num_elements() != 0) scales = c.floats(at, "scales");
  }
  if (c.opset() >= 11 && c.has_input(3) && c.input(3).num_elements() != 0)
    sizes = c.ints(3, "sizes");
  if (c.opset() >= 11 && c.has_input(1) && c.input(1).num_elements() != 0) roi = c.floats(1, "roi");
  if (r.coord == "tf_crop_and_resize" && roi.size() != 2 * n) c.fail("roi needs 2 values per axis");
  std::vector<int64_t> outs(n);
  if (!sizes.empty()) {
    if (sizes.size() != n) c.fail("sizes has ", sizes.size(), " values for ", n, " axes");
    scales.assign(n, 0);
    for (size_t k = 0; k < n; ++k)
      scales[k] = static_cast<double>(sizes[k]) / static_cast<double>(x.dim(axes[k]));
    const std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "not_larger" || policy == "not_smaller") {
      const double s = policy == "not_larger" ? *std::min_element(scales.begin(), scales.end())
                                              : *std::max_element(scales.begin(), scales.end());
      scales.assign(n, s);
      for (size_t k = 0; k < n; ++k)
        sizes[k] = static_cast<int64_t>(s * static_cast<double>(x.dim(axes[k])) + 0.5);
    } else if (policy != "stretch") {
      c.fail("keep_aspect_ratio_policy '", policy, "' is not supported");
    }
    outs = sizes;
  } else {
    if (scales.size() != n) c.fail("needs one scale or size per resized axis");
    for (size_t k = 0; k < n; ++k)
      outs[k] = static_cast<int64_t>(std::floor(static_cast<double>(x.dim(axes[k])) * scales[k]));
  }
  Tensor y = x;
  for (size_t k = 0; k < n; ++k) {
    if (outs[k] < 0 || outs[k] > (int64_t{1} << 24) || !(scales[k] > 0))
      c.fail("output size ", outs[k], " or scale ", scales[k], " is out of range");
    if (outs[k] == x.dim(axes[k]) && scales[k] == 1.0 && r.coord != "tf_crop_and_resize") continue;
    y = resize_axis(r, y, axes[k], outs[k], scales[k], roi.empty() ? 0 : roi[k],
                    roi.empty() ? 1 : roi[k + n]);
  }
  c.set_output(0, identity(y));
}

constexpr ImportRule kRules[] = {
    {"Resize", resize, 0b1110},
    {"Einsum", einsum},
    {"Upsample", resize, 0b10},
    {"MatMul", matmul_rule},
    {"Gemm", gemm},
    {"Conv", conv},
    {"MaxPool", pool<true>},
    {"AveragePool", pool<false>},
    {"GlobalAveragePool", global_pool<false>},
    {"GlobalMaxPool", global_pool<true>},
    {"BatchNormalization", batch_norm},
    {"InstanceNormalization", instance_norm},
    {"LayerNormalization", layer_norm},
    {"Softmax", softmax_rule<false>},
    {"LogSoftmax", softmax_rule<true>},
    {"Dropout", dropout, 0b110},
};

}  // namespace

std::span<const ImportRule> nn_import_rules() {
  return kRules;
}

}  // namespace kiln::onnx::detail
