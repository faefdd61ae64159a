// Numeric gradient checks for the NN gradient rules: Conv2D, DepthwiseConv2D,
// MaxPool, AvgPool (through the backward ops), ReduceProd, Gather (through
// UnsortedSegmentSum) and the backward ops' own rules (second order). Each
// record runs eagerly, inside a kiln::Function and in float32 (grad_check.h);
// float32 convolutions run on oneDNN, float64 on the direct loops, so the
// float32 check also compares the two backends.
#include <functional>

#include "grad_check.h"

namespace kiln {
namespace {

using testing::check_gradients;
using testing::expect_error;
using testing::expect_tensor_near;
using testing::FnUnderTest;
using testing::GradCheckOptions;
using testing::random_f64;

struct Record {
  std::string name;
  FnUnderTest f;
  std::vector<Tensor> inputs;
  GradCheckOptions options = {};
};

using V = const std::vector<Tensor>&;
using Ints = std::vector<int64_t>;

// A shape as an int64 sizes vector (input_sizes / filter_sizes).
Tensor sizes_of(const Shape& s) {
  return Tensor::from_vector(s.to_vector(), Shape{s.rank()});
}

void run(const std::vector<Record>& records) {
  for (const Record& r : records) check_gradients(r.name, r.f, r.inputs, r.options);
}

// One convolution geometry: input [n, h, w, c], filter [kh, kw, c, oc]
// (oc = multiplier when depthwise).
struct ConvCase {
  std::string name;
  Shape x, f;
  Ints strides, dilations;
  std::string padding;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"VALID", {2, 5, 5, 3}, {3, 3, 3, 4}, {1, 1}, {1, 1}, "VALID"},
      {"SAME stride 2", {1, 6, 7, 2}, {3, 2, 2, 3}, {2, 2}, {1, 1}, "SAME"},
      {"SAME even kernel, stride 2x3", {2, 6, 7, 2}, {4, 4, 2, 2}, {2, 3}, {1, 1}, "SAME"},
      {"SAME dilation 2", {1, 6, 6, 2}, {3, 3, 2, 2}, {1, 1}, {2, 2}, "SAME"},
      {"VALID dilation 1x2 stride 2x1", {1, 7, 7, 2}, {2, 3, 2, 3}, {2, 1}, {1, 2}, "VALID"},
      {"1x1 stride 2 (skipped pixels)", {1, 5, 5, 3}, {1, 1, 3, 2}, {2, 2}, {1, 1}, "VALID"},
      {"TF 4-element strides", {1, 5, 6, 2}, {2, 2, 2, 2}, {1, 2, 2, 1}, {1, 1, 1, 1}, "SAME"},
  };
}

std::vector<Record> conv_records(bool depthwise) {
  std::vector<Record> out;
  uint32_t seed = depthwise ? 200 : 100;
  for (const ConvCase& c : conv_cases()) {
    Shape f = c.f;
    if (depthwise) f.set_dim(3, c.f.dim(3) % 2 + 1);  // multipliers 1 and 2
    FnUnderTest fn = [c, depthwise](V x) {
      return depthwise ? depthwise_conv2d(x[0], x[1], c.strides, c.padding, c.dilations)
                       : conv2d(x[0], x[1], c.strides, c.padding, c.dilations);
    };
    out.push_back({(depthwise ? "DepthwiseConv2D " : "Conv2D ") + c.name,
                   fn,
                   {random_f64(c.x, seed), random_f64(f, seed + 1)}});
    seed += 2;
  }
  return out;
}

TEST(GradRulesNn, Conv2D) {
  run(conv_records(false));
}
TEST(GradRulesNn, DepthwiseConv2D) {
  run(conv_records(true));
}

struct PoolCase {
  std::string name;
  Shape x;
  Ints ksize, strides;
  std::string padding;
};

std::vector<PoolCase> pool_cases() {
  return {
      {"2x2 stride 2 VALID", {2, 4, 4, 3}, {2, 2}, {2, 2}, "VALID"},
      {"3x3 stride 2 SAME (overlapping)", {1, 5, 6, 2}, {3, 3}, {2, 2}, "SAME"},
      {"2x3 stride 1x2 SAME", {2, 5, 5, 2}, {2, 3}, {1, 2}, "SAME"},
      {"3x3 stride 1 VALID", {1, 5, 5, 2}, {1, 3, 3, 1}, {1, 1, 1, 1}, "VALID"},
  };
}

// Continuous random values: ties have probability zero, and the gaps
// (~1e-2) are far above the finite-difference step.
TEST(GradRulesNn, MaxPool) {
  std::vector<Record> rs;
  uint32_t seed = 300;
  for (const PoolCase& c : pool_cases())
    rs.push_back({"MaxPool " + c.name,
                  [c](V x) { return max_pool2d(x[0], c.ksize, c.strides, c.padding); },
                  {random_f64(c.x, seed++)}});
  run(rs);
}

TEST(GradRulesNn, AvgPool) {
  std::vector<Record> rs;
  uint32_t seed = 400;
  for (const PoolCase& c : pool_cases())
    rs.push_back({"AvgPool " + c.name,
                  [c](V x) { return avg_pool2d(x[0], c.ksize, c.strides, c.padding); },
                  {random_f64(c.x, seed++)}});
  run(rs);
}

// Max pooling's gradient on ties goes to the first maximum in the window
// (row-major), and a window's NaN takes the gradient.
TEST(GradRulesNn, MaxPoolTiesAndNaN) {
  Tensor x = reshape(Tensor({1.0, 3.0, 3.0, 0.0, 2.0, 3.0, -1.0, 0.5}), {1, 2, 4, 1});
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = max_pool2d(x, {2, 2}, {2, 2}, "VALID");  // windows [1 3; 2 3] and [3 0; -1 .5]
  expect_tensor_near<double>(tape.gradient(y, x), {1, 2, 4, 1}, {0, 1, 1, 0, 0, 0, 0, 0});
  const double nan = std::nan("");
  Tensor z = reshape(Tensor({1.0, nan, 5.0, 2.0}), {1, 2, 2, 1});
  GradientTape t2;
  t2.watch(z);
  Tensor yz = max_pool2d(z, {2, 2}, {1, 1}, "VALID");
  expect_tensor_near<double>(t2.gradient(yz, z), {1, 2, 2, 1}, {0, 1, 0, 0});
}

// AvgPool with SAME padding: the padded positions do not count (TF), so the
// corner windows spread their gradient over fewer elements.
TEST(GradRulesNn, AvgPoolSameByHand) {
  Tensor x = random_f64({1, 3, 3, 1}, 7);
  GradientTape tape;
  tape.watch(x);
  Tensor y = avg_pool2d(x, {2, 2}, {2, 2}, "SAME");  // windows of 4, 2, 2 and 1 elements
  expect_tensor_near<double>(tape.gradient(y, x), {1, 3, 3, 1},
                             {0.25, 0.25, 0.5, 0.25, 0.25, 0.5, 0.5, 0.5, 1.0});
}

TEST(GradRulesNn, ReduceProd) {
  const Tensor a = random_f64({2, 3, 4}, 500, 0.5, 1.5);
  // Group (row) 0 has no zero, row 1 one zero, row 2 two zeros.
  const Tensor z({{0.5, -1.5, 2.0, 1.25}, {0.75, 0.0, -2.0, 1.5}, {0.0, 1.0, 0.0, 3.0}});
  run({
      {"ReduceProd(all)",
       [](V x) { return reduce_prod(x[0]); },
       {random_f64({2, 3}, 501, 0.5, 1.5)}},
      {"ReduceProd(axis 1)", [](V x) { return reduce_prod(x[0], {1}); }, {a}},
      {"ReduceProd(axes 0, 2, keepdims)",
       [](V x) {
         return reduce_prod(x[0], {0, -1}, true);
       },
       {a}},
      {"ReduceProd(zeros)", [](V x) { return reduce_prod(x[0], {1}); }, {z}},
      {"ReduceProd(zeros, axis 0)", [](V x) { return reduce_prod(x[0], {0}); }, {z}},
      {"ReduceProd(negative)", [](V x) { return reduce_prod(x[0] - 1.0, {1}); }, {a}},
  });
}

TEST(GradRulesNn, ReduceProdZerosByHand) {
  Tensor x({{2.0, 0.0, 3.0}, {0.0, 0.0, 4.0}, {1.0, 2.0, 3.0}});
  GradientTape tape;
  tape.watch(x);
  Tensor y = reduce_prod(x, {1});
  expect_tensor_near<double>(tape.gradient(y, x), {3, 3}, {0, 6, 0, 0, 0, 0, 6, 3, 2});
}

TEST(GradRulesNn, Gather) {
  run({
      {"Gather axis 0, 2-D indices",
       [](V x) { return gather(x[0], x[1]); },
       {random_f64({4, 3}, 600), Tensor({{3, 0}, {3, 1}})}},
      {"Gather axis 0, int64 repeated",
       [](V x) { return gather(x[0], x[1]); },
       {random_f64({5}, 601), Tensor({int64_t{4}, int64_t{4}, int64_t{2}})}},
      {"Gather axis 1",
       [](V x) { return gather(x[0], x[1], 1); },
       {random_f64({2, 4, 3}, 602), Tensor({{3, 0, 3}, {1, 1, 2}})}},
      {"Gather axis -1",
       [](V x) { return gather(x[0], x[1], -1); },
       {random_f64({2, 3, 4}, 603), Tensor({0, 3, 3})}},
      {"Gather axis 1, scalar index",
       [](V x) { return gather(x[0], x[1], 1); },
       {random_f64({3, 4, 2}, 604), Tensor(2)}},
      {"Gather axis 0, scalar index",
       [](V x) { return gather(x[0], x[1]); },
       {random_f64({3, 2}, 605), Tensor(1)}},
  });
}

TEST(GradRulesNn, UnsortedSegmentSum) {
  run({
      {"UnsortedSegmentSum 1-D ids (negative dropped, empty segment)",
       [](V x) { return unsorted_segment_sum(x[0], x[1], 5); },
       {random_f64({6, 3}, 700), Tensor({0, 4, -1, 0, 2, 4})}},
      {"UnsortedSegmentSum 2-D ids",
       [](V x) { return unsorted_segment_sum(x[0], x[1], int64_t{3}); },
       {random_f64({2, 3, 2}, 701), Tensor::from_vector<int64_t>({2, 0, 2, 1, 1, 0}, {2, 3})}},
      {"UnsortedSegmentSum ids = data shape",
       [](V x) { return unsorted_segment_sum(x[0], x[1], 4); },
       {random_f64({2, 3}, 702), Tensor({{3, 0, 3}, {1, -1, 0}})}},
  });
}

TEST(GradRulesNn, SegmentMaxMinProdAndTopK) {
  const Tensor ids({0, 2, -1, 0, 2, 2});
  run({
      // (no empty segment: its lowest() fill would overflow the numeric check)
      {"UnsortedSegmentMax (negative dropped)",
       [](V x) { return unsorted_segment_max(x[0], x[1], Tensor(3)); },
       {random_f64({6, 3}, 710), Tensor({0, 1, -1, 0, 2, 1})}},
      {"UnsortedSegmentMin 2-D ids",
       [](V x) { return unsorted_segment_min(x[0], x[1], Tensor(3)); },
       {random_f64({2, 3, 2}, 711), Tensor::from_vector<int64_t>({2, 0, 2, 1, 1, 0}, {2, 3})}},
      {"UnsortedSegmentProd",
       [](V x) { return unsorted_segment_prod(x[0], x[1], Tensor(4)); },
       {random_f64({6, 2}, 712), ids}},
      {"UnsortedSegmentProd with zeros (one and two per segment)",
       [](V x) { return unsorted_segment_prod(x[0], x[1], Tensor(3)); },
       {Tensor({0.5, 0.0, 1.5, 0.0, 2.0, 0.0, -1.0}), Tensor({0, 0, 0, 1, 1, 2, 2})}},
      {"TopKV2 values, rank 3",
       [](V x) { return top_k(x[0], 2).first; },
       {random_f64({2, 3, 5}, 713)}},
  });
}

// Ties share the gradient evenly, as TensorFlow does.
TEST(GradRulesNn, SegmentMaxTiesShare) {
  GradientTape tape;
  const Tensor x({1.f, 3.f, 3.f, 2.f});
  tape.watch(x);
  const Tensor y = unsorted_segment_max(x, Tensor({0, 0, 0, 1}), Tensor(2));
  expect_tensor_near<float>(tape.gradient(y * Tensor({2.f, 5.f}), x), {4}, {0, 1, 1, 5});
}

// Values by hand: integer data, a dropped (negative) id, an empty segment;
// traced with num_segments fed at call time (unknown output dim).
TEST(GradRulesNn, UnsortedSegmentSumValues) {
  const Tensor data({{1, 2}, {3, 4}, {5, 6}, {7, 8}});
  testing::expect_tensor<int32_t>(unsorted_segment_sum(data, Tensor({2, -1, 0, 2}), 4), {4, 2},
                                  {5, 6, 0, 0, 8, 10, 0, 0});
  testing::expect_tensor<int32_t>(unsorted_segment_sum(data, Tensor({0, 0, 0, 0}), 1), {1, 2},
                                  {16, 20});
  testing::expect_tensor<int32_t>(unsorted_segment_sum(Tensor::empty(DType::kInt32, {0, 2}),
                                                       Tensor::empty(DType::kInt64, {0}), 2),
                                  {2, 2}, {0, 0, 0, 0});
  FunctionOptions opts;
  opts.input_signature = std::vector<ArgSpec>{ArgSpec{DType::kFloat32, Shape{-1}, "d"},
                                              ArgSpec{DType::kInt32, Shape{-1}, "ids"},
                                              ArgSpec{DType::kInt32, Shape{}, "n"}};
  Function fn(
      [](const std::vector<Value>& a) {
        return Value(unsorted_segment_sum(a[0].tensor(), a[1].tensor(), a[2].tensor()));
      },
      opts);
  expect_tensor_near<float>(fn({Tensor({1.f, 2.f, 4.f}), Tensor({1, 1, 0}), Tensor(3)}).tensor(),
                            {3}, {4, 3, 0});
  expect_tensor_near<float>(fn({Tensor({1.f, 2.f}), Tensor({4, -3}), Tensor(5)}).tensor(), {5},
                            {0, 0, 0, 0, 1});
  expect_error(
      [&] {
        fn({Tensor({1.f}), Tensor({4}), Tensor(2)});
      },
      Code::kInvalidArgument, {"segment_ids[0] = 4", "[0, 2)"});
}

// ---- the backward ops' own rules (second order) ----

TEST(GradRulesNn, ConvBackpropOps) {
  std::vector<Record> rs;
  uint32_t seed = 800;
  for (const ConvCase& c : conv_cases()) {
    for (bool dw : {false, true}) {
      Shape f = c.f;
      if (dw) f.set_dim(3, 2);
      const Tensor x = random_f64(c.x, seed++), w = random_f64(f, seed++);
      const Tensor y = dw ? depthwise_conv2d(x, w, c.strides, c.padding, c.dilations)
                          : conv2d(x, w, c.strides, c.padding, c.dilations);
      const Tensor dy = random_f64(y.shape(), seed++);
      const Tensor xs = sizes_of(c.x), fs = sizes_of(f);
      const std::string tag = std::string(dw ? "Depthwise" : "Conv2D") + " " + c.name;
      rs.push_back({tag + " BackpropInput",
                    [c, dw, xs](V v) {
                      return dw ? depthwise_conv2d_backprop_input(xs, v[0], v[1], c.strides,
                                                                  c.padding, c.dilations)
                                : conv2d_backprop_input(xs, v[0], v[1], c.strides, c.padding,
                                                        c.dilations);
                    },
                    {w, dy}});
      rs.push_back({tag + " BackpropFilter",
                    [c, dw, fs](V v) {
                      return dw ? depthwise_conv2d_backprop_filter(v[0], fs, v[1], c.strides,
                                                                   c.padding, c.dilations)
                                : conv2d_backprop_filter(v[0], fs, v[1], c.strides, c.padding,
                                                         c.dilations);
                    },
                    {x, dy}});
    }
  }
  run(rs);
}

TEST(GradRulesNn, PoolBackpropOps) {
  std::vector<Record> rs;
  uint32_t seed = 900;
  for (const PoolCase& c : pool_cases()) {
    const Tensor x = random_f64(c.x, seed++);
    const Tensor y = max_pool2d(x, c.ksize, c.strides, c.padding);
    const Tensor dy = random_f64(y.shape(), seed++), dx = random_f64(c.x, seed++);
    const Tensor xs = sizes_of(c.x);
    // orig_input and orig_output only choose the argmax: zero gradient.
    rs.push_back(
        {"MaxPoolGrad " + c.name,
         [c](V v) { return max_pool_grad(v[0], v[1], v[2], c.ksize, c.strides, c.padding); },
         {x, y, dy}});
    rs.push_back(
        {"MaxPoolGradGrad " + c.name,
         [c](V v) { return max_pool_grad_grad(v[0], v[1], v[2], c.ksize, c.strides, c.padding); },
         {x, y, dx}});
    rs.push_back({"AvgPoolGrad " + c.name,
                  [c, xs](V v) { return avg_pool_grad(xs, v[0], c.ksize, c.strides, c.padding); },
                  {dy}});
  }
  run(rs);
}

// Second derivatives through nested tapes: the inner gradient's ops are
// recorded by the outer tape (the backward ops and their rules).
TEST(GradRulesNn, SecondOrderThroughNestedTapes) {
  run({
      {"d/dx sum(conv2d(x, f)^2)",
       [](V v) {
         GradientTape inner;
         inner.watch(v[0]);
         Tensor y = conv2d(v[0], v[1], {2, 1}, "SAME");
         return inner.gradient(reduce_sum(y * y), v[0]);
       },
       {random_f64({1, 5, 4, 2}, 1000), random_f64({3, 2, 2, 3}, 1001)}},
      {"d/df sum(depthwise(x, f)^2)",
       [](V v) {
         GradientTape inner;
         inner.watch(v[1]);
         Tensor y = depthwise_conv2d(v[0], v[1], {1, 1}, "VALID", {2, 1});
         return inner.gradient(reduce_sum(y * y), v[1]);
       },
       {random_f64({1, 6, 4, 2}, 1002), random_f64({2, 2, 2, 2}, 1003)}},
      {"d/dx sum(max_pool(x)^2)",
       [](V v) {
         GradientTape inner;
         inner.watch(v[0]);
         Tensor y = max_pool2d(v[0], {3, 3}, {2, 2}, "SAME");
         return inner.gradient(reduce_sum(y * y * y), v[0]);
       },
       {random_f64({1, 5, 5, 2}, 1004)}},
      {"d/dx sum(avg_pool(x)^3)",
       [](V v) {
         GradientTape inner;
         inner.watch(v[0]);
         Tensor y = avg_pool2d(v[0], {2, 3}, {1, 2}, "SAME");
         return inner.gradient(reduce_sum(y * y * y), v[0]);
       },
       {random_f64({1, 4, 5, 2}, 1005)}},
      {"d/dx sum(gather(x^2))",
       [](V v) {
         GradientTape inner;
         inner.watch(v[0]);
         Tensor y = gather(v[0] * v[0], v[1], 1);
         return inner.gradient(reduce_sum(y * y), v[0]);
       },
       {random_f64({2, 4}, 1006), Tensor({3, 0, 3})}},
      {"d/dx prod(x) (rows)",
       [](V v) {
         GradientTape inner;
         inner.watch(v[0]);
         return inner.gradient(reduce_sum(reduce_prod(v[0], {1})), v[0]);
       },
       {Tensor({{0.5, -1.5, 2.0}, {0.75, 1.0, -2.0}})}},
  });
}

// Unknown batch and spatial dims in a Function (input_signature): the
// backward ops take their sizes from Shape ops and resolve per call.
TEST(GradRulesNn, UnknownDimsInFunction) {
  FunctionOptions opts;
  opts.input_signature = std::vector<ArgSpec>{ArgSpec{DType::kFloat64, Shape{-1, -1, 5, 2}, "x"},
                                              ArgSpec{DType::kFloat64, Shape{3, 3, 2, 2}, "f"}};
  auto body = [](const Tensor& x, const Tensor& f) {
    GradientTape tape;
    tape.watch(x);
    tape.watch(f);
    Tensor y = conv2d(x, f, {2, 2}, "SAME");
    Tensor z = depthwise_conv2d(x, f, {1, 1}, "SAME");
    Tensor loss = reduce_sum(max_pool2d(y, {2, 2}, {1, 1}, "SAME")) +
                  reduce_sum(avg_pool2d(z * z, {3, 3}, {2, 2}, "SAME")) +
                  reduce_sum(gather(x, Tensor({1, 0, 1}), 2)) +
                  reduce_sum(gather(x * x, Tensor({3, 0, 3}), 1));  // unknown axis dim
    return tape.gradient(loss, {x, f});
  };
  Function fn(
      [&](const std::vector<Value>& a) {
        auto g = body(a[0].tensor(), a[1].tensor());
        return Value::list({g[0], g[1]});
      },
      opts);
  for (int64_t h : {4, 7}) {
    SCOPED_TRACE(h);
    const Tensor x = random_f64({2, h, 5, 2}, 1100 + static_cast<uint32_t>(h));
    const Tensor f = random_f64({3, 3, 2, 2}, 1110);
    const auto want = body(x, f);
    const Value got = fn({x, f});
    testing::expect_all_close(got.items()[0].tensor(), want[0], 1e-12, "dx");
    testing::expect_all_close(got.items()[1].tensor(), want[1], 1e-12, "df");
  }
}

// Convolution inputs of unknown rank still differentiate (the sizes are
// Shape ops); reductions and gathers need the rank and say so.
TEST(GradRulesNn, UnknownRank) {
  FunctionOptions opts;
  opts.input_signature = std::vector<ArgSpec>{ArgSpec{DType::kFloat64, Shape::unknown_rank(), "x"}};
  Function conv_fn(
      [](const std::vector<Value>& a) {
        Tensor x = a[0].tensor();
        GradientTape tape;
        tape.watch(x);
        Tensor f = reshape(range(1.0, 9.0, 1.0, DType::kFloat64), {2, 2, 1, 2});
        Tensor loss = reduce_sum(conv2d(x, f, {1, 1}, "VALID")) +
                      reduce_sum(max_pool2d(x, {2, 2}, {1, 1}, "VALID"));
        return Value(tape.gradient(loss, x));
      },
      opts);
  const Tensor x = random_f64({1, 3, 3, 1}, 1200);
  Tensor want;
  {
    GradientTape tape;
    tape.watch(x);
    Tensor f = reshape(range(1.0, 9.0, 1.0, DType::kFloat64), {2, 2, 1, 2});
    Tensor loss = reduce_sum(conv2d(x, f, {1, 1}, "VALID")) +
                  reduce_sum(max_pool2d(x, {2, 2}, {1, 1}, "VALID"));
    want = tape.gradient(loss, x);
  }
  testing::expect_all_close(conv_fn({x}).tensor(), want, 1e-12, "unknown-rank conv");

  Function prod_fn(
      [](const std::vector<Value>& a) {
        Tensor x = a[0].tensor();
        GradientTape tape;
        tape.watch(x);
        return Value(tape.gradient(reduce_prod(x, {0}), x));
      },
      opts);
  expect_error([&] { prod_fn({x}); }, Code::kUnimplemented, {"Prod gradient", "unknown rank"});
  Function gather_fn(
      [](const std::vector<Value>& a) {
        Tensor x = a[0].tensor();
        GradientTape tape;
        tape.watch(x);
        return Value(tape.gradient(gather(x, Tensor({0})), x));
      },
      opts);
  expect_error([&] { gather_fn({x}); }, Code::kUnimplemented, {"GatherV2 gradient", "known rank"});
}

// ---- error paths of the backward ops ----

TEST(GradRulesNn, BackwardOpErrors) {
  const Tensor f = random_f64({3, 3, 2, 4}, 1300);
  const Tensor x = random_f64({1, 5, 5, 2}, 1301);
  const Tensor dy = random_f64({1, 3, 3, 4}, 1302);
  const Tensor sizes = Tensor({1, 5, 5, 2});
  const Ints s1 = {1, 1};
  // Well-formed calls work.
  EXPECT_EQ(conv2d_backprop_input(sizes, f, dy, s1, "VALID").shape(), Shape({1, 5, 5, 2}));
  EXPECT_EQ(conv2d_backprop_filter(x, Tensor({3, 3, 2, 4}), dy, s1, "VALID").shape(),
            Shape({3, 3, 2, 4}));
  expect_error(
      [&] {
        conv2d_backprop_input(Tensor({1, 5, 5}), f, dy, s1, "VALID");
      },
      Code::kInvalidArgument, {"Conv2DBackpropInput", "input_sizes", "4 sizes"});
  expect_error(
      [&] {
        conv2d_backprop_input(Tensor({1.0, 5.0, 5.0, 2.0}), f, dy, s1, "VALID");
      },
      Code::kInvalidArgument, {"input_sizes must be int32 or int64", "float64"});
  expect_error(
      [&] {
        conv2d_backprop_input(Tensor({1, -5, 5, 2}), f, dy, s1, "VALID");
      },
      Code::kInvalidArgument, {"non-negative"});
  expect_error([&] { conv2d_backprop_input(sizes, f, dy, s1, "SAME"); }, Code::kInvalidArgument,
               {"out_backprop height 3 does not match", "output height 5"});
  expect_error(
      [&] {
        conv2d_backprop_input(Tensor({1, 5, 5, 3}), f, dy, s1, "VALID");
      },
      Code::kInvalidArgument, {"input channels 3", "in_channels 2"});
  expect_error(
      [&] {
        conv2d_backprop_input(Tensor({2, 5, 5, 2}), f, dy, s1, "VALID");
      },
      Code::kInvalidArgument, {"batch 2"});
  expect_error([&] { conv2d_backprop_input(sizes, cast(f, DType::kFloat32), dy, s1, "VALID"); },
               Code::kInvalidArgument, {"Conv2DBackpropInput", "float64"});
  expect_error(
      [&] {
        conv2d_backprop_input(sizes, reshape(f, {9, 2, 4}), dy, s1, "VALID");
      },
      Code::kInvalidArgument, {"filter must be 4-D"});
  expect_error(
      [&] {
        conv2d_backprop_filter(x, Tensor({3, 3, 2, 5}), dy, s1, "VALID");
      },
      Code::kInvalidArgument, {"Conv2DBackpropFilter", "out_backprop has 4 channels"});
  expect_error(
      [&] {
        conv2d_backprop_filter(x, Tensor({3, 3, 2, 4}), dy, {0, 1}, "VALID");
      },
      Code::kInvalidArgument, {"strides"});
  expect_error(
      [&] {
        conv2d_backprop_filter(x, Tensor({3, 3, 2, 4}), dy, s1, "FULL");
      },
      Code::kInvalidArgument, {"padding"});
  expect_error(
      [&] {
        conv2d_backprop_filter(x, Tensor({9, 9, 2, 4}), dy, s1, "VALID");
      },
      Code::kInvalidArgument, {"larger than the input"});
  expect_error(
      [&] {
        depthwise_conv2d_backprop_input(sizes, random_f64({3, 3, 2, 3}, 1), dy, s1, "VALID");
      },
      Code::kInvalidArgument, {"DepthwiseConv2dNativeBackpropInput", "channels * multiplier = 6"});
  // Pooling.
  const Tensor y = max_pool2d(x, {2, 2}, {2, 2}, "VALID");
  expect_error(
      [&] {
        max_pool_grad(x, y, x, {2, 2}, {2, 2}, "VALID");
      },
      Code::kInvalidArgument, {"MaxPoolGrad", "grad shape", "orig_output shape"});
  expect_error(
      [&] {
        max_pool_grad(x, x, x, {2, 2}, {2, 2}, "VALID");
      },
      Code::kInvalidArgument, {"orig_output height 5 does not match"});
  expect_error(
      [&] {
        max_pool_grad_grad(x, y, y, {2, 2}, {2, 2}, "VALID");
      },
      Code::kInvalidArgument, {"MaxPoolGradGrad", "orig_input shape"});
  expect_error(
      [&] {
        max_pool_grad(cast(x, DType::kInt32), cast(y, DType::kInt32), cast(y, DType::kInt32),
                      {2, 2}, {2, 2}, "VALID");
      },
      Code::kInvalidArgument, {"float32 or float64", "int32"});
  expect_error(
      [&] {
        avg_pool_grad(Tensor({1, 6, 6, 2}), y, {2, 2}, {2, 2}, "SAME");
      },
      Code::kInvalidArgument, {"AvgPoolGrad", "grad height 2 does not match", "3"});
  expect_error(
      [&] {
        avg_pool_grad(Tensor({1, 4, 4, 3}), y, {2, 2}, {2, 2}, "SAME");
      },
      Code::kInvalidArgument, {"batch and channels"});
  // UnsortedSegmentSum.
  const Tensor d = random_f64({4, 2}, 1303);
  expect_error(
      [&] {
        unsorted_segment_sum(d, Tensor({0, 1, 5, 1}), 3);
      },
      Code::kInvalidArgument, {"UnsortedSegmentSum", "segment_ids[2] = 5", "[0, 3)"});
  expect_error(
      [&] {
        unsorted_segment_sum(d, Tensor({0, 1, 2}), 3);
      },
      Code::kInvalidArgument, {"must be a prefix of data shape"});
  expect_error(
      [&] {
        unsorted_segment_sum(d, Tensor({0, 1, 2, 0}), -1);
      },
      Code::kInvalidArgument, {"num_segments must be non-negative"});
  expect_error(
      [&] {
        unsorted_segment_sum(d, Tensor({0, 1, 2, 0}), Tensor({3}));
      },
      Code::kInvalidArgument, {"num_segments must be a scalar"});
  expect_error(
      [&] {
        unsorted_segment_sum(d, Tensor({0.0, 1.0, 2.0, 0.0}), 3);
      },
      Code::kInvalidArgument, {"segment_ids must be int32 or int64"});
  expect_error(
      [&] {
        unsorted_segment_sum(Tensor({true, false}), Tensor({0, 1}), 3);
      },
      Code::kInvalidArgument, {"data must have a numeric dtype"});
}

// Gradients of gathered rows accumulate in float32 too (the segment sum
// kernel in the gradient is not a float64 path).
TEST(GradRulesNn, GatherGradientValues) {
  Tensor p({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  GradientTape tape;
  tape.watch(p);
  Tensor y = gather(p, Tensor({2, 0, 2, 2}));
  Tensor g =
      tape.gradient(reduce_sum(y * Tensor({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}, {7.f, 8.f}})), p);
  expect_tensor_near<float>(g, {3, 2}, {3, 4, 0, 0, 13, 16});
}

}  // namespace
}  // namespace kiln
