// The Unicode ops (UnicodeDecode(WithOffsets), UnicodeEncode,
// UnicodeTranscode, UnicodeScript): table-driven cases whose expected values
// are TensorFlow 2.21's outputs for the same inputs (tf.raw_ops, eagerly),
// hostile bytes, and TensorFlow's error texts.
#include <cstdint>
#include <string>
#include <vector>

#include "array_test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using Strs = std::vector<std::string>;
using I32 = std::vector<int32_t>;
using I64 = std::vector<int64_t>;

Tensor strs(const Strs& v) {
  return Tensor::from_vector<std::string>(v, Shape{static_cast<int64_t>(v.size())});
}
Tensor ints(const I32& v) {
  return Tensor::from_vector<int32_t>(v, Shape{static_cast<int64_t>(v.size())});
}
Shape vec(size_t n) {
  return Shape{static_cast<int64_t>(n)};
}

// Decode attrs in row order: input_encoding, errors, replacement_char,
// replace_control_characters, Tsplits.
Attrs decode_attrs(const std::string& enc, const std::string& errors, int64_t rc = 0xFFFD,
                   bool control = false) {
  return {enc, errors, rc, control, DType::kInt64};
}

struct DecodeCase {
  const char* what;
  std::string encoding, errors;
  Strs input;
  I64 splits;
  I32 chars;
  I64 starts;
  int64_t replacement = 0xFFFD;
  bool control = false;
};

// Expected values: tf.raw_ops.UnicodeDecodeWithOffsets on the same inputs (TF 2.21).
const std::vector<DecodeCase> kDecodeCases = {
    {"valid and ill-formed UTF-8: one U+FFFD per maximal ill-formed subpart",
     "UTF-8",
     "replace",
     {"h\xc3\xa9", "",
      "a\xff"
      "b",
      "\xed\xa0\x80x", "\xc0\xafz", "\xf4\x90\x80\x80", "\xe2\x82", "a\x01\x7f\xc2\x80"},
     {0, 2, 2, 5, 9, 12, 16, 17, 21},
     {104, 233,   97,    65533, 98,    65533, 65533, 65533, 120, 65533, 65533,
      122, 65533, 65533, 65533, 65533, 65533, 97,    1,     127, 128},
     {0, 1, 0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 0, 1, 2, 3, 0, 0, 1, 2, 3}},
    {"ignore drops ill-formed bytes",
     "UTF-8",
     "ignore",
     {"h\xc3\xa9", "",
      "a\xff"
      "b",
      "\xed\xa0\x80x", "\xc0\xafz", "\xf4\x90\x80\x80", "\xe2\x82", "a\x01\x7f\xc2\x80"},
     {0, 2, 2, 4, 5, 6, 6, 6, 10},
     {104, 233, 97, 98, 120, 122, 97, 1, 127, 128},
     {0, 1, 0, 2, 3, 2, 0, 1, 2, 3}},
    {"C0 controls replaced (not DEL or C1), with replacement_char '?'",
     "UTF-8",
     "replace",
     {std::string("a\x01\x00\x1f\x7f\xc2\x9f\xc2\xa0", 9)},
     {0, 7},
     {97, 63, 63, 63, 127, 159, 160},
     {0, 1, 2, 3, 4, 5, 7},
     63,
     true},
    {"ignore drops control characters",
     "UTF-8",
     "ignore",
     {"a\x01"
      "b"},
     {0, 2},
     {97, 98},
     {0, 2},
     0xFFFD,
     true},
    {"UTF-16-BE: a high surrogate and a cut-off last byte are one ill-formed sequence",
     "UTF-16-BE",
     "replace",
     {std::string("\x00"
                  "a\xd8\x00\x41",
                  5),
      "\xd8\xff\x1f"},
     {0, 2, 3},
     {97, 65533, 65533},
     {0, 2, 0}},
    {"strict still replaces control characters",
     "UTF-8",
     "strict",
     {"a\x01"},
     {0, 2},
     {97, 65533},
     {0, 1},
     0xFFFD,
     true},
    {"UTF-16-BE: pairs, odd bytes, lone surrogates",
     "UTF-16-BE",
     "replace",
     {std::string("\x00"
                  "a\xd8\x3d\xde\x00",
                  6),
      std::string("\x00", 1),
      std::string("\xdc\x00\x00"
                  "b",
                  4),
      std::string("\xd8\x00\x00"
                  "b",
                  4),
      std::string("\x00"
                  "a\xd8\x00",
                  4)},
     {0, 2, 3, 5, 7, 9},
     {97, 128512, 65533, 65533, 98, 65533, 98, 97, 65533},
     {0, 2, 0, 0, 2, 0, 2, 0, 2}},
    {"UTF-32-BE: above U+10FFFF, surrogates, cut-off units",
     "UTF-32-BE",
     "replace",
     {std::string("\x00\x00\x00"
                  "a\x00\x01\xf6\x00",
                  8),
      std::string("\x00\x11\x00\x00", 4), std::string("\x00\x00\xd8\x00", 4),
      std::string("\x00\x00\x00"
                  "a\x00",
                  5),
      "\xff\xff\xff\xff"},
     {0, 2, 3, 4, 6, 7},
     {97, 128512, 65533, 65533, 97, 65533, 65533},
     {0, 4, 0, 0, 0, 4, 0}},
};

TEST(UnicodeDecode, MatchesTensorFlowTable) {
  for (const DecodeCase& k : kDecodeCases) {
    SCOPED_TRACE(k.what);
    const Tensor in[] = {strs(k.input)};
    std::vector<Tensor> out = call_op(OpId::UnicodeDecodeWithOffsets, in,
                                      decode_attrs(k.encoding, k.errors, k.replacement, k.control));
    expect_tensor<int64_t>(out[0], vec(k.splits.size()), k.splits);
    expect_tensor<int32_t>(out[1], vec(k.chars.size()), k.chars);
    expect_tensor<int64_t>(out[2], vec(k.starts.size()), k.starts);
    out = call_op(OpId::UnicodeDecode, in,
                  decode_attrs(k.encoding, k.errors, k.replacement, k.control));
    ASSERT_EQ(out.size(), 2u);
    expect_tensor<int32_t>(out[1], vec(k.chars.size()), k.chars);
  }
}

TEST(UnicodeDecode, AnyRankAndInt32Splits) {
  const Tensor in[] = {Tensor::from_vector<std::string>({"ab", "c"}, Shape{2, 1})};
  std::vector<Tensor> out = call_op(
      OpId::UnicodeDecode, in,
      {std::string("UTF-8"), std::string("replace"), int64_t{0xFFFD}, false, DType::kInt32});
  expect_tensor<int32_t>(out[0], Shape{3}, {0, 2, 3});
  expect_tensor<int32_t>(out[1], Shape{3}, {97, 98, 99});
}

TEST(UnicodeDecode, ErrorsAreTensorFlows) {
  const Tensor bad[] = {strs({"ok", "a\xff"})};
  expect_error([&] { call_op(OpId::UnicodeDecode, bad, decode_attrs("UTF-8", "strict")); },
               Code::kInvalidArgument, {"Invalid formatting on input string"});
  const Tensor odd[] = {strs({std::string("\x00", 1)})};
  expect_error([&] { call_op(OpId::UnicodeDecode, odd, decode_attrs("UTF-16-BE", "strict")); },
               Code::kInvalidArgument, {"Invalid formatting on input string"});
  expect_error([&] { call_op(OpId::UnicodeDecode, bad, decode_attrs("UTF-8", "replace", -1)); },
               Code::kInvalidArgument, {"replacement_char out of unicode codepoint range"});
  expect_error(
      [&] { call_op(OpId::UnicodeDecode, bad, decode_attrs("UTF-8", "ignore", 0x110000)); },
      Code::kInvalidArgument, {"replacement_char out of unicode codepoint range"});
  expect_error([&] { call_op(OpId::UnicodeDecode, bad, decode_attrs("FOO", "replace")); },
               Code::kInvalidArgument, {"Could not create converter for input encoding: FOO"});
  expect_error([&] { call_op(OpId::UnicodeDecode, bad, decode_attrs("UTF-8", "foo")); },
               Code::kInvalidArgument,
               {"Value for attr 'errors' of \"foo\" is not in the list of allowed values"});
  const Tensor num[] = {Tensor(1)};
  expect_error([&] { call_op(OpId::UnicodeDecode, num, decode_attrs("UTF-8", "replace")); },
               Code::kInvalidArgument, {"must be a string tensor"});
}

// Encode attrs in row order: errors, output_encoding, replacement_char.
struct EncodeCase {
  std::string encoding, errors;
  Strs want;
};

TEST(UnicodeEncode, MatchesTensorFlowTable) {
  // tf.raw_ops.UnicodeEncode([104, 233, -1, 0xD800, 0x110000, 128512, 0], [0, 3, 7]).
  const std::vector<EncodeCase> cases = {
      {"UTF-8",
       "replace",
       {"h\xc3\xa9\xef\xbf\xbd", std::string("\xef\xbf\xbd\xef\xbf\xbd\xf0\x9f\x98\x80\x00", 11)}},
      {"UTF-8", "ignore", {"h\xc3\xa9", std::string("\xf0\x9f\x98\x80\x00", 5)}},
      {"UTF-16-BE",
       "replace",
       {std::string("\x00h\x00\xe9\xff\xfd", 6),
        std::string("\xff\xfd\xff\xfd\xd8=\xde\x00\x00\x00", 10)}},
      {"UTF-32-BE",
       "ignore",
       {std::string("\x00\x00\x00h\x00\x00\x00\xe9", 8),
        std::string("\x00\x01\xf6\x00\x00\x00\x00\x00", 8)}},
  };
  const Tensor in[] = {ints({104, 233, -1, 0xD800, 0x110000, 128512, 0}),
                       Tensor::from_vector<int64_t>({0, 3, 7}, Shape{3})};
  for (const EncodeCase& k : cases) {
    SCOPED_TRACE(k.encoding + " " + k.errors);
    std::vector<Tensor> out =
        call_op(OpId::UnicodeEncode, in, {k.errors, k.encoding, int64_t{0xFFFD}});
    expect_tensor<std::string>(out[0], Shape{2}, k.want);
  }
  std::vector<Tensor> q =
      call_op(OpId::UnicodeEncode, in, {std::string("replace"), std::string("UTF-8"), int64_t{63}});
  expect_tensor<std::string>(q[0], Shape{2},
                             {"h\xc3\xa9?", std::string("??\xf0\x9f\x98\x80\x00", 7)});
}

TEST(UnicodeEncode, ErrorsAreTensorFlows) {
  auto encode = [](I32 values, I64 splits, const char* errors = "replace") {
    const Tensor in[] = {ints(values), Tensor::from_vector<int64_t>(splits, vec(splits.size()))};
    return call_op(OpId::UnicodeEncode, in,
                   {std::string(errors), std::string("UTF-8"), int64_t{0xFFFD}});
  };
  expect_error(
      [&] {
        encode({0xD800}, {0, 1}, "strict");
      },
      Code::kInvalidArgument, {"Code point is out of range for Unicode, or is a surrogate."});
  expect_error(
      [&] {
        encode({97}, {0, 2});
      },
      Code::kInvalidArgument,
      {"Last value in input_splits must be equal to length of input_tensor."});
  expect_error(
      [&] {
        encode({97, 98}, {1, 2});
      },
      Code::kInvalidArgument, {"First value in input_splits must be zero."});
  expect_error([&] { encode({}, {}); }, Code::kInvalidArgument,
               {"Input_splits should contain elements, but given input_values has 0 elements"});
  expect_error(
      [&] {
        encode({97, 98}, {0, 2, 1, 2});
      },
      Code::kInvalidArgument, {"input_splits must be non-decreasing"});
  expect_tensor<std::string>(encode({}, {0})[0], Shape{0}, {});
}

TEST(UnicodeTranscode, MatchesTensorFlow) {
  const Tensor in[] = {strs({"h\xc3\xa9", "",
                             "a\xff"
                             "b",
                             "\xed\xa0\x80x", "a\x01"})};
  // tf.raw_ops.UnicodeTranscode(in, "UTF-8", "UTF-16-BE", errors="ignore").
  std::vector<Tensor> out = call_op(OpId::UnicodeTranscode, in,
                                    {std::string("UTF-8"), std::string("UTF-16-BE"),
                                     std::string("ignore"), int64_t{0xFFFD}, false});
  expect_tensor<std::string>(out[0], Shape{5},
                             {std::string("\x00h\x00\xe9", 4), "",
                              std::string("\x00"
                                          "a\x00"
                                          "b",
                                          4),
                              std::string("\x00x", 2),
                              std::string("\x00"
                                          "a\x00\x01",
                                          4)});
  // ... UTF-8 to UTF-8 with replacement_char=63 and replace_control_characters=True.
  out = call_op(
      OpId::UnicodeTranscode, in,
      {std::string("UTF-8"), std::string("UTF-8"), std::string("replace"), int64_t{63}, true});
  expect_tensor<std::string>(out[0], Shape{5}, {"h\xc3\xa9", "", "a?b", "???x", "a?"});
  expect_error(
      [&] {
        call_op(OpId::UnicodeTranscode, in,
                {std::string("UTF-8"), std::string("UTF-7"), std::string("replace"), int64_t{63},
                 false});
      },
      Code::kInvalidArgument, {"Value for attr 'output_encoding' of \"UTF-7\""});
}

TEST(UnicodeScript, MatchesTensorFlow) {
  // tf.raw_ops.UnicodeScript: Latin, Cyrillic, Han, Arabic, Common, Inherited,
  // no code points, Hiragana, Katakana, Common, a surrogate (Unknown).
  const Tensor in[] = {
      ints({65, 0x416, 0x4E2D, 0x627, 32, 0x300, -1, 0x110000, 0x3042, 0x30A2, 48, 0xD800})};
  expect_tensor<int32_t>(call_op(OpId::UnicodeScript, in)[0], Shape{12},
                         {25, 8, 17, 2, 0, 1, -1, -1, 20, 22, 0, 103});
}

}  // namespace
}  // namespace kiln
