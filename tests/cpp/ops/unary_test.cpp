// Unary elementwise ops: values against reference implementations for every
// supported dtype, float32 accuracy sweeps, special values, dtype rejection,
// empty tensors, views, in-place reuse and symbolic inference.
#include <cstring>
#include <functional>

#include "elementwise_test_util.h"
#include "kiln/function.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::make;
using testing::same_or_flushed;
using testing::same_value;
using testing::samples;

struct UnaryCase {
  OpId id;
  Tensor (*front)(const Tensor&);
  std::vector<DType> dtypes;  // accepted input dtypes
};

const std::vector<DType> kFloats = {DType::kFloat32, DType::kFloat64};
const std::vector<DType> kSignedReal = {DType::kInt8, DType::kInt32, DType::kInt64, DType::kFloat32,
                                        DType::kFloat64};
const std::vector<DType> kReal = {DType::kInt8,  DType::kUInt8,   DType::kInt32,
                                  DType::kInt64, DType::kFloat32, DType::kFloat64};
const std::vector<DType> kInts = {DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64};

const std::vector<UnaryCase>& cases() {
  static const std::vector<UnaryCase> c = {
      {OpId::Neg, negative, kSignedReal},
      {OpId::Abs, abs, kSignedReal},
      {OpId::Sign, sign, kSignedReal},
      {OpId::Square, square, kReal},
      {OpId::Sqrt, sqrt, kFloats},
      {OpId::Rsqrt, rsqrt, kFloats},
      {OpId::Exp, exp, kFloats},
      {OpId::Log, log, kFloats},
      {OpId::Expm1, expm1, kFloats},
      {OpId::Log1p, log1p, kFloats},
      {OpId::Tanh, tanh, kFloats},
      {OpId::Sigmoid, sigmoid, kFloats},
      {OpId::Erf, erf, kFloats},
      {OpId::Relu, relu, kReal},
      {OpId::Sin, sin, kFloats},
      {OpId::Cos, cos, kFloats},
      {OpId::Floor, floor, kFloats},
      {OpId::Ceil, ceil, kFloats},
      {OpId::Round, round, kSignedReal},
      {OpId::LogicalNot, logical_not, {DType::kBool}},
      {OpId::Invert, invert, kInts},
      {OpId::IsNan, is_nan, kFloats},
      {OpId::IsFinite, is_finite, kFloats},
  };
  return c;
}

// Exact ops computed the obvious way (integers wrap modulo 2^bits).
template <typename T>
T ref_exact(OpId id, T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return !x;
  } else if constexpr (std::is_integral_v<T>) {
    const uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(x));
    switch (id) {
      case OpId::Neg: return static_cast<T>(0 - u);
      case OpId::Abs: return x < 0 ? static_cast<T>(0 - u) : x;
      case OpId::Sign: return x > 0 ? T(1) : (x == 0 ? T(0) : static_cast<T>(-1));
      case OpId::Square: return static_cast<T>(u * u);
      case OpId::Relu: return x > 0 ? x : T(0);
      case OpId::Round: return x;
      case OpId::Invert: return static_cast<T>(~u);
      default: ADD_FAILURE() << "no integer reference"; return T(0);
    }
  } else {
    switch (id) {
      case OpId::Neg: return -x;
      case OpId::Abs: return std::fabs(x);
      case OpId::Sign: return x > 0 ? T(1) : (x < 0 ? T(-1) : x);
      case OpId::Square: return x * x;
      case OpId::Relu: return std::isnan(x) ? x : (x > 0 ? x : (x == 0 ? x : T(0)));
      case OpId::Round: return std::nearbyint(x);
      case OpId::Floor: return std::floor(x);
      case OpId::Ceil: return std::ceil(x);
      case OpId::Sqrt: return std::sqrt(x);
      case OpId::Rsqrt: return T(1) / std::sqrt(x);
      default: ADD_FAILURE() << "no exact reference"; return T(0);
    }
  }
}

// Transcendental references in long double.
long double ref_math(OpId id, long double x) {
  switch (id) {
    case OpId::Exp: return std::exp(x);
    case OpId::Log: return std::log(x);
    case OpId::Expm1: return std::expm1(x);
    case OpId::Log1p: return std::log1p(x);
    case OpId::Tanh: return std::tanh(x);
    case OpId::Sigmoid: return 1.0L / (1.0L + std::exp(-x));
    case OpId::Sin: return std::sin(x);
    case OpId::Cos: return std::cos(x);
    case OpId::Erf: return std::erf(x);
    default: ADD_FAILURE() << "no math reference"; return 0;
  }
}

bool is_math(OpId id) {
  return id == OpId::Exp || id == OpId::Expm1 || id == OpId::Log || id == OpId::Log1p ||
         id == OpId::Tanh || id == OpId::Sigmoid || id == OpId::Sin || id == OpId::Cos ||
         id == OpId::Erf;
}

template <typename T>
void check_case(const UnaryCase& uc) {
  SCOPED_TRACE(str_cat(op_def(uc.id).type_name, " ", dtype_name(dtype_v<T>)));
  const std::vector<T> xs = samples<T>();
  // A 2-D view of a 1-D tensor: multi-dim inputs and views at once.
  const int64_t n = static_cast<int64_t>(xs.size());
  const Shape vs = n % 2 == 0 ? Shape{2, n / 2} : Shape{1, n};
  const Tensor x = make<T>(xs, Shape{n});
  const Tensor y = uc.front(x.view(vs));
  ASSERT_EQ(y.shape(), vs);
  if (uc.id == OpId::IsNan || uc.id == OpId::IsFinite) {
    if constexpr (std::is_floating_point_v<T>) {
      const std::vector<bool> got = y.to_vector<bool>();
      for (size_t i = 0; i < xs.size(); ++i)
        EXPECT_EQ(got[i], uc.id == OpId::IsNan ? std::isnan(xs[i]) : std::isfinite(xs[i])) << xs[i];
    }
    return;
  }
  ASSERT_EQ(y.dtype(), dtype_v<T>);
  const std::vector<T> got = y.to_vector<T>();
  for (size_t i = 0; i < xs.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (is_math(uc.id)) {
        const long double want = ref_math(uc.id, xs[i]);
        if (std::isnan(want) || std::isinf(want)) {
          EXPECT_TRUE(same_value(got[i], static_cast<T>(want))) << "x=" << xs[i];
        } else {
          const double tol = std::is_same_v<T, float> ? 3e-7 : 1e-15;
          EXPECT_NEAR(got[i], static_cast<double>(want), tol * (1 + std::fabs(double(want))))
              << "x=" << xs[i];
        }
        continue;
      }
    }
    EXPECT_TRUE(same_or_flushed(got[i], ref_exact(uc.id, xs[i])))
        << "x=" << +xs[i] << " got " << +got[i] << " want " << +ref_exact(uc.id, xs[i]);
  }
}

TEST(Unary, ValuesForEverySupportedDtype) {
  for (const UnaryCase& uc : cases()) {
    for (DType dt : uc.dtypes) {
      switch (dt) {
        case DType::kBool: check_case<bool>(uc); break;
        case DType::kInt8: check_case<int8_t>(uc); break;
        case DType::kUInt8: check_case<uint8_t>(uc); break;
        case DType::kInt32: check_case<int32_t>(uc); break;
        case DType::kInt64: check_case<int64_t>(uc); break;
        case DType::kFloat32: check_case<float>(uc); break;
        case DType::kFloat64: check_case<double>(uc); break;
        default: FAIL();
      }
    }
  }
}

// Every op of unary.def, traced inside a function (where float32 ops may be
// fused), gives the eager result bit for bit.
TEST(Unary, FunctionMatchesEager) {
  for (const UnaryCase& uc : cases()) {
    for (DType dt : uc.dtypes) {
      SCOPED_TRACE(str_cat(op_def(uc.id).type_name, " ", dtype_name(dt)));
      const Tensor x = testing::sample_of(dt, Shape{3, 5});
      const Tensor want = uc.front(x);
      // Two ops in a row (not for predicates, whose bool result they reject),
      // so elementwise fusion has a chain to fuse.
      const bool chain = want.dtype() == dt;
      const Tensor want2 = chain ? uc.front(want) : want;
      Function f([&](const std::vector<Value>& a) {
        const Tensor y = uc.front(a[0].tensor());
        return Value::tuple({Value(y), Value(chain ? uc.front(y) : y)});
      });
      const Value got = f({x});
      for (size_t k = 0; k < 2; ++k) {
        const Tensor g = got.items()[k].tensor();
        const Tensor& w = k == 0 ? want : want2;
        ASSERT_EQ(g.dtype(), w.dtype());
        ASSERT_EQ(g.shape(), w.shape());
        EXPECT_EQ(std::memcmp(g.raw_data(), w.raw_data(), w.nbytes()), 0);
      }
    }
  }
}

TEST(Unary, RejectsUnsupportedDtypesNamingOpArgAndDtypes) {
  for (const UnaryCase& uc : cases()) {
    for (DType dt : testing::value_dtypes()) {
      if (std::find(uc.dtypes.begin(), uc.dtypes.end(), dt) != uc.dtypes.end()) continue;
      const std::string want(dtype_name(uc.dtypes.front()));
      expect_error([&] { uc.front(testing::sample_of(dt)); }, Code::kInvalidArgument,
                   {op_def(uc.id).type_name, "x has dtype", std::string(dtype_name(dt)), want});
    }
  }
}

TEST(Unary, SpotValues) {
  using testing::expect_tensor;
  expect_tensor<float>(round(Tensor({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f})), {6},
                       {0.f, 2.f, 2.f, -0.f, -2.f, 3.f});
  expect_tensor<double>(floor(Tensor({-1.5, 1.5, -0.0, 4503599627370497.0})), {4},
                        {-2.0, 1.0, -0.0, 4503599627370497.0});
  expect_tensor<float>(ceil(Tensor({-1.5f, 1.2f, -0.5f})), {3}, {-1.f, 2.f, -0.f});
  expect_tensor<float>(log(Tensor({-1.f, 0.f, 1.f})), {3}, {std::nanf(""), -INFINITY, 0.f});
  expect_tensor<float>(sqrt(Tensor({-1.f, 4.f})), {2}, {std::nanf(""), 2.f});
  expect_tensor<float>(exp(Tensor({0.f, -INFINITY, INFINITY, 1000.f, -1000.f})), {5},
                       {1.f, 0.f, INFINITY, INFINITY, 0.f});
  expect_tensor<float>(sigmoid(Tensor({0.f, -INFINITY, INFINITY, 100.f})), {4},
                       {0.5f, 0.f, 1.f, 1.f});
  expect_tensor<float>(tanh(Tensor({0.f, -INFINITY, INFINITY, 20.f, -0.0f})), {5},
                       {0.f, -1.f, 1.f, 1.f, -0.f});
  expect_tensor<float>(erf(Tensor({0.f, -0.f, INFINITY, -INFINITY, 5.f, std::nanf("")})), {6},
                       {0.f, -0.f, 1.f, -1.f, 1.f, std::nanf("")});
  expect_tensor<int32_t>(abs(Tensor({INT32_MIN, -3, 4})), {3}, {INT32_MIN, 3, 4});
  expect_tensor<int8_t>(negative(make<int8_t>({-128, 5})), {2}, {-128, -5});
  expect_tensor<uint8_t>(invert(make<uint8_t>({0, 15})), {2}, {255, 240});
  expect_tensor<uint8_t>(relu(make<uint8_t>({0, 200})), {2}, {0, 200});
  expect_tensor<bool>(is_finite(Tensor({1.f, INFINITY, NAN})), {3}, {true, false, false});
  expect_tensor<bool>(logical_not(Tensor({true, false})), {2}, {false, true});
}

TEST(Unary, Operators) {
  using testing::expect_tensor;
  expect_tensor<int32_t>(-Tensor({1, -2}), {2}, {-1, 2});
  expect_tensor<float>(-Tensor({1.5f}), {1}, {-1.5f});
  expect_tensor<int32_t>(~Tensor({0, -1, 5}), {3}, {-1, 0, -6});
  expect_tensor<bool>(~Tensor({true, false}), {2}, {false, true});  // logical on bool
  expect_error([] { ~Tensor({1.f}); }, Code::kInvalidArgument, {"Invert", "float32"});
  expect_error([] { -Tensor({true}); }, Code::kInvalidArgument, {"Neg", "bool"});
  expect_error([] { -Tensor(); }, Code::kInvalidArgument, {"Neg", "undefined"});
  expect_error([] { ~Tensor(); }, Code::kInvalidArgument, {"undefined"});
}

// Scalars, empty tensors and zero-size dims keep their shapes.
TEST(Unary, ScalarAndEmptyShapes) {
  for (const UnaryCase& uc : cases()) {
    SCOPED_TRACE(op_def(uc.id).type_name);
    const DType dt = uc.dtypes.back();
    for (const Shape& s : {Shape{}, Shape{0}, Shape{3, 0, 2}}) {
      Tensor y = uc.front(testing::sample_of(dt, s));
      EXPECT_EQ(y.shape(), s);
      EXPECT_EQ(y.dtype(), uc.id == OpId::IsNan || uc.id == OpId::IsFinite ? DType::kBool : dt);
    }
  }
}

// Large inputs are split across the thread pool; every element must be right.
TEST(Unary, LargeInputsMatchElementwise) {
  const int64_t n = 300001;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(i % 2001 - 1000) / 50.f;
  const Tensor x = make<float>(v, Shape{n});
  const std::vector<float> e = exp(x).to_vector<float>();
  const std::vector<float> r = relu(x).to_vector<float>();
  for (int64_t i = 0; i < n; i += 1) {
    const float xi = v[static_cast<size_t>(i)];
    ASSERT_LE(testing::ulp_error(e[static_cast<size_t>(i)], std::exp(double(xi))), 2.0) << xi;
    ASSERT_EQ(r[static_cast<size_t>(i)], xi > 0 ? xi : 0.f);
  }
}

// A uniquely held input buffer is reused for the output and stays correct.
TEST(Unary, ReusesUniquelyHeldInputBuffer) {
  std::vector<Tensor> inputs{Tensor({1.f, 4.f, 9.f})};
  const Buffer* buf = inputs[0].buffer();
  std::vector<Tensor> out;
  run_kernel(op_def(OpId::Sqrt), inputs, {}, out);
  EXPECT_EQ(out[0].buffer(), buf);
  testing::expect_tensor<float>(out[0], {3}, {1.f, 2.f, 3.f});
  // A shared input is not overwritten.
  Tensor x({1.f, 4.f});
  Tensor y = sqrt(x);
  EXPECT_NE(y.buffer(), x.buffer());
  testing::expect_tensor<float>(x, {2}, {1.f, 4.f});
}

TEST(Unary, InferenceOnSymbolicShapes) {
  for (const Shape& s : {Shape({-1, 3}), Shape::unknown_rank()}) {
    std::vector<Tensor> in{Tensor::symbolic(new testing::FakeSymbol, 0, DType::kFloat32, s)};
    Attrs attrs;
    InferContext ic(op_def(OpId::Tanh), in, attrs);
    op_def(OpId::Tanh).infer(ic);
    EXPECT_EQ(ic.output(0).shape, s);
    EXPECT_EQ(ic.output(0).dtype, DType::kFloat32);
    InferContext ic2(op_def(OpId::IsNan), in, attrs);
    op_def(OpId::IsNan).infer(ic2);
    EXPECT_EQ(ic2.output(0).dtype, DType::kBool);
  }
}

// ---- float32 accuracy of the polynomial kernels, over a sweep of all floats ----

void sweep(OpId id, Tensor (*front)(const Tensor&), double max_ulp) {
  SCOPED_TRACE(op_def(id).type_name);
  std::vector<float> xs;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  // Dense coverage of the interesting range, too.
  for (float x = -105.f; x < 105.f; x += 0.00390625f) xs.push_back(x);
  const std::vector<float> got = front(make<float>(xs)).to_vector<float>();
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = static_cast<double>(ref_math(id, xs[i]));
    const double e = testing::ulp_error_or_flushed(got[i], want);
    if (e > worst) {
      worst = e;
      worst_x = xs[i];
    }
  }
  EXPECT_LE(worst, max_ulp) << "worst at x=" << worst_x;
  ::testing::Test::RecordProperty(str_cat(op_def(id).type_name, "_max_ulp"), std::to_string(worst));
}

// kiln's float32 kernels (float_math.h) and their worst error allowed, in
// ulp; the sweep's huge arguments check sin and cos's Payne-Hanek reduction.
TEST(UnaryAccuracy, Float32KernelsOverASweepOfAllFloats) {
  const struct {
    OpId id;
    Tensor (*front)(const Tensor&);
    double max_ulp;
  } cases[] = {{OpId::Exp, exp, 1.5},         {OpId::Log, log, 1.5}, {OpId::Tanh, tanh, 2.0},
               {OpId::Sigmoid, sigmoid, 2.5}, {OpId::Erf, erf, 1.5}, {OpId::Expm1, expm1, 2.0},
               {OpId::Log1p, log1p, 2.0},     {OpId::Sin, sin, 1.0}, {OpId::Cos, cos, 1.0}};
  for (const auto& c : cases) sweep(c.id, c.front, c.max_ulp);
}

// Round/floor/ceil via the 2^23 trick must equal libm on every float class.
TEST(UnaryAccuracy, RoundingMatchesLibmExactly) {
  std::vector<float> xs;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (float x = -20.f; x <= 20.f; x += 0.125f) xs.push_back(x);
  const Tensor t = make<float>(xs);
  const auto r = round(t).to_vector<float>();
  const auto f = floor(t).to_vector<float>();
  const auto c = ceil(t).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_TRUE(same_value(r[i], std::nearbyint(xs[i]))) << xs[i];
    ASSERT_TRUE(same_value(f[i], std::floor(xs[i]))) << xs[i];
    ASSERT_TRUE(same_value(c[i], std::ceil(xs[i]))) << xs[i];
  }
}

}  // namespace
}  // namespace kiln
