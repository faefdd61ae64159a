// Float32 products for matmul_onednn_test.cpp and its fallback: operands,
// cases and a float64 reference.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::testing {

inline std::vector<float> values(int64_t n, double freq) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(0.5 * std::sin(freq * static_cast<double>(i) + 0.3));
  return v;
}

// Where a product runs once its sizes were met: oneDNN (on a CPU with its
// brgemm kernel), OpenBLAS, or either (oneDNN 2.6 has no brgemm kernel for
// a B with rows longer than its columns, newer versions may).
enum class Lib { kOneDnn, kOpenBlas, kEither };

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  Lib lib = Lib::kOneDnn;
};

inline std::string name_of(const Case& c) {
  return str_cat(c.m, "x", c.k, "x", c.n, c.ta ? " ta" : "", c.tb ? " tb" : "");
}

// The largest error of c against op(a) op(b) in float64, relative to the
// magnitude of each sum.
inline double max_error(const Case& p, const std::vector<float>& a, const std::vector<float>& b,
                        const std::vector<float>& c) {
  double err = 0;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double want = 0, mag = 0;
      for (int64_t t = 0; t < p.k; ++t) {
        const double x =
            p.ta ? a[static_cast<size_t>(t * p.m + i)] : a[static_cast<size_t>(i * p.k + t)];
        const double y =
            p.tb ? b[static_cast<size_t>(j * p.k + t)] : b[static_cast<size_t>(t * p.n + j)];
        want += x * y;
        mag += std::abs(x * y);
      }
      err = std::max(err, std::abs(c[static_cast<size_t>(i * p.n + j)] - want) / (mag + 1e-30));
    }
  return err;
}

}  // namespace kiln::testing
