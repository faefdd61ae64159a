// DecodeRaw / DecodePaddedRaw (tf.io.decode_raw): expected values and error
// texts are TensorFlow 2.21's for the same inputs (tf.io.decode_raw, eagerly).
#include <complex>
#include <string>
#include <vector>

#include "array_test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using Strs = std::vector<std::string>;

Tensor strs(const Strs& v, Shape s) {
  return Tensor::from_vector<std::string>(v, std::move(s));
}
Tensor raw(const Strs& v, Shape s, DType t, bool little = true) {
  return call_op1(OpId::DecodeRaw, {strs(v, std::move(s))}, {t, little});
}
Tensor padded(const Strs& v, int32_t length, DType t, bool little = true) {
  return call_op1(OpId::DecodePaddedRaw,
                  {strs(v, Shape{static_cast<int64_t>(v.size())}), Tensor(length)}, {t, little});
}

TEST(DecodeRaw, ValuesInEitherByteOrder) {
  const Strs two = {std::string("\x01\x02\x03\x04", 4), std::string("\x05\x06\x07\x08", 4)};
  expect_tensor<int32_t>(raw(two, {2}, DType::kInt32), {2, 1}, {67305985, 134678021});
  expect_tensor<int32_t>(raw(two, {2}, DType::kInt32, false), {2, 1}, {16909060, 84281096});
  expect_tensor<uint8_t>(raw({two[0]}, {1}, DType::kUInt8), {1, 4}, {1, 2, 3, 4});
  expect_tensor<float>(raw({std::string("\x00\x00\x80\x3f", 4), std::string("\x00\x00\x00\x40", 4)},
                           {2, 1}, DType::kFloat32),
                       {2, 1, 1}, {1.f, 2.f});
  expect_tensor<float>(raw({std::string("\x3f\x80\x00\x00", 4)}, {}, DType::kFloat32, false), {1},
                       {1.f});
  expect_tensor<bool>(raw({std::string("\x00\x01\x02\x00", 4)}, {1}, DType::kBool), {1, 4},
                      {false, true, true, false});
  expect_tensor<int64_t>(
      raw({std::string("\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0", 16)}, {1}, DType::kInt64), {1, 2},
      {1, 2});
  // Complex values swap each part on its own.
  expect_tensor<std::complex<float>>(
      raw({std::string("\x3f\x80\x00\x00\x40\x00\x00\x00", 8)}, {1}, DType::kComplex64, false),
      {1, 1}, {{1.f, 2.f}});
  expect_tensor<int32_t>(raw({}, {0}, DType::kInt32), {0, 0}, {});
  expect_tensor<int32_t>(raw({"", ""}, {2}, DType::kInt32), {2, 0}, {});  // no row to copy
  expect_tensor<int32_t>(padded({"ab"}, 0, DType::kInt32), {1, 0}, {});
}

TEST(DecodeRaw, PaddedCutsOrFillsWithZeros) {
  expect_tensor<int8_t>(padded({std::string("\x01\x02\x03\x04\x05", 5), "\x01"}, 3, DType::kInt8),
                        {2, 3}, {1, 2, 3, 1, 0, 0});
  expect_tensor<int32_t>(padded({std::string("\x00\x01\x00\x02", 4)}, 8, DType::kInt32, false),
                         {1, 2}, {65538, 0});
}

TEST(DecodeRaw, TensorFlowsErrors) {
  const Code bad = Code::kInvalidArgument;
  expect_error(
      [] {
        raw({"\x01\x02\x03", "\x01\x02\x03\x04"}, {2}, DType::kInt32);
      },
      bad,
      {"DecodeRaw requires input strings to all be the same size, but element 1 has "
       "size 3 != 4"});
  expect_error([] { raw({"\x01\x02\x03"}, {1}, DType::kInt32); }, bad,
               {"Input to DecodeRaw has length 3 that is not a multiple of 4, the size of int32"});
  expect_error([] { raw({"\x01\x02\x03"}, {1}, DType::kFloat32); }, bad, {"the size of float"});
  expect_error([] { padded({"ab"}, 3, DType::kInt32); }, bad,
               {"fixed_length (3) must be a multiple of the size of out_type (4)"});
  expect_error([] { padded({"ab"}, -4, DType::kInt32); }, bad, {"must not be negative"});
  expect_error([] { raw({"ab"}, {1}, DType::kString); }, bad, {"out_type must be a numeric"});
}

}  // namespace
}  // namespace kiln
