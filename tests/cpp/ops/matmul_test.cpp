// matmul against a plain triple loop with broadcast batch dims.
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace {
// A budget of 4 threads (before the pool starts), so large products are split
// into blocks on any machine.
const bool kFourThreads = (config().num_threads = 4, true);

using testing::expect_error;
using testing::expect_tensor;
using testing::expect_tensor_near;

int64_t prod(const std::vector<int64_t>& d, size_t end) {
  int64_t n = 1;
  for (size_t i = 0; i < end; ++i) n *= d[i];
  return n;
}

struct MM {
  std::vector<int64_t> a, b;
  bool ta = false, tb = false;
};

// Reference: integers wrap (computed mod 2^64, then narrowed), floats in double.
template <typename T>
std::vector<T> ref_matmul(const std::vector<T>& x, const std::vector<T>& y, const MM& p,
                          Shape& out_shape) {
  const size_t ra = p.a.size(), rb = p.b.size();
  const int64_t m = p.ta ? p.a[ra - 1] : p.a[ra - 2];
  const int64_t k = p.ta ? p.a[ra - 2] : p.a[ra - 1];
  const int64_t n = p.tb ? p.b[rb - 2] : p.b[rb - 1];
  const size_t nb = std::max(ra, rb) - 2;
  std::vector<int64_t> batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t da = i + ra - 2 >= nb ? p.a[i + ra - 2 - nb] : 1;
    const int64_t db = i + rb - 2 >= nb ? p.b[i + rb - 2 - nb] : 1;
    batch[i] = da == 1 ? db : da;
  }
  out_shape = Shape(batch);
  out_shape.push_back(m);
  out_shape.push_back(n);
  const int64_t batches = prod(batch, nb);
  std::vector<T> out(batches * m * n);
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Per-operand batch offset with broadcasting.
    int64_t oa = 0, ob = 0, sa = 1, sb = 1, rem = bi;
    for (int64_t d = static_cast<int64_t>(nb) - 1; d >= 0; --d) {
      const int64_t c = rem % batch[d];
      rem /= batch[d];
      const int64_t ia = d - static_cast<int64_t>(nb) + static_cast<int64_t>(ra) - 2;
      const int64_t ib = d - static_cast<int64_t>(nb) + static_cast<int64_t>(rb) - 2;
      if (ia >= 0) {
        oa += (p.a[ia] == 1 ? 0 : c) * sa;
        sa *= p.a[ia];
      }
      if (ib >= 0) {
        ob += (p.b[ib] == 1 ? 0 : c) * sb;
        sb *= p.b[ib];
      }
    }
    const T* A = x.data() + oa * m * k;
    const T* B = y.data() + ob * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double accd = 0;
        uint64_t acci = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const T av = p.ta ? A[kk * m + i] : A[i * k + kk];
          const T bv = p.tb ? B[j * k + kk] : B[kk * n + j];
          accd += static_cast<double>(av) * static_cast<double>(bv);
          acci += static_cast<uint64_t>(static_cast<int64_t>(av)) *
                  static_cast<uint64_t>(static_cast<int64_t>(bv));
        }
        out[(bi * m + i) * n + j] =
            std::is_integral_v<T> ? static_cast<T>(acci) : static_cast<T>(accd);
      }
  }
  return out;
}

template <typename T>
std::vector<T> values(int64_t n, int seed) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = (i * 131 + seed * 17 + 5) % 13 - 6;
    if constexpr (std::is_unsigned_v<T>) k = k < 0 ? -k : k;
    v[i] = static_cast<T>(k);
  }
  return v;
}

const std::vector<MM>& cases() {
  static const std::vector<MM> c = {
      {{2, 3}, {3, 4}},
      {{3, 2}, {3, 4}, true, false},
      {{2, 3}, {4, 3}, false, true},
      {{3, 2}, {4, 3}, true, true},
      {{1, 1}, {1, 1}},
      {{2, 2, 3}, {2, 3, 4}},
      {{2, 1, 2, 3}, {3, 3, 4}},  // batch broadcast -> [2, 3, 2, 4]
      {{5, 2, 3}, {3, 4}},        // rank-2 operand broadcast (folded into one product)
      {{4, 3, 5}, {6, 5}, false, true},
      {{2, 3, 4}, {1, 4, 5}},
      {{3, 4}, {2, 5, 4, 2}},  // the other way round
      {{3, 1, 4, 3}, {1, 2, 4, 2}, true, false},
      {{64, 8, 8}, {64, 8, 8}, false, true},  // many small products
      {{1, 37, 200}, {200, 600}},             // blocked integer loop (k, n tiles)
      {{200, 37}, {600, 200}, true, true},
      {{0, 3}, {3, 4}},     // empty m
      {{2, 3}, {3, 0}},     // empty n
      {{2, 0}, {0, 4}},     // empty k: zeros
      {{0, 2, 3}, {3, 4}},  // empty batch
      {{3, 2, 0}, {1, 0, 5}},
  };
  return c;
}

template <typename T>
class MatMulTyped : public ::testing::Test {};
using Types = ::testing::Types<int8_t, uint8_t, int32_t, int64_t, float, double>;
TYPED_TEST_SUITE(MatMulTyped, Types);

TYPED_TEST(MatMulTyped, MatchesReference) {
  using T = TypeParam;
  for (const MM& p : cases()) {
    SCOPED_TRACE(::testing::Message()
                 << Shape(p.a) << " x " << Shape(p.b) << " ta " << p.ta << " tb " << p.tb);
    const auto x = values<T>(Shape(p.a).num_elements(), 1);
    const auto y = values<T>(Shape(p.b).num_elements(), 2);
    Shape s;
    const auto want = ref_matmul(x, y, p, s);
    const Tensor got =
        matmul(Tensor::from_vector(x, Shape(p.a)), Tensor::from_vector(y, Shape(p.b)), p.ta, p.tb);
    if constexpr (std::is_floating_point_v<T>)
      expect_tensor_near<T>(got, s, want);
    else
      expect_tensor<T>(got, s, want);
  }
}

TYPED_TEST(MatMulTyped, IntegerOverflowWraps) {
  using T = TypeParam;
  if constexpr (std::is_integral_v<T>) {
    const T big = std::numeric_limits<T>::max();
    const std::vector<T> x = {big, big, T(3), big};
    const MM p{{2, 2}, {2, 2}};
    Shape s;
    const auto want = ref_matmul(x, x, p, s);
    expect_tensor<T>(matmul(Tensor::from_vector(x, {2, 2}), Tensor::from_vector(x, {2, 2})), s,
                     want);
  }
}

TEST(MatMul, LargeFloatAgainstReference) {
  const MM p{{3, 150, 170}, {170, 130}};
  std::vector<float> x(3 * 150 * 170), y(170 * 130);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::cos(0.11f * static_cast<float>(i));
  Shape s;
  const auto want = ref_matmul(x, y, p, s);
  expect_tensor_near<float>(
      matmul(Tensor::from_vector(x, Shape(p.a)), Tensor::from_vector(y, Shape(p.b))), s, want,
      1e-4);
}

// Products large enough to run as row or column blocks on the pool (one
// single-threaded OpenBLAS call each), every transpose combination.
TEST(MatMul, SplitProductsAgainstReference) {
  const std::vector<MM> cases = {
      {{600, 128}, {128, 300}},              // rows of C
      {{128, 600}, {128, 300}, true},        // rows, A transposed
      {{3, 200}, {200, 2000}},               // columns of C (few rows)
      {{3, 200}, {2000, 200}, false, true},  // columns, B transposed
      {{300, 256}, {700, 300}, true, true},  // both transposed
      {{2, 300, 100}, {100, 400}},           // batch folded into rows
  };
  for (const MM& p : cases) {
    SCOPED_TRACE(::testing::Message() << Shape(p.a).to_string() << (p.ta ? "T" : "") << " x "
                                      << Shape(p.b).to_string() << (p.tb ? "T" : ""));
    std::vector<float> x(Shape(p.a).num_elements()), y(Shape(p.b).num_elements());
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::cos(0.11f * static_cast<float>(i));
    Shape s;
    const auto want = ref_matmul(x, y, p, s);
    expect_tensor_near<float>(
        matmul(Tensor::from_vector(x, Shape(p.a)), Tensor::from_vector(y, Shape(p.b)), p.ta, p.tb),
        s, want, 1e-3);
  }
}

TEST(MatMul, ViewsAndValues) {
  const Tensor a = Tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3});
  const Tensor b = Tensor({1.f, 0.f, 0.f, 1.f, 1.f, 1.f}).view({3, 2});
  expect_tensor<float>(matmul(a, b), {2, 2}, {4, 5, 10, 11});
  expect_tensor<float>(matmul(a, a, false, true), {2, 2}, {14, 32, 32, 77});
  expect_tensor<double>(matmul(Tensor({{1.0, 2.0}}), Tensor({{3.0}, {4.0}})), {1, 1}, {11});
}

TEST(MatMul, ConcurrentCalls) {
  std::vector<float> x(40 * 50), y(50 * 60);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3;
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 5) - 2;
  const Tensor a = Tensor::from_vector(x, {40, 50}), b = Tensor::from_vector(y, {50, 60});
  const std::vector<float> want = matmul(a, b).to_vector<float>();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      bool same = true;
      for (int i = 0; i < 20; ++i) same = same && matmul(a, b).to_vector<float>() == want;
      ok[t] = same;
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << t;
}

TEST(MatMul, Errors) {
  const Tensor a = Tensor::empty(DType::kFloat32, {2, 3});
  const Tensor b = Tensor::empty(DType::kFloat32, {4, 5});
  expect_error([&] { matmul(a, b); }, Code::kInvalidArgument,
               {"BatchMatMulV2", "inner dimensions", "[2,3]", "[4,5]", "3", "4"});
  expect_error([&] { matmul(a, a); }, Code::kInvalidArgument, {"[2,3]", "transpose_b=false"});
  matmul(a, a, false, true);  // fine transposed
  expect_error(
      [&] {
        matmul(Tensor({1.f, 2.f}), a);
      },
      Code::kInvalidArgument, {"x", "rank >= 2", "[2]"});
  expect_error([&] { matmul(a, Tensor(1.f)); }, Code::kInvalidArgument, {"y", "rank >= 2"});
  expect_error(
      [] {
        matmul(Tensor::empty(DType::kFloat32, {2, 2, 3}),
               Tensor::empty(DType::kFloat32, {3, 3, 4}));
      },
      Code::kInvalidArgument, {"batch dimensions", "[2,2,3]", "[3,3,4]", "broadcastable"});
  expect_error(
      [&] {
        matmul(a, Tensor::empty(DType::kFloat64, {3, 2}));
      },
      Code::kInvalidArgument, {"BatchMatMulV2", "float32", "float64"});
  expect_error([] { matmul(Tensor({{true}}), Tensor({{true}})); }, Code::kInvalidArgument,
               {"numeric", "bool"});
  expect_error([] { matmul(Tensor({{"a"}}), Tensor({{"b"}})); }, Code::kInvalidArgument,
               {"string"});
}

class FakeSymbol : public Symbol {
 public:
  std::string tensor_name(int32_t i) const override { return "x:" + std::to_string(i); }
  std::string describe() const override { return "fake"; }
};

TEST(MatMul, InferenceWithUnknownDims) {
  const OpDef& op = op_def(OpId::MatMul);
  auto infer = [&](const Shape& sa, const Shape& sb, bool ta, bool tb) {
    std::vector<Tensor> in = {Tensor::symbolic(new FakeSymbol, 0, DType::kFloat32, sa),
                              Tensor::symbolic(new FakeSymbol, 0, DType::kFloat32, sb)};
    Attrs attrs = {ta, tb};
    InferContext c(op, in, attrs);
    op.infer(c);
    return c.output(0).shape;
  };
  EXPECT_EQ(infer({-1, 2, 3}, {3, -1}, false, false), Shape({-1, 2, -1}));
  EXPECT_EQ(infer({-1, -1}, {5, 4}, false, true), Shape({-1, 5}));
  EXPECT_EQ(infer({4, 3, 2}, {-1, 3, 5}, true, false), Shape({4, 2, 5}));
  EXPECT_FALSE(infer(Shape::unknown_rank(), {3, 4}, false, false).rank_known());
  expect_error(
      [&] {
        infer({-1, 3}, {4, -1}, false, false);
      },
      Code::kInvalidArgument, {"inner dimensions"});
}

}  // namespace
}  // namespace kiln
