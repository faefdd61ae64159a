// gather.
#include <random>

#include "array_test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_moved;
using testing::expect_tensor;
using testing::infer_shape;
using testing::iota;
using testing::kAllDTypes;
using testing::sym;

// Reference: out[pre, idx..., post] = params[pre, indices[idx...], post].
std::vector<int64_t> gather_src(const Shape& p, const std::vector<int64_t>& indices,
                                const Shape& is, int64_t axis, Shape* out_shape) {
  Shape os;
  for (int64_t i = 0; i < axis; ++i) os.push_back(p.dim(i));
  for (int64_t d : is.dims()) os.push_back(d);
  for (int64_t i = axis + 1; i < p.rank(); ++i) os.push_back(p.dim(i));
  *out_shape = os;
  std::vector<int64_t> src;
  for (int64_t j = 0; j < os.num_elements(); ++j) {
    auto oi = testing::unravel(j, os);
    std::vector<int64_t> pi(oi.begin(), oi.begin() + axis);
    std::vector<int64_t> ii(oi.begin() + axis, oi.begin() + axis + is.rank());
    pi.push_back(indices[static_cast<size_t>(testing::ravel(ii, is))]);
    pi.insert(pi.end(), oi.begin() + axis + is.rank(), oi.end());
    src.push_back(testing::ravel(pi, p));
  }
  return src;
}

TEST(Gather, AxesIndexShapesAndDtypes) {
  std::mt19937 rng(3);
  struct Case {
    Shape params, indices;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{5}, {3}, 0},          {{5, 3}, {4}, 0},        {{5, 3}, {2, 2}, 1}, {{4, 3, 2}, {}, 1},
      {{4, 3, 2}, {6}, -1},   {{4, 3, 2}, {2, 3}, -3}, {{4, 0, 2}, {3}, 0}, {{4, 3}, {0}, 0},
      {{2, 3, 4}, {5, 1}, 2}, {{300, 257}, {400}, 0},  // above the parallel grain
      {{257, 300}, {500}, 1},                          // inner size 1 path, parallel
  };
  for (DType dt : kAllDTypes)
    for (const auto& c : cases) {
      SCOPED_TRACE(
          str_cat(dtype_name(dt), " params ", c.params, " indices ", c.indices, " axis ", c.axis));
      const int64_t axis = c.axis < 0 ? c.axis + c.params.rank() : c.axis;
      const int64_t n = c.params.dim(axis);
      std::vector<int64_t> idx;
      for (int64_t k = 0; k < c.indices.num_elements(); ++k)
        idx.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(std::max<int64_t>(n, 1))));
      if (n == 0) idx.clear();
      if (n == 0 && c.indices.num_elements() > 0) continue;
      Tensor params = iota(dt, c.params);
      Shape os;
      const auto src = gather_src(c.params, idx, c.indices, axis, &os);
      expect_moved(gather(params, Tensor::from_vector(idx, c.indices), c.axis), params, os, src);
      std::vector<int32_t> idx32(idx.begin(), idx.end());
      expect_moved(gather(params, Tensor::from_vector(idx32, c.indices), c.axis), params, os, src);
    }
}

TEST(Gather, Examples) {
  Tensor p({{1, 2, 3}, {4, 5, 6}});
  expect_tensor<int32_t>(gather(p, Tensor({1, 0, 1})), {3, 3}, {4, 5, 6, 1, 2, 3, 4, 5, 6});
  expect_tensor<int32_t>(gather(p, Tensor({2, 0}), 1), {2, 2}, {3, 1, 6, 4});
  expect_tensor<int32_t>(gather(p, Tensor(1), 1), {2}, {2, 5});
  expect_tensor<std::string>(gather(Tensor({"a", "b", "c"}), Tensor({{2}, {0}})), {2, 1},
                             {"c", "a"});
}

TEST(Gather, ConsecutiveFirstAxisRowsAreViews) {
  const Tensor p = iota(DType::kFloat32, {5, 3, 2});
  // Step t of a time-major sequence (a scalar index) and a run of rows: views.
  const Tensor row = gather(p, Tensor(int32_t{3}));
  EXPECT_TRUE(testing::shares_buffer(row, p));
  expect_tensor<float>(row, {3, 2}, {18.5f, 19.5f, 20.5f, 21.5f, 22.5f, 23.5f});  // iota: i + 0.5
  const Tensor run = gather(p, Tensor::from_vector(std::vector<int64_t>{1, 2}, {2}));
  EXPECT_TRUE(testing::shares_buffer(run, p));
  EXPECT_EQ(run.shape(), Shape({2, 3, 2}));
  EXPECT_EQ(run.to_vector<float>()[0], 6.5f);
  // Not consecutive, or not the first axis: copies.
  EXPECT_FALSE(testing::shares_buffer(gather(p, Tensor({2, 1})), p));
  EXPECT_FALSE(testing::shares_buffer(gather(p, Tensor(int32_t{1}), 1), p));
  // An index out of range still fails before any view is made.
  expect_error([&] { gather(p, Tensor({4, 5})); }, Code::kInvalidArgument, {"not in [0, 5)"});
}

TEST(Gather, Errors) {
  Tensor p = iota(DType::kFloat32, {4, 3});
  expect_error(
      [&] {
        gather(p, Tensor({0, 4}));
      },
      Code::kInvalidArgument, {"GatherV2", "indices[1] = 4", "not in [0, 4)"});
  expect_error(
      [&] {
        gather(p, Tensor({{0, 1}, {-1, 2}}), 1);
      },
      Code::kInvalidArgument, {"GatherV2", "indices[1,0] = -1", "not in [0, 3)"});
  expect_error([&] { gather(p, Tensor({int64_t{1} << 40})); }, Code::kInvalidArgument,
               {"GatherV2", "1099511627776", "not in [0, 4)"});
  expect_error(
      [&] {
        gather(iota(DType::kFloat32, {0, 3}), Tensor({0}));
      },
      Code::kInvalidArgument, {"GatherV2", "not in [0, 0)"});
  expect_error([&] { gather(p, Tensor({0.f})); }, Code::kInvalidArgument,
               {"GatherV2", "indices", "int32 or int64", "float32"});
  expect_error([&] { gather(p, Tensor({0}), 2); }, Code::kInvalidArgument,
               {"GatherV2", "axis 2", "rank 2"});
  expect_error([&] { gather(Tensor(1.f), Tensor({0})); }, Code::kInvalidArgument,
               {"GatherV2", "params", "at least 1-dimensional"});
  expect_error(
      [&] {
        call_op1(OpId::Gather, {p, Tensor({0})}, {int64_t{0}, int64_t{1}});
      },
      Code::kInvalidArgument, {"GatherV2", "batch_dims 1"});
}

TEST(Gather, Inference) {
  EXPECT_EQ(
      infer_shape(OpId::Gather, {sym(DType::kFloat32, {-1, 3, 5}), sym(DType::kInt64, {2, -1})},
                  {int64_t{1}}),
      Shape({-1, 2, -1, 5}));
  EXPECT_EQ(infer_shape(OpId::Gather,
                        {sym(DType::kFloat32, Shape::unknown_rank()), sym(DType::kInt64, {2})}),
            Shape::unknown_rank());
}

}  // namespace
}  // namespace kiln
