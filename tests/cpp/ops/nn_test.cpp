// bias_add, softmax and log_softmax against plain reference loops.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/kernel_util.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using testing::expect_tensor_near;

template <typename T>
class BiasAddTyped : public ::testing::Test {};
using NumericTypes = ::testing::Types<int8_t, uint8_t, int32_t, int64_t, float, double>;
TYPED_TEST_SUITE(BiasAddTyped, NumericTypes);

TYPED_TEST(BiasAddTyped, MatchesReference) {
  using T = TypeParam;
  const std::vector<Shape> shapes = {{2, 3},     {4, 1}, {2, 3, 5}, {2, 2, 2, 7},
                                     {3, 70000}, {0, 4}, {3, 0}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << "shape " << s);
    const int64_t n = s.num_elements(), c = s.dim(s.rank() - 1);
    std::vector<T> x(n), b(c), want(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>((i * 13 + 1) % 50);
    for (int64_t j = 0; j < c; ++j) b[j] = static_cast<T>((j * 7 + 3) % 20);
    for (int64_t i = 0; i < n; ++i) want[i] = static_cast<T>(x[i] + b[i % c]);
    expect_tensor<T>(bias_add(Tensor::from_vector(x, s), Tensor::from_vector(b, Shape{c})), s,
                     want);
  }
}

TEST(BiasAdd, WrapsAndViews) {
  expect_tensor<int8_t>(bias_add(Tensor::from_vector<int8_t>({127, -128}, {1, 2}),
                                 Tensor::from_vector<int8_t>({1, -1}, {2})),
                        {1, 2}, {-128, 127});
  const Tensor v = Tensor({1.f, 2.f, 3.f, 4.f}).view({2, 2});
  expect_tensor<float>(bias_add(v, Tensor({10.f, 20.f})), {2, 2}, {11, 22, 13, 24});
  expect_tensor<float>(v, {2, 2}, {1, 2, 3, 4});  // input untouched
}

TEST(BiasAdd, Errors) {
  expect_error(
      [] {
        bias_add(Tensor({1.f, 2.f}), Tensor({1.f, 2.f}));
      },
      Code::kInvalidArgument, {"BiasAdd", "value", "rank >= 2", "[2]"});
  expect_error(
      [] {
        bias_add(Tensor({{1.f, 2.f}}), Tensor({{1.f, 2.f}}));
      },
      Code::kInvalidArgument, {"bias", "1-D", "[1,2]"});
  expect_error(
      [] {
        bias_add(Tensor({{1.f, 2.f}}), Tensor({1.f, 2.f, 3.f}));
      },
      Code::kInvalidArgument, {"bias length 3", "last dimension", "2"});
  expect_error(
      [] {
        bias_add(Tensor({{1.f, 2.f}}), Tensor({1, 2}));
      },
      Code::kInvalidArgument, {"BiasAdd", "float32", "int32"});
  expect_error([] { bias_add(Tensor({{true}}), Tensor({true})); }, Code::kInvalidArgument,
               {"numeric", "bool"});
}

template <typename T>
std::vector<T> ref_softmax(const std::vector<T>& x, int64_t n, bool log) {
  std::vector<T> out(x.size());
  for (size_t r = 0; r < x.size() / n; ++r) {
    const T* p = x.data() + r * n;
    long double m = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max<long double>(m, p[i]);
    for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<long double>(p[i]) - m);
    for (int64_t i = 0; i < n; ++i) {
      const long double z = static_cast<long double>(p[i]) - m;
      out[r * n + i] = static_cast<T>(log ? z - std::log(sum) : std::exp(z) / sum);
    }
  }
  return out;
}

template <typename T>
class SoftmaxTyped : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SoftmaxTyped, FloatTypes);

TYPED_TEST(SoftmaxTyped, MatchesReference) {
  using T = TypeParam;
  const std::vector<Shape> shapes = {{1}, {5}, {3, 4}, {2, 3, 10}, {4, 1000}, {70, 1}};
  for (const Shape& s : shapes)
    for (double scale : {1.0, 300.0}) {  // large logits must not overflow
      SCOPED_TRACE(::testing::Message() << "shape " << s << " scale " << scale);
      const int64_t n = s.num_elements(), c = s.dim(s.rank() - 1);
      std::vector<T> x(n);
      for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(scale * std::sin(0.9 * i));
      const Tensor t = Tensor::from_vector(x, s);
      expect_tensor_near<T>(softmax(t), s, ref_softmax(x, c, false));
      expect_tensor_near<T>(log_softmax(t), s, ref_softmax(x, c, true),
                            std::is_same_v<T, float> ? 1e-5 : 1e-11);
    }
}

// Rows longer than one 256-element chunk whose max rises chunk by chunk, and
// -inf before the first finite value: the running max rescales correctly.
TEST(Softmax, RisingMaxAcrossChunksAndLeadingNegInf) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t c : {300, 1000, 20000}) {
    std::vector<float> x(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) x[static_cast<size_t>(i)] = 0.05f * static_cast<float>(i % 997);
    for (int64_t i = 0; i < 260 && i < c; ++i) x[static_cast<size_t>(i)] = -inf;
    const Tensor t = Tensor::from_vector(x, Shape{1, c});
    expect_tensor_near<float>(softmax(t), {1, c}, ref_softmax(x, c, false));
    expect_tensor_near<float>(log_softmax(t), {1, c}, ref_softmax(x, c, true), 1e-5);
  }
}

TEST(Softmax, SpecialValuesAndEmpty) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_tensor_near<float>(softmax(Tensor({{0.f, -inf, 0.f}})), {1, 3}, {0.5f, 0.f, 0.5f});
  expect_tensor_near<float>(log_softmax(Tensor({{0.f, -inf}})), {1, 2}, {0.f, -inf});
  expect_tensor<float>(softmax(Tensor({1.f, nan})), {2}, {nan, nan});
  expect_tensor<float>(softmax(Tensor({-inf, -inf})), {2}, {nan, nan});
  expect_tensor<float>(softmax(Tensor::empty(DType::kFloat32, {3, 0})), {3, 0}, {});
  expect_tensor<double>(log_softmax(Tensor::empty(DType::kFloat64, {0, 4})), {0, 4}, {});
  expect_tensor<double>(softmax(Tensor({{1.0, 1.0}, {2.0, 2.0}})), {2, 2}, {0.5, 0.5, 0.5, 0.5});
}

// Row r of `got` (rows of c values of softmax or log-softmax of x) holds,
// bit for bit, what that row gives alone; returns the row alone.
std::vector<float> expect_row_alone(const std::vector<float>& got, const std::vector<float>& x,
                                    int64_t r, int64_t c, bool log) {
  const std::vector<float> row(x.begin() + r * c, x.begin() + (r + 1) * c);
  const Tensor one = Tensor::from_vector(row, Shape{1, c});
  const std::vector<float> alone = (log ? log_softmax(one) : softmax(one)).to_vector<float>();
  for (int64_t i = 0; i < c; ++i) {
    const auto a = std::bit_cast<uint32_t>(got[static_cast<size_t>(r * c + i)]);
    const auto b = std::bit_cast<uint32_t>(alone[static_cast<size_t>(i)]);
    if (a != b) {  // the row's first difference
      ADD_FAILURE() << "row " << r << " col " << i << ": bits " << a << " vs " << b;
      break;
    }
  }
  return alone;
}

// Rows of every kind in an output large enough to be streamed (8 MB here): each
// row gives, bit for bit, what it gives alone (a small, unstreamed call);
// normal rows take the shorter exp, rows with masks or a spread past -86.9 the
// general one (subnormal results kept), NaN rows stay NaN.
TEST(Softmax, StreamedRowsMatchRowsAloneBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Streamed from 8 MB here (by default also at least half the L3).
  EXPECT_GE(cpu::stream_bytes(), size_t{8} << 20);
  cpu::set_stream_bytes_for_tests(size_t{8} << 20);
  const int64_t rows = 2100, c = 1024;  // 8.2 MB of float32
  std::vector<float> x(static_cast<size_t>(rows * c));
  for (int64_t r = 0; r < rows; ++r) {
    float* p = x.data() + r * c;
    for (int64_t i = 0; i < c; ++i) p[i] = 4.f * std::sin(0.37f * static_cast<float>(i + r));
    switch (r % 6) {
      case 1: p[r % c] = -inf; break;         // a masked entry
      case 2: p[(r * 7) % c] = -1e9f; break;  // masked with a large negative
      case 3: p[5] = p[0] - 86.5f; break;     // spread just inside the range
      case 4: p[5] = -95.f; break;            // subnormal results
      case 5:
        if (r % 12 == 5) p[9] = nan;
        break;  // a NaN row
      default: break;
    }
  }
  const Tensor t = Tensor::from_vector(x, Shape{rows, c});
  for (bool log : {false, true}) {
    SCOPED_TRACE(log ? "log_softmax" : "softmax");
    const Tensor all = log ? log_softmax(t) : softmax(t);
    const std::vector<float> got = all.to_vector<float>();
    for (int64_t r = 0; r < rows; r += (r < 24 ? 1 : 37)) {
      const std::vector<float> alone = expect_row_alone(got, x, r, c, log);
      if (r % 12 == 5) {
        EXPECT_TRUE(std::isnan(alone[0])) << "row " << r;
      }
    }
  }
  cpu::set_stream_bytes_for_tests(0);
}

// Rows of every kind next to each other (the next row's lines are
// prefetched during this row's exps), many blocks of rows (a small grain),
// rows with a tail past the 16 lanes, and the output in the input's own
// buffer (graph mode reuses a dead input): each row gives, bit for bit, what
// it gives alone.
TEST(Softmax, BlocksOfRowsOfEveryKindMatchRowsAloneBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t saved = config().parallel_grain;
  config().parallel_grain = 2048;
  for (int64_t c : {300, 40, 7}) {
    SCOPED_TRACE(::testing::Message() << "row of " << c);
    const int64_t rows = 203;
    std::vector<float> x(static_cast<size_t>(rows * c));
    for (int64_t r = 0; r < rows; ++r) {
      float* p = x.data() + r * c;
      for (int64_t i = 0; i < c; ++i) p[i] = 3.f * std::sin(0.41f * static_cast<float>(i + 3 * r));
      if (r % 4 == 1) p[r % c] = -inf;           // a masked row
      if (r % 4 == 2) p[c - 1] = p[0] - 95.f;    // subnormal results
      if (r % 9 == 3) p[c / 2] = std::nanf("");  // a NaN row
    }
    for (float& v : x) v *= 2.f;  // what the function computes (exactly)
    const Tensor t = Tensor::from_vector(x, Shape{rows, c});
    Function in_place([](const std::vector<Value>& a) {
      const Tensor& h = a[0].tensor();
      return Value::list({Value(softmax(h * 2.f)), Value(log_softmax(h + h))});
    });
    const Value g = in_place({Value(t * 0.5f)});
    for (int k = 0; k < 4; ++k) {
      const bool log = k % 2 == 1;
      SCOPED_TRACE(::testing::Message()
                   << (log ? "log_softmax" : "softmax") << (k >= 2 ? " in a function" : ""));
      const Tensor all = k >= 2 ? g.items()[static_cast<size_t>(k - 2)].tensor()
                                : (log ? log_softmax(t) : softmax(t));
      const std::vector<float> got = all.to_vector<float>();
      for (int64_t r = 0; r < rows; ++r) {
        expect_row_alone(got, x, r, c, log);
      }
    }
  }
  config().parallel_grain = saved;
}

// Both sides of the shorter exp's range: results match the reference to a few
// ulp, the subnormal e^-95 / sum included (e^-103.6 / sum rounds to 0) when
// denormals are kept; flushed (the default), a denormal result is 0.
TEST(Softmax, EitherSideOfTheNormalExpRange) {
  for (bool flush : {false, true}) {
    testing::ScopedFlushDenormals mode(flush);
    for (float low : {-86.5f, -86.95f, -95.f, -103.f}) {
      SCOPED_TRACE(::testing::Message() << "low " << low << (flush ? " flushed" : ""));
      std::vector<float> x(40);
      for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i % 7);
      x[3] = low;
      const std::vector<float> want = ref_softmax(x, 40, false);
      const std::vector<float> got =
          softmax(Tensor::from_vector(x, Shape{1, 40})).to_vector<float>();
      for (size_t i = 0; i < x.size(); ++i) {
        const bool tiny = std::fpclassify(want[i]) == FP_SUBNORMAL;
        EXPECT_NEAR(got[i], flush && tiny ? 0.f : want[i],
                    4 * std::numeric_limits<float>::epsilon() * want[i] + 3e-45f)
            << "at " << i;
      }
      if (low > -100.f) {
        EXPECT_EQ(got[3] > 0.f, !flush);  // e^-95 / sum: a subnormal, kept or flushed
      }
    }
  }
}

TEST(Softmax, Errors) {
  expect_error(
      [] {
        softmax(Tensor({1, 2}));
      },
      Code::kInvalidArgument, {"Softmax", "logits", "float32 or float64", "int32"});
  expect_error([] { log_softmax(Tensor(1.f)); }, Code::kInvalidArgument,
               {"LogSoftmax", "rank >= 1"});
}

}  // namespace
}  // namespace kiln
