// where (Select), cast and clip_by_value: values for every dtype against
// reference implementations, three-way broadcasting, edge conversions,
// symbolic inference and every error path.
#include "elementwise_test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using testing::make;
using testing::same_value;
using testing::samples;

// ---- where ----

template <typename T>
std::vector<T> select_values(int64_t n, int salt) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, std::string>)
      v[static_cast<size_t>(i)] = str_cat(salt, "_", i);
    else if constexpr (std::is_same_v<T, bool>)
      v[static_cast<size_t>(i)] = (i + salt) % 3 == 0;
    else
      v[static_cast<size_t>(i)] = static_cast<T>(i * 3 + salt);
  }
  return v;
}

template <typename T>
void check_where(const Shape& sc, const Shape& sx, const Shape& sy) {
  SCOPED_TRACE(str_cat(dtype_name(dtype_v<T>), " ", sc.debug_string(), " ", sx.debug_string(), " ",
                       sy.debug_string()));
  const Shape out = broadcast_shapes(broadcast_shapes(sc, sx, "t"), sy, "t");
  const std::vector<bool> cv = select_values<bool>(sc.num_elements(), 1);
  const std::vector<T> xv = select_values<T>(sx.num_elements(), 2);
  const std::vector<T> yv = select_values<T>(sy.num_elements(), 100);
  const Tensor r = where(make<bool>(cv, sc), make<T>(xv, sx), make<T>(yv, sy));
  ASSERT_EQ(r.shape(), out);
  ASSERT_EQ(r.dtype(), dtype_v<T>);
  const T* p = r.data<T>();
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const bool c = cv[static_cast<size_t>(testing::bcast_index(sc, out, i))];
    const T want = c ? xv[static_cast<size_t>(testing::bcast_index(sx, out, i))]
                     : yv[static_cast<size_t>(testing::bcast_index(sy, out, i))];
    ASSERT_EQ(p[i], want) << i;
  }
}

TEST(Where, ThreeWayBroadcastingForEveryDtype) {
  const std::vector<std::array<Shape, 3>> shapes = {
      {Shape{2, 3}, Shape{2, 3}, Shape{2, 3}},
      {Shape{}, Shape{4}, Shape{4}},
      {Shape{2, 1, 1}, Shape{1, 3, 1}, Shape{1, 1, 4}},
      {Shape{3}, Shape{2, 3}, Shape{}},
      {Shape{2, 3}, Shape{}, Shape{3}},
      {Shape{0, 3}, Shape{3}, Shape{1}},
      {Shape{5, 1}, Shape{1, 0}, Shape{}},
      {Shape{400, 1}, Shape{1, 500}, Shape{400, 500}},  // parallel
  };
  for (const auto& s : shapes) {
    testing::for_types<bool, int8_t, uint8_t, int32_t, int64_t, float, double>(
        [&](auto tag) { check_where<decltype(tag)>(s[0], s[1], s[2]); });
    if (s[0].num_elements() < 1000) check_where<std::string>(s[0], s[1], s[2]);
  }
}

TEST(Where, ScalarOperandsAndNan) {
  expect_tensor<float>(where(Tensor({true, false}), Tensor({1.f, 2.f}), 0), {2}, {1.f, 0.f});
  expect_tensor<int64_t>(where(Tensor({true, false}), int64_t{7}, make<int64_t>({1, 2})), {2},
                         {7, 2});
  expect_tensor<float>(where(Tensor({false}), Tensor({1.f}), Tensor({NAN})), {1}, {NAN});
}

TEST(Where, Errors) {
  expect_error(
      [] {
        where(Tensor({1, 0}), Tensor({1, 2}), Tensor({3, 4}));
      },
      Code::kInvalidArgument, {"SelectV2", "condition", "bool", "int32"});
  expect_error([] { where(Tensor({true}), Tensor({1}), Tensor({1.f})); }, Code::kInvalidArgument,
               {"SelectV2", "dtype mismatch", "x is int32", "y is float32"});
  expect_error(
      [] {
        where(Tensor({true, false}), Tensor({1, 2, 3}), Tensor({3}));
      },
      Code::kInvalidArgument, {"SelectV2", "incompatible shapes", "[2]", "[3]"});
  expect_error([] { where(Tensor({true}), Tensor({1}), 2.5); }, Code::kInvalidArgument,
               {"2.5", "int32"});
  expect_error([] { where(Tensor(), Tensor({1}), Tensor({1})); }, Code::kInvalidArgument,
               {"SelectV2", "undefined"});
}

TEST(Where, ReusesUniquelyHeldBranchBuffer) {
  std::vector<Tensor> in{Tensor({true, false}), Tensor({1, 2}), Tensor(9)};
  const Buffer* buf = in[1].buffer();
  std::vector<Tensor> out;
  run_kernel(op_def(OpId::Select), in, {}, out);
  EXPECT_EQ(out[0].buffer(), buf);
  expect_tensor<int32_t>(out[0], {2}, {1, 9});
}

TEST(Where, SymbolicInference) {
  using testing::symbolic;
  TensorSpec s = testing::infer_spec(
      OpId::Select, {symbolic(DType::kBool, {-1, 1}), symbolic(DType::kString, {3}), Tensor("e")});
  EXPECT_EQ(s.dtype, DType::kString);
  EXPECT_EQ(s.shape, Shape({-1, 3}));
  s = testing::infer_spec(OpId::Select,
                          {symbolic(DType::kBool, Shape::unknown_rank()), Tensor(1), Tensor(2)});
  EXPECT_FALSE(s.shape.rank_known());
}

// ---- cast ----

template <typename To, typename From>
To ref_cast(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(x)) return To(0);
    const long double t = std::trunc(static_cast<long double>(x));
    if (t < static_cast<long double>(std::numeric_limits<To>::min()))
      return std::numeric_limits<To>::min();
    if (t > static_cast<long double>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    return static_cast<To>(t);
  } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
    return static_cast<To>(static_cast<uint64_t>(static_cast<int64_t>(x)));  // wraps
  } else {
    return static_cast<To>(x);
  }
}

template <typename From, typename To>
void check_cast() {
  SCOPED_TRACE(str_cat(dtype_name(dtype_v<From>), " -> ", dtype_name(dtype_v<To>)));
  std::vector<From> xs = samples<From>();
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                !std::is_same_v<To, bool>) {
    // Values right at the integer range boundaries.
    for (long double v : {static_cast<long double>(std::numeric_limits<To>::max()),
                          static_cast<long double>(std::numeric_limits<To>::min()),
                          static_cast<long double>(std::numeric_limits<To>::max()) + 1,
                          static_cast<long double>(std::numeric_limits<To>::min()) - 1}) {
      xs.push_back(static_cast<From>(v));
      xs.push_back(std::nextafter(static_cast<From>(v), From(0)));
    }
    xs.push_back(From(-0.99));
    xs.push_back(From(127.9));
  }
  const Tensor y = cast(make<From>(xs), dtype_v<To>);
  ASSERT_EQ(y.dtype(), dtype_v<To>);
  ASSERT_EQ(y.shape(), Shape({static_cast<int64_t>(xs.size())}));
  const std::vector<To> got = y.to_vector<To>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const To want = ref_cast<To, From>(xs[i]);
    EXPECT_TRUE(same_value(got[i], want))
        << "x=" << +xs[i] << " got " << +got[i] << " want " << +want;
  }
}

TEST(Cast, EveryNumericAndBoolPair) {
  testing::for_types<bool, KILN_REAL_TYPES>([](auto from) {
    testing::for_types<bool, KILN_REAL_TYPES>(
        [](auto to) { check_cast<decltype(from), decltype(to)>(); });
  });
}

TEST(Cast, SpotValues) {
  expect_tensor<int32_t>(cast(Tensor({1.9f, -1.9f, NAN, 3e9f, -3e9f, INFINITY}), DType::kInt32),
                         {6}, {1, -1, 0, INT32_MAX, INT32_MIN, INT32_MAX});
  expect_tensor<uint8_t>(cast(Tensor({-1, 256, 300}), DType::kUInt8), {3}, {255, 0, 44});
  expect_tensor<uint8_t>(cast(Tensor({-1.5, 256.0, 254.9}), DType::kUInt8), {3}, {0, 255, 254});
  expect_tensor<bool>(cast(Tensor({0.f, -0.f, 0.1f, NAN}), DType::kBool), {4},
                      {false, false, true, true});
  expect_tensor<float>(cast(Tensor({true, false}), DType::kFloat32), {2}, {1.f, 0.f});
  expect_tensor<float>(cast(Tensor({1e300, -1e300}), DType::kFloat32), {2}, {INFINITY, -INFINITY});
  expect_tensor<int64_t>(cast(Tensor({9.2233720368547758e18}), DType::kInt64), {1}, {INT64_MAX});
}

TEST(Cast, IdentityReturnsTheInput) {
  const Tensor x({1, 2});
  EXPECT_TRUE(cast(x, DType::kInt32).is_same(x));
  const Tensor s({"a", "b"});
  EXPECT_TRUE(cast(s, DType::kString).is_same(s));
  // The op itself (as a graph would run it) shares the buffer.
  const Tensor y = call_op1(OpId::Cast, {s}, {DType::kString});
  EXPECT_EQ(y.buffer(), s.buffer());
  expect_tensor<std::string>(y, {2}, {"a", "b"});
}

TEST(Cast, StringAndNumbersIsUnimplemented) {
  expect_error([] { cast(Tensor({"1"}), DType::kInt32); }, Code::kUnimplemented,
               {"Cast", "string", "int32"});
  expect_error([] { cast(Tensor({1.f}), DType::kString); }, Code::kUnimplemented,
               {"Cast", "float32", "string"});
  expect_error([] { cast(Tensor({true}), DType::kString); }, Code::kUnimplemented,
               {"Cast", "bool", "string"});
}

TEST(Cast, BadDstTAndMissingAttr) {
  expect_error([] { cast(Tensor({1}), DType::kResource); }, Code::kInvalidArgument,
               {"Cast", "DstT", "resource"});
  expect_error([] { cast(Tensor({1}), DType::kInvalid); }, Code::kInvalidArgument,
               {"Cast", "DstT"});
  expect_error([] { call_op1(OpId::Cast, {Tensor({1})}); }, Code::kInvalidArgument,
               {"Cast", "DstT"});
  expect_error([] { cast(Tensor(), DType::kInt32); }, Code::kInvalidArgument,
               {"Cast", "undefined"});
}

TEST(Cast, EmptyLargeAndViews) {
  EXPECT_EQ(cast(Tensor::empty(DType::kFloat32, {0, 4}), DType::kInt8).shape(), Shape({0, 4}));
  EXPECT_EQ(cast(Tensor(2.5), DType::kInt32).item<int32_t>(), 2);
  const int64_t n = 250000;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i) - 0.5;
  const Tensor t = cast(make<double>(v).view({500, 500}), DType::kInt64);
  ASSERT_EQ(t.shape(), Shape({500, 500}));
  const int64_t* p = t.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(p[i], i == 0 ? 0 : i - 1);
}

TEST(Cast, SymbolicInference) {
  TensorSpec s = testing::infer_spec(OpId::Cast, {testing::symbolic(DType::kInt32, {-1, 2})},
                                     {DType::kFloat64});
  EXPECT_EQ(s.dtype, DType::kFloat64);
  EXPECT_EQ(s.shape, Shape({-1, 2}));
}

// ---- clip_by_value ----

// Like same_value, but the sign of a zero produced by max/min is free.
template <typename T>
bool clip_equal(T got, T want) {
  return (got == T(0) && want == T(0)) || same_value(got, want);
}

template <typename T>
T ref_clip(T t, T lo, T hi) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(t) || std::isnan(lo) || std::isnan(hi))
      return std::numeric_limits<T>::quiet_NaN();
  const T m = t < lo ? lo : t;
  return m > hi ? hi : m;
}

TEST(ClipByValue, EveryRealDtypeWithScalarAndTensorBounds) {
  testing::for_types<KILN_REAL_TYPES>([](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const std::vector<T> xs = samples<T>();
    const int64_t n = static_cast<int64_t>(xs.size());
    const T lo = static_cast<T>(1), hi = static_cast<T>(100);
    const Tensor r = clip_by_value(make<T>(xs), 1, 100);
    ASSERT_EQ(r.dtype(), dtype_v<T>);
    const std::vector<T> got = r.to_vector<T>();
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_TRUE(clip_equal(got[i], ref_clip(xs[i], lo, hi))) << +xs[i];
    // Per-row lower bounds [2, 1] and per-column upper bounds [n]: both broadcast.
    const std::vector<T> los = {T(0), T(2)};
    std::vector<T> his(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) his[static_cast<size_t>(j)] = static_cast<T>(j * 9);
    std::vector<T> both(xs);
    both.insert(both.end(), xs.begin(), xs.end());
    const Tensor r2 = clip_by_value(make<T>(both, {2, n}), make<T>(los, {2, 1}), make<T>(his));
    ASSERT_EQ(r2.shape(), Shape({2, n}));
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < n; ++j)
        EXPECT_TRUE(clip_equal(r2.at<T>({i, j}),
                               ref_clip(xs[static_cast<size_t>(j)], los[static_cast<size_t>(i)],
                                        his[static_cast<size_t>(j)])))
            << i << "," << j;
  });
}

TEST(ClipByValue, NanAndInvertedBounds) {
  expect_tensor<float>(clip_by_value(Tensor({NAN, -5.f, 5.f}), -1.f, 1.f), {3}, {NAN, -1.f, 1.f});
  expect_tensor<int32_t>(clip_by_value(Tensor({0, 5, 10}), 7, 3), {3}, {3, 3, 3});
  EXPECT_EQ(clip_by_value(Tensor::empty(DType::kFloat32, {0}), 0, 1).shape(), Shape({0}));
}

TEST(ClipByValue, Errors) {
  expect_error(
      [] {
        clip_by_value(Tensor({1, 2}), Tensor(0.f), Tensor(1.f));
      },
      Code::kInvalidArgument, {"ClipByValue", "dtype mismatch", "int32", "float32"});
  expect_error([] { clip_by_value(Tensor({1.f}), Tensor(0.f), Tensor(1)); }, Code::kInvalidArgument,
               {"ClipByValue", "clip_value_max", "int32"});
  expect_error([] { clip_by_value(Tensor({true}), Tensor(false), Tensor(true)); },
               Code::kInvalidArgument, {"ClipByValue", "bool"});
  expect_error([] { clip_by_value(Tensor({"a"}), Tensor("a"), Tensor("b")); },
               Code::kInvalidArgument, {"ClipByValue", "string"});
  expect_error(
      [] {
        clip_by_value(Tensor({1.f, 2.f}), Tensor({0.f, 1.f, 2.f}), Tensor(3.f));
      },
      Code::kInvalidArgument, {"ClipByValue", "clip_value_min", "[3]", "[2]"});
  // Bounds may not enlarge t.
  expect_error(
      [] {
        clip_by_value(Tensor({1.f, 2.f}), Tensor(0.f), Tensor({{3.f, 3.f}, {4.f, 4.f}}));
      },
      Code::kInvalidArgument, {"ClipByValue", "clip_value_max", "[2,2]", "t's shape [2]"});
  expect_error(
      [] {
        clip_by_value(Tensor({1, 2}), 0.5, 2);
      },
      Code::kInvalidArgument, {"0.5", "int32"});
}

TEST(ClipByValue, SymbolicInference) {
  using testing::symbolic;
  TensorSpec s = testing::infer_spec(
      OpId::ClipByValue,
      {symbolic(DType::kFloat32, {-1, 3}), symbolic(DType::kFloat32, {5, 1}), Tensor(1.f)});
  EXPECT_EQ(s.shape, Shape({5, 3}));
  s = testing::infer_spec(OpId::ClipByValue, {symbolic(DType::kInt32, Shape::unknown_rank()),
                                              Tensor(0), Tensor({1, 2})});
  EXPECT_FALSE(s.shape.rank_known());
}

}  // namespace
}  // namespace kiln
