#include "window.h"

#include <algorithm>
#include <limits>

#include "kiln/op.h"
#include "kiln/status.h"

namespace kiln::window {

std::string parse_hw(const std::vector<int64_t>& v, const char* what, Hw& out) {
  auto list = [&] {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  if (v.size() == 1) {
    out = {v[0], v[0]};
  } else if (v.size() == 2) {
    out = {v[0], v[1]};
  } else if (v.size() == 4) {
    if (v[0] != 1 || v[3] != 1)
      return str_cat(what, " ", list(),
                     " must be 1 in the batch and channel dimensions (NHWC: [1, h, w, 1])");
    out = {v[1], v[2]};
  } else {
    return str_cat(what, " must have 1, 2 or 4 elements, got ", v.size(), " (", list(), ")");
  }
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (out.h <= 0 || out.w <= 0 || out.h > kMax || out.w > kMax)
    return str_cat(what, " must be positive (at most ", kMax, "), got ", list());
  return {};
}

bool parse_padding(const std::string& s, Padding& out) {
  if (s == "SAME") {
    out = Padding::kSame;
    return true;
  }
  if (s == "VALID") {
    out = Padding::kValid;
    return true;
  }
  return false;
}

std::string out_dim(int64_t in, int64_t k, int64_t stride, int64_t dilation, Padding p,
                    const char* dim_name, Dim& out) {
  out = Dim{};
  if (in < 0 || k <= 0) return {};
  int64_t eff = 0;
  if (__builtin_mul_overflow(k - 1, dilation, &eff) || eff > (int64_t{1} << 40))
    return str_cat("the ", dim_name, " filter window (size ", k, ", dilation ", dilation,
                   ") is too large");
  eff += 1;
  if (p == Padding::kValid) {
    if (in < eff)
      return str_cat("computed output size would be negative: the ", dim_name,
                     " filter window (size ", k, ", dilation ", dilation, ", effective size ", eff,
                     ") is larger than the input ", dim_name, " ", in, " with VALID padding");
    out.out = (in - eff) / stride + 1;
    return {};
  }
  out.out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out.out - 1) * stride + eff - in, 0);
  out.pad_before = total / 2;
  out.pad_after = total - out.pad_before;
  return {};
}

Hw hw_attr(InferContext& c, const char* name) {
  Hw out;
  const std::string err = parse_hw(c.attr_ints(name), name, out);
  if (!err.empty()) c.fail(err);
  return out;
}

Padding padding_attr(InferContext& c) {
  Padding p;
  if (!parse_padding(c.attr_string("padding"), p))
    c.fail("padding must be one of 'SAME', 'VALID', got '", c.attr_string("padding"), "'");
  return p;
}

void expect_float(InferContext& c, size_t i) {
  if (!is_floating(c.dtype(i)))
    c.fail(c.input_name(i), " must be float32 or float64, got ", dtype_name(c.dtype(i)));
}

}  // namespace kiln::window
