// Numeric gradient checking for the gradient rules.
//
// A function under test maps input tensors to one output y. The checked
// scalar is L = sum(y * w) with fixed weights w in [0.5, 1.5] (so every
// output element and its position matter). For each float input:
// - numeric: central differences of L in float64, (L(x+e) - L(x-e)) / 2e;
// - analytic: GradientTape::gradient(L, x), eagerly and inside a
//   kiln::Function (the tape records the traced ops and the backward ops
//   join the same graph);
// - float32: the analytic gradient with every float input cast to float32,
//   against the float64 one.
//
// Tolerances (|a - b| <= tol * (1 + |b|)):
//   float64 analytic vs numeric   1e-6  (eps 1e-6: truncation ~1e-12,
//                                        rounding ~1e-10 relative to L)
//   function vs eager (float64)   1e-10 (same math, possibly reordered)
//   float32 analytic vs float64   2e-4  (float32 eps 1.2e-7 times the
//                                        condition of the op chain)
#pragma once
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kiln/function.h"
#include "kiln/gradient_tape.h"
#include "test_util.h"

namespace kiln::testing {

using FnUnderTest = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradCheckOptions {
  double eps = 1e-6;
  double tol_f64 = 1e-6;
  double tol_function = 1e-10;
  double tol_f32 = 2e-4;
  bool check_f32 = true;
  bool check_function = true;
};

/// A float64 tensor of `shape` with values uniform in [lo, hi).
inline Tensor random_f64(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t = Tensor::empty(DType::kFloat64, shape);
  double* p = t.mutable_data<double>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = dist(gen);
  return t;
}

/// Values in [lo, hi) with a random sign (keeps away from 0 for kinks).
inline Tensor random_away_from_zero(const Shape& shape, uint32_t seed, double lo = 0.2,
                                    double hi = 1.0) {
  Tensor t = random_f64(shape, seed, lo, hi);
  std::mt19937 gen(seed + 7);
  double* p = t.mutable_data<double>();
  for (int64_t i = 0; i < t.num_elements(); ++i)
    if (gen() & 1) p[i] = -p[i];
  return t;
}

inline Tensor cast_floats(const Tensor& t, DType to) {
  return is_floating(t.dtype()) ? cast(t, to) : t;
}

inline double loss_value(const FnUnderTest& f, const std::vector<Tensor>& xs, const Tensor& w) {
  Tensor y = cast_floats(f(xs), DType::kFloat64);
  return reduce_sum(y * w).item<double>();
}

/// d/dx sum(f(x) * w) for every float input through a tape (zeros when
/// unconnected; undefined for non-float inputs).
inline std::vector<Tensor> tape_gradients(const FnUnderTest& f, const std::vector<Tensor>& xs,
                                          const Tensor& w) {
  GradientTape tape;
  std::vector<GradSource> srcs;
  for (const Tensor& x : xs) {
    tape.watch(x);
    srcs.push_back(x);
  }
  Tensor y = f(xs);
  Tensor loss = reduce_sum(y * cast(w, y.dtype()));
  std::vector<Tensor> g = tape.gradient(loss, srcs, Tensor(), UnconnectedGradients::kZero);
  for (size_t i = 0; i < xs.size(); ++i)
    if (!is_floating(xs[i].dtype())) g[i] = Tensor();
  return g;
}

/// The same inside a kiln::Function traced for these inputs.
inline std::vector<Tensor> function_gradients(const FnUnderTest& f, const std::vector<Tensor>& xs,
                                              const Tensor& w) {
  const size_t n = xs.size();
  Function fn([&f, n](const std::vector<Value>& args) {
    std::vector<Tensor> ins;
    for (size_t i = 0; i < n; ++i) ins.push_back(args[i].tensor());
    std::vector<Value> out;
    for (const Tensor& g : tape_gradients(f, ins, args[n].tensor()))
      out.push_back(g.defined() ? Value(g) : Value(0));
    return Value::list(out);
  });
  std::vector<Value> args(xs.begin(), xs.end());
  args.push_back(w);
  Value r = fn(args);
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(is_floating(xs[i].dtype()) ? r.items()[i].tensor() : Tensor());
  return out;
}

inline std::vector<Tensor> numeric_gradients(const FnUnderTest& f, const std::vector<Tensor>& xs,
                                             const Tensor& w, double eps) {
  std::vector<Tensor> out(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].dtype() != DType::kFloat64) continue;
    std::vector<double> base = xs[i].to_vector<double>(), grad(base.size());
    for (size_t k = 0; k < base.size(); ++k) {
      auto eval = [&](double delta) {
        std::vector<double> v = base;
        v[k] += delta;
        std::vector<Tensor> ins = xs;
        ins[i] = Tensor::from_vector(v, xs[i].shape());
        return loss_value(f, ins, w);
      };
      grad[k] = (eval(eps) - eval(-eps)) / (2 * eps);
    }
    out[i] = Tensor::from_vector(grad, xs[i].shape());
  }
  return out;
}

inline void expect_all_close(const Tensor& got, const Tensor& want, double tol,
                             const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": no gradient";
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<double> a = cast(got, DType::kFloat64).to_vector<double>();
  std::vector<double> b = cast(want, DType::kFloat64).to_vector<double>();
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_NEAR(a[k], b[k], tol * (1 + std::fabs(b[k]))) << what << " at flat index " << k;
}

/// Runs every check on `f` at float64 inputs `xs` (integer/bool inputs are
/// passed through and not differentiated).
inline void check_gradients(const std::string& name, const FnUnderTest& f,
                            const std::vector<Tensor>& xs, GradCheckOptions o = {}) {
  SCOPED_TRACE(name);
  const Tensor y = f(xs);
  const Tensor w = random_f64(y.shape(), 1234, 0.5, 1.5);
  const std::vector<Tensor> analytic = tape_gradients(f, xs, w);
  const std::vector<Tensor> numeric = numeric_gradients(f, xs, w, o.eps);
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!is_floating(xs[i].dtype())) continue;
    const std::string in = name + " input " + std::to_string(i);
    expect_all_close(analytic[i], numeric[i], o.tol_f64, in + " (float64 vs numeric)");
  }
  if (o.check_function) {
    const std::vector<Tensor> traced = function_gradients(f, xs, w);
    for (size_t i = 0; i < xs.size(); ++i)
      if (is_floating(xs[i].dtype()))
        expect_all_close(traced[i], analytic[i], o.tol_function,
                         name + " input " + std::to_string(i) + " (function vs eager)");
  }
  if (o.check_f32) {
    std::vector<Tensor> xs32;
    for (const Tensor& x : xs) xs32.push_back(cast_floats(x, DType::kFloat32));
    const std::vector<Tensor> g32 = tape_gradients(f, xs32, w);
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!is_floating(xs[i].dtype())) continue;
      ASSERT_TRUE(g32[i].defined());
      EXPECT_EQ(g32[i].dtype(), DType::kFloat32);
      expect_all_close(g32[i], analytic[i], o.tol_f32,
                       name + " input " + std::to_string(i) + " (float32 vs float64)");
    }
  }
}

}  // namespace kiln::testing
