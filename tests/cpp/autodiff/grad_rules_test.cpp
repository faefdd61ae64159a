// Table-driven numeric gradient checks: one record per op with a gradient
// rule, run eagerly, inside a kiln::Function and in float32 (see
// grad_check.h for the method and the tolerances).
#include <functional>

#include "grad_check.h"

namespace kiln {
namespace {

using testing::check_gradients;
using testing::FnUnderTest;
using testing::GradCheckOptions;
using testing::random_away_from_zero;
using testing::random_f64;

struct Record {
  std::string name;
  FnUnderTest f;
  std::vector<Tensor> inputs;
  GradCheckOptions options = {};
};

using V = const std::vector<Tensor>&;

std::vector<Record> unary_records() {
  const Shape s{2, 3};
  const Tensor any = random_f64(s, 1), pos = random_f64(s, 2, 0.3, 2.0);
  const Tensor away = random_away_from_zero(s, 3);
  return {
      {"Identity", [](V x) { return identity(x[0]); }, {any}},
      {"Neg", [](V x) { return negative(x[0]); }, {any}},
      {"Abs", [](V x) { return abs(x[0]); }, {away}},
      {"Square", [](V x) { return square(x[0]); }, {any}},
      {"Sqrt", [](V x) { return sqrt(x[0]); }, {pos}},
      {"Rsqrt", [](V x) { return rsqrt(x[0]); }, {pos}},
      {"Exp", [](V x) { return exp(x[0]); }, {any}},
      {"Log", [](V x) { return log(x[0]); }, {pos}},
      {"Expm1", [](V x) { return expm1(x[0]); }, {any}},
      {"Erf", [](V x) { return erf(x[0]); }, {any}},
      {"Log1p", [](V x) { return log1p(x[0]); }, {pos}},
      {"Tanh", [](V x) { return tanh(x[0]); }, {any}},
      {"Sigmoid", [](V x) { return sigmoid(x[0]); }, {any}},
      {"Relu", [](V x) { return relu(x[0]); }, {away}},
      {"Sin", [](V x) { return sin(x[0]); }, {any}},
      {"Cos", [](V x) { return cos(x[0]); }, {any}},
      {"Fill",
       [](V x) {
         return fill({2, 3}, x[0]);
       },
       {Tensor(0.5)}},
  };
}

std::vector<Record> binary_records() {
  // Shapes exercising broadcasting: same, row vector, column, scalar, rank 3.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{2, 3}, {}}, {{4, 1, 3}, {2, 1}}};
  std::vector<Record> out;
  uint32_t seed = 10;
  for (const auto& [sa, sb] : shapes) {
    const std::string tag = " " + sa.to_string() + "x" + sb.to_string();
    const Tensor a = random_f64(sa, seed++), b = random_f64(sb, seed++);
    const Tensor bp = random_f64(sb, seed++, 0.5, 2.0), ap = random_f64(sa, seed++, 0.5, 2.0);
    // Maximum/Minimum: operands well apart so no ties or near-ties.
    const Tensor big = random_f64(sa, seed++, 2, 3);
    const Tensor small = random_away_from_zero(sb, seed++, 0.1, 1.0);
    out.push_back({"Add" + tag, [](V x) { return x[0] + x[1]; }, {a, b}});
    out.push_back({"Sub" + tag, [](V x) { return x[0] - x[1]; }, {a, b}});
    out.push_back({"Mul" + tag, [](V x) { return x[0] * x[1]; }, {a, b}});
    out.push_back({"Div" + tag, [](V x) { return x[0] / x[1]; }, {a, bp}});
    out.push_back({"Pow" + tag, [](V x) { return pow(x[0], x[1]); }, {ap, b}});
    out.push_back({"Maximum" + tag, [](V x) { return maximum(x[0], x[1]); }, {big, small}});
    out.push_back({"Minimum" + tag, [](V x) { return minimum(x[0], x[1]); }, {big, small}});
    out.push_back(
        {"Maximum(mixed)" + tag, [](V x) { return maximum(x[0] - 2.5, x[1]); }, {big, small}});
    out.push_back(
        {"SquaredDifference" + tag, [](V x) { return squared_difference(x[0], x[1]); }, {a, b}});
    out.push_back({"FloorMod" + tag,
                   [](V x) { return floormod(x[0], x[1] + 2.0); },
                   {random_f64(sa, seed++, 0.1, 0.9), random_f64(sb, seed++, 0, 0.5)}});
  }
  return out;
}

std::vector<Record> select_cast_records() {
  const Tensor cond({{true, false, true}, {false, false, true}});
  return {
      {"Select",
       [](V x) { return where(x[0], x[1], x[2]); },
       {cond, random_f64({2, 3}, 40), random_f64({3}, 41)}},
      {"Select(broadcast cond)",
       [](V x) { return where(x[0], x[1], x[2]); },
       {Tensor({true, false, true}), random_f64({2, 3}, 42), random_f64({2, 1}, 43)}},
      // t spread over [-2, 2], bounds -0.5 and [0.3, 0.6, 0.9]: no value near a bound.
      {"ClipByValue",
       [](V x) { return clip_by_value(x[0], x[1], x[2]); },
       {Tensor({{-2.0, -0.1, 0.2}, {1.5, 0.45, -1.0}}), Tensor(-0.5), Tensor({0.3, 0.6, 0.9})}},
      {"Cast(float64->float32->float64)",
       [](V x) { return cast(cast(x[0], DType::kFloat32), x[0].dtype()) * 1.0; },
       {random_f64({2, 3}, 44)},
       {.eps = 1e-2, .tol_f64 = 1e-4}},
  };
}

std::vector<Record> shape_records() {
  const Tensor a = random_f64({2, 3, 4}, 50);
  return {
      {"Reshape",
       [](V x) {
         return reshape(x[0], {6, 4}) * x[1];
       },
       {a, random_f64({4}, 51)}},
      {"ExpandDims",
       [](V x) { return expand_dims(x[0], 1) * x[1]; },
       {random_f64({2, 3}, 52), random_f64({2, 4, 3}, 53)}},
      {"Squeeze", [](V x) { return squeeze(x[0], {1}); }, {random_f64({2, 1, 3}, 54)}},
      {"Transpose",
       [](V x) {
         return transpose(x[0], {2, 0, 1});
       },
       {a}},
      {"Transpose(reverse)", [](V x) { return transpose(x[0]); }, {a}},
      {"Concat",
       [](V x) {
         return concat({x[0], x[1], x[2]}, 1);
       },
       {random_f64({2, 1, 4}, 55), random_f64({2, 2, 4}, 56), a}},
      {"Concat(negative axis)",
       [](V x) {
         return concat({x[0], x[0] * x[1]}, -1);
       },
       {random_f64({2, 3}, 57), random_f64({2, 3}, 58)}},
      {"Stack",
       [](V x) {
         return stack({x[0], x[1]}, 1);
       },
       {random_f64({2, 3}, 59), random_f64({2, 3}, 60)}},
      {"Unstack",
       [](V x) {
         std::vector<Tensor> p = unstack(x[0], 1);
         return p[0] * 2.0 + p[2];  // p[1] unused: its gradient is zero
       },
       {random_f64({2, 3, 2}, 61)}},
      {"Split",
       [](V x) {
         std::vector<Tensor> p = split(x[0], {1, 2}, 1);
         return p[1] * p[1];
       },
       {a}},
      {"Slice",
       [](V x) {
         return slice(x[0], {1, 0, 1}, {1, -1, 2});
       },
       {a}},
      {"StridedSlice(step 2)",
       [](V x) {
         return strided_slice(x[0], {0, 1}, {2, 4}, {1, 2});
       },
       {a}},
      {"StridedSlice(negative step, shrink)",
       [](V x) {
         return strided_slice(x[0], {1, 0, 3}, {0, 3, 0}, {1, 1, -2}, 0, 0, 0, 0, 1);
       },
       {a}},
      {"StridedSlice(index)",
       [](V x) {
         return index(x[0], {Slice().step(-1), kNewAxis, 2, kEllipsis});
       },
       {a}},
      {"Gather",
       [](V x) { return gather(x[0], x[1]); },
       {random_f64({4, 3}, 62), Tensor({{3, 0}, {3, 1}})}},
      {"Gather(1-D)",
       [](V x) { return gather(x[0], x[1]); },
       {random_f64({5}, 63), Tensor({4, 4, 2})}},
      {"Tile",
       [](V x) {
         return tile(x[0], {2, 1, 3});
       },
       {random_f64({2, 3, 2}, 64)}},
      {"BroadcastTo",
       [](V x) {
         return broadcast_to(x[0], {2, 4, 3});
       },
       {random_f64({4, 1}, 65)}},
      {"Pad",
       [](V x) {
         return pad(x[0], {{1, 0}, {2, 1}}, x[1]);
       },
       {random_f64({2, 3}, 66), Tensor(0.25)}},
  };
}

std::vector<Record> reduce_nn_records() {
  const Tensor a = random_f64({2, 3, 4}, 70);  // distinct values: no max/min ties
  return {
      {"ReduceSum(all)", [](V x) { return reduce_sum(x[0]); }, {a}},
      {"ReduceSum(axis 1)", [](V x) { return reduce_sum(x[0], {1}); }, {a}},
      {"ReduceSum(keepdims)",
       [](V x) {
         return reduce_sum(x[0], {0, 2}, true);
       },
       {a}},
      {"ReduceMean", [](V x) { return reduce_mean(x[0], {-1}); }, {a}},
      {"ReduceMean(all)", [](V x) { return reduce_mean(x[0]); }, {a}},
      {"ReduceMax", [](V x) { return reduce_max(x[0], {1}); }, {a}},
      {"ReduceMin(keepdims)", [](V x) { return reduce_min(x[0], {0}, true); }, {a}},
      {"Cumsum", [](V x) { return cumsum(x[0], 1); }, {a}},
      {"Cumsum(exclusive reverse)", [](V x) { return cumsum(x[0], 2, true, true); }, {a}},
      {"MatMul",
       [](V x) { return matmul(x[0], x[1]); },
       {random_f64({3, 4}, 71), random_f64({4, 2}, 72)}},
      {"MatMul(transpose_a)",
       [](V x) { return matmul(x[0], x[1], true, false); },
       {random_f64({4, 3}, 73), random_f64({4, 2}, 74)}},
      {"MatMul(transpose_b)",
       [](V x) { return matmul(x[0], x[1], false, true); },
       {random_f64({3, 4}, 75), random_f64({2, 4}, 76)}},
      {"MatMul(both)",
       [](V x) { return matmul(x[0], x[1], true, true); },
       {random_f64({4, 3}, 77), random_f64({2, 4}, 78)}},
      {"MatMul(batch broadcast)",
       [](V x) { return matmul(x[0], x[1]); },
       {random_f64({2, 3, 4}, 79), random_f64({4, 5}, 80)}},
      {"MatMul(batch dim 1)",
       [](V x) { return matmul(x[0], x[1], false, true); },
       {random_f64({1, 3, 4}, 81), random_f64({2, 5, 4}, 82)}},
      {"BiasAdd",
       [](V x) { return bias_add(x[0], x[1]); },
       {random_f64({2, 3, 4}, 83), random_f64({4}, 84)}},
      {"Softmax", [](V x) { return softmax(x[0]); }, {random_f64({2, 5}, 85, -2, 2)}},
      {"LogSoftmax", [](V x) { return log_softmax(x[0]); }, {random_f64({3, 4}, 86, -2, 2)}},
  };
}

void run(const std::vector<Record>& records) {
  for (const Record& r : records) check_gradients(r.name, r.f, r.inputs, r.options);
}

TEST(GradRules, Unary) {
  run(unary_records());
}
TEST(GradRules, Binary) {
  run(binary_records());
}
TEST(GradRules, SelectCastClip) {
  run(select_cast_records());
}
TEST(GradRules, ShapeOps) {
  run(shape_records());
}
TEST(GradRules, ReduceAndNn) {
  run(reduce_nn_records());
}

// stop_gradient(x) * x: only the unstopped factor carries a gradient.
TEST(GradRules, StopGradientIsConstant) {
  Tensor x({1.0, 2.0, 3.0});
  GradientTape tape;
  tape.watch(x);
  Tensor y = reduce_sum(x * stop_gradient(x));
  testing::expect_tensor_near<double>(tape.gradient(y, x), {3}, {1, 2, 3});
}

// Max with ties shares the gradient evenly (TensorFlow's rule).
TEST(GradRules, ReduceMaxTiesShareTheGradient) {
  Tensor x({{1.0, 3.0, 3.0}, {-2.0, -2.0, 0.5}});
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = reduce_max(x, {1});
  testing::expect_tensor_near<double>(tape.gradient(y, x), {2, 3}, {0, 0.5, 0.5, 0, 0, 1});
  Tensor z = reduce_min(x, {1});
  testing::expect_tensor_near<double>(tape.gradient(z, x), {2, 3}, {1, 0, 0, 0.5, 0.5, 0});
}

// Maximum/Minimum ties: the gradient goes to the first operand.
TEST(GradRules, MaximumTieGoesToFirstOperand) {
  Tensor a({1.0, 2.0}), b({1.0, 3.0});
  GradientTape tape(true);
  tape.watch(a);
  tape.watch(b);
  Tensor y = maximum(a, b);
  auto g = tape.gradient(y, {a, b});
  testing::expect_tensor_near<double>(g[0], {2}, {1, 0});
  testing::expect_tensor_near<double>(g[1], {2}, {0, 1});
}

// Cast: float->float carries the gradient back in the source dtype;
// integer casts are not differentiable (None).
TEST(GradRules, CastGradients) {
  Tensor x({1.5f, -2.f});
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = cast(x, DType::kFloat64) * 3.0;
  Tensor g = tape.gradient(y, x);
  testing::expect_tensor_near<float>(g, {2}, {3, 3});
  Tensor yi = cast(cast(x, DType::kInt32), DType::kFloat32);
  EXPECT_FALSE(tape.gradient(yi, x).defined());
}

// Relu at exactly 0 and Abs at 0: TensorFlow's conventions (0 and 0).
TEST(GradRules, KinksAtZero) {
  Tensor x({0.0, -1.0, 2.0});
  GradientTape tape(true);
  tape.watch(x);
  testing::expect_tensor_near<double>(tape.gradient(relu(x), x), {3}, {0, 0, 1});
  testing::expect_tensor_near<double>(tape.gradient(abs(x), x), {3}, {0, -1, 1});
}

TEST(GradRules, NonDifferentiableOpsAreMarked) {
  for (OpId id : {OpId::Sign, OpId::Equal, OpId::Less, OpId::LogicalAnd, OpId::BitwiseAnd,
                  OpId::ArgMax, OpId::ArgMin, OpId::ShapeOf, OpId::Size, OpId::Rank,
                  OpId::RandomUniform, OpId::RandomNormal, OpId::OneHot, OpId::StopGradient,
                  OpId::ZerosLike, OpId::OnesLike, OpId::Floor, OpId::Range})
    EXPECT_TRUE(op_def(id).has(kNoGradient)) << op_def(id).type_name;
  for (OpId id : {OpId::Add, OpId::MatMul, OpId::ReadVariable, OpId::Gather, OpId::Softmax})
    EXPECT_NE(op_def(id).grad, nullptr) << op_def(id).type_name;
}

// StridedSlice with begin/end/strides from arguments: inside the Function
// they are placeholders, so the rule cannot read them (StridedSliceGrad
// takes them as inputs). StridedSliceGrad's own rule, and second order.
TEST(GradRules, StridedSliceDynamicSpecAndSecondOrder) {
  const Tensor a = random_f64({2, 3, 4}, 90);
  const Attrs shrink1 = {int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{1}};
  run({
      {"StridedSlice(spec from arguments)",
       [](V x) { return strided_slice(x[0], x[1], x[2], x[3]); },
       {a, Tensor({1, 0, 3}), Tensor({2, 3, 0}), Tensor({1, 2, -2})}},
      {"StridedSlice(int64 spec from arguments, masks)",
       [](V x) { return strided_slice(x[0], x[1], x[2], x[3], 2, 1, 0, 4, 1); },
       {a, Tensor({int64_t{-1}, int64_t{5}, int64_t{0}, int64_t{1}}),
        Tensor({int64_t{0}, int64_t{0}, int64_t{0}, int64_t{-1}}),
        Tensor({int64_t{1}, int64_t{-1}, int64_t{1}, int64_t{2}})}},
      {"StridedSlice(x[i], i an argument)",
       [](V x) {
         return strided_slice(x[0], stack({x[1]}), stack({x[1] + 1}), Tensor({1}), 0, 0, 0, 0, 1);
       },
       {a, Tensor(1)}},
      {"StridedSlice(x[i], i = -1)",
       [](V x) {
         return strided_slice(x[0], stack({x[1]}), stack({x[1] + 1}), Tensor({1}), 0, 0, 0, 0, 1);
       },
       {a, Tensor(-1)}},
      {"StridedSliceGrad",
       [shrink1](V x) {
         return call_op1(OpId::StridedSliceGrad,
                         {Tensor({3, 4}), Tensor({0, 3}), Tensor({0, 0}), Tensor({1, -2}), x[0]},
                         {int64_t{1}, int64_t{3}, int64_t{0}, int64_t{0}, int64_t{0}});
       },
       {random_f64({3, 2}, 91)}},
      {"StridedSliceGrad(begin from an argument)",
       [shrink1](V x) {
         return call_op1(OpId::StridedSliceGrad,
                         {Tensor({4, 3}), stack({x[1]}), stack({x[1] + 1}), Tensor({1}), x[0]},
                         shrink1);
       },
       {random_f64({3}, 92), Tensor(2)}},
      {"d/dx sum(x[1:, ::-2]^3)",
       [](V x) {
         GradientTape inner;
         inner.watch(x[0]);
         Tensor y = index(x[0], {Slice(1, None), kEllipsis, Slice().step(-2)});
         return inner.gradient(reduce_sum(y * y * y), x[0]);
       },
       {a}},
      {"d/dx sum(x[i]^3), i an argument",
       [](V x) {
         GradientTape inner;
         inner.watch(x[0]);
         Tensor y =
             strided_slice(x[0], stack({x[1]}), stack({x[1] + 1}), Tensor({1}), 0, 0, 0, 0, 1);
         return inner.gradient(reduce_sum(y * y * y) * 0.5, x[0]);
       },
       {a, Tensor(1)}},
  });
}

// x[i] with x of unknown leading dim and i an argument: the shape input of
// StridedSliceGrad is a Shape op, resolved per call.
TEST(GradRules, StridedSliceUnknownShapeInFunction) {
  FunctionOptions opts;
  opts.input_signature = std::vector<ArgSpec>{ArgSpec{DType::kFloat64, Shape{-1, 3}, "x"},
                                              ArgSpec{DType::kInt32, Shape{}, "i"}};
  Function f(
      [](const std::vector<Value>& args) {
        Tensor x = args[0].tensor(), i = args[1].tensor();
        GradientTape tape;
        tape.watch(x);
        Tensor row = strided_slice(x, stack({i}), stack({i + 1}), Tensor({1}), 0, 0, 0, 0, 1);
        Tensor y = reduce_sum(row * row * Tensor({1.0, 2.0, 3.0}));
        return Value(tape.gradient(y, x));
      },
      opts);
  Tensor x({{1.0, 2.0, 3.0}, {-1.0, 0.5, 2.0}, {4.0, -2.0, 1.0}});
  // d/dx_i sum(w * x_i^2) = 2 w x_i on row i, 0 elsewhere.
  testing::expect_tensor_near<double>(f({x, Tensor(1)}).tensor(), {3, 3},
                                      {0, 0, 0, -2.0, 2.0, 12.0, 0, 0, 0});
  testing::expect_tensor_near<double>(f({x, Tensor(-3)}).tensor(), {3, 3},
                                      {2.0, 8.0, 18.0, 0, 0, 0, 0, 0, 0});
  testing::expect_tensor_near<double>(f({index(x, {Slice(None, 2)}), Tensor(1)}).tensor(), {2, 3},
                                      {0, 0, 0, -2.0, 2.0, 12.0});
  EXPECT_EQ(f.tracing_count(), 1);
  testing::expect_error(
      [&] {
        f({x, Tensor(3)});
      },
      Code::kInvalidArgument, {"StridedSlice", "index 3", "size 3"});
}

// Gradients in a function traced with unknown dims (input_signature).
TEST(GradRules, UnknownBatchDimInFunction) {
  FunctionOptions opts;
  opts.input_signature = std::vector<ArgSpec>{ArgSpec{DType::kFloat64, Shape{-1, 3}, "x"},
                                              ArgSpec{DType::kFloat64, Shape{3}, "b"}};
  Function f(
      [](const std::vector<Value>& args) {
        Tensor x = args[0].tensor(), b = args[1].tensor();
        GradientTape tape;
        tape.watch(x);
        tape.watch(b);
        Tensor y = reduce_mean(square(x + b)) + reduce_sum(reduce_max(x, {1}));
        auto g = tape.gradient(y, {x, b});
        return Value::list({g[0], g[1]});
      },
      opts);
  Tensor x({{1.0, 2.0, 5.0}, {-1.0, 4.0, 0.0}}), b({0.5, -0.5, 1.0});
  Value r = f({x, b});
  // mean over 6 elements: d/dx = 2 (x + b) / 6, plus the row max indicator.
  testing::expect_tensor_near<double>(r.items()[0].tensor(), {2, 3},
                                      {0.5, 0.5, 1 + 2.0, 1.0 / 6 * -1, 7.0 / 6 + 1, 1.0 / 3});
  testing::expect_tensor_near<double>(r.items()[1].tensor(), {3},
                                      {(1.5 - 0.5) / 3, (1.5 + 3.5) / 3, (6.0 + 1.0) / 3});
}

}  // namespace
}  // namespace kiln
