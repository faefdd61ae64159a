// Binary elementwise ops: every op x every supported dtype on all pairs of
// interesting values (through broadcasting), broadcasting shapes, strings,
// scalars and operators, in-place reuse, symbolic inference, and every error.
#include "elementwise_test_util.h"
#include "kiln/function.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using testing::make;
using testing::same_or_flushed;
using testing::same_value;
using testing::samples;

using BinaryFront = Tensor (*)(const Tensor&, const Tensor&);
struct BinaryCase {
  OpId id;
  BinaryFront front;
  std::vector<DType> dtypes;
  bool bool_out = false;
};

const std::vector<DType> kReal = {DType::kInt8,  DType::kUInt8,   DType::kInt32,
                                  DType::kInt64, DType::kFloat32, DType::kFloat64};
const std::vector<DType> kInts = {DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64};
const std::vector<DType> kBool = {DType::kBool};
const std::vector<DType> kAll = {DType::kBool,  DType::kInt8,    DType::kUInt8,   DType::kInt32,
                                 DType::kInt64, DType::kFloat32, DType::kFloat64, DType::kString};

// Div goes through the op directly: the divide() front casts integers.
Tensor real_div(const Tensor& a, const Tensor& b) {
  return call_op1(OpId::Div, {a, b});
}

const std::vector<BinaryCase>& cases() {
  static const std::vector<BinaryCase> c = {
      {OpId::Add,
       add,
       {DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat32, DType::kFloat64,
        DType::kString}},
      {OpId::Sub, subtract, kReal},
      {OpId::Mul, multiply, kReal},
      {OpId::Div, real_div, kReal},
      {OpId::FloorDiv, floordiv, kReal},
      {OpId::FloorMod, floormod, kReal},
      {OpId::Pow, pow, kReal},
      {OpId::Maximum, maximum, kReal},
      {OpId::Minimum, minimum, kReal},
      {OpId::SquaredDifference, squared_difference, kReal},
      {OpId::Equal, equal, kAll, true},
      {OpId::NotEqual, not_equal, kAll, true},
      {OpId::Less, less, kReal, true},
      {OpId::LessEqual, less_equal, kReal, true},
      {OpId::Greater, greater, kReal, true},
      {OpId::GreaterEqual, greater_equal, kReal, true},
      {OpId::LogicalAnd, logical_and, kBool},
      {OpId::LogicalOr, logical_or, kBool},
      {OpId::LogicalXor, logical_xor, kBool},
      {OpId::BitwiseAnd, bitwise_and, kInts},
      {OpId::BitwiseOr, bitwise_or, kInts},
      {OpId::BitwiseXor, bitwise_xor, kInts},
      {OpId::LeftShift, left_shift, kInts},
      {OpId::RightShift, right_shift, kInts},
  };
  return c;
}

using I128 = __int128;

// Reference semantics, written independently of functors.h: integers wrap
// modulo 2^bits (computed in 64/128 bits, then truncated).
template <typename T>
T ref_value(OpId id, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (id) {
      case OpId::LogicalAnd: return a && b;
      case OpId::LogicalOr: return a || b;
      case OpId::LogicalXor: return a != b;
      default: ADD_FAILURE(); return false;
    }
  } else if constexpr (std::is_integral_v<T>) {
    const int64_t x = a, y = b;
    const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    const int bits = sizeof(T) * 8;
    const int s = y < 0 ? 0 : (y > bits - 1 ? bits - 1 : static_cast<int>(y));
    auto floordiv128 = [](I128 p, I128 q) {
      I128 d = p / q;
      if (d * q != p && ((p < 0) != (q < 0))) d -= 1;
      return d;
    };
    switch (id) {
      case OpId::Add: return static_cast<T>(ux + uy);
      case OpId::Sub: return static_cast<T>(ux - uy);
      case OpId::Mul: return static_cast<T>(ux * uy);
      case OpId::Div:
        return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(I128(x) / y)));
      case OpId::FloorDiv: return static_cast<T>(static_cast<int64_t>(floordiv128(x, y)));
      case OpId::FloorMod:
        return static_cast<T>(static_cast<int64_t>(I128(x) - floordiv128(x, y) * y));
      case OpId::Pow: {
        uint64_t r = 1;
        for (int64_t k = 0; k < y; ++k) r *= ux;
        return static_cast<T>(r);
      }
      case OpId::Maximum: return a > b ? a : b;
      case OpId::Minimum: return a < b ? a : b;
      case OpId::SquaredDifference: return static_cast<T>((ux - uy) * (ux - uy));
      case OpId::BitwiseAnd: return static_cast<T>(ux & uy);
      case OpId::BitwiseOr: return static_cast<T>(ux | uy);
      case OpId::BitwiseXor: return static_cast<T>(ux ^ uy);
      case OpId::LeftShift: return static_cast<T>(ux << s);
      case OpId::RightShift:
        return std::is_signed_v<T> ? static_cast<T>(x >> s) : static_cast<T>(ux >> s);
      default: ADD_FAILURE(); return T(0);
    }
  } else {
    switch (id) {
      case OpId::Add: return a + b;
      case OpId::Sub: return a - b;
      case OpId::Mul: return a * b;
      case OpId::Div: return a / b;
      case OpId::FloorDiv: return std::floor(a / b);
      case OpId::FloorMod: {
        const T m = std::fmod(a, b);
        return (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
      }
      case OpId::Pow: return std::pow(a, b);
      case OpId::Maximum:
        return std::isnan(a) || std::isnan(b) ? std::numeric_limits<T>::quiet_NaN()
                                              : std::max(a, b);
      case OpId::Minimum:
        return std::isnan(a) || std::isnan(b) ? std::numeric_limits<T>::quiet_NaN()
                                              : std::min(a, b);
      case OpId::SquaredDifference: return (a - b) * (a - b);
      default: ADD_FAILURE(); return T(0);
    }
  }
}

template <typename T>
bool ref_compare(OpId id, const T& a, const T& b) {
  switch (id) {
    case OpId::Equal: return a == b;
    case OpId::NotEqual: return a != b;
    case OpId::Less: return a < b;
    case OpId::LessEqual: return a <= b;
    case OpId::Greater: return a > b;
    case OpId::GreaterEqual: return a >= b;
    default: ADD_FAILURE(); return false;
  }
}

// Every pair (a_i, b_j) through broadcasting [n, 1] op [1, m] -> [n, m].
template <typename T>
void check_case(const BinaryCase& bc) {
  SCOPED_TRACE(str_cat(op_def(bc.id).type_name, " ", dtype_name(dtype_v<T>)));
  std::vector<T> as = samples<T>(), bs = samples<T>();
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (bc.id == OpId::Div || bc.id == OpId::FloorDiv || bc.id == OpId::FloorMod)
      std::erase(bs, T(0));  // zero divisors are an error, tested separately
    if (bc.id == OpId::Pow) bs = {T(0), T(1), T(2), T(3), T(5), T(7), T(8), T(31), T(100)};
    if (bc.id == OpId::LeftShift || bc.id == OpId::RightShift)
      for (int s : {3, 8, 15, 31, 32, 63, 64, 100}) bs.push_back(static_cast<T>(s));
  }
  const int64_t n = static_cast<int64_t>(as.size()), m = static_cast<int64_t>(bs.size());
  const Tensor out = bc.front(make<T>(as, {n, 1}), make<T>(bs, {1, m}));
  ASSERT_EQ(out.shape(), Shape({n, m}));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      const T a = as[static_cast<size_t>(i)], b = bs[static_cast<size_t>(j)];
      if (bc.bool_out) {
        ASSERT_EQ(out.dtype(), DType::kBool);
        EXPECT_EQ(out.at<bool>({i, j}), ref_compare(bc.id, a, b)) << +a << " vs " << +b;
      } else {
        ASSERT_EQ(out.dtype(), dtype_v<T>);
        const T got = out.at<T>({i, j}), want = ref_value(bc.id, a, b);
        // The sign of a zero result of max/min(-0, +0) is unspecified (as in TF).
        const bool zero_sign_free =
            (bc.id == OpId::Maximum || bc.id == OpId::Minimum) && a == T(0) && b == T(0);
        // A denormal may be flushed at any step, as if that input were 0.
        const bool ok =
            zero_sign_free
                ? got == want
                : same_or_flushed(got, want) ||
                      same_value(got, ref_value(bc.id, testing::flushed(a), testing::flushed(b)));
        EXPECT_TRUE(ok) << "a=" << +a << " b=" << +b << " got " << +got << " want " << +want;
      }
    }
  }
}

TEST(Binary, ValuesForEverySupportedDtype) {
  for (const BinaryCase& bc : cases()) {
    for (DType dt : bc.dtypes) {
      switch (dt) {
        case DType::kBool: check_case<bool>(bc); break;
        case DType::kInt8: check_case<int8_t>(bc); break;
        case DType::kUInt8: check_case<uint8_t>(bc); break;
        case DType::kInt32: check_case<int32_t>(bc); break;
        case DType::kInt64: check_case<int64_t>(bc); break;
        case DType::kFloat32: check_case<float>(bc); break;
        case DType::kFloat64: check_case<double>(bc); break;
        case DType::kString: break;  // see Strings
        default: FAIL();
      }
    }
  }
}

// Every op of binary.def, traced inside a function (float32 chains may be
// fused; the y operand broadcasts), gives the eager result bit for bit.
// Division ops get divisors without zeros.
TEST(Binary, FunctionMatchesEager) {
  for (const BinaryCase& bc : cases()) {
    for (DType dt : bc.dtypes) {
      SCOPED_TRACE(str_cat(op_def(bc.id).type_name, " ", dtype_name(dt)));
      const Tensor x = testing::sample_of(dt, Shape{3, 5});
      Tensor y = testing::sample_of(dt, Shape{5});
      if (dt != DType::kString && dt != DType::kBool &&
          (bc.id == OpId::Div || bc.id == OpId::FloorDiv || bc.id == OpId::FloorMod ||
           bc.id == OpId::Pow))
        y = cast(Tensor({1, 2, 3, 1, 2}), dt);
      const Tensor want = bc.front(x, y);
      const bool chain = want.dtype() == dt;  // comparisons give bool
      const Tensor want2 = chain ? bc.front(want, y) : want;
      Function f([&](const std::vector<Value>& a) {
        const Tensor z = bc.front(a[0].tensor(), a[1].tensor());
        return Value::tuple({Value(z), Value(chain ? bc.front(z, a[1].tensor()) : z)});
      });
      const Value got = f({x, y});
      for (size_t k = 0; k < 2; ++k) {
        const Tensor g = got.items()[k].tensor();
        const Tensor& w = k == 0 ? want : want2;
        ASSERT_EQ(g.dtype(), w.dtype());
        ASSERT_EQ(g.shape(), w.shape());
        if (w.dtype() == DType::kString)
          EXPECT_EQ(g.to_vector<std::string>(), w.to_vector<std::string>());
        else
          EXPECT_EQ(std::memcmp(g.raw_data(), w.raw_data(), w.nbytes()), 0);
      }
    }
  }
}

TEST(Binary, RejectsUnsupportedDtypes) {
  for (const BinaryCase& bc : cases()) {
    for (DType dt : testing::value_dtypes()) {
      if (std::find(bc.dtypes.begin(), bc.dtypes.end(), dt) != bc.dtypes.end()) continue;
      const Tensor t = testing::sample_of(dt);
      expect_error([&] { bc.front(t, t); }, Code::kInvalidArgument,
                   {op_def(bc.id).type_name, "x has dtype", std::string(dtype_name(dt)),
                    std::string(dtype_name(bc.dtypes.front()))});
    }
  }
}

TEST(Binary, DtypeMismatchIsInvalidArgument) {
  expect_error(
      [] {
        add(Tensor({1, 2}), Tensor({1.f, 2.f}));
      },
      Code::kInvalidArgument, {"AddV2", "int32", "float32"});
  for (const BinaryCase& bc : cases())
    expect_error(
        [&] {
          bc.front(Tensor({1, 2}), Tensor(int64_t{1}));
        },
        Code::kInvalidArgument,
        {op_def(bc.id).type_name, "dtype mismatch", "x is int32", "y is int64"});
  expect_error(
      [] {
        divide(Tensor({1, 2}), Tensor({1.f, 2.f}));
      },
      Code::kInvalidArgument, {"RealDiv", "int32", "float32"});
}

TEST(Binary, IncompatibleShapesAreInvalidArgument) {
  for (const BinaryCase& bc : cases()) {
    const DType dt = bc.dtypes.front();
    expect_error(
        [&] {
          bc.front(testing::sample_of(dt, {2, 3}), testing::sample_of(dt, {2}));
        },
        Code::kInvalidArgument, {op_def(bc.id).type_name, "incompatible shapes", "[2,3]", "[2]"});
  }
}

TEST(Binary, UndefinedOperandIsInvalidArgument) {
  expect_error([] { maximum(Tensor(), Tensor({1})); }, Code::kInvalidArgument,
               {"Maximum", "undefined"});
  expect_error([] { maximum(Tensor(), 1); }, Code::kInvalidArgument, {"undefined"});
  expect_error([] { Tensor() & Tensor({1}); }, Code::kInvalidArgument, {"undefined"});
}

TEST(Binary, BroadcastingShapes) {
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> shape_cases = {
      {{2, 3}, {3}, {2, 3}},
      {{2, 1, 4}, {3, 1}, {2, 3, 4}},
      {{}, {2, 2}, {2, 2}},
      {{2, 2}, {}, {2, 2}},
      {{0, 3}, {3}, {0, 3}},
      {{1, 0}, {5, 1}, {5, 0}},
      {{4, 1, 1, 3}, {1, 5, 2, 1}, {4, 5, 2, 3}},
      {{1, 1, 7}, {7}, {1, 1, 7}},
      {{3, 1}, {1, 1}, {3, 1}},
      {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
      {{600, 1000}, {1000}, {600, 1000}},  // parallel over rows
      {{300, 1}, {1, 700}, {300, 700}},    // parallel, both broadcast
      {{200000}, {1}, {200000}},           // parallel scalar broadcast
  };
  for (const Case& c : shape_cases) {
    SCOPED_TRACE(str_cat(c.a.debug_string(), " op ", c.b.debug_string()));
    const int64_t na = c.a.num_elements(), nb = c.b.num_elements();
    std::vector<int32_t> va(static_cast<size_t>(na)), vb(static_cast<size_t>(nb));
    for (int64_t i = 0; i < na; ++i)
      va[static_cast<size_t>(i)] = static_cast<int32_t>(i * 7 % 1000);
    for (int64_t i = 0; i < nb; ++i)
      vb[static_cast<size_t>(i)] = static_cast<int32_t>(i * 13 % 997);
    const Tensor ta = make<int32_t>(va, c.a), tb = make<int32_t>(vb, c.b);
    const Tensor sum = ta - tb;
    const Tensor lt = ta < tb;
    ASSERT_EQ(sum.shape(), c.out);
    ASSERT_EQ(lt.shape(), c.out);
    const int32_t* ps = sum.data<int32_t>();
    const bool* pl = lt.data<bool>();
    for (int64_t i = 0; i < c.out.num_elements(); ++i) {
      const int32_t x = va[static_cast<size_t>(testing::bcast_index(c.a, c.out, i))];
      const int32_t y = vb[static_cast<size_t>(testing::bcast_index(c.b, c.out, i))];
      ASSERT_EQ(ps[i], x - y) << i;
      ASSERT_EQ(pl[i], x < y) << i;
    }
  }
}

TEST(Binary, ViewsAsInputs) {
  const Tensor base({1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  const Tensor v = base.view({2, 3});
  expect_tensor<float>(v * Tensor({1.f, 10.f, 100.f}), {2, 3}, {1, 20, 300, 4, 50, 600});
  expect_tensor<float>(base, {6}, {1, 2, 3, 4, 5, 6});
}

TEST(Binary, Strings) {
  expect_tensor<std::string>(add(Tensor("a"), Tensor({"b", "c"})), {2}, {"ab", "ac"});
  expect_tensor<std::string>(add(Tensor({{"x"}, {"y"}}), Tensor({"1", "2"})), {2, 2},
                             {"x1", "x2", "y1", "y2"});
  expect_tensor<bool>(equal(Tensor({"a", "b", ""}), Tensor("b")), {3}, {false, true, false});
  expect_tensor<bool>(not_equal(Tensor({"a", "b"}), Tensor({"a", "c"})), {2}, {false, true});
  expect_tensor<bool>(Tensor({"p", "q"}) == Tensor("q"), {2}, {false, true});
  expect_error([] { less(Tensor({"a"}), Tensor({"b"})); }, Code::kInvalidArgument,
               {"Less", "string"});
  expect_error([] { subtract(Tensor({"a"}), Tensor({"b"})); }, Code::kInvalidArgument,
               {"Sub", "string"});
}

TEST(Binary, BoolEquality) {
  expect_tensor<bool>(equal(Tensor({true, false}), Tensor({{true}, {false}})), {2, 2},
                      {true, false, false, true});
}

TEST(Binary, IntegerDivisionByZeroIsInvalidArgument) {
  for (OpId id : {OpId::Div, OpId::FloorDiv, OpId::FloorMod}) {
    const char* name = op_def(id).type_name;
    testing::for_types<int8_t, uint8_t, int32_t, int64_t>([&](auto tag) {
      using T = decltype(tag);
      const Tensor a = make<T>({T(1), T(2)}), b = make<T>({T(1), T(0)});
      expect_error(
          [&] {
            call_op1(id, {a, b});
          },
          Code::kInvalidArgument, {name, "division by zero"});
      expect_error(
          [&] {
            call_op1(id, {a, make<T>({T(0)})});
          },
          Code::kInvalidArgument, {name, "division by zero"});
      // Nothing is divided when the output is empty.
      EXPECT_EQ(call_op1(id, {make<T>({}, {0}), make<T>({T(0)})}).shape(), Shape({0}));
    });
  }
  expect_error([] { floordiv(Tensor({5}), 0); }, Code::kInvalidArgument, {"FloorDiv"});
  expect_error([] { Tensor({5}) % 0; }, Code::kInvalidArgument, {"FloorMod"});
}

TEST(Binary, FloatDivisionByZeroFollowsIeee) {
  expect_tensor<float>(Tensor({1.f, -1.f, 0.f}) / 0.f, {3}, {INFINITY, -INFINITY, NAN});
  expect_tensor<float>(floordiv(Tensor({1.f, -1.f}), 0.f), {2}, {INFINITY, -INFINITY});
  expect_tensor<float>(floormod(Tensor({1.f}), 0.f), {1}, {NAN});
  expect_tensor<double>(Tensor({7}) / 0, {1}, {INFINITY});  // int32 -> float64 first
}

TEST(Binary, FloorSemantics) {
  expect_tensor<int32_t>(floordiv(Tensor({7, -7, 7, -7}), Tensor({2, 2, -2, -2})), {4},
                         {3, -4, -4, 3});
  expect_tensor<int32_t>(floormod(Tensor({7, -7, 7, -7}), Tensor({2, 2, -2, -2})), {4},
                         {1, 1, -1, -1});
  expect_tensor<int32_t>(floordiv(Tensor({INT32_MIN}), -1), {1}, {INT32_MIN});
  expect_tensor<int32_t>(floormod(Tensor({INT32_MIN}), -1), {1}, {0});
  expect_tensor<float>(floormod(Tensor({-7.5f, 7.5f}), 2.f), {2}, {0.5f, 1.5f});
  expect_tensor<double>(floordiv(Tensor({-7.5, 7.5}), -2.0), {2}, {3.0, -4.0});
  // call_op on RealDiv with ints truncates toward zero.
  expect_tensor<int32_t>(call_op1(OpId::Div, {Tensor({7, -7}), Tensor({2, 2})}), {2}, {3, -3});
}

TEST(Binary, IntegerPowRejectsNegativeExponents) {
  expect_error(
      [] {
        pow(Tensor({2, 3}), Tensor({1, -1}));
      },
      Code::kInvalidArgument, {"Pow", "negative integer powers are not allowed"});
  expect_error([] { pow(make<int64_t>({2}), int64_t{-2}); }, Code::kInvalidArgument, {"Pow"});
  expect_tensor<int32_t>(pow(Tensor({2, -3, 0}), 3), {3}, {8, -27, 0});
  expect_tensor<int32_t>(pow(Tensor({2}), 31), {1}, {INT32_MIN});  // wraps
  expect_tensor<float>(pow(Tensor({2.f, 4.f}), -1.f), {2}, {0.5f, 0.25f});
  expect_tensor<float>(pow(Tensor({-8.f}), 1.f / 3), {1}, {NAN});
}

TEST(Binary, MaximumMinimumPropagateNan) {
  expect_tensor<float>(maximum(Tensor({NAN, 1.f, 2.f}), Tensor({1.f, NAN, 1.f})), {3},
                       {NAN, NAN, 2.f});
  const double nan = std::nan("");
  expect_tensor<double>(minimum(Tensor({nan, 1.0, 2.0}), Tensor({1.0, nan, 1.0})), {3},
                        {nan, nan, 1.0});
}

TEST(Binary, ShiftCountsAreClampedLikeTensorFlow) {
  expect_tensor<int32_t>(left_shift(Tensor({1, 1, 1, 3}), Tensor({-1, 31, 40, 1})), {4},
                         {1, INT32_MIN, INT32_MIN, 6});
  expect_tensor<int32_t>(right_shift(Tensor({-8, -8, 8, 8}), Tensor({1, 100, -5, 40})), {4},
                         {-4, -1, 8, 0});
  expect_tensor<uint8_t>(right_shift(make<uint8_t>({255}), make<uint8_t>({200})), {1}, {1});
  expect_tensor<int8_t>(Tensor(Scalar(1), DType::kInt8).view({1}) << make<int8_t>({7}), {1},
                        {-128});
}

TEST(Binary, ScalarOperandsTakeTheTensorDtype) {
  expect_tensor<float>(add(Tensor({1.f}), 2), {1}, {3.f});
  expect_tensor<int64_t>(subtract(10, make<int64_t>({3})), {1}, {7});
  expect_tensor<uint8_t>(make<uint8_t>({200}) + 100, {1}, {44});  // wraps like TF
  expect_tensor<bool>(Tensor({1.5f, 2.5f}) > 2, {2}, {false, true});
  expect_tensor<double>(maximum(Tensor({1.0, 5.0}), 2.5), {2}, {2.5, 5.0});
  expect_error([] { Tensor({1, 2}) * 2.5; }, Code::kInvalidArgument, {"2.5", "int32"});
  expect_error([] { make<uint8_t>({1}) + 300; }, Code::kInvalidArgument, {"300", "uint8"});
}

TEST(Binary, Operators) {
  const Tensor a({6, -7}), b({4, 2});
  expect_tensor<int32_t>(a + b, {2}, {10, -5});
  expect_tensor<int32_t>(a - b, {2}, {2, -9});
  expect_tensor<int32_t>(a * b, {2}, {24, -14});
  expect_tensor<double>(a / b, {2}, {1.5, -3.5});
  expect_tensor<int32_t>(a % b, {2}, {2, 1});
  expect_tensor<int32_t>(a & b, {2}, {4, 0});
  expect_tensor<int32_t>(a | b, {2}, {6, -5});
  expect_tensor<int32_t>(a ^ b, {2}, {2, -5});
  expect_tensor<int32_t>(a << 1, {2}, {12, -14});
  expect_tensor<int32_t>(a >> 1, {2}, {3, -4});
  expect_tensor<bool>(a == 6, {2}, {true, false});
  expect_tensor<bool>(a != 6, {2}, {false, true});
  expect_tensor<bool>(a < b, {2}, {false, true});
  expect_tensor<bool>(a <= 6, {2}, {true, true});
  expect_tensor<bool>(a > b, {2}, {true, false});
  expect_tensor<bool>(-7 >= a, {2}, {false, true});
  // & | ^ on bool tensors are logical (TensorFlow semantics).
  const Tensor p({true, true, false, false}), q({true, false, true, false});
  expect_tensor<bool>(p & q, {4}, {true, false, false, false});
  expect_tensor<bool>(p | q, {4}, {true, true, true, false});
  expect_tensor<bool>(p ^ q, {4}, {false, true, true, false});
  expect_tensor<bool>(p & true, {4}, {true, true, false, false});
  expect_tensor<bool>(false | q, {4}, {true, false, true, false});
  expect_error([] { Tensor({true}) & Tensor({1}); }, Code::kInvalidArgument,
               {"LogicalAnd", "int32"});
  expect_error([] { bitwise_and(Tensor({true}), Tensor({true})); }, Code::kInvalidArgument,
               {"BitwiseAnd", "bool"});
  expect_error([] { Tensor({1.f}) & Tensor({1.f}); }, Code::kInvalidArgument,
               {"BitwiseAnd", "float32"});
}

TEST(Binary, DivideCastsIntegersLikeTruediv) {
  expect_tensor<float>(divide(make<int8_t>({7}), make<int8_t>({2})), {1}, {3.5f});
  expect_tensor<float>(divide(make<uint8_t>({255}), make<uint8_t>({2})), {1}, {127.5f});
  expect_tensor<double>(divide(Tensor({1}), Tensor({3})), {1}, {1.0 / 3});
  expect_tensor<double>(divide(make<int64_t>({-9}), int64_t{2}), {1}, {-4.5});
  expect_tensor<float>(divide(Tensor({1.f}), Tensor({4.f})), {1}, {0.25f});
  expect_tensor<double>(1 / Tensor({4.0}), {1}, {0.25});
  expect_error([] { divide(Tensor({true}), Tensor({true})); }, Code::kInvalidArgument,
               {"RealDiv", "bool"});
}

TEST(Binary, IntegerOverflowWraps) {
  expect_tensor<int32_t>(Tensor({INT32_MAX}) + 1, {1}, {INT32_MIN});
  expect_tensor<int64_t>(make<int64_t>({INT64_MIN}) - int64_t{1}, {1}, {INT64_MAX});
  expect_tensor<int32_t>(Tensor({65536}) * 65536, {1}, {0});
  expect_tensor<int8_t>(call_op1(OpId::Div, {make<int8_t>({-128}), make<int8_t>({-1})}), {1},
                        {-128});
}

TEST(Binary, ReusesUniquelyHeldInputBuffers) {
  {
    std::vector<Tensor> in{Tensor({1.f, 2.f, 3.f}), Tensor({10.f})};
    const Buffer* buf = in[0].buffer();
    std::vector<Tensor> out;
    run_kernel(op_def(OpId::Sub), in, {}, out);
    EXPECT_EQ(out[0].buffer(), buf);
    expect_tensor<float>(out[0], {3}, {-9.f, -8.f, -7.f});
  }
  {
    // The broadcast operand is b; a (scalar) is not reusable, b is.
    std::vector<Tensor> in{Tensor(2.f), Tensor({{1.f, 2.f}, {3.f, 4.f}})};
    const Buffer* buf = in[1].buffer();
    std::vector<Tensor> out;
    run_kernel(op_def(OpId::Pow), in, {}, out);
    EXPECT_EQ(out[0].buffer(), buf);
    expect_tensor<float>(out[0], {2, 2}, {2.f, 4.f, 8.f, 16.f});
  }
  const Tensor x({1, 2});
  const Tensor y = x + x;
  expect_tensor<int32_t>(x, {2}, {1, 2});
  expect_tensor<int32_t>(y, {2}, {2, 4});
}

TEST(Binary, InferenceOnSymbolicShapes) {
  auto sym = [](DType dt, const Shape& s) {
    return Tensor::symbolic(new testing::FakeSymbol, 0, dt, s);
  };
  auto infer = [](OpId id, std::vector<Tensor> in) {
    Attrs attrs;
    InferContext ic(op_def(id), in, attrs);
    op_def(id).infer(ic);
    return ic.output(0);
  };
  EXPECT_EQ(infer(OpId::Mul, {sym(DType::kFloat32, {-1, 3}), Tensor({1.f, 2.f, 3.f})}).shape,
            Shape({-1, 3}));
  TensorSpec s = infer(OpId::Less, {sym(DType::kInt32, Shape::unknown_rank()), Tensor(1)});
  EXPECT_EQ(s.dtype, DType::kBool);
  EXPECT_FALSE(s.shape.rank_known());
  EXPECT_EQ(infer(OpId::Maximum, {sym(DType::kInt64, {-1, 1}), sym(DType::kInt64, {4})}).shape,
            Shape({-1, 4}));
  expect_error(
      [&] {
        infer(OpId::Add, {sym(DType::kFloat32, {-1, 3}), Tensor({1.f, 2.f})});
      },
      Code::kInvalidArgument, {"AddV2", "incompatible"});
}

TEST(Binary, Traits) {
  for (OpId id : {OpId::Add, OpId::Mul, OpId::Maximum, OpId::Equal, OpId::LogicalOr})
    EXPECT_TRUE(op_def(id).has(kCommutative)) << op_def(id).type_name;
  for (OpId id : {OpId::Sub, OpId::Div, OpId::Pow, OpId::Less, OpId::LeftShift})
    EXPECT_FALSE(op_def(id).has(kCommutative)) << op_def(id).type_name;
  for (const BinaryCase& bc : cases()) EXPECT_TRUE(op_def(bc.id).has(kElementwise));
  EXPECT_TRUE(op_def(OpId::Less).has(kNoGradient));
  EXPECT_FALSE(op_def(OpId::Mul).has(kNoGradient));
}

}  // namespace
}  // namespace kiln
