#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(Tensor, NestedListConstruction) {
  Tensor t({{1, 2}, {3, 4}});
  EXPECT_EQ(t.dtype(), DType::kInt32);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.at<int32_t>({1, 0}), 3);
  EXPECT_EQ(t.to_string(), "[[1 2]\n [3 4]]");
}

}  // namespace
}  // namespace kiln
