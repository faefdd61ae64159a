// top_k, where(condition) and the segment max/min/prod reductions: values
// against plain references, every numeric dtype, inference with unknown dims,
// traced with values fed at call time, and the errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "array_test_util.h"
#include "kiln/function.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using testing::infer;
using testing::sym;

const std::vector<DType> kNumeric = {DType::kInt8,  DType::kUInt8,   DType::kInt32,
                                     DType::kInt64, DType::kFloat32, DType::kFloat64};

// Reference: a stable sort of each row's indices, larger values first.
std::vector<int64_t> top_k_ref(const std::vector<double>& x, int64_t n, int64_t k) {
  std::vector<int64_t> out;
  for (size_t r = 0; r * static_cast<size_t>(n) < x.size(); ++r) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    const double* row = x.data() + r * static_cast<size_t>(n);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    out.insert(out.end(), idx.begin(), idx.begin() + k);
  }
  return out;
}

TEST(TopK, EveryDtypeAgainstAStableSort) {
  std::mt19937 rng(11);
  struct Case {
    Shape shape;
    int64_t k;
  };
  const std::vector<Case> cases = {{{7}, 3},       {{7}, 7},    {{7}, 0},      {{3, 5}, 2},
                                   {{2, 3, 4}, 4}, {{4, 0}, 0}, {{300, 40}, 5}};  // parallel rows
  for (DType dt : kNumeric)
    for (const Case& c : cases) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " ", c.shape, " k=", c.k));
      std::vector<double> vals;
      for (int64_t i = 0; i < c.shape.num_elements(); ++i) vals.push_back(double(rng() % 9));
      const Tensor x = cast(Tensor::from_vector(vals, c.shape), dt);
      const auto [v, idx] = top_k(x, c.k);
      const int64_t n = c.shape.dim(c.shape.rank() - 1);
      const std::vector<int64_t> want = top_k_ref(vals, n, c.k);
      Shape os = c.shape;
      os.set_dim(os.rank() - 1, c.k);
      ASSERT_EQ(idx.dtype(), DType::kInt32);
      ASSERT_EQ(idx.shape(), os);
      ASSERT_EQ(v.shape(), os);
      std::vector<double> want_v;
      for (int64_t j = 0; j < os.num_elements(); ++j)
        want_v.push_back(vals[static_cast<size_t>(j / std::max<int64_t>(c.k, 1) * n +
                                                  want[static_cast<size_t>(j)])]);
      const Tensor got_i = cast(idx, DType::kInt64);
      const Tensor got_v = cast(v, DType::kFloat64);
      for (int64_t j = 0; j < os.num_elements(); ++j) {
        EXPECT_EQ(got_i.data<int64_t>()[j], want[static_cast<size_t>(j)]) << j;
        EXPECT_EQ(got_v.data<double>()[j], want_v[static_cast<size_t>(j)]) << j;
      }
    }
}

TEST(TopK, NanRanksFirstAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const auto [v, idx] = top_k(Tensor({1.f, nan, -inf, inf, 1.f}), 4);
  expect_tensor<int32_t>(idx, {4}, {1, 3, 0, 4});
  EXPECT_TRUE(std::isnan(v.data<float>()[0]));
  EXPECT_EQ(v.data<float>()[1], inf);
}

TEST(TopK, InferenceAndErrors) {
  const auto specs = infer(OpId::TopKV2, {sym(DType::kFloat32, {-1, 6}), Tensor(2)});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, Shape({-1, 2}));
  EXPECT_EQ(specs[1].dtype, DType::kInt32);
  EXPECT_EQ(infer(OpId::TopKV2, {sym(DType::kInt32, {4, 6}), sym(DType::kInt32, {})})[0].shape,
            Shape({4, -1}));
  expect_error(
      [] {
        top_k(Tensor({1.f, 2.f}), 3);
      },
      Code::kInvalidArgument, {"TopKV2", "at least k = 3 columns, got 2"});
  expect_error(
      [] {
        top_k(Tensor({1.f, 2.f}), -1);
      },
      Code::kInvalidArgument, {"k must be non-negative"});
  expect_error([] { top_k(Tensor(1.f), 1); }, Code::kInvalidArgument, {"rank >= 1"});
  expect_error([] { top_k(Tensor({true}), 1); }, Code::kInvalidArgument, {"numeric dtype"});
  expect_error([] { top_k(Tensor({1.f}), Tensor({1})); }, Code::kInvalidArgument,
               {"k must be a scalar"});
}

// k fed at call time: the traced output's last dim is unknown.
TEST(TopK, TracedWithKFedAtCallTime) {
  FunctionOptions opts;
  opts.input_signature = std::vector<ArgSpec>{ArgSpec{DType::kFloat32, Shape{-1, 4}, "x"},
                                              ArgSpec{DType::kInt32, Shape{}, "k"}};
  Function fn(
      [](const std::vector<Value>& a) {
        const auto [v, i] = top_k(a[0].tensor(), a[1].tensor());
        return Value::tuple({Value(v), Value(i)});
      },
      opts);
  const Value r = fn({Tensor({{3.f, 1.f, 4.f, 1.f}, {5.f, 9.f, 2.f, 6.f}}), Tensor(2)});
  expect_tensor<float>(r.items()[0].tensor(), {2, 2}, {4, 3, 9, 6});
  expect_tensor<int32_t>(r.items()[1].tensor(), {2, 2}, {2, 0, 1, 3});
  expect_error(
      [&] {
        fn({Tensor({{1.f, 2.f, 3.f, 4.f}}), Tensor(5)});
      },
      Code::kInvalidArgument, {"at least k = 5"});
}

TEST(WhereIndices, CoordinatesOfTrueElements) {
  expect_tensor<int64_t>(where(Tensor({{true, false}, {false, true}})), {2, 2}, {0, 0, 1, 1});
  expect_tensor<int64_t>(where(Tensor({0.f, -0.f, 2.f, std::nanf("")})), {2, 1}, {2, 3});
  expect_tensor<int64_t>(where(Tensor({0, 0})), {0, 1}, {});
  expect_tensor<int64_t>(where(Tensor(true)), {1, 0}, {});
  for (DType dt : kNumeric) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor x = cast(Tensor({{0, 1, 0}, {2, 0, 3}}), dt);
    expect_tensor<int64_t>(where(x), {3, 2}, {0, 1, 1, 0, 1, 2});
  }
  const Tensor cube =
      cast(Tensor::from_vector<int32_t>({0, 1, 0, 0, 0, 0, 0, 1}, {2, 2, 2}), DType::kBool);
  expect_tensor<int64_t>(where(cube), {2, 3}, {0, 0, 1, 1, 1, 1});
  expect_error([] { where(Tensor("a")); }, Code::kInvalidArgument, {"Where", "bool or numeric"});
}

TEST(WhereIndices, TracedHasAnUnknownCount) {
  EXPECT_EQ(infer(OpId::Where, {sym(DType::kBool, {3, -1})})[0].shape, Shape({-1, 2}));
  FunctionOptions opts;
  opts.input_signature = std::vector<ArgSpec>{ArgSpec{DType::kInt32, Shape{-1}, "x"}};
  Function fn([](const std::vector<Value>& a) { return Value(where(a[0].tensor() > 1)); }, opts);
  expect_tensor<int64_t>(fn({Tensor({3, 1, 2})}).tensor(), {2, 1}, {0, 2});
  expect_tensor<int64_t>(fn({Tensor({0})}).tensor(), {0, 1}, {});
}

TEST(UnsortedSegment, MaxMinProdValuesAndEmptySegments) {
  const Tensor data({{1, 8}, {3, 4}, {5, 6}, {7, 2}});
  const Tensor ids({2, -1, 0, 2});
  const Tensor n(4);
  expect_tensor<int32_t>(unsorted_segment_max(data, ids, n), {4, 2},
                         {5, 6, INT32_MIN, INT32_MIN, 7, 8, INT32_MIN, INT32_MIN});
  expect_tensor<int32_t>(unsorted_segment_min(data, ids, n), {4, 2},
                         {5, 6, INT32_MAX, INT32_MAX, 1, 2, INT32_MAX, INT32_MAX});
  expect_tensor<int32_t>(unsorted_segment_prod(data, ids, n), {4, 2}, {5, 6, 1, 1, 7, 16, 1, 1});
  const float nan = std::nanf("");
  const Tensor m = unsorted_segment_max(Tensor({1.f, nan, 2.f}), Tensor({0, 0, 1}), Tensor(2));
  EXPECT_TRUE(std::isnan(m.data<float>()[0]));
  EXPECT_EQ(m.data<float>()[1], 2.f);
  expect_tensor<float>(unsorted_segment_min(Tensor::empty(DType::kFloat32, {0}),
                                            Tensor::empty(DType::kInt32, {0}), Tensor(1)),
                       {1}, {std::numeric_limits<float>::max()});
  expect_error([] { unsorted_segment_max(Tensor({1.f}), Tensor({3}), Tensor(2)); },
               Code::kInvalidArgument, {"UnsortedSegmentMax", "segment_ids[0] = 3", "[0, 2)"});
}

}  // namespace
}  // namespace kiln
