// Scalar math functors shared by the eager CPU kernels and (later) the code
// the JIT generates: one definition of each elementwise operation.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kiln::fn {

struct Add {
  template <typename T>
  T operator()(T a, T b) const { return static_cast<T>(a + b); }
};
struct Sub {
  template <typename T>
  T operator()(T a, T b) const { return static_cast<T>(a - b); }
};
struct Mul {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return static_cast<T>(a * b);
  }
};

}  // namespace kiln::fn
