// tile, broadcast_to, pad.
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

// ---- tile ----

std::vector<int64_t> tile_src(const Shape& in, const std::vector<int64_t>& m, Shape* out_shape) {
  Shape os;
  for (int64_t i = 0; i < in.rank(); ++i) os.push_back(in.dim(i) * m[static_cast<size_t>(i)]);
  *out_shape = os;
  std::vector<int64_t> src;
  for (int64_t j = 0; j < os.num_elements(); ++j) {
    auto idx = testing::unravel(j, os);
    for (int64_t i = 0; i < in.rank(); ++i) idx[static_cast<size_t>(i)] %= in.dim(i);
    src.push_back(testing::ravel(idx, in));
  }
  return src;
}

TEST(Tile, MultiplesEveryDtype) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{3}, {2}},         {{2, 3}, {2, 1}}, {{2, 3}, {1, 3}}, {{2, 1, 3}, {2, 4, 2}},
      {{2, 3}, {0, 2}},   {{0, 3}, {2, 2}}, {{2, 3}, {1, 1}}, {{}, {}},
      {{50, 70}, {3, 8}},  // above the parallel grain
  };
  for (DType dt : kAllDTypes)
    for (const auto& [s, m] : cases) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " shape ", s));
      Tensor x = iota(dt, s);
      Shape os;
      const auto src = tile_src(s, m, &os);
      expect_moved(tile(x, m), x, os, src);
    }
  Tensor x({1, 2});
  expect_tensor<int32_t>(tile(x, Tensor({3})), {6}, {1, 2, 1, 2, 1, 2});
  expect_tensor<int32_t>(tile(x, {2}), {4}, {1, 2, 1, 2});
}

TEST(Tile, Errors) {
  Tensor x = iota(DType::kInt32, {2, 3});
  expect_error([&] { tile(x, {2}); }, Code::kInvalidArgument,
               {"Tile", "multiples has 1 entries", "rank 2", "[2,3]"});
  expect_error(
      [&] {
        tile(x, {1, -1});
      },
      Code::kInvalidArgument, {"Tile", "multiples[1] = -1", "non-negative"});
  expect_error(
      [&] {
        tile(x, Tensor({1.f, 1.f}));
      },
      Code::kInvalidArgument, {"Tile", "multiples", "int32 or int64"});
  // Overflowing sizes are InvalidArgument; huge valid sizes ResourceExhausted.
  expect_error(
      [&] {
        tile(x, {int64_t{1} << 62, 1});
      },
      Code::kInvalidArgument, {"Tile", "overflows int64"});
  expect_error(
      [&] {
        tile(x, {int64_t{1} << 31, int64_t{1} << 31});
      },
      Code::kInvalidArgument, {"Tile", "too many elements"});
  testing::with_allocation_cap(1 << 20, [&] {
    expect_error([&] { tile(x, {1 << 20, 1}); }, Code::kResourceExhausted, {"allocation cap"});
  });
  EXPECT_EQ(infer_shape(OpId::Tile, {sym(DType::kInt32, {-1, 3}), Tensor({2, 2})}), Shape({-1, 6}));
  EXPECT_EQ(infer_shape(OpId::Tile, {iota(DType::kInt32, {2, 3}), sym(DType::kInt32, {2})}),
            Shape({-1, -1}));
  EXPECT_EQ(
      infer_shape(OpId::Tile, {sym(DType::kInt32, Shape::unknown_rank()), sym(DType::kInt32, {3})}),
      Shape({-1, -1, -1}));
}

// ---- broadcast_to ----

std::vector<int64_t> broadcast_src(const Shape& in, const Shape& os) {
  std::vector<int64_t> src;
  const int64_t off = os.rank() - in.rank();
  for (int64_t j = 0; j < os.num_elements(); ++j) {
    auto oi = testing::unravel(j, os);
    std::vector<int64_t> ii;
    for (int64_t i = 0; i < in.rank(); ++i)
      ii.push_back(in.dim(i) == 1 ? 0 : oi[static_cast<size_t>(i + off)]);
    src.push_back(testing::ravel(ii, in));
  }
  return src;
}

TEST(BroadcastTo, ShapesEveryDtype) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{}, {2, 3}}, {{3}, {2, 3}},    {{2, 1}, {2, 4}},    {{1, 3, 1}, {2, 3, 4}},
      {{1}, {0}},   {{2, 3}, {2, 3}}, {{1, 1}, {5, 1, 7}}, {{1, 200}, {400, 200}},
  };
  for (DType dt : kAllDTypes)
    for (const auto& [s, t] : cases) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " ", s, " -> ", t));
      Tensor x = iota(dt, s);
      expect_moved(broadcast_to(x, t), x, t, broadcast_src(s, t));
    }
  Tensor x({1, 2});
  EXPECT_TRUE(broadcast_to(x, {2}).is_same(x));  // nothing to do: the input itself
  expect_tensor<int32_t>(broadcast_to(x, Tensor({2, 2})), {2, 2}, {1, 2, 1, 2});
  expect_tensor<int32_t>(broadcast_to(x, std::vector<int64_t>{1, 2}), {1, 2}, {1, 2});
}

TEST(BroadcastTo, Errors) {
  Tensor x = iota(DType::kInt32, {2, 3});
  expect_error(
      [&] {
        broadcast_to(x, {4, 3});
      },
      Code::kInvalidArgument, {"BroadcastTo", "[2,3]", "[4,3]", "dimension 0 has size 2"});
  expect_error([&] { broadcast_to(x, {3}); }, Code::kInvalidArgument,
               {"BroadcastTo", "[2,3]", "rank 1", "lower"});
  expect_error(
      [&] {
        broadcast_to(x, {-1, 3});
      },
      Code::kInvalidArgument, {"BroadcastTo", "shape[0] = -1", "non-negative"});
  expect_error(
      [&] {
        broadcast_to(Tensor(1), {int64_t{1} << 40, int64_t{1} << 40});
      },
      Code::kInvalidArgument, {"BroadcastTo", "too many elements"});
  testing::with_allocation_cap(1 << 20, [&] {
    expect_error([&] { broadcast_to(Tensor(1.0), {1 << 20}); }, Code::kResourceExhausted,
                 {"allocation cap"});
  });
  EXPECT_EQ(infer_shape(OpId::BroadcastTo, {sym(DType::kInt32, {-1, 3}), Tensor({2, 4, 3})}),
            Shape({2, 4, 3}));
  EXPECT_EQ(infer_shape(OpId::BroadcastTo, {iota(DType::kInt32, {1, 3}), sym(DType::kInt32, {3})}),
            Shape({-1, -1, 3}));
}

// ---- pad ----

std::vector<int64_t> pad_src(const Shape& in, const std::vector<std::pair<int64_t, int64_t>>& p,
                             Shape* out_shape) {
  Shape os;
  for (int64_t i = 0; i < in.rank(); ++i)
    os.push_back(in.dim(i) + p[static_cast<size_t>(i)].first + p[static_cast<size_t>(i)].second);
  *out_shape = os;
  std::vector<int64_t> src;
  for (int64_t j = 0; j < os.num_elements(); ++j) {
    auto idx = testing::unravel(j, os);
    bool inside = true;
    for (int64_t i = 0; i < in.rank(); ++i) {
      int64_t& k = idx[static_cast<size_t>(i)];
      k -= p[static_cast<size_t>(i)].first;
      inside &= k >= 0 && k < in.dim(i);
    }
    src.push_back(inside ? testing::ravel(idx, in) : -1);
  }
  return src;
}

TEST(Pad, PaddingsAndConstantsEveryDtype) {
  using P = std::vector<std::pair<int64_t, int64_t>>;
  const std::vector<std::pair<Shape, P>> cases = {
      {{3}, {{1, 2}}},
      {{2, 3}, {{0, 1}, {2, 0}}},
      {{2, 3}, {{0, 0}, {0, 0}}},
      {{0, 2}, {{1, 1}, {1, 0}}},
      {{2, 1, 2}, {{1, 0}, {1, 1}, {0, 3}}},
      {{}, {}},
      {{100, 300}, {{5, 6}, {7, 8}}},
  };
  for (DType dt : kAllDTypes)
    for (const auto& [s, p] : cases) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " shape ", s));
      Tensor x = iota(dt, s);
      Shape os;
      const auto src = pad_src(s, p, &os);
      // Default constant: 0 / false / "".
      Tensor zero = dt == DType::kString ? Tensor(std::string())
                    : dt == DType::kBool ? Tensor(false)
                                         : Tensor(Scalar(0), dt);
      expect_moved(pad(x, p), x, os, src, zero);
      // An explicit constant as a tensor of the input's dtype.
      Tensor fill = dt == DType::kString ? Tensor("pad")
                    : dt == DType::kBool ? Tensor(true)
                                         : Tensor(Scalar(7), dt);
      expect_moved(pad(x, p, fill), x, os, src, fill);
    }
  Tensor x({1, 2});
  expect_tensor<int32_t>(pad(x, {{1, 1}}, 9), {4}, {9, 1, 2, 9});
  expect_tensor<int32_t>(pad(x, Tensor({{2, 0}}), Tensor(5)), {4}, {5, 5, 1, 2});
  expect_tensor<float>(pad(Tensor({1.f}), Tensor({{int64_t{0}, int64_t{1}}}), 0.5), {2},
                       {1.f, 0.5f});
}

TEST(Pad, Errors) {
  Tensor x = iota(DType::kInt32, {2, 3});
  expect_error(
      [&] {
        pad(x, {{0, 0}, {-1, 2}});
      },
      Code::kInvalidArgument, {"PadV2", "non-negative", "paddings[1] = [-1, 2]"});
  expect_error(
      [&] {
        pad(x, {{0, 0}});
      },
      Code::kInvalidArgument, {"PadV2", "[rank, 2]", "[2,2]", "[1,2]"});
  expect_error(
      [&] {
        pad(x, Tensor({1, 1}));
      },
      Code::kInvalidArgument, {"PadV2", "paddings must have shape [rank, 2]", "[2]"});
  expect_error(
      [&] {
        pad(x, Tensor({{1.f, 1.f}, {0.f, 0.f}}), Tensor(0));
      },
      Code::kInvalidArgument, {"PadV2", "paddings", "int32 or int64", "float32"});
  expect_error(
      [&] {
        pad(x, {{0, 0}, {1, 1}}, Tensor(0.f));
      },
      Code::kInvalidArgument, {"PadV2", "constant_values", "int32", "float32"});
  expect_error(
      [&] {
        pad(x, {{0, 0}, {1, 1}}, Tensor({0, 0}));
      },
      Code::kInvalidArgument, {"PadV2", "constant_values must be a scalar", "[2]"});
  expect_error([&] { pad(x, {{0, 0}, {1, 1}}, 1.5); }, Code::kInvalidArgument, {"1.5", "int32"});
  expect_error(
      [&] {
        pad(x, {{0, 0}, {int64_t{1} << 62, int64_t{1} << 62}});
      },
      Code::kInvalidArgument, {"PadV2", "overflows int64"});
  testing::with_allocation_cap(1 << 20, [&] {
    expect_error(
        [&] {
          pad(x, {{0, 0}, {0, 1 << 20}});
        },
        Code::kResourceExhausted, {"allocation cap"});
  });
  EXPECT_EQ(
      infer_shape(OpId::Pad, {sym(DType::kInt32, {-1, 3}), Tensor({{1, 1}, {2, 0}}), Tensor(0)}),
      Shape({-1, 5}));
  EXPECT_EQ(
      infer_shape(OpId::Pad, {iota(DType::kInt32, {2, 3}), sym(DType::kInt32, {2, 2}), Tensor(0)}),
      Shape({-1, -1}));
  EXPECT_EQ(infer_shape(OpId::Pad, {sym(DType::kInt32, Shape::unknown_rank()),
                                    sym(DType::kInt32, {-1, 2}), Tensor(0)}),
            Shape::unknown_rank());
}

}  // namespace
}  // namespace kiln
