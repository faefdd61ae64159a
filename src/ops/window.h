// Internal: window arithmetic shared by conv/pool inference and CPU kernels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
class InferContext;
}

namespace kiln::window {

/// A spatial pair (height, width).
struct Hw {
  int64_t h = 1, w = 1;
};

/// Parses a strides/dilations/ksize list of 1, 2 or 4 values ({s}, {h, w} or
/// {1, h, w, 1}) into `out`. Returns an error message, empty on success.
std::string parse_hw(const std::vector<int64_t>& v, const char* what, Hw& out);

enum class Padding { kSame, kValid };
/// "SAME" or "VALID"; false otherwise.
bool parse_padding(const std::string& s, Padding& out);

/// Output size and padding along one spatial dim.
struct Dim {
  int64_t out = -1, pad_before = 0, pad_after = 0;
};
/// TensorFlow's windowed output size for input size `in` (-1 = unknown,
/// giving out = -1). Returns an error message when a VALID window does not
/// fit, empty otherwise.
std::string out_dim(int64_t in, int64_t k, int64_t stride, int64_t dilation, Padding p,
                    const char* dim_name, Dim& out);

// ---- for inference functions (fail with the op's name) ----

/// parse_hw of int-list attribute `attr`; fails the inference on error.
Hw hw_attr(InferContext& c, const char* name);
/// parse_padding of string attribute `attr`; fails the inference on error.
Padding padding_attr(InferContext& c);
/// Fails unless input i is float32 or float64.
void expect_float(InferContext& c, size_t i);

}  // namespace kiln::window
