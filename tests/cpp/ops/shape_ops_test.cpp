// reshape, expand_dims, squeeze, transpose, shape/size/rank, one_hot.
#include <numeric>
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

std::vector<int64_t> identity_src(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// ---- reshape ----

TEST(Reshape, EveryDtypeIsAViewWithTheSameElements) {
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota(dt, {2, 3, 4});
    Tensor y = reshape(x, {4, -1});
    expect_moved(y, x, {4, 6}, identity_src(24));
    EXPECT_EQ(y.raw_data(), x.raw_data());
    expect_moved(reshape(x, {24}), x, {24}, identity_src(24));
    expect_moved(reshape(x, {-1, 2, 3}), x, {4, 2, 3}, identity_src(24));
  }
}

TEST(Reshape, ShapeArgumentForms) {
  Tensor x = iota(DType::kFloat32, {6});
  EXPECT_EQ(reshape(x, Tensor({2, 3})).shape(), Shape({2, 3}));  // int32 tensor
  EXPECT_EQ(reshape(x, Tensor({int64_t{3}, int64_t{-1}})).shape(), Shape({3, 2}));
  EXPECT_EQ(reshape(x, std::vector<int64_t>{1, 6, 1}).shape(), Shape({1, 6, 1}));
  EXPECT_EQ(reshape(x, Shape{3, 2}).shape(), Shape({3, 2}));
  // Scalars and empty tensors.
  Tensor s(5);
  expect_tensor<int32_t>(reshape(s, {1, 1}), {1, 1}, {5});
  expect_tensor<int32_t>(reshape(reshape(s, {1}), {}), {}, {5});
  EXPECT_EQ(reshape(iota(DType::kInt32, {0, 3}), {3, 0, 5}).shape(), Shape({3, 0, 5}));
  EXPECT_EQ(reshape(iota(DType::kString, {0}), {-1}).shape(), Shape({0}));
  EXPECT_EQ(reshape(iota(DType::kInt32, {0, 3}), {-1, 3}).shape(), Shape({0, 3}));
}

TEST(Reshape, Errors) {
  Tensor x = iota(DType::kFloat32, {2, 3});
  expect_error(
      [&] {
        reshape(x, {4, 2});
      },
      Code::kInvalidArgument, {"Reshape", "[2,3]", "6 elements", "[4,2]", "8 elements"});
  expect_error(
      [&] {
        reshape(x, {-1, -1});
      },
      Code::kInvalidArgument, {"Reshape", "more than one -1"});
  expect_error([&] { reshape(x, {-2, -3}); }, Code::kInvalidArgument, {"Reshape", "shape[0] = -2"});
  expect_error(
      [&] {
        reshape(x, {-1, 4});
      },
      Code::kInvalidArgument, {"Reshape", "not a multiple of 4"});
  expect_error(
      [&] {
        reshape(iota(DType::kInt32, {0, 2}), {-1, 0});
      },
      Code::kInvalidArgument, {"Reshape", "cannot infer", "multiply to 0"});
  expect_error(
      [&] {
        reshape(x, Tensor({2.f, 3.f}));
      },
      Code::kInvalidArgument, {"Reshape", "shape", "int32 or int64", "float32"});
  expect_error(
      [&] {
        reshape(x, Tensor({{2, 3}}));
      },
      Code::kInvalidArgument, {"Reshape", "vector", "[1,2]"});
  expect_error(
      [&] {
        reshape(x, {int64_t{1} << 40, int64_t{1} << 40});
      },
      Code::kInvalidArgument, {"Reshape", "too many elements"});
}

TEST(Reshape, InferenceWithUnknownDims) {
  using testing::infer;
  // Unknown shape value: only the length is known.
  EXPECT_EQ(infer_shape(OpId::Reshape, {iota(DType::kFloat32, {6}), sym(DType::kInt32, {3})}),
            Shape({-1, -1, -1}));
  EXPECT_EQ(infer_shape(OpId::Reshape,
                        {iota(DType::kFloat32, {6}), sym(DType::kInt32, Shape::unknown_rank())}),
            Shape::unknown_rank());
  // Unknown input dims: the -1 stays unknown.
  EXPECT_EQ(infer_shape(OpId::Reshape, {sym(DType::kFloat32, {-1, 3}), Tensor({-1, 3})}),
            Shape({-1, 3}));
  EXPECT_EQ(
      infer_shape(OpId::Reshape, {sym(DType::kFloat32, Shape::unknown_rank()), Tensor({2, 3})}),
      Shape({2, 3}));
  expect_error(
      [&] {
        infer(OpId::Reshape, {sym(DType::kFloat32, {-1}), sym(DType::kFloat32, {2})});
      },
      Code::kInvalidArgument, {"int32 or int64"});
}

// ---- expand_dims / squeeze ----

TEST(ExpandDims, EveryAxisAndDtype) {
  for (DType dt : kAllDTypes) {
    Tensor x = iota(dt, {2, 3});
    const std::vector<std::pair<int64_t, Shape>> cases = {{0, {1, 2, 3}},  {1, {2, 1, 3}},
                                                          {2, {2, 3, 1}},  {-1, {2, 3, 1}},
                                                          {-2, {2, 1, 3}}, {-3, {1, 2, 3}}};
    for (const auto& [axis, want] : cases) {
      Tensor y = expand_dims(x, axis);
      expect_moved(y, x, want, identity_src(6));
      EXPECT_EQ(y.raw_data(), x.raw_data());
    }
  }
  expect_tensor<float>(expand_dims(Tensor(1.5f), 0), {1}, {1.5f});
  EXPECT_EQ(expand_dims(iota(DType::kInt32, {0}), 1).shape(), Shape({0, 1}));
}

TEST(ExpandDims, Errors) {
  Tensor x = iota(DType::kInt32, {2, 3});
  expect_error([&] { expand_dims(x, 3); }, Code::kInvalidArgument,
               {"ExpandDims", "axis 3", "rank 2", "[-3, 2]"});
  expect_error([&] { expand_dims(x, -4); }, Code::kInvalidArgument, {"ExpandDims", "axis -4"});
  EXPECT_EQ(infer_shape(OpId::ExpandDims, {sym(DType::kInt32, {-1, 2})}, {int64_t{1}}),
            Shape({-1, 1, 2}));
}

TEST(Squeeze, AllOrListedAxes) {
  for (DType dt : kAllDTypes) {
    Tensor x = iota(dt, {1, 2, 1, 3, 1});
    Tensor y = squeeze(x);
    expect_moved(y, x, {2, 3}, identity_src(6));
    EXPECT_EQ(y.raw_data(), x.raw_data());
    expect_moved(squeeze(x, {0}), x, {2, 1, 3, 1}, identity_src(6));
    expect_moved(squeeze(x, {2, -1}), x, {1, 2, 3}, identity_src(6));
    expect_moved(squeeze(x, {0, 0}), x, {2, 1, 3, 1}, identity_src(6));  // repeats are fine
  }
  expect_tensor<int32_t>(squeeze(Tensor(4)), {}, {4});
  EXPECT_EQ(squeeze(iota(DType::kInt32, {1, 0, 1})).shape(), Shape({0}));
}

TEST(Squeeze, Errors) {
  Tensor x = iota(DType::kInt32, {1, 3});
  expect_error([&] { squeeze(x, {1}); }, Code::kInvalidArgument,
               {"Squeeze", "dimension 1", "[1,3]", "expected size 1, got 3"});
  expect_error([&] { squeeze(x, {2}); }, Code::kInvalidArgument, {"Squeeze", "axis 2", "rank 2"});
  expect_error([&] { squeeze(x, {-3}); }, Code::kInvalidArgument, {"Squeeze", "axis -3"});
  // Inference: unknown dims are assumed to be 1 when listed; unlisted ones
  // make the rank unknown.
  EXPECT_EQ(infer_shape(OpId::Squeeze, {sym(DType::kInt32, {-1, 3})}, {std::vector<int64_t>{0}}),
            Shape({3}));
  EXPECT_EQ(infer_shape(OpId::Squeeze, {sym(DType::kInt32, {-1, 3})}), Shape::unknown_rank());
  EXPECT_EQ(infer_shape(OpId::Squeeze, {sym(DType::kInt32, {1, 3})}), Shape({3}));
}

// ---- transpose ----

// Reference: out[i] = in[i permuted back].
std::vector<int64_t> transpose_src(const Shape& in, const std::vector<int64_t>& perm,
                                   Shape* out_shape) {
  Shape os;
  for (int64_t p : perm) os.push_back(in.dim(p));
  *out_shape = os;
  std::vector<int64_t> src;
  const int64_t n = os.num_elements();
  for (int64_t j = 0; j < n; ++j) {
    auto oi = testing::unravel(j, os);
    std::vector<int64_t> ii(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) ii[static_cast<size_t>(perm[d])] = oi[d];
    src.push_back(testing::ravel(ii, in));
  }
  return src;
}

TEST(Transpose, RandomPermutationsEveryDtype) {
  std::mt19937 rng(42);
  for (DType dt : kAllDTypes) {
    for (int trial = 0; trial < 30; ++trial) {
      const int64_t r = 1 + trial % 5;
      Shape s;
      for (int64_t d = 0; d < r; ++d) s.push_back(1 + static_cast<int64_t>(rng() % 5));
      std::vector<int64_t> perm(static_cast<size_t>(r));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      SCOPED_TRACE(str_cat(dtype_name(dt), " shape ", s, " perm ", perm.size()));
      Tensor x = iota(dt, s);
      Shape os;
      const auto src = transpose_src(s, perm, &os);
      expect_moved(transpose(x, perm), x, os, src);
    }
  }
}

TEST(Transpose, LargeTiledAndParallelCases) {
  // 2-D (tiled path), sizes not multiples of the tile, above the parallel grain.
  for (DType dt : {DType::kUInt8, DType::kInt32, DType::kFloat64, DType::kString}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota(dt, {301, 517});
    Shape os;
    expect_moved(transpose(x), x, {517, 301}, transpose_src({301, 517}, {1, 0}, &os));
    // Moving the last axis to the front and the first to the back.
    Tensor y = iota(dt, {37, 41, 29});
    expect_moved(transpose(y, {2, 0, 1}), y, {29, 37, 41},
                 transpose_src({37, 41, 29}, {2, 0, 1}, &os));
    expect_moved(transpose(y, {1, 2, 0}), y, {41, 29, 37},
                 transpose_src({37, 41, 29}, {1, 2, 0}, &os));
    // Batched matrix transpose keeps the batch dim outermost.
    expect_moved(transpose(y, {0, 2, 1}), y, {37, 29, 41},
                 transpose_src({37, 41, 29}, {0, 2, 1}, &os));
  }
}

TEST(Transpose, DefaultReverseIdentityViewAndEmpty) {
  Tensor x({{1, 2, 3}, {4, 5, 6}});
  expect_tensor<int32_t>(transpose(x), {3, 2}, {1, 4, 2, 5, 3, 6});
  expect_tensor<int32_t>(transpose(x, {1, 0}), {3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor id = transpose(x, {0, 1});
  EXPECT_EQ(id.raw_data(), x.raw_data());
  // Moving only size-1 dims is also a view.
  Tensor y = iota(DType::kFloat32, {1, 4, 1, 3});
  Tensor v = transpose(y, {2, 1, 0, 3});
  EXPECT_EQ(v.raw_data(), y.raw_data());
  EXPECT_EQ(v.shape(), Shape({1, 4, 1, 3}));
  expect_tensor<int32_t>(transpose(Tensor(3)), {}, {3});
  EXPECT_EQ(transpose(iota(DType::kString, {0, 2, 3}), {2, 0, 1}).shape(), Shape({3, 0, 2}));
}

TEST(Transpose, Errors) {
  Tensor x = iota(DType::kInt32, {2, 3});
  expect_error([&] { transpose(x, {0}); }, Code::kInvalidArgument,
               {"Transpose", "perm [0]", "1 entries", "rank 2"});
  expect_error(
      [&] {
        transpose(x, {0, 0});
      },
      Code::kInvalidArgument, {"Transpose", "[0,0]", "not a permutation of [0, 2)"});
  expect_error(
      [&] {
        transpose(x, {0, 2});
      },
      Code::kInvalidArgument, {"Transpose", "not a permutation"});
  expect_error(
      [&] {
        transpose(x, {-1, 0});
      },
      Code::kInvalidArgument, {"Transpose", "not a permutation"});
  EXPECT_EQ(infer_shape(OpId::Transpose, {sym(DType::kInt32, {-1, 3, 4})},
                        {std::vector<int64_t>{2, 0, 1}}),
            Shape({4, -1, 3}));
  EXPECT_EQ(infer_shape(OpId::Transpose, {sym(DType::kInt32, Shape::unknown_rank())},
                        {std::vector<int64_t>{1, 0}}),
            Shape({-1, -1}));
  EXPECT_EQ(infer_shape(OpId::Transpose, {sym(DType::kInt32, Shape::unknown_rank())}),
            Shape::unknown_rank());
}

// ---- shape / size / rank ----

TEST(ShapeSizeRank, Values) {
  for (DType dt : kAllDTypes) {
    Tensor x = iota(dt, {2, 0, 5});
    expect_tensor<int32_t>(shape(x), {3}, {2, 0, 5});
    expect_tensor<int64_t>(shape(x, DType::kInt64), {3}, {2, 0, 5});
    expect_tensor<int32_t>(size(x), {}, {0});
    expect_tensor<int32_t>(rank(x), {}, {3});
  }
  Tensor s(1.5);
  expect_tensor<int32_t>(shape(s), {0}, {});
  expect_tensor<int64_t>(size(s, DType::kInt64), {}, {1});
  expect_tensor<int32_t>(rank(s), {}, {0});
  expect_tensor<int32_t>(size(iota(DType::kString, {3, 4})), {}, {12});
}

TEST(ShapeSizeRank, ErrorsAndInference) {
  Tensor x = iota(DType::kInt32, {2});
  expect_error([&] { shape(x, DType::kFloat32); }, Code::kInvalidArgument,
               {"Shape", "out_type", "int32 or int64", "float32"});
  expect_error([&] { size(x, DType::kInt8); }, Code::kInvalidArgument, {"Size", "out_type"});
  EXPECT_EQ(infer_shape(OpId::ShapeOf, {sym(DType::kInt32, {-1, 3})}), Shape({2}));
  EXPECT_EQ(infer_shape(OpId::ShapeOf, {sym(DType::kInt32, Shape::unknown_rank())}), Shape({-1}));
  EXPECT_EQ(infer_shape(OpId::Size, {sym(DType::kInt32, {-1, 3})}), Shape());
  EXPECT_EQ(infer_shape(OpId::Rank, {sym(DType::kInt32, Shape::unknown_rank())}), Shape());
  // Sizes beyond int32 need out_type int64 (checked on a symbolic shape).
  const int64_t big = int64_t{1} << 20;
  expect_error(
      [&] {
        testing::infer(OpId::Size, {sym(DType::kInt8, {big, big})});
      },
      Code::kInvalidArgument, {"Size", "does not fit in int32", "int64"});
  EXPECT_EQ(testing::infer(OpId::Size, {sym(DType::kInt8, {big, big})}, {DType::kInt64})[0].dtype,
            DType::kInt64);
  expect_error([&] { testing::infer(OpId::ShapeOf, {sym(DType::kInt8, {big * big})}); },
               Code::kInvalidArgument, {"Shape", "does not fit in int32"});
}

// ---- one_hot ----

// Reference: indices of shape s, one-hot dim at axis (after normalization).
template <typename T>
std::vector<T> one_hot_ref(const std::vector<int64_t>& idx, const Shape& s, int64_t depth,
                           int64_t axis, T on, T off, Shape* out_shape) {
  Shape os = s;
  os.insert(axis, depth);
  *out_shape = os;
  std::vector<T> out;
  for (int64_t j = 0; j < os.num_elements(); ++j) {
    auto oi = testing::unravel(j, os);
    const int64_t d = oi[static_cast<size_t>(axis)];
    oi.erase(oi.begin() + axis);
    out.push_back(idx[static_cast<size_t>(testing::ravel(oi, s))] == d ? on : off);
  }
  return out;
}

TEST(OneHot, AxesIndexTypesAndOutOfRange) {
  const std::vector<int64_t> idx = {0, 2, -1, 5, 1, 2};
  const Shape s{2, 3};
  for (int64_t axis : {-1, 0, 1, 2}) {
    SCOPED_TRACE(axis);
    Shape os;
    const auto want = one_hot_ref<float>(idx, s, 4, axis < 0 ? 2 : axis, 1.f, 0.f, &os);
    expect_tensor<float>(one_hot(Tensor::from_vector(idx, s), 4, 1, 0, axis), os, want);
    std::vector<int32_t> i32(idx.begin(), idx.end());
    expect_tensor<float>(one_hot(Tensor::from_vector(i32, s), 4, 1, 0, axis), os, want);
    std::vector<int8_t> i8(idx.begin(), idx.end());
    expect_tensor<float>(one_hot(Tensor::from_vector(i8, s), 4, 1, 0, axis), os, want);
  }
  // uint8 indices: 255 is out of range.
  std::vector<uint8_t> u8 = {0, 255, 3};
  expect_tensor<int32_t>(one_hot(Tensor::from_vector(u8, {3}), 3, 7, -1, -1, DType::kInt32), {3, 3},
                         {7, -1, -1, -1, -1, -1, -1, -1, -1});
}

TEST(OneHot, OutputDtypes) {
  Tensor idx({1, 0});
  expect_tensor<double>(one_hot(idx, 2, 2.5, -1, -1, DType::kFloat64), {2, 2}, {-1, 2.5, 2.5, -1});
  expect_tensor<int64_t>(one_hot(idx, 2, 1, 0, -1, DType::kInt64), {2, 2}, {0, 1, 1, 0});
  expect_tensor<uint8_t>(one_hot(idx, 2, 1, 0, -1, DType::kUInt8), {2, 2}, {0, 1, 1, 0});
  expect_tensor<int8_t>(one_hot(idx, 2, -1, 0, -1, DType::kInt8), {2, 2}, {0, -1, -1, 0});
  expect_tensor<bool>(one_hot(idx, 2, 1, 0, -1, DType::kBool), {2, 2}, {false, true, true, false});
  expect_tensor<std::string>(one_hot(idx, Tensor(3), Tensor("on"), Tensor("off")), {2, 3},
                             {"off", "on", "off", "on", "off", "off"});
  // Tensor form with an int64 depth; depth 0 and empty indices.
  expect_tensor<float>(one_hot(idx, Tensor(int64_t{1}), Tensor(1.f), Tensor(0.f)), {2, 1},
                       {0.f, 1.f});
  EXPECT_EQ(one_hot(idx, 0).shape(), Shape({2, 0}));
  EXPECT_EQ(one_hot(iota(DType::kInt32, {0, 2}), 3, 1, 0, 1).shape(), Shape({0, 3, 2}));
  // Scalar indices.
  expect_tensor<float>(one_hot(Tensor(2), 3), {3}, {0.f, 0.f, 1.f});
}

TEST(OneHot, Errors) {
  Tensor idx({1, 0});
  expect_error([&] { one_hot(Tensor({1.f}), 3); }, Code::kInvalidArgument,
               {"OneHot", "indices", "float32"});
  expect_error([&] { one_hot(idx, -2); }, Code::kInvalidArgument,
               {"OneHot", "depth must be non-negative, got -2"});
  expect_error([&] { one_hot(idx, Tensor({3}), Tensor(1.f), Tensor(0.f)); }, Code::kInvalidArgument,
               {"OneHot", "depth", "scalar", "[1]"});
  expect_error([&] { one_hot(idx, Tensor(3.f), Tensor(1.f), Tensor(0.f)); }, Code::kInvalidArgument,
               {"OneHot", "depth", "int32 or int64"});
  expect_error([&] { one_hot(idx, Tensor(3), Tensor(1.f), Tensor(0.0)); }, Code::kInvalidArgument,
               {"OneHot", "on_value", "float32", "off_value", "float64"});
  expect_error([&] { one_hot(idx, Tensor(3), Tensor({1.f}), Tensor(0.f)); }, Code::kInvalidArgument,
               {"OneHot", "on_value", "scalar"});
  expect_error([&] { one_hot(idx, 3, 1, 0, 2); }, Code::kInvalidArgument,
               {"OneHot", "axis 2", "-1 or [0, 1]"});
  expect_error([&] { one_hot(idx, 3, 1, 0, -2); }, Code::kInvalidArgument, {"OneHot", "axis -2"});
  // Depth too large: overflow is InvalidArgument, a valid but huge size is
  // ResourceExhausted.
  expect_error([&] { one_hot(iota(DType::kInt32, {1 << 20}), int64_t{1} << 50); },
               Code::kInvalidArgument, {"OneHot", "too many elements"});
  testing::with_allocation_cap(1 << 20, [&] {
    expect_error([&] { one_hot(idx, int64_t{1} << 30); }, Code::kResourceExhausted,
                 {"allocation cap"});
  });
  EXPECT_EQ(
      infer_shape(OpId::OneHot,
                  {sym(DType::kInt32, {-1, 2}), sym(DType::kInt32, {}), Tensor(1.f), Tensor(0.f)},
                  {int64_t{1}}),
      Shape({-1, -1, 2}));
}

}  // namespace
}  // namespace kiln
