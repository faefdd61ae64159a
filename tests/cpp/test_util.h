// Shared helpers for kiln's C++ tests.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

// Every test binary verifies graphs after tracing and after each pass.
/// A file's bytes ("" when it cannot be read), and writing them back.
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline const bool kVerifyGraphsInTests = (config().verify_graphs = true);

/// Sets config().flush_denormals for a scope (false: IEEE denormal results,
/// for tests of the subnormal range itself).
class ScopedFlushDenormals {
 public:
  explicit ScopedFlushDenormals(bool on) : old_(config().flush_denormals) {
    config().flush_denormals = on;
  }
  ~ScopedFlushDenormals() { config().flush_denormals = old_; }
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  bool old_;
};

/// Checks dtype, shape and exact values.
/// Nodes of op `id` in `g`.
inline int count_nodes(const Graph& g, OpId id) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op().id == id;
  return n;
}

template <typename T>
void expect_tensor(const Tensor& t, const Shape& shape, const std::vector<T>& values) {
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(t.dtype(), dtype_v<T>) << "dtype " << dtype_name(t.dtype());
  ASSERT_EQ(t.shape(), shape) << "shape " << t.shape();
  std::vector<T> got = t.to_vector<T>();
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(values[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << "at flat index " << i;
        continue;
      }
    }
    EXPECT_EQ(got[i], values[i]) << "at flat index " << i;
  }
}

/// Checks dtype, shape and values within a relative+absolute tolerance.
template <typename T>
void expect_tensor_near(const Tensor& t, const Shape& shape, const std::vector<T>& values,
                        double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12) {
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(t.dtype(), dtype_v<T>) << "dtype " << dtype_name(t.dtype());
  ASSERT_EQ(t.shape(), shape) << "shape " << t.shape();
  std::vector<T> got = t.to_vector<T>();
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(values[i]);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "at flat index " << i;
    } else if (std::isinf(w)) {
      EXPECT_EQ(g, w) << "at flat index " << i;
    } else {
      EXPECT_NEAR(g, w, tol * (1.0 + std::fabs(w))) << "at flat index " << i;
    }
  }
}

/// Runs `fn` and checks it throws kiln::Error with `code` and a message
/// containing every one of `fragments`.
template <typename F>
void expect_error(F&& fn, Code code, std::initializer_list<std::string> fragments = {}) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << "got " << code_name(e.code()) << ": " << e.what();
    for (const auto& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "message '" << e.what() << "' lacks '" << f << "'";
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-kiln exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected a " << code_name(code) << " error, nothing was thrown";
}

/// Sets (or, with nullopt, unsets) an environment variable; restores it on destruction.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    apply(value);
  }
  ~ScopedEnv() { apply(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void apply(const std::optional<std::string>& v) {
    if (v) {
      ::setenv(name_.c_str(), v->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace kiln::testing
