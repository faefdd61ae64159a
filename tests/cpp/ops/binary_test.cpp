#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;

TEST(Binary, AddBroadcastsAndConcatenatesStrings) {
  expect_tensor<int32_t>(Tensor({{1, 2}, {3, 4}}) + Tensor({10, 20}), {2, 2}, {11, 22, 13, 24});
  expect_tensor<std::string>(add(Tensor("a"), Tensor({"b", "c"})), {2}, {"ab", "ac"});
}

TEST(Binary, DtypeMismatchIsInvalidArgument) {
  expect_error([] { add(Tensor({1, 2}), Tensor({1.f, 2.f})); }, Code::kInvalidArgument,
               {"AddV2", "int32", "float32"});
}

}  // namespace
}  // namespace kiln
