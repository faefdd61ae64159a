// ConcatV2's gradient when sizes along the axis are unknown while tracing
// (src/ops/concat_split.cpp, concat_grad): one unknown size (a SplitV with
// an inferred size), several (slices at offsets computed at run time), and
// while loops that grow a tensor by concat under a shape invariant.
#include <cmath>
#include <optional>

#include "autodiff/grad_check.h"
#include "kiln/control_flow.h"
#include "kiln/function.h"
#include "kiln/gradient_tape.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_all_close;
using testing::expect_error;
using testing::expect_tensor_near;
using testing::FnUnderTest;
using testing::random_f64;
using Vars = std::vector<Tensor>;

// A Function returning [loss, d loss / d x for every input] (tape inside the
// trace); `grad_shapes` receives the gradients' static shapes at trace time.
Function grad_function(FnUnderTest f, size_t n_in, std::vector<Shape>* grad_shapes = nullptr) {
  FunctionOptions o;
  o.name = "concat_grad";
  return Function(
      [f, n_in, grad_shapes](const std::vector<Value>& a) {
        Vars xs;
        GradientTape tape;
        std::vector<GradSource> srcs;
        for (size_t i = 0; i < n_in; ++i) {
          xs.push_back(a[i].tensor());
          tape.watch(xs.back());
          srcs.push_back(xs.back());
        }
        Tensor loss = f(xs);
        Vars g = tape.gradient(loss, srcs);
        std::vector<Value> out{Value(loss)};
        if (grad_shapes) grad_shapes->clear();
        for (const Tensor& t : g) {
          if (grad_shapes) grad_shapes->push_back(t.shape());
          out.push_back(Value(t));
        }
        return Value::list(out);
      },
      o);
}

Vars call(Function& fn, const Vars& xs) {
  std::vector<Value> args(xs.begin(), xs.end());
  Vars out;
  const Value r = fn(args);
  for (const Value& v : r.items()) out.push_back(v.tensor());
  return out;
}

Value spec(const Shape& s) {
  return Value(ArgSpec{DType::kFloat64, s, ""});
}

// d/dv sum(sin(v)) = cos(v), elementwise.
Tensor cos_of(const Tensor& v) {
  return cos(v);
}

TEST(ConcatGrad, UnknownSizesAlongTheAxisInATracedFunction) {
  // axis 0: x and y of unknown length (runtime slices), z static.
  std::vector<Shape> shapes;
  FnUnderTest f = [](const Vars& a) { return reduce_sum(sin(concat({a[0], a[1], a[2]}, 0))); };
  Function fn = grad_function(f, 3, &shapes);
  fn.get_concrete_function({spec({-1, 3}), spec({-1, 3}), spec({2, 3})});
  EXPECT_EQ(shapes, (std::vector<Shape>{Shape({-1, 3}), Shape({-1, 3}), Shape({2, 3})}));
  for (int64_t nx : {1, 4})
    for (int64_t ny : {0, 2}) {
      SCOPED_TRACE(str_cat("nx=", nx, " ny=", ny));
      Vars xs{random_f64({nx, 3}, 1), random_f64({ny, 3}, 2), random_f64({2, 3}, 3)};
      Vars r = call(fn, xs);
      for (size_t i = 0; i < 3; ++i) expect_all_close(r[1 + i], cos_of(xs[i]), 1e-12, "input");
    }
  EXPECT_EQ(fn.tracing_count(), 1);
}

TEST(ConcatGrad, OneUnknownSizeAndANegativeAxis) {
  // axis -1 with one unknown size: SplitV infers it.
  std::vector<Shape> shapes;
  FnUnderTest f = [](const Vars& a) {
    return reduce_sum(sin(concat({a[0], a[1]}, -1)) * concat({a[0], a[1]}, -1));
  };
  Function fn = grad_function(f, 2, &shapes);
  fn.get_concrete_function({spec({2, 3}), spec({2, -1})});
  EXPECT_EQ(shapes, (std::vector<Shape>{Shape({2, 3}), Shape({2, -1})}));
  Vars xs{random_f64({2, 3}, 4), random_f64({2, 5}, 5)};
  Vars r = call(fn, xs);
  // d/dv sum(v sin v) = sin v + v cos v
  for (size_t i = 0; i < 2; ++i)
    expect_all_close(r[1 + i], sin(xs[i]) + xs[i] * cos(xs[i]), 1e-12, "input");
}

TEST(ConcatGrad, SeveralUnknownDimsKeepWhatIsKnown) {
  // Inputs with two unknown dims: the slices keep their runtime shapes.
  std::vector<Shape> shapes;
  FnUnderTest f = [](const Vars& a) { return reduce_sum(sin(concat({a[0], a[1]}, 1))); };
  Function fn = grad_function(f, 2, &shapes);
  fn.get_concrete_function({spec({-1, -1}), spec({-1, -1})});
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].rank(), 2);
  Vars xs{random_f64({3, 2}, 6), random_f64({3, 4}, 7)};
  Vars r = call(fn, xs);
  for (size_t i = 0; i < 2; ++i) expect_all_close(r[1 + i], cos_of(xs[i]), 1e-12, "input");
}

TEST(ConcatGrad, InputsOfUnknownRankAreAClearError) {
  FnUnderTest f = [](const Vars& a) { return concat({a[0], a[1]}, 0); };  // (no Sum: rank unknown)
  Function fn = grad_function(f, 2);
  expect_error(
      [&] {
        fn.get_concrete_function({spec(Shape::unknown_rank()), spec(Shape::unknown_rank())});
      },
      Code::kUnimplemented, {"ConcatV2 gradient", "unknown rank"});
}

// ---- loops that grow a tensor by concat ----

// y_0 = [x]; y_{k+1} = concat(y_k, y_k * x): both pieces have unknown
// length inside the loop. sum(y_n) = x (1 + x)^n.
Tensor doubling(const Tensor& x, const Tensor& n) {
  WhileOptions o;
  o.shape_invariants = {std::nullopt, Shape{-1}};
  return while_loop([&](const Vars& s) { return s[0] < n; },
                    [&](const Vars& s) {
                      return Vars{s[0] + 1, concat({s[1], s[1] * x}, 0)};
                    },
                    {Tensor(0), reshape(x, {1})}, o)[1];
}

// y_0 = [x]; y_{k+1} = concat(y_k * x, [x]): one unknown length.
// sum(y_n) = x + x^2 + ... + x^(n+1).
Tensor appending(const Tensor& x, const Tensor& n) {
  WhileOptions o;
  o.shape_invariants = {std::nullopt, Shape{-1}};
  return while_loop([&](const Vars& s) { return s[0] < n; },
                    [&](const Vars& s) {
                      return Vars{s[0] + 1, concat({s[1] * x, reshape(x, {1})}, 0)};
                    },
                    {Tensor(0), reshape(x, {1})}, o)[1];
}

TEST(ConcatGrad, WhileLoopGrowingByConcatMatchesTheAnalyticGradient) {
  FunctionOptions o;
  o.name = "grow";
  int traces = 0;
  Function fn(
      [&traces](const std::vector<Value>& a) {
        ++traces;
        const Tensor &x = a[0].tensor(), &n = a[1].tensor();
        GradientTape tape;
        tape.watch(x);
        Tensor y1 = doubling(x, n), y2 = appending(x, n);
        Tensor l1 = reduce_sum(y1), l2 = reduce_sum(y2);
        Vars g = tape.gradient(Vars{l1, l2}, std::vector<GradSource>{x});
        // Each loss alone too.
        GradientTape t1;
        t1.watch(x);
        Tensor only = reduce_sum(doubling(x, n));
        return Value::list({Value(l1), Value(l2), Value(g[0]), Value(t1.gradient(only, x))});
      },
      o);
  for (int n : {0, 1, 3, 5}) {
    SCOPED_TRACE(str_cat("n=", n));
    const double x = 0.7;
    const Value r = fn({Value(Tensor(x)), Value(Tensor(n))});
    const double p = std::pow(1 + x, n);
    double s2 = 0, d2 = 0;
    for (int j = 1; j <= n + 1; ++j) {
      s2 += std::pow(x, j);
      d2 += j * std::pow(x, j - 1);
    }
    const double d1 = p + (n > 0 ? n * x * std::pow(1 + x, n - 1) : 0);
    expect_tensor_near<double>(r.items()[0].tensor(), {}, {x * p}, 1e-12);
    expect_tensor_near<double>(r.items()[1].tensor(), {}, {s2}, 1e-12);
    expect_tensor_near<double>(r.items()[2].tensor(), {}, {d1 + d2}, 1e-12);
    expect_tensor_near<double>(r.items()[3].tensor(), {}, {d1}, 1e-12);
  }
  EXPECT_EQ(traces, 1);
}

TEST(ConcatGrad, WhileLoopGrowingAMatrixMatchesNumeric) {
  // Rows appended to a [None, 2] matrix: m_{k+1} = concat(tanh(m_k W), m_k[:1] + b).
  FnUnderTest f = [](const Vars& a) {
    const Tensor &m0 = a[0], &w = a[1], &b = a[2];
    WhileOptions o;
    o.shape_invariants = {std::nullopt, Shape{-1, 2}};
    Tensor m = while_loop([](const Vars& s) { return s[0] < 3; },
                          [&](const Vars& s) {
                            Tensor first = slice(s[1], {0, 0}, {1, 2});
                            return Vars{s[0] + 1, concat({tanh(matmul(s[1], w)), first + b}, 0)};
                          },
                          {Tensor(0), m0}, o)[1];
    return reduce_sum(m * m);
  };
  Function fn = grad_function(f, 3);
  Vars xs{random_f64({2, 2}, 11), random_f64({2, 2}, 12, -0.8, 0.8), random_f64({2}, 13)};
  Vars r = call(fn, xs);
  expect_all_close(r[0], f(xs), 1e-12, "loss");
  Vars numeric = testing::numeric_gradients(f, xs, Tensor(1.0), 1e-6);
  for (size_t i = 0; i < xs.size(); ++i)
    expect_all_close(r[1 + i], numeric[i], 1e-6, "input " + std::to_string(i));
}

}  // namespace
}  // namespace kiln
