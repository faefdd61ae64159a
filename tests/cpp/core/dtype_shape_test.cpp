#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

TEST(DType, NamesAndSizesComeFromOneTable) {
  struct Row {
    DType dt;
    const char* name;
    size_t size;
  };
  const Row rows[] = {
      {DType::kBool, "bool", 1},           {DType::kInt8, "int8", 1},
      {DType::kUInt8, "uint8", 1},         {DType::kInt32, "int32", 4},
      {DType::kInt64, "int64", 8},         {DType::kFloat32, "float32", 4},
      {DType::kFloat64, "float64", 8},     {DType::kString, "string", sizeof(std::string)},
      {DType::kFloat16, "float16", 2},     {DType::kBFloat16, "bfloat16", 2},
      {DType::kComplex64, "complex64", 8}, {DType::kComplex128, "complex128", 16}};
  for (const Row& r : rows) {
    EXPECT_EQ(dtype_name(r.dt), r.name);
    EXPECT_EQ(dtype_size(r.dt), r.size);
    EXPECT_EQ(dtype_from_name(r.name), r.dt);
  }
  EXPECT_EQ(dtype_from_name("complex32"), DType::kInvalid);
  EXPECT_EQ(dtype_from_name("half"), DType::kFloat16);
  EXPECT_TRUE(is_floating(DType::kBFloat16) && is_half(DType::kFloat16));
  EXPECT_TRUE(is_complex(DType::kComplex64) && !is_floating(DType::kComplex128));
  EXPECT_TRUE(is_floating(DType::kFloat32));
  EXPECT_TRUE(is_integer(DType::kUInt8));
  EXPECT_FALSE(is_signed(DType::kUInt8));
  EXPECT_FALSE(is_numeric(DType::kString));
  EXPECT_TRUE(is_object(DType::kString));
}

TEST(Shape, PrintsLikeTensorFlow) {
  EXPECT_EQ(Shape().to_string(), "()");
  EXPECT_EQ(Shape({2}).to_string(), "(2,)");
  EXPECT_EQ(Shape({2, 3}).to_string(), "(2, 3)");
  EXPECT_EQ(Shape({-1}).to_string(), "(None,)");
  EXPECT_EQ(Shape::unknown_rank().to_string(), "<unknown>");
  EXPECT_EQ(Shape({-1, 3}).debug_string(), "[?,3]");
}

TEST(Shape, UnknownDimsAndRank) {
  Shape s{-1, 3};
  EXPECT_FALSE(s.is_fully_defined());
  EXPECT_EQ(s.num_elements_or_unknown(), -1);
  EXPECT_TRUE(s.is_compatible_with(Shape{5, 3}));
  EXPECT_FALSE(s.is_compatible_with(Shape{5, 4}));
  EXPECT_FALSE(s.is_compatible_with(Shape{3}));
  EXPECT_TRUE(Shape::unknown_rank().is_compatible_with(Shape{1, 2, 3}));
  EXPECT_EQ(Shape::unknown_rank().rank(), -1);
  expect_error([&] { s.num_elements(); }, Code::kInvalidArgument, {"not fully defined"});
}

TEST(Shape, MostSpecificCommonShape) {
  EXPECT_EQ(Shape({3}).most_specific_common(Shape({4})), Shape({-1}));
  EXPECT_EQ(Shape({2, 3}).most_specific_common(Shape({2, 4})), Shape({2, -1}));
  EXPECT_EQ(Shape({2}).most_specific_common(Shape({2})), Shape({2}));
  EXPECT_EQ(Shape({2}).most_specific_common(Shape({2, 1})), Shape::unknown_rank());
}

TEST(Shape, ElementCountOverflowIsAnError) {
  Shape big{int64_t{1} << 40, int64_t{1} << 40};
  expect_error([&] { big.num_elements(); }, Code::kInvalidArgument, {"overflow"});
  EXPECT_EQ(Shape({0, int64_t{1} << 62}).num_elements(), 0);
  EXPECT_EQ(Shape().num_elements(), 1);
}

TEST(Shape, Broadcasting) {
  EXPECT_EQ(broadcast_shapes({2, 1, 3}, {4, 1}, "op"), Shape({2, 4, 3}));
  EXPECT_EQ(broadcast_shapes({}, {4}, "op"), Shape({4}));
  EXPECT_EQ(broadcast_shapes({-1, 3}, {3}, "op"), Shape({-1, 3}));
  EXPECT_EQ(broadcast_shapes({-1}, {1}, "op"), Shape({-1}));
  EXPECT_EQ(broadcast_shapes({0, 3}, {1, 3}, "op"), Shape({0, 3}));
  expect_error(
      [] {
        broadcast_shapes({2, 3}, {4}, "AddV2");
      },
      Code::kInvalidArgument, {"AddV2", "[2,3]", "[4]"});
}

TEST(Shape, NormalizeAxis) {
  EXPECT_EQ(normalize_axis(-1, 3, "op"), 2);
  EXPECT_EQ(normalize_axis(0, 3, "op"), 0);
  expect_error([] { normalize_axis(3, 3, "Sum", "axis"); }, Code::kInvalidArgument,
               {"Sum", "axis 3", "rank 3"});
}

TEST(SmallVec, GrowsPastInlineCapacityAndCopies) {
  SmallVec<int64_t, 2> v{1, 2};
  for (int i = 3; i <= 10; ++i) v.push_back(i);
  ASSERT_EQ(v.size(), 10u);
  SmallVec<int64_t, 2> c = v;
  SmallVec<int64_t, 2> m = std::move(c);
  EXPECT_EQ(m, v);
  EXPECT_EQ(m[9], 10);
  m.insert(0, 0);
  m.erase(1);
  EXPECT_EQ(m[0], 0);
  EXPECT_EQ(m[1], 2);
}

}  // namespace
}  // namespace kiln
