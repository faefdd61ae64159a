// The broadcasting binary and ternary kernels (elementwise_util.h) against a
// naive reference that maps every output index back to its inputs: random
// shape pairs (ranks 1-4, dims 1-9, random broadcast), the short-inner-dim
// patterns that run in tiles ([R, 1] op [1, C], [R, C] op [C], columns, 3-D),
// several dtypes including bool outputs, and sizes past the parallel grain.
#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace {

using Rng = std::mt19937_64;

// NumPy's broadcast of several shapes (the test's own rule).
Shape broadcast_all(const std::vector<Shape>& shapes) {
  int64_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.rank());
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1);
  for (const Shape& s : shapes) {
    for (int64_t d = 0; d < s.rank(); ++d) {
      const int64_t od = rank - s.rank() + d;
      const int64_t v = s.dim(d);
      if (v != 1) dims[static_cast<size_t>(od)] = v;
    }
  }
  return Shape(dims);
}

// Flat index into `in` of output element `flat` of `out`.
int64_t source_index(const Shape& in, const Shape& out, int64_t flat) {
  int64_t idx = 0, mul = 1, rem = flat;
  for (int64_t d = out.rank() - 1; d >= 0; --d) {
    const int64_t i = rem % out.dim(d);
    rem /= out.dim(d);
    const int64_t id = d - (out.rank() - in.rank());
    if (id < 0) continue;
    if (in.dim(id) != 1) idx += i * mul;
    mul *= in.dim(id);
  }
  return idx;
}

template <typename T>
T random_value(Rng& rng) {
  if constexpr (std::is_same_v<T, bool>) {
    return rng() % 2 == 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(std::uniform_real_distribution<double>(-8.0, 8.0)(rng));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::string(1, static_cast<char>('a' + rng() % 3));
  } else {
    // Full range for 8-bit types (wrap-around), small values otherwise.
    if constexpr (sizeof(T) == 1) return static_cast<T>(rng());
    return static_cast<T>(static_cast<int64_t>(rng() % 200) - 100);
  }
}

template <typename T>
Tensor random_tensor(const Shape& shape, Rng& rng) {
  Tensor t = Tensor::empty(dtype_v<T>, shape);
  T* p = t.mutable_data<T>();
  for (int64_t i = 0; i < shape.num_elements(); ++i) p[i] = random_value<T>(rng);
  return t;
}

template <typename U>
std::string show(const U& v) {
  if constexpr (std::is_same_v<U, std::string>)
    return v;
  else
    return std::to_string(static_cast<double>(v));
}

// op(a, b) has the broadcast shape and out[i] == ref(a[ia], b[ib]) exactly.
template <typename T, typename U, typename Op, typename Ref>
void check_binary(Op op, Ref ref, const Shape& sa, const Shape& sb, Rng& rng) {
  const Tensor a = random_tensor<T>(sa, rng), b = random_tensor<T>(sb, rng);
  const Tensor y = op(a, b);
  const Shape so = broadcast_all({sa, sb});
  ASSERT_EQ(y.dtype(), dtype_v<U>);
  ASSERT_EQ(y.shape(), so) << sa << " op " << sb;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const U* py = y.data<U>();
  int64_t bad = 0;
  for (int64_t i = 0; i < so.num_elements() && bad < 5; ++i) {
    const U want = ref(pa[source_index(sa, so, i)], pb[source_index(sb, so, i)]);
    if (!(py[i] == want)) {
      ++bad;
      ADD_FAILURE() << sa << " op " << sb << " (" << dtype_name(dtype_v<T>) << ") at flat index "
                    << i << ": got " << show(py[i]) << ", want " << show(want);
    }
  }
}

// op(a, b, c) against ref(a[ia], b[ib], c[ic]).
template <typename TA, typename T, typename Op, typename Ref>
void check_ternary(Op op, Ref ref, const Shape& sa, const Shape& sb, const Shape& sc, Rng& rng) {
  const Tensor a = random_tensor<TA>(sa, rng), b = random_tensor<T>(sb, rng),
               c = random_tensor<T>(sc, rng);
  const Tensor y = op(a, b, c);
  const Shape so = broadcast_all({sa, sb, sc});
  ASSERT_EQ(y.dtype(), dtype_v<T>);
  ASSERT_EQ(y.shape(), so) << sa << ", " << sb << ", " << sc;
  const TA* pa = a.data<TA>();
  const T* pb = b.data<T>();
  const T* pc = c.data<T>();
  const T* py = y.data<T>();
  int64_t bad = 0;
  for (int64_t i = 0; i < so.num_elements() && bad < 5; ++i) {
    const T want =
        ref(pa[source_index(sa, so, i)], pb[source_index(sb, so, i)], pc[source_index(sc, so, i)]);
    if (!(py[i] == want)) {
      ++bad;
      ADD_FAILURE() << sa << ", " << sb << ", " << sc << " (" << dtype_name(dtype_v<T>)
                    << ") at flat index " << i << ": got " << show(py[i]) << ", want "
                    << show(want);
    }
  }
}

// A random output shape (rank 1-4, dims 1-9) and an operand of it: leading
// dims dropped at random, each remaining dim set to 1 with probability 1/3.
Shape random_out_shape(Rng& rng) {
  std::vector<int64_t> d(1 + rng() % 4);
  for (auto& v : d) v = 1 + static_cast<int64_t>(rng() % 9);
  return Shape(d);
}
Shape operand_of(const Shape& out, Rng& rng) {
  const int64_t drop = static_cast<int64_t>(rng() % static_cast<uint64_t>(out.rank() + 1));
  std::vector<int64_t> d;
  for (int64_t i = drop; i < out.rank(); ++i) d.push_back(rng() % 3 == 0 ? 1 : out.dim(i));
  return Shape(d);
}

// Shape pairs with short inner dims (the tiled paths) and long ones (row by
// row), small and past config().parallel_grain.
std::vector<std::pair<Shape, Shape>> pattern_pairs() {
  std::vector<std::pair<Shape, Shape>> v;
  for (int64_t c : {2, 3, 7, 8, 9, 16, 31, 33, 64, 65, 100, 257, 1000}) {
    for (int64_t r : {int64_t{5}, int64_t{70000} / c + 3}) {
      v.push_back({Shape{r, 1}, Shape{1, c}});  // outer: column x row
      v.push_back({Shape{1, c}, Shape{r, 1}});
      v.push_back({Shape{r, 1}, Shape{c}});
      v.push_back({Shape{r, c}, Shape{c}});  // row vector
      v.push_back({Shape{c}, Shape{r, c}});
      v.push_back({Shape{r, 1}, Shape{r, c}});  // column
      v.push_back({Shape{r, c}, Shape{r, 1}});
    }
    const int64_t b = std::max<int64_t>(2, 4000 / c);  // 3-D: about 80k elements
    v.push_back({Shape{5, 6, 1}, Shape{1, 6, c}});     // column x full slab
    v.push_back({Shape{20, b, 1}, Shape{1, b, c}});
    v.push_back({Shape{20, 1, c}, Shape{20, b, c}});  // periodic, one row per slab
    v.push_back({Shape{20, b, c}, Shape{20, b, 1}});
    v.push_back({Shape{3, 1, 5, c}, Shape{4, 1, 1}});
  }
  return v;
}

template <typename T>
T shift_ref(T a, T b) {
  constexpr int kMax = static_cast<int>(sizeof(T) * 8 - 1);
  const int s = b < T(0) ? 0 : (b > T(kMax) ? kMax : static_cast<int>(b));
  return static_cast<T>(a >> s);
}

template <typename T>
T wrap_add(T a, T b) {
  using W = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<W>(static_cast<W>(a) + static_cast<W>(b)));
}

// Every check for one shape pair.
void check_all_binary(const Shape& sa, const Shape& sb, Rng& rng) {
  auto add_op = [](const Tensor& a, const Tensor& b) { return add(a, b); };
  auto sub_op = [](const Tensor& a, const Tensor& b) { return subtract(a, b); };
  auto mul_op = [](const Tensor& a, const Tensor& b) { return multiply(a, b); };
  auto rshift_op = [](const Tensor& a, const Tensor& b) { return right_shift(a, b); };
  auto less_op = [](const Tensor& a, const Tensor& b) { return less(a, b); };
  auto equal_op = [](const Tensor& a, const Tensor& b) { return equal(a, b); };
  auto max_op = [](const Tensor& a, const Tensor& b) { return maximum(a, b); };
  auto and_op = [](const Tensor& a, const Tensor& b) { return logical_and(a, b); };
  check_binary<float, float>(
      add_op, [](float a, float b) { return a + b; }, sa, sb, rng);
  check_binary<double, double>(
      mul_op, [](double a, double b) { return a * b; }, sa, sb, rng);
  check_binary<int32_t, int32_t>(add_op, wrap_add<int32_t>, sa, sb, rng);
  check_binary<int64_t, int64_t>(
      sub_op, [](int64_t a, int64_t b) { return a - b; }, sa, sb, rng);
  check_binary<uint8_t, uint8_t>(add_op, wrap_add<uint8_t>, sa, sb, rng);
  check_binary<uint8_t, uint8_t>(rshift_op, shift_ref<uint8_t>, sa, sb, rng);
  check_binary<int8_t, int8_t>(rshift_op, shift_ref<int8_t>, sa, sb, rng);
  check_binary<int32_t, int32_t>(rshift_op, shift_ref<int32_t>, sa, sb, rng);
  check_binary<float, bool>(
      less_op, [](float a, float b) { return a < b; }, sa, sb, rng);
  check_binary<uint8_t, bool>(
      less_op, [](uint8_t a, uint8_t b) { return a < b; }, sa, sb, rng);
  check_binary<bool, bool>(
      equal_op, [](bool a, bool b) { return a == b; }, sa, sb, rng);
  check_binary<double, double>(
      max_op, [](double a, double b) { return a > b ? a : b; }, sa, sb, rng);
  check_binary<bool, bool>(
      and_op, [](bool a, bool b) { return a && b; }, sa, sb, rng);
}

void check_all_ternary(const Shape& sa, const Shape& sb, const Shape& sc, Rng& rng) {
  auto where_op = [](const Tensor& c, const Tensor& x, const Tensor& y) { return where(c, x, y); };
  auto clip_op = [](const Tensor& t, const Tensor& lo, const Tensor& hi) {
    return clip_by_value(t, lo, hi);
  };
  auto sel = [](bool c, auto x, auto y) { return c ? x : y; };
  check_ternary<bool, float>(where_op, sel, sa, sb, sc, rng);
  check_ternary<bool, uint8_t>(where_op, sel, sa, sb, sc, rng);
  check_ternary<bool, int64_t>(where_op, sel, sa, sb, sc, rng);
  check_ternary<bool, double>(where_op, sel, sa, sb, sc, rng);
  // clip_by_value's bounds broadcast to t's shape: t takes the full shape.
  const Shape st = broadcast_all({sa, sb, sc});
  check_ternary<int32_t, int32_t>(
      clip_op, [](int32_t t, int32_t lo, int32_t hi) { return std::min(std::max(t, lo), hi); }, st,
      sb, sc, rng);
  check_ternary<float, float>(
      clip_op, [](float t, float lo, float hi) { return std::min(std::max(t, lo), hi); }, st, sb,
      sc, rng);
  check_ternary<double, double>(
      clip_op, [](double t, double lo, double hi) { return std::min(std::max(t, lo), hi); }, st, sa,
      sc, rng);
}

TEST(BroadcastKernel, RandomShapePairs) {
  Rng rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const Shape out = random_out_shape(rng);
    const Shape sa = operand_of(out, rng), sb = operand_of(out, rng);
    SCOPED_TRACE(::testing::Message() << "trial " << trial);
    check_all_binary(sa, sb, rng);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(BroadcastKernel, ShortAndLongInnerDims) {
  Rng rng(11);
  for (const auto& [sa, sb] : pattern_pairs()) {
    check_all_binary(sa, sb, rng);
    if (::testing::Test::HasFailure()) return;
  }
}

// Chunk boundaries in the middle of slabs and tile blocks: a small grain
// splits every pattern into many parallel pieces.
TEST(BroadcastKernel, SmallParallelGrain) {
  const int64_t saved = config().parallel_grain;
  config().parallel_grain = 997;
  Rng rng(13);
  for (const auto& [sa, sb] : pattern_pairs()) {
    check_all_binary(sa, sb, rng);
    if (::testing::Test::HasFailure()) break;
  }
  config().parallel_grain = saved;
}

TEST(BroadcastKernel, TernaryRandomShapes) {
  Rng rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    const Shape out = random_out_shape(rng);
    const Shape sa = operand_of(out, rng), sb = operand_of(out, rng), sc = operand_of(out, rng);
    SCOPED_TRACE(::testing::Message() << "trial " << trial);
    check_all_ternary(sa, sb, sc, rng);
    if (::testing::Test::HasFailure()) return;
  }
}

// Three-operand patterns over short and long inner dims.
std::vector<std::array<Shape, 3>> ternary_patterns() {
  std::vector<std::array<Shape, 3>> v;
  for (int64_t c : {3, 8, 17, 64, 300}) {
    const int64_t r = 100000 / c + 1;
    const std::vector<std::array<Shape, 3>> cases = {
        {Shape{r, 1}, Shape{c}, Shape{r, c}},     // column, periodic, full
        {Shape{}, Shape{r, 1}, Shape{1, c}},      // scalar condition: a constant operand
        {Shape{c}, Shape{r, 1}, Shape{}},         // periodic, column, scalar
        {Shape{r, c}, Shape{r, 1}, Shape{r, 1}},  // full, column, column
        {Shape{4, 1, 1}, Shape{1, r / 4, c}, Shape{4, r / 4, 1}},
        {Shape{6, 1, c}, Shape{6, 50, 1}, Shape{1}},
        // [c] is the same row in every slab: its tile outlives a slab.
        {Shape{30, 1, c}, Shape{1, 50, c}, Shape{c}},
    };
    v.insert(v.end(), cases.begin(), cases.end());
  }
  return v;
}

TEST(BroadcastKernel, TernaryShortInnerDims) {
  Rng rng(19);
  for (const auto& s : ternary_patterns()) {
    check_all_ternary(s[0], s[1], s[2], rng);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(BroadcastKernel, TernarySmallParallelGrain) {
  const int64_t saved = config().parallel_grain;
  config().parallel_grain = 997;
  Rng rng(31);
  for (const auto& s : ternary_patterns()) {
    check_all_ternary(s[0], s[1], s[2], rng);
    if (::testing::Test::HasFailure()) break;
  }
  config().parallel_grain = saved;
}

TEST(BroadcastKernel, StringsUseTheRowByRowPath) {
  Rng rng(23);
  auto add_op = [](const Tensor& a, const Tensor& b) { return add(a, b); };
  auto equal_op = [](const Tensor& a, const Tensor& b) { return equal(a, b); };
  auto where_op = [](const Tensor& c, const Tensor& x, const Tensor& y) { return where(c, x, y); };
  for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{
           {Shape{5, 1}, Shape{1, 4}}, {Shape{6, 3}, Shape{3}}, {Shape{2, 3, 1}, Shape{1, 3, 5}}}) {
    check_binary<std::string, std::string>(
        add_op, [](const std::string& a, const std::string& b) { return a + b; }, sa, sb, rng);
    check_binary<std::string, bool>(
        equal_op, [](const std::string& a, const std::string& b) { return a == b; }, sa, sb, rng);
    check_ternary<bool, std::string>(
        where_op, [](bool c, const std::string& x, const std::string& y) { return c ? x : y; }, sa,
        sa, sb, rng);
  }
}

// Empty outputs and one-element broadcasts take the early exits.
TEST(BroadcastKernel, EmptyAndScalarShapes) {
  Rng rng(29);
  for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{{Shape{0, 1}, Shape{1, 8}},
                                                                   {Shape{4, 0}, Shape{0}},
                                                                   {Shape{3, 1, 0}, Shape{5, 1}},
                                                                   {Shape{}, Shape{7, 1}},
                                                                   {Shape{1, 1}, Shape{}}}) {
    check_all_binary(sa, sb, rng);
  }
}

TEST(BroadcastKernel, IncompatibleShapesAreClearErrors) {
  const Tensor a = Tensor::empty(DType::kFloat32, {2, 3});
  const Tensor b = Tensor::empty(DType::kFloat32, {4});
  testing::expect_error([&] { add(a, b); }, Code::kInvalidArgument);
  const Tensor c = Tensor::empty(DType::kBool, {5, 1});
  testing::expect_error([&] { where(c, a, a); }, Code::kInvalidArgument);
}

}  // namespace
}  // namespace kiln
