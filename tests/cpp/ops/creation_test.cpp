// Creation ops: constant, fill, zeros/ones(_like), range, identity.
#include <cstdint>
#include <limits>

#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using testing::expect_tensor_near;

// A scalar view at a nonzero byte offset into a larger buffer.
template <typename T>
Tensor offset_scalar(const Tensor& base, int64_t index) {
  return Tensor::from_buffer(base.buffer(), base.byte_offset() + index * sizeof(T), dtype_v<T>,
                             Shape());
}

// Like Tensor::from_vector, also for std::vector<bool>.
template <typename T>
Tensor make(const std::vector<T>& values, const Shape& shape) {
  Tensor t = Tensor::empty(dtype_v<T>, shape);
  T* p = t.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

// ---- Const / constant ----

TEST(Const, ValueRidesInTheAttr) {
  const OpDef& d = op_def(OpId::Const);
  EXPECT_TRUE(d.inputs.empty());
  EXPECT_EQ(d.outputs.size(), 1u);
  Tensor v({1, 2, 3});
  std::vector<Tensor> out = call_op(OpId::Const, {}, {v});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].is_same(v));
  expect_error([] { call_op(OpId::Const, {}); }, Code::kInvalidArgument,
               {"Const", "missing required attribute 'value'"});
  expect_error([] { call_op(OpId::Const, {}, {Tensor()}); }, Code::kInvalidArgument,
               {"Const", "concrete"});
}

TEST(Const, ConstantFronts) {
  Tensor t({1, 2, 3});
  EXPECT_TRUE(constant(t).is_same(t));
  expect_tensor<int64_t>(constant(7, DType::kInt64), {}, {7});
  expect_tensor<double>(constant(2.5, DType::kFloat64), {}, {2.5});
  expect_tensor<bool>(constant(true, DType::kBool), {}, {true});
  expect_tensor<int8_t>(constant(-3, DType::kInt8, {2, 2}), {2, 2}, {-3, -3, -3, -3});
  expect_tensor<float>(constant(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}), {2, 3},
                       {1, 2, 3, 4, 5, 6});
  expect_tensor<std::string>(constant(std::vector<std::string>{"a", "b"}, {2}), {2}, {"a", "b"});
  expect_tensor<std::string>(constant(std::vector<const char*>{"c"}, {1}), {1}, {"c"});
  expect_tensor<bool>(constant(std::vector<bool>{true, false}, {2, 1}), {2, 1}, {true, false});
  expect_tensor<int32_t>(constant(std::vector<int>{}, {0, 2}), {0, 2}, {});
  expect_error([] { constant(Tensor()); }, Code::kInvalidArgument, {"undefined"});
  expect_error([] { constant(2.5, DType::kInt32); }, Code::kInvalidArgument, {"int32"});
  expect_error([] { constant(300, DType::kUInt8); }, Code::kInvalidArgument, {"uint8"});
  expect_error(
      [] {
        constant(std::vector<int>{1, 2, 3}, {2, 2});
      },
      Code::kInvalidArgument, {"3 values"});
}

// ---- Fill ----

template <typename T>
void check_fill_dtype(T v) {
  SCOPED_TRACE(dtype_name(dtype_v<T>));
  Tensor value = make<T>({v}, Shape());
  expect_tensor<T>(fill({2, 3}, value), {2, 3}, std::vector<T>(6, v));
  expect_tensor<T>(fill(Tensor({3}), value), {3}, std::vector<T>(3, v));
  expect_tensor<T>(fill(Tensor::from_vector<int64_t>({}, {0}), value), {}, {v});
  expect_tensor<T>(fill({4, 0, 2}, value), {4, 0, 2}, {});
}

TEST(Fill, EveryDtype) {
  check_fill_dtype<bool>(true);
  check_fill_dtype<int8_t>(-7);
  check_fill_dtype<uint8_t>(200);
  check_fill_dtype<int32_t>(123456);
  check_fill_dtype<int64_t>(int64_t{1} << 40);
  check_fill_dtype<float>(1.5f);
  check_fill_dtype<double>(-0.25);
  check_fill_dtype<std::string>("kiln");
}

TEST(Fill, DimsAsInt32Int64ShapeAndVector) {
  expect_tensor<int32_t>(fill(Tensor({2, 2}), 9), {2, 2}, {9, 9, 9, 9});
  expect_tensor<int32_t>(fill(Tensor({int64_t{1}, int64_t{3}}), 4), {1, 3}, {4, 4, 4});
  expect_tensor<float>(fill(Shape{3}, 0.5f), {3}, {0.5f, 0.5f, 0.5f});
  expect_tensor<double>(fill(std::vector<int64_t>{1, 1}, Tensor(2.0)), {1, 1}, {2.0});
  // Natural dtype of C++ numbers.
  EXPECT_EQ(fill({1}, int64_t{1} << 40).dtype(), DType::kInt64);
  EXPECT_EQ(fill({1}, true).dtype(), DType::kBool);
}

TEST(Fill, LargeFillIsParallelAndCorrect) {
  Tensor t = fill({1 << 20}, 3.0f);
  ASSERT_EQ(t.num_elements(), 1 << 20);
  const float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) ASSERT_EQ(p[i], 3.0f) << i;
}

TEST(Fill, ValueViewAtOffset) {
  Tensor base({5, 6, 7});
  expect_tensor<int32_t>(fill({2}, offset_scalar<int32_t>(base, 2)), {2}, {7, 7});
  Tensor sbase({"x", "y"});
  expect_tensor<std::string>(fill({2}, offset_scalar<std::string>(sbase, 1)), {2}, {"y", "y"});
  // dims given as a view.
  Tensor dims_base({int64_t{9}, int64_t{2}, int64_t{3}});
  Tensor dims = Tensor::from_buffer(dims_base.buffer(), 8, DType::kInt64, Shape{2});
  EXPECT_EQ(fill(dims, 1).shape(), (Shape{2, 3}));
}

TEST(Fill, Errors) {
  expect_error(
      [] {
        fill(Tensor({2.0f, 3.0f}), 1);
      },
      Code::kInvalidArgument, {"Fill", "dims", "int32 or int64", "float32"});
  expect_error(
      [] {
        fill(Tensor({{2, 3}}), 1);
      },
      Code::kInvalidArgument, {"Fill", "dims", "1-D", "(1, 2)"});
  expect_error([] { fill(Tensor(3), 1); }, Code::kInvalidArgument, {"Fill", "dims", "1-D"});
  expect_error(
      [] {
        fill({2, -3}, 1);
      },
      Code::kInvalidArgument, {"Fill", "dims[1] = -3", "non-negative"});
  expect_error(
      [] {
        fill({2}, Tensor({1, 2}));
      },
      Code::kInvalidArgument, {"Fill", "value", "scalar", "(2,)"});
  expect_error(
      [] {
        fill({int64_t{1} << 40, int64_t{1} << 40}, 1);
      },
      Code::kInvalidArgument, {"Fill", "too many elements"});
  expect_error(
      [] {
        fill({int64_t{1} << 40, int64_t{1} << 20}, 1);
      },
      Code::kResourceExhausted, {"allocation cap"});
  Variable v(1);
  expect_error([&] { fill({2}, v.handle()); }, Code::kInvalidArgument, {"Fill", "resource"});
  expect_error([] { call_op1(OpId::Fill, {Tensor({2})}); }, Code::kInvalidArgument,
               {"Fill", "expected 2 inputs"});
  expect_error([] { fill({2}, Tensor()); }, Code::kInvalidArgument, {"Fill", "undefined"});
}

// ---- zeros / ones ----

template <typename T>
void check_zeros_ones() {
  SCOPED_TRACE(dtype_name(dtype_v<T>));
  const DType dt = dtype_v<T>;
  expect_tensor<T>(zeros({2, 2}, dt), {2, 2}, std::vector<T>(4, T(0)));
  expect_tensor<T>(ones({3}, dt), {3}, std::vector<T>(3, T(1)));
  expect_tensor<T>(ones(Shape(), dt), {}, {T(1)});
  expect_tensor<T>(zeros({0, 5}, dt), {0, 5}, {});
  Tensor x = make<T>({T(1), T(0), T(1), T(1), T(0), T(1)}, {3, 2});
  expect_tensor<T>(zeros_like(x), {3, 2}, std::vector<T>(6, T(0)));
  expect_tensor<T>(ones_like(x), {3, 2}, std::vector<T>(6, T(1)));
  expect_tensor<T>(ones_like(x.view({6})), {6}, std::vector<T>(6, T(1)));
  expect_tensor<T>(zeros_like(Tensor::empty(dt, {0, 3})), {0, 3}, {});
}

TEST(ZerosOnes, EveryNumericDtype) {
  check_zeros_ones<bool>();
  check_zeros_ones<int8_t>();
  check_zeros_ones<uint8_t>();
  check_zeros_ones<int32_t>();
  check_zeros_ones<int64_t>();
  check_zeros_ones<float>();
  check_zeros_ones<double>();
}

TEST(ZerosOnes, DefaultDtypeAndShapeForms) {
  expect_tensor<float>(zeros({2}), {2}, {0.f, 0.f});
  expect_tensor<float>(ones(std::vector<int64_t>{1, 2}), {1, 2}, {1.f, 1.f});
  expect_tensor<float>(ones(Tensor({2})), {2}, {1.f, 1.f});
  expect_tensor<int64_t>(zeros(Shape{2}, DType::kInt64), {2}, {0, 0});
}

TEST(ZerosOnes, Strings) {
  expect_tensor<std::string>(zeros({2}, DType::kString), {2}, {"", ""});
  expect_tensor<std::string>(zeros_like(Tensor({"a", "b", "c"})), {3}, {"", "", ""});
  expect_error([] { ones({2}, DType::kString); }, Code::kInvalidArgument, {"ones", "string"});
  expect_error([] { ones_like(Tensor({"a"})); }, Code::kInvalidArgument, {"OnesLike", "string"});
}

TEST(ZerosOnes, Errors) {
  Variable v(1);
  expect_error([&] { zeros_like(v.handle()); }, Code::kInvalidArgument, {"ZerosLike", "resource"});
  expect_error([&] { ones_like(v.handle()); }, Code::kInvalidArgument, {"OnesLike", "resource"});
  expect_error([] { zeros({-1}); }, Code::kInvalidArgument, {"Fill", "dims[0] = -1"});
  expect_error([] { ones({2}, DType::kResource); }, Code::kInvalidArgument, {"resource"});
}

// ---- Range ----

template <typename T>
std::vector<T> ref_range(T start, T limit, T delta) {
  std::vector<T> out;
  if (delta > 0)
    for (int64_t i = 0; start + static_cast<T>(i) * delta < limit; ++i)
      out.push_back(start + static_cast<T>(i) * delta);
  else
    for (int64_t i = 0; start + static_cast<T>(i) * delta > limit; ++i)
      out.push_back(start + static_cast<T>(i) * delta);
  return out;
}

template <typename T>
void check_range(T start, T limit, T delta) {
  SCOPED_TRACE(str_cat(dtype_name(dtype_v<T>), " range(", start, ", ", limit, ", ", delta, ")"));
  std::vector<T> want = ref_range(start, limit, delta);
  Tensor got = range(make<T>({start}, {}), make<T>({limit}, {}), make<T>({delta}, {}));
  if constexpr (std::is_floating_point_v<T>)
    expect_tensor_near<T>(got, {static_cast<int64_t>(want.size())}, want);
  else
    expect_tensor<T>(got, {static_cast<int64_t>(want.size())}, want);
}

TEST(Range, TableAgainstReference) {
  check_range<int32_t>(0, 5, 1);
  check_range<int32_t>(10, 0, -3);
  check_range<int32_t>(-4, 9, 4);
  check_range<int32_t>(3, 3, 1);
  check_range<int32_t>(3, 3, -1);
  check_range<int64_t>(-10, 10, 7);
  check_range<int64_t>(int64_t{1} << 40, (int64_t{1} << 40) + 5, 2);
  check_range<float>(0.f, 1.f, 0.25f);
  check_range<float>(1.f, -1.f, -0.5f);
  check_range<float>(0.f, 1.f, 0.3f);
  check_range<double>(0.5, 2.0, 0.1);
  check_range<double>(-1.0, -3.0, -0.7);
}

TEST(Range, ScalarFrontsAndDtypes) {
  expect_tensor<int32_t>(range(5), {5}, {0, 1, 2, 3, 4});
  expect_tensor<int32_t>(range(10, 0, -3), {4}, {10, 7, 4, 1});
  expect_tensor<int32_t>(range(2, 8, 2), {3}, {2, 4, 6});
  expect_tensor<int64_t>(range(3, DType::kInt64), {3}, {0, 1, 2});
  expect_tensor<float>(range(0, 2, 0.5), {4}, {0.f, 0.5f, 1.f, 1.5f});
  expect_tensor<float>(range(2.0), {2}, {0.f, 1.f});
  expect_tensor<double>(range(1, 2, 0.5, DType::kFloat64), {2}, {1.0, 1.5});
  expect_tensor<int64_t>(range(int64_t{3000000000}, int64_t{3000000002}), {2},
                         {3000000000, 3000000001});
  expect_tensor<int32_t>(range(0), {0}, {});
}

TEST(Range, ExtremeIntegerBounds) {
  const int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  expect_tensor<int32_t>(range(Tensor(lo), Tensor(hi), Tensor(hi)), {3}, {lo, -1, hi - 1});
  expect_tensor<int32_t>(range(Tensor(hi), Tensor(lo), Tensor(lo)), {2}, {hi, -1});
  const int64_t llo = std::numeric_limits<int64_t>::min();
  const int64_t lhi = std::numeric_limits<int64_t>::max();
  expect_tensor<int64_t>(range(Tensor(llo), Tensor(lhi), Tensor(lhi)), {3}, {llo, -1, lhi - 1});
}

TEST(Range, ScalarViewInputs) {
  Tensor base({1, 10, 3});
  expect_tensor<int32_t>(range(offset_scalar<int32_t>(base, 0), offset_scalar<int32_t>(base, 1),
                               offset_scalar<int32_t>(base, 2)),
                         {3}, {1, 4, 7});
}

TEST(Range, Errors) {
  expect_error([] { range(0, 5, 0); }, Code::kInvalidArgument, {"Range", "delta", "nonzero"});
  expect_error([] { range(0.0, 1.0, 0.0); }, Code::kInvalidArgument, {"Range", "nonzero"});
  expect_error([] { range(10, 0, 1); }, Code::kInvalidArgument,
               {"Range", "start <= limit", "delta > 0", "start = 10", "limit = 0"});
  expect_error([] { range(0, 10, -1); }, Code::kInvalidArgument,
               {"Range", "start >= limit", "delta < 0"});
  expect_error([] { range(Tensor(0), Tensor(int64_t{5}), Tensor(1)); }, Code::kInvalidArgument,
               {"Range", "dtype mismatch", "int32", "int64"});
  expect_error([] { range(Tensor(0), Tensor(5), Tensor(1.0f)); }, Code::kInvalidArgument,
               {"Range", "delta", "float32"});
  expect_error([] { range(Tensor({0}), Tensor(5), Tensor(1)); }, Code::kInvalidArgument,
               {"Range", "start", "scalar", "(1,)"});
  expect_error([] { range(Tensor(0), Tensor(5), Tensor({{1}})); }, Code::kInvalidArgument,
               {"Range", "delta", "scalar"});
  expect_error([] { range(Tensor(false), Tensor(true), Tensor(true)); }, Code::kInvalidArgument,
               {"Range", "bool"});
  expect_error([] { range(Tensor("a"), Tensor("b"), Tensor("c")); }, Code::kInvalidArgument,
               {"Range", "string"});
  expect_error([] { range(true, 2, 1); }, Code::kInvalidArgument, {"bool"});
  expect_error([] { range(1, 2, 0.5, DType::kInt32); }, Code::kInvalidArgument, {"int32"});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  expect_error([&] { range(0.0, nan, 1.0, DType::kFloat64); }, Code::kInvalidArgument,
               {"Range", "finite"});
  expect_error([&] { range(0.0, inf, 1.0, DType::kFloat64); }, Code::kInvalidArgument,
               {"Range", "finite"});
  expect_error([] { range(0.0, 1e300, 1e-300, DType::kFloat64); }, Code::kInvalidArgument,
               {"Range", "too large"});
  const int64_t llo = std::numeric_limits<int64_t>::min();
  const int64_t lhi = std::numeric_limits<int64_t>::max();
  expect_error([&] { range(Tensor(llo), Tensor(lhi), Tensor(int64_t{1})); }, Code::kInvalidArgument,
               {"Range", "too large"});
  expect_error([&] { range(Tensor(llo), Tensor(lhi), Tensor(int64_t{4})); },
               Code::kResourceExhausted, {"allocation cap"});
}

// ---- Identity ----

TEST(Identity, ReturnsTheSameValue) {
  Tensor t({{1.5, 2.5}, {3.5, 4.5}});
  Tensor r = identity(t);
  EXPECT_TRUE(r.is_same(t));
  expect_tensor<double>(r, {2, 2}, {1.5, 2.5, 3.5, 4.5});
  expect_tensor<std::string>(identity(Tensor({"a", "b"})), {2}, {"a", "b"});
  expect_tensor<bool>(identity(Tensor(true)), {}, {true});
  expect_tensor<int8_t>(identity(Tensor::empty(DType::kInt8, {0})), {0}, {});
  Variable v(3);
  Tensor h = identity(v.handle());
  EXPECT_EQ(h.dtype(), DType::kResource);
  EXPECT_EQ(h.resource(), v.resource());
  expect_error([] { identity(Tensor()); }, Code::kInvalidArgument, {"Identity", "undefined"});
}

TEST(CreationOps, Traits) {
  EXPECT_FALSE(op_def(OpId::Fill).has(kStateful));
  EXPECT_TRUE(op_def(OpId::Range).has(kNoGradient));
  EXPECT_TRUE(op_def(OpId::Identity).has(kView));
  EXPECT_STREQ(op_def(OpId::Fill).inputs[0], "dims");
}

}  // namespace
}  // namespace kiln
