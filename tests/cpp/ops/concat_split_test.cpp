// concat, stack, unstack, split.
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

// Reference concat of shapes along axis. Inputs are slices of one iota
// tensor `all` (so every element is distinct): returns, per output element,
// the flat index into `all` of the input element it must hold.
struct ConcatCase {
  std::vector<Shape> shapes;
  int64_t axis;
};

std::vector<int64_t> concat_src(const std::vector<Shape>& shapes, int64_t axis,
                                const std::vector<int64_t>& starts, Shape* out_shape) {
  Shape os = shapes[0];
  int64_t total = 0;
  for (const Shape& s : shapes) total += s.dim(axis);
  os.set_dim(axis, total);
  *out_shape = os;
  std::vector<int64_t> src;
  for (int64_t j = 0; j < os.num_elements(); ++j) {
    auto idx = testing::unravel(j, os);
    int64_t a = idx[static_cast<size_t>(axis)];
    size_t k = 0;
    while (a >= shapes[k].dim(axis)) a -= shapes[k++].dim(axis);
    idx[static_cast<size_t>(axis)] = a;
    src.push_back(starts[k] + testing::ravel(idx, shapes[k]));
  }
  return src;
}

// Splits one iota tensor of all the elements into tensors of `shapes`.
std::vector<Tensor> pieces(DType dt, const std::vector<Shape>& shapes, Tensor* all,
                           std::vector<int64_t>* starts) {
  int64_t n = 0;
  for (const Shape& s : shapes) {
    starts->push_back(n);
    n += s.num_elements();
  }
  *all = iota(dt, {n});
  std::vector<Tensor> out;
  for (size_t i = 0; i < shapes.size(); ++i)
    out.push_back(slice(*all, {(*starts)[i]}, {shapes[i].num_elements()}).view(shapes[i]));
  return out;
}

TEST(Concat, AxesShapesAndDtypes) {
  const std::vector<ConcatCase> cases = {
      {{{2, 3}, {4, 3}}, 0},        {{{2, 3}, {2, 1}, {2, 2}}, 1},
      {{{2, 3}, {2, 5}}, -1},       {{{3}, {0}, {2}}, 0},
      {{{2, 0, 4}, {2, 3, 4}}, 1},  {{{2, 3, 4}, {2, 3, 1}, {2, 3, 2}}, 2},
      {{{1, 2, 3}, {5, 2, 3}}, -3}, {{{0, 2}, {0, 3}}, 1},
      {{{64, 300}, {64, 700}}, 1},  // above the parallel grain
  };
  for (DType dt : kAllDTypes)
    for (const auto& c : cases) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " axis ", c.axis, " first ", c.shapes[0]));
      Tensor all;
      std::vector<int64_t> starts;
      auto in = pieces(dt, c.shapes, &all, &starts);
      Shape os;
      const int64_t axis = c.axis < 0 ? c.axis + c.shapes[0].rank() : c.axis;
      const auto src = concat_src(c.shapes, axis, starts, &os);
      expect_moved(concat(in, c.axis), all, os, src);
    }
}

TEST(Concat, SingleInputAndStrings) {
  Tensor x = iota(DType::kString, {2, 2});
  Tensor y = concat({x}, 0);
  EXPECT_EQ(y.raw_data(), x.raw_data());
  expect_tensor<std::string>(concat({Tensor({"a"}), Tensor({"b", "c"})}, 0), {3}, {"a", "b", "c"});
  expect_tensor<bool>(concat({Tensor({true}), Tensor({false})}, 0), {2}, {true, false});
}

TEST(Concat, Errors) {
  Tensor a = iota(DType::kInt32, {2, 3});
  expect_error([&] { concat({}, 0); }, Code::kInvalidArgument, {"ConcatV2", "at least one"});
  expect_error(
      [&] {
        concat({a, iota(DType::kFloat32, {2, 3})}, 0);
      },
      Code::kInvalidArgument, {"ConcatV2", "values[0]", "int32", "values[1]", "float32"});
  expect_error(
      [&] {
        concat({a, iota(DType::kInt32, {2, 3, 1})}, 0);
      },
      Code::kInvalidArgument, {"ConcatV2", "same rank", "values[1]", "[2,3,1]"});
  expect_error(
      [&] {
        concat({a, iota(DType::kInt32, {2, 4})}, 0);
      },
      Code::kInvalidArgument, {"ConcatV2", "dimension 1", "values[1]", "[2,4]", "[2,3]"});
  expect_error(
      [&] {
        concat({a, a}, 2);
      },
      Code::kInvalidArgument, {"ConcatV2", "axis 2", "rank 2"});
  expect_error(
      [&] {
        concat({Tensor(1), Tensor(2)}, 0);
      },
      Code::kInvalidArgument, {"ConcatV2", "scalars", "stack"});
}

TEST(Concat, Inference) {
  EXPECT_EQ(infer_shape(OpId::Concat, {sym(DType::kInt32, {-1, 3}), iota(DType::kInt32, {2, 3})},
                        {int64_t{0}}),
            Shape({-1, 3}));
  EXPECT_EQ(infer_shape(OpId::Concat, {sym(DType::kInt32, {2, -1}), iota(DType::kInt32, {2, 3})},
                        {int64_t{0}}),
            Shape({4, 3}));
  EXPECT_EQ(infer_shape(OpId::Concat,
                        {sym(DType::kInt32, Shape::unknown_rank()), iota(DType::kInt32, {2, 3})},
                        {int64_t{1}}),
            Shape({2, -1}));
  EXPECT_EQ(infer_shape(OpId::Concat, {sym(DType::kInt32, Shape::unknown_rank())}, {int64_t{1}}),
            Shape::unknown_rank());
}

TEST(Stack, EveryAxisAndDtype) {
  for (DType dt : kAllDTypes) {
    const Shape s{2, 3};
    Tensor all;
    std::vector<int64_t> starts;
    auto in = pieces(dt, {s, s, s, s}, &all, &starts);
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " axis ", axis));
      const int64_t a = axis < 0 ? axis + 3 : axis;
      // stack == concat of the inputs with a new size-1 dim at axis.
      std::vector<Shape> shapes;
      Shape one = s;
      one.insert(a, 1);
      for (int k = 0; k < 4; ++k) shapes.push_back(one);
      Shape os;
      const auto src = concat_src(shapes, a, starts, &os);
      expect_moved(stack(in, axis), all, os, src);
    }
  }
  expect_tensor<int32_t>(stack({Tensor(1), Tensor(2)}), {2}, {1, 2});
  EXPECT_EQ(stack({iota(DType::kInt32, {0, 2})}, 1).shape(), Shape({0, 1, 2}));
}

TEST(Stack, Errors) {
  Tensor a = iota(DType::kInt32, {2, 3});
  expect_error([&] { stack({}); }, Code::kInvalidArgument, {"Pack", "at least one"});
  expect_error(
      [&] {
        stack({a, iota(DType::kInt32, {3, 2})});
      },
      Code::kInvalidArgument, {"Pack", "same shape", "values[1]", "[3,2]", "[2,3]"});
  expect_error(
      [&] {
        stack({a, iota(DType::kInt64, {2, 3})});
      },
      Code::kInvalidArgument, {"Pack", "int32", "int64"});
  expect_error([&] { stack({a}, 3); }, Code::kInvalidArgument, {"Pack", "axis 3", "[-3, 2]"});
  expect_error([&] { stack({a}, -4); }, Code::kInvalidArgument, {"Pack", "axis -4"});
  EXPECT_EQ(infer_shape(OpId::Stack, {sym(DType::kInt32, {-1, 3}), sym(DType::kInt32, {2, -1})},
                        {int64_t{1}}),
            Shape({2, 2, 3}));
}

TEST(Unstack, ViewsAlongTheFirstAxisCopiesElsewhere) {
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota(dt, {3, 2, 4});
    auto parts = unstack(x);
    ASSERT_EQ(parts.size(), 3u);
    for (int64_t i = 0; i < 3; ++i) {
      std::vector<int64_t> src;
      for (int64_t j = 0; j < 8; ++j) src.push_back(i * 8 + j);
      expect_moved(parts[static_cast<size_t>(i)], x, {2, 4}, src);
      EXPECT_TRUE(testing::shares_buffer(parts[static_cast<size_t>(i)], x));
    }
    auto cols = unstack(x, -1);
    ASSERT_EQ(cols.size(), 4u);
    for (int64_t k = 0; k < 4; ++k) {
      std::vector<int64_t> src;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 2; ++j) src.push_back(i * 8 + j * 4 + k);
      expect_moved(cols[static_cast<size_t>(k)], x, {3, 2}, src);
    }
    auto mid = unstack(x, 1, 2);
    ASSERT_EQ(mid.size(), 2u);
    std::vector<int64_t> src;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t k = 0; k < 4; ++k) src.push_back(i * 8 + 4 + k);
    expect_moved(mid[1], x, {3, 4}, src);
  }
  EXPECT_EQ(unstack(iota(DType::kInt32, {0, 3})).size(), 0u);
  auto empty_parts = unstack(iota(DType::kInt32, {2, 0}));
  ASSERT_EQ(empty_parts.size(), 2u);
  EXPECT_EQ(empty_parts[1].shape(), Shape({0}));
}

TEST(Unstack, Errors) {
  Tensor x = iota(DType::kInt32, {3, 2});
  expect_error([&] { unstack(Tensor(1)); }, Code::kInvalidArgument, {"Unpack", "scalar"});
  expect_error([&] { unstack(x, 2); }, Code::kInvalidArgument, {"Unpack", "axis 2"});
  expect_error([&] { unstack(x, 0, 4); }, Code::kInvalidArgument,
               {"Unpack", "num is 4", "dimension 0", "size 3"});
  // While tracing an unknown dimension needs num.
  expect_error(
      [&] {
        testing::infer(OpId::Unstack, {sym(DType::kInt32, {-1, 2})});
      },
      Code::kInvalidArgument, {"Unpack", "unknown", "pass num"});
  auto specs =
      testing::infer(OpId::Unstack, {sym(DType::kInt32, {-1, 2})}, {int64_t{5}, int64_t{0}});
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[4].shape, Shape({2}));
}

TEST(Split, EvenAndSizedSplits) {
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota(dt, {6, 4});
    auto rows = split(x, 3);
    ASSERT_EQ(rows.size(), 3u);
    for (int64_t i = 0; i < 3; ++i) {
      std::vector<int64_t> src;
      for (int64_t j = 0; j < 8; ++j) src.push_back(i * 8 + j);
      expect_moved(rows[static_cast<size_t>(i)], x, {2, 4}, src);
      EXPECT_TRUE(testing::shares_buffer(rows[static_cast<size_t>(i)], x));
    }
    auto cols = split(x, {1, -1, 0, 2}, 1);
    ASSERT_EQ(cols.size(), 4u);
    const std::vector<int64_t> widths = {1, 1, 0, 2}, offs = {0, 1, 2, 2};
    for (size_t k = 0; k < 4; ++k) {
      std::vector<int64_t> src;
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < widths[k]; ++j) src.push_back(i * 4 + offs[k] + j);
      expect_moved(cols[k], x, {6, widths[k]}, src);
    }
    auto one = split(x, {6});  // one size: the whole tensor
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].shape(), Shape({6, 4}));
    std::vector<int64_t> sizes = {2, 2};
    auto halves = split(x, sizes, -1);
    EXPECT_EQ(halves[1].shape(), Shape({6, 2}));
  }
}

TEST(Split, Errors) {
  Tensor x = iota(DType::kInt32, {5, 2});
  expect_error([&] { split(x, 2); }, Code::kInvalidArgument,
               {"SplitV", "size 5", "not divisible by num_split 2"});
  expect_error([&] { split(x, 0); }, Code::kInvalidArgument, {"SplitV", "num_split", ">= 1"});
  expect_error(
      [&] {
        split(x, {2, 2});
      },
      Code::kInvalidArgument, {"SplitV", "[2,2]", "add up to 4", "size 5"});
  expect_error(
      [&] {
        split(x, {4, -1, 2});
      },
      Code::kInvalidArgument, {"SplitV", "add up to 6", "more than"});
  expect_error([&] { split(x, {-1, -1}); }, Code::kInvalidArgument, {"SplitV", "more than one -1"});
  expect_error(
      [&] {
        split(x, {6, -3});
      },
      Code::kInvalidArgument, {"SplitV", "size_splits[1] = -3"});
  expect_error([&] { split(x, std::vector<int64_t>{}); }, Code::kInvalidArgument,
               {"SplitV", "must not be empty"});
  expect_error([&] { split(x, 1, 2); }, Code::kInvalidArgument, {"SplitV", "axis 2"});
  expect_error([&] { split(Tensor(1), 1); }, Code::kInvalidArgument, {"SplitV", "scalar"});
  auto specs = testing::infer(OpId::Split, {sym(DType::kInt32, {-1, 4})},
                              {std::vector<int64_t>{}, int64_t{1}, int64_t{2}});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, Shape({-1, 2}));
  specs = testing::infer(OpId::Split, {sym(DType::kInt32, {-1, 4})},
                         {std::vector<int64_t>{1, -1}, int64_t{0}});
  EXPECT_EQ(specs[0].shape, Shape({1, 4}));
  EXPECT_EQ(specs[1].shape, Shape({-1, 4}));
}

}  // namespace
}  // namespace kiln
