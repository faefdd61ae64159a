// The string ops (tf.strings): values against plain references and
// TensorFlow's documented outputs, hostile bytes (invalid UTF-8, huge or
// pathological regex inputs), inference (shapes, unknown dims, errors), and
// traced functions fed at call time.
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "array_test_util.h"
#include "kiln/function.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;
using testing::infer;
using testing::sym;
using testing::with_allocation_cap;
using Strs = std::vector<std::string>;

Tensor strs(const Strs& v, const Shape& s) {
  return Tensor::from_vector<std::string>(v, s);
}
Tensor strs(const Strs& v) {
  return strs(v, Shape{static_cast<int64_t>(v.size())});
}

// Hostile strings every elementwise op must survive: invalid UTF-8 (stray
// continuation bytes, truncated and overlong sequences, surrogates), NUL
// bytes, long strings.
const Strs kHostile = {"",
                       std::string("a\0b", 3),
                       "\x80",
                       "\xff\xfe",
                       "\xe2\x82",
                       "\xc0\xaf",
                       "\xed\xa0\x80",
                       "h\xc3\xa9llo \xf0\x9f\x98\x80",
                       std::string(100000, 'x')};

// ---- StringLength ----

int64_t utf8_len_ref(const std::string& s) {
  int64_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

TEST(StringLength, BytesAndUtf8CharsAgainstReference) {
  Strs in = kHostile;
  in.push_back("\xe2\x82\xac");  // one 3-byte character
  std::vector<int32_t> bytes, chars;
  for (const auto& s : in) {
    bytes.push_back(static_cast<int32_t>(s.size()));
    chars.push_back(static_cast<int32_t>(utf8_len_ref(s)));
  }
  const int64_t n = static_cast<int64_t>(in.size());
  expect_tensor<int32_t>(string_length(strs(in)), {n}, bytes);
  expect_tensor<int32_t>(string_length(strs(in), "UTF8_CHAR"), {n}, chars);
  EXPECT_EQ(chars[7], 7);  // "héllo 😀"
  EXPECT_EQ(chars[2], 0);  // a stray continuation byte starts nothing
  expect_tensor<int32_t>(string_length(strs({"ab", "c", "", "def"}, {2, 2})), {2, 2}, {2, 1, 0, 3});
  expect_tensor<int32_t>(string_length(Tensor("hello")), {}, {5});
  expect_error([] { string_length(Tensor("a"), "CHAR"); }, Code::kInvalidArgument,
               {"StringLength", "unit must be \"BYTE\" or \"UTF8_CHAR\""});
  expect_error(
      [] {
        string_length(Tensor({1, 2}));
      },
      Code::kInvalidArgument, {"StringLength", "input must be a string tensor, got int32"});
}

// ---- StringJoin ----

TEST(StringJoin, ScalarsRepeatAndShapesMustAgree) {
  expect_tensor<std::string>(string_join({Tensor("a"), Tensor("b")}, "-"), {}, {"a-b"});
  expect_tensor<std::string>(string_join({strs({"x", "y"}), Tensor("!"), strs({"1", "2"})}, ""),
                             {2}, {"x!1", "y!2"});
  expect_tensor<std::string>(
      string_join({strs({"a", "b", "c", "d"}, {2, 2}), strs({"1", "2", "3", "4"}, {2, 2})}, ", "),
      {2, 2}, {"a, 1", "b, 2", "c, 3", "d, 4"});
  expect_tensor<std::string>(string_join({strs({"only"})}, "+"), {1}, {"only"});
  expect_tensor<std::string>(string_join({}, "+"), {}, {""});
  expect_tensor<std::string>(string_join({strs({}), Tensor("s")}), {0}, {});
  expect_error(
      [] {
        string_join({strs({"a", "b"}), strs({"a", "b", "c"})});
      },
      Code::kInvalidArgument,
      {"StringJoin", "Input shapes do not match", "inputs[0] has shape [2]",
       "inputs[1] has shape [3]"});
  // Broadcasting beyond scalars is not TensorFlow's: [1] with [2] is an error.
  expect_error(
      [] {
        string_join({strs({"a"}), strs({"a", "b"})});
      },
      Code::kInvalidArgument, {"Input shapes do not match"});
  expect_error(
      [] {
        string_join({Tensor("a"), Tensor(1)});
      },
      Code::kInvalidArgument, {"inputs[1] must be a string tensor"});
}

TEST(StringJoin, InferenceAndAllocationCap) {
  const Tensor u = sym(DType::kString, Shape::unknown_rank());
  EXPECT_EQ(infer(OpId::StringJoin, {u, Tensor("a")}, {std::string()})[0].shape,
            Shape::unknown_rank());
  EXPECT_EQ(infer(OpId::StringJoin, {u, sym(DType::kString, {-1, 3}), sym(DType::kString, {2, -1})},
                  {std::string()})[0]
                .shape,
            Shape({2, 3}));
  EXPECT_EQ(infer(OpId::StringJoin, {Tensor("a"), Tensor("b")}, {std::string()})[0].shape,
            Shape({}));
  // A long scalar repeated a million times is refused before it is built.
  const Tensor big(std::string(1 << 20, 'x'));
  const Tensor many = Tensor::empty(DType::kString, {1 << 20});
  with_allocation_cap(int64_t{1} << 30, [&] {
    expect_error(
        [&] {
          string_join({big, many});
        },
        Code::kResourceExhausted, {"StringJoin", "allocation cap"});
  });
}

// ---- ReduceJoin ----

TEST(ReduceJoin, TensorFlowsDocumentedExamples) {
  const Tensor a = strs({"a", "b", "c", "d"}, {2, 2});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{0}), {2}, {"ac", "bd"});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{1}), {2}, {"ab", "cd"});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{-2}), {2}, {"ac", "bd"});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{-1}), {2}, {"ab", "cd"});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{0}, true), {1, 2}, {"ac", "bd"});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{1}, true), {2, 1}, {"ab", "cd"});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{0}, false, "."), {2},
                             {"a.c", "b.d"});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{0, 1}), {}, {"acbd"});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{1, 0}), {}, {"abcd"});
  expect_tensor<std::string>(reduce_join(a, std::vector<int64_t>{}), {2, 2}, {"a", "b", "c", "d"});
  expect_tensor<std::string>(reduce_join(a), {}, {"abcd"});  // axis=None: row-major
  expect_tensor<std::string>(reduce_join(a, std::nullopt, true, " "), {1, 1}, {"a b c d"});
  expect_tensor<std::string>(reduce_join(a, Tensor(1)), {2}, {"ab", "cd"});  // scalar int32
  expect_tensor<std::string>(reduce_join(Tensor("s")), {}, {"s"});
}

// Reference: output over the kept dims in row-major order; each joins the
// reduced dims' elements with the first listed axis varying fastest.
std::vector<std::string> reduce_join_ref(const Tensor& x, const std::vector<int64_t>& axes,
                                         const std::string& sep) {
  const Shape& s = x.shape();
  const int64_t r = s.rank();
  std::vector<int64_t> red;
  for (int64_t a : axes) red.push_back(a < 0 ? a + r : a);
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < r; ++d)
    if (std::find(red.begin(), red.end(), d) == red.end()) kept.push_back(d);
  const auto strides = contiguous_strides(s);
  int64_t n_out = 1, group = 1;
  for (int64_t d : kept) n_out *= s.dim(d);
  for (int64_t d : red) group *= s.dim(d);
  std::vector<std::string> out;
  for (int64_t o = 0; o < n_out; ++o) {
    int64_t base = 0, q = o;
    for (size_t k = kept.size(); k-- > 0;) {
      base += (q % s.dim(kept[k])) * strides[static_cast<size_t>(kept[k])];
      q /= s.dim(kept[k]);
    }
    std::string joined;
    for (int64_t g = 0; g < group; ++g) {
      int64_t off = 0, q2 = g;
      for (int64_t d : red) {  // first listed fastest
        off += (q2 % s.dim(d)) * strides[static_cast<size_t>(d)];
        q2 /= s.dim(d);
      }
      if (g) joined += sep;
      joined += x.data<std::string>()[base + off];
    }
    out.push_back(joined);
  }
  return out;
}

TEST(ReduceJoin, EveryAxisOrderOfA3DTensorAgainstReference) {
  const Tensor x = testing::iota(DType::kString, {2, 3, 4});
  const std::vector<std::vector<int64_t>> cases = {{0},    {1},       {2},       {0, 1},   {1, 0},
                                                   {2, 0}, {0, 2, 1}, {2, 1, 0}, {-1, -3}, {}};
  for (const auto& axes : cases)
    for (bool keep : {false, true}) {
      SCOPED_TRACE(str_cat("axes ", axes.size() ? axes[0] : 99, "... keep ", keep));
      const Tensor got = reduce_join(x, axes, keep, "|");
      const std::vector<std::string> want = reduce_join_ref(x, axes, "|");
      ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
      EXPECT_EQ(got.rank(), keep ? 3 : 3 - static_cast<int64_t>(axes.size()));
      for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.data<std::string>()[i], want[i]) << i;
    }
  // Joining an axis of length 0 gives "" for each output.
  expect_tensor<std::string>(reduce_join(Tensor::empty(DType::kString, {2, 0}), {1}), {2},
                             {"", ""});
  expect_tensor<std::string>(reduce_join(Tensor::empty(DType::kString, {0, 3}), {1}), {0}, {});
}

TEST(ReduceJoin, InferenceAndErrors) {
  const Attrs attrs = {false, std::string()};
  const Tensor x = sym(DType::kString, {2, -1, 4});
  EXPECT_EQ(infer(OpId::ReduceJoin, {x, Tensor(1)}, attrs)[0].shape, Shape({2, 4}));
  EXPECT_EQ(infer(OpId::ReduceJoin, {x, Tensor({1})}, {true, std::string()})[0].shape,
            Shape({2, 1, 4}));
  // Axes unknown: their count fixes the rank.
  EXPECT_EQ(infer(OpId::ReduceJoin, {x, sym(DType::kInt32, {2})}, attrs)[0].shape, Shape({-1}));
  EXPECT_EQ(infer(OpId::ReduceJoin, {x, sym(DType::kInt32, {-1})}, attrs)[0].shape,
            Shape::unknown_rank());
  EXPECT_EQ(infer(OpId::ReduceJoin, {x, sym(DType::kInt32, {-1})}, {true, std::string()})[0].shape,
            Shape({-1, -1, -1}));
  const Tensor a = strs({"a", "b"});
  expect_error([&] { reduce_join(a, std::vector<int64_t>{1}); }, Code::kInvalidArgument,
               {"ReduceJoin", "Invalid reduction dimension 1 for input with 1 dimension(s)"});
  expect_error(
      [&] {
        reduce_join(a, std::vector<int64_t>{0, -1});
      },
      Code::kInvalidArgument, {"Duplicate reduction dimension -1"});
  expect_error([&] { reduce_join(a, Tensor(0.5f)); }, Code::kInvalidArgument,
               {"reduction_indices must be int32 or int64"});
}

// ---- case, strip ----

TEST(StringCase, AsciiOnlyAndOtherBytesUnchanged) {
  const Tensor x = strs({"Hello World", "ÀÉ àé", "MiXeD 123 !?", "\xff\x80Zz"});
  expect_tensor<std::string>(string_lower(x), {4},
                             {"hello world", "ÀÉ àé", "mixed 123 !?", "\xff\x80zz"});
  expect_tensor<std::string>(string_upper(x, "utf-8"), {4},
                             {"HELLO WORLD", "ÀÉ àé", "MIXED 123 !?", "\xff\x80ZZ"});
  for (const auto& s : kHostile) {  // no crash, same length
    EXPECT_EQ(string_upper(Tensor(s)).item<std::string>().size(), s.size());
  }
  expect_error([&] { string_lower(x, "latin-1"); }, Code::kInvalidArgument,
               {"StringLower", "only utf-8 or '' (no encoding) is supported"});
}

TEST(StringStrip, AsciiWhitespaceAtBothEnds) {
  expect_tensor<std::string>(string_strip(strs({"  a b \t\n", "\v\f\rx", "", "   ", "\xc2\xa0y"})),
                             {5}, {"a b", "x", "", "", "\xc2\xa0y"});
}

// ---- Substr ----

struct SubstrCase {
  std::string s;
  int64_t pos, len;
  std::string bytes, chars;  // expected with unit BYTE / UTF8_CHAR
};

TEST(Substr, PositionsLengthsAndUnitsAsTensorFlow) {
  const std::vector<SubstrCase> cases = {
      {"Hello", 0, 2, "He", "He"},
      {"Hello", 1, 3, "ell", "ell"},
      {"Hello", 3, 10, "lo", "lo"},  // len capped
      {"Hello", 5, 2, "", ""},       // pos at the end
      {"Hello", -3, 2, "ll", "ll"},  // negative pos counts from the end
      {"Hello", -5, 5, "Hello", "Hello"},
      {"Hello", -2, 10, "lo", "lo"},
      {"Hello", 1, -1, "ello", ""},  // negative len: BYTE to the end, UTF8_CHAR ""
      {"h\xc3\xa9llo", 1, 2, "\xc3\xa9", "\xc3\xa9l"},
      {"h\xc3\xa9llo", -4, 2, "\xa9l", "\xc3\xa9l"},
      {"\xe2\x82\xac\xe2\x82\xac", 1, 1, "\x82", "\xe2\x82\xac"},
      {"\x80\x80x", 0, 1, "\x80", "\x80\x80"},  // continuation bytes go with the byte before
      {"", 0, 3, "", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(str_cat(testing::elem_str(Tensor(c.s), 0), " pos ", c.pos, " len ", c.len));
    EXPECT_EQ(substr(Tensor(c.s), c.pos, c.len).item<std::string>(), c.bytes);
    EXPECT_EQ(substr(Tensor(c.s), c.pos, c.len, "UTF8_CHAR").item<std::string>(), c.chars);
  }
}

TEST(Substr, PosAndLenBroadcastAgainstTheInput) {
  const Tensor words = strs({"ten", "eleven", "twelve"});
  expect_tensor<std::string>(substr(words, Tensor({1, 2, 3}), Tensor({2, 3, 4})), {3},
                             {"en", "eve", "lve"});
  expect_tensor<std::string>(substr(words, 1, 2), {3}, {"en", "le", "we"});
  // A [2, 1] pos against [3] strings: NumPy broadcasting to [2, 3].
  expect_tensor<std::string>(substr(words, Tensor::from_vector<int64_t>({0, 1}, {2, 1}),
                                    Tensor::from_vector<int64_t>({1, 2}, {2, 1})),
                             {2, 3}, {"t", "e", "t", "en", "le", "we"});
  // A scalar string against vectors of positions.
  expect_tensor<std::string>(substr(Tensor("abcdef"), Tensor({0, 2, 4}), Tensor({2, 2, 2})), {3},
                             {"ab", "cd", "ef"});
}

TEST(Substr, Errors) {
  expect_error([] { substr(Tensor("hello"), 10, 2); }, Code::kInvalidArgument,
               {"Substr", "pos 10 out of range for string b'hello' at index 0"});
  expect_error(
      [] {
        substr(strs({"ab", "abcdef"}), Tensor({1, -7}), Tensor({1, 1}));
      },
      Code::kInvalidArgument, {"pos -7 out of range for string b'abcdef' at index 1"});
  // In characters: "é" is one character of two bytes.
  expect_error([] { substr(Tensor("\xc3\xa9"), 2, 1, "UTF8_CHAR"); }, Code::kInvalidArgument,
               {"pos 2 out of range"});
  expect_error([] { substr(Tensor("\xc3\xa9"), -2, 1, "UTF8_CHAR"); }, Code::kInvalidArgument,
               {"pos -2 out of range"});
  expect_error(
      [] {
        substr(Tensor("a"), Tensor({0, 0}), Tensor({1}));
      },
      Code::kInvalidArgument, {"pos and len shapes must match: [2] vs. [1]"});
  expect_error([] { substr(Tensor("a"), Tensor(0), Tensor(int64_t{1})); }, Code::kInvalidArgument,
               {"pos and len must have the same dtype"});
  expect_error(
      [] {
        substr(strs({"a", "b"}), Tensor({0, 0, 0}), Tensor({1, 1, 1}));
      },
      Code::kInvalidArgument, {"Substr"});
  // The first failing element is named whatever the thread split.
  Strs many(200000, "abc");
  many[150000] = "a";
  many[190000] = "";
  expect_error([&] { substr(strs(many), 2, 1); }, Code::kInvalidArgument, {"at index 150000"});
  EXPECT_EQ(testing::infer_shape(OpId::Substr,
                                 {sym(DType::kString, {-1, 3}), sym(DType::kInt32, {1, -1}),
                                  sym(DType::kInt32, {-1, 3})},
                                 {std::string("BYTE")}),
            Shape({-1, 3}));
}

// ---- AsString ----

std::string printf_ref(const char* fmt, double v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

TEST(AsString, IntegersFloatsBoolsAsPrintf) {
  expect_tensor<std::string>(as_string(Tensor({0, -12, 2147483647})), {3},
                             {"0", "-12", "2147483647"});
  expect_tensor<std::string>(as_string(Tensor(std::numeric_limits<int64_t>::min())), {},
                             {"-9223372036854775808"});
  expect_tensor<std::string>(as_string(cast(Tensor({255, 7}), DType::kUInt8)), {2}, {"255", "7"});
  expect_tensor<std::string>(as_string(cast(Tensor({-128}), DType::kInt8)), {1}, {"-128"});
  expect_tensor<std::string>(as_string(Tensor({7, -7}), -1, false, false, 4), {2},
                             {"   7", "  -7"});
  expect_tensor<std::string>(as_string(Tensor({7, -7}), -1, false, false, 4, "0"), {2},
                             {"0007", "-007"});
  expect_tensor<std::string>(as_string(Tensor({7}), -1, false, false, 4, "-"), {1}, {"7   "});
  expect_tensor<std::string>(as_string(Tensor({7}), -1, false, false, -1, "+"), {1}, {"+7"});
  expect_tensor<std::string>(as_string(Tensor({true, false})), {2}, {"true", "false"});
  const std::vector<double> vals = {0.0, 3.5, -1.25e-7, 123456789.125, 1e300, -0.0};
  for (double v : vals) {
    SCOPED_TRACE(v);
    EXPECT_EQ(as_string(Tensor(v)).item<std::string>(), printf_ref("%f", v));
    EXPECT_EQ(as_string(Tensor(v), 2).item<std::string>(), printf_ref("%.2f", v));
    EXPECT_EQ(as_string(Tensor(v), -1, true).item<std::string>(), printf_ref("%e", v));
    EXPECT_EQ(as_string(Tensor(v), 3, false, true).item<std::string>(), printf_ref("%.3g", v));
    EXPECT_EQ(as_string(Tensor(v), 1, false, false, 12, "0").item<std::string>(),
              printf_ref("%012.1f", v));
    EXPECT_EQ(as_string(Tensor(static_cast<float>(v))).item<std::string>(),
              printf_ref("%f", static_cast<float>(v)));
  }
  const float inf = std::numeric_limits<float>::infinity();
  expect_tensor<std::string>(as_string(Tensor({inf, -inf})), {2}, {"inf", "-inf"});
  EXPECT_EQ(as_string(cast(Tensor(1.5f), DType::kFloat16)).item<std::string>(), "1.500000");
  // Strings pass through, padded to width (precision cuts them then).
  expect_tensor<std::string>(as_string(strs({"ab", "abcdef"}), 3, false, false, 5), {2},
                             {"   ab", "  abc"});
  expect_tensor<std::string>(as_string(strs({"ab"})), {1}, {"ab"});
  // Complex numbers as TensorFlow writes them: "(real,imag)".
  const Tensor z = Tensor::from_vector<std::complex<float>>({{1.5f, -2.f}, {0.f, 0.25f}}, Shape{2});
  expect_tensor<std::string>(as_string(z, 1), {2}, {"(1.5,-2.0)", "(0.0,0.2)"});
}

TEST(AsString, AttributeErrorsAsTensorFlow) {
  expect_error([] { as_string(Tensor(1), 2); }, Code::kInvalidArgument,
               {"AsString", "precision not supported for datatype int32"});
  expect_error([] { as_string(Tensor(1), -1, true); }, Code::kInvalidArgument,
               {"scientific and shortest format not supported for datatype int32"});
  expect_error([] { as_string(Tensor(1.f), -1, true, true); }, Code::kInvalidArgument,
               {"Cannot select both scientific and shortest notation"});
  expect_error([] { as_string(Tensor(1), -1, false, false, 3, "ab"); }, Code::kInvalidArgument,
               {"Fill string must be one or fewer characters"});
  expect_error([] { as_string(Tensor(1), -1, false, false, 3, "x"); }, Code::kInvalidArgument,
               {"Fill argument not supported: b'x'"});
  with_allocation_cap(int64_t{1} << 24, [] {
    expect_error([] { as_string(Tensor::empty(DType::kInt32, {1000}), -1, false, false, 1 << 20); },
                 Code::kResourceExhausted, {"AsString"});
  });
}

// ---- StringToNumber ----

TEST(StringToNumber, ParsesAsTensorFlowsSafeStrto) {
  expect_tensor<float>(
      string_to_number(strs({"1.5", " -2e3 ", "0x1A", "+.25", "inf", "-NaN", "1e40", "7"})), {8},
      {1.5f, -2000.f, 26.f, 0.25f, std::numeric_limits<float>::infinity(), std::nanf(""),
       std::numeric_limits<float>::infinity(), 7.f});
  expect_tensor<double>(string_to_number(strs({"0.1", "1e-320", "1e400"}), DType::kFloat64), {3},
                        {0.1, 1e-320, std::numeric_limits<double>::infinity()});
  expect_tensor<int32_t>(
      string_to_number(strs({"42", " -7 ", "2147483647", "-2147483648", "007"}), DType::kInt32),
      {5}, {42, -7, 2147483647, INT32_MIN, 7});
  expect_tensor<int64_t>(
      string_to_number(strs({"9223372036854775807", "-9223372036854775808"}), DType::kInt64), {2},
      {INT64_MAX, INT64_MIN});
  const std::vector<std::pair<std::string, DType>> bad = {
      {"abc", DType::kFloat32},
      {"", DType::kFloat32},
      {"1.5x", DType::kFloat32},
      {"infinity", DType::kFloat32},
      {"1e", DType::kFloat64},
      {"0x", DType::kFloat64},
      {"--1", DType::kFloat64},
      {"1.5", DType::kInt32},
      {"+5", DType::kInt32},
      {"2147483648", DType::kInt32},
      {"-2147483649", DType::kInt32},
      {"9223372036854775808", DType::kInt64},
      {"99999999999999999999999", DType::kInt64},
      {"1 2", DType::kInt64},
      {std::string("1\0", 2), DType::kInt32},
      {"\xff", DType::kFloat32}};
  for (const auto& [s, dt] : bad) {
    SCOPED_TRACE(testing::elem_str(Tensor(s), 0));
    expect_error(
        [&] {
          string_to_number(strs({"1", s}), dt);
        },
        Code::kInvalidArgument,
        {"StringToNumber", "StringToNumberOp could not correctly convert string: "});
  }
  expect_error(
      [] {
        string_to_number(strs({"12", "x\xffy"}));
      },
      Code::kInvalidArgument, {"could not correctly convert string: x\\xffy"});
  expect_error([] { string_to_number(Tensor("1"), DType::kInt8); }, Code::kInvalidArgument,
               {"out_type must be float32, float64, int32 or int64, got int8"});
}

// ---- RegexReplace / RegexFullMatch ----

TEST(RegexReplace, Re2SyntaxAndRewrites) {
  // TensorFlow's documented examples.
  expect_tensor<std::string>(
      regex_replace(strs({"Text with tags.<br /><b>contains html</b>"}), "<[^>]+>", " "), {1},
      {"Text with tags.  contains html "});
  expect_tensor<std::string>(regex_replace(Tensor("aaaa"), "a", "b", false), {}, {"baaa"});
  expect_tensor<std::string>(regex_replace(Tensor("aaaa"), "a", "b"), {}, {"bbbb"});
  expect_tensor<std::string>(
      regex_replace(strs({"2024-01-31", "1999-12-01"}), R"((\d+)-(\d+)-(\d+))", R"(\3/\2/\1)"), {2},
      {"31/01/2024", "01/12/1999"});
  expect_tensor<std::string>(regex_replace(Tensor("abc"), "", "-"), {}, {"-a-b-c-"});
  expect_tensor<std::string>(regex_replace(Tensor("a.b"), R"(\.)", R"(\\)"), {}, {"a\\b"});
  expect_tensor<std::string>(regex_replace(Tensor("Hello"), "(?i)h", "J"), {}, {"Jello"});
  expect_tensor<std::string>(regex_replace(Tensor("h\xc3\xa9llo"), "\\p{L}", "x"), {}, {"xxxxx"});
  for (const auto& s : kHostile)  // arbitrary bytes are safe to match
    regex_replace(Tensor(s), ".", "");
}

TEST(RegexReplace, LinearTimeOnHostileInput) {
  const auto t0 = std::chrono::steady_clock::now();
  // std::regex overflows the stack on the first and backtracks exponentially on the
  // second. (RE2 tries no empty match right after a match: "x", where Python gives "xx".)
  EXPECT_EQ(regex_replace(Tensor(std::string(1 << 20, 'a')), "(a|b)*", "x").item<std::string>(),
            "x");
  EXPECT_EQ(regex_replace(Tensor(std::string(40, 'a')), "(a*)*b", "x").item<std::string>(),
            std::string(40, 'a'));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST(RegexReplace, InvalidPatternsAndRewrites) {
  expect_error([] { regex_replace(Tensor("a"), "(a", "b"); }, Code::kInvalidArgument,
               {"RegexReplace", "Invalid pattern: b'(a'", "missing )"});
  expect_error([] { regex_replace(Tensor("a"), "(a)", "\\2"); }, Code::kInvalidArgument,
               {"Invalid rewrite pattern: b'\\\\2'"});
  expect_error([] { regex_replace(Tensor("a"), "(a)\\1", "b"); }, Code::kInvalidArgument,
               {"Invalid pattern"});  // RE2 has no backreferences
  expect_error([] { regex_replace(Tensor("a"), "\xff", "b"); }, Code::kInvalidArgument,
               {"Invalid pattern: b'\\xff'"});
  expect_error([] { regex_replace(Tensor("a"), Tensor({"a"}), Tensor("b")); },
               Code::kInvalidArgument, {"pattern must be a scalar"});
  // A known pattern is checked while tracing (inference), before any call.
  const Tensor x = sym(DType::kString, {-1});
  expect_error(
      [&] {
        infer(OpId::RegexReplace, {x, Tensor("[z-a]"), Tensor("")}, {true});
      },
      Code::kInvalidArgument, {"Invalid pattern"});
  EXPECT_EQ(infer(OpId::RegexReplace, {x, sym(DType::kString, {}), Tensor("")}, {true})[0].shape,
            Shape({-1}));
}

TEST(RegexFullMatch, WholeStringsOnly) {
  expect_tensor<bool>(regex_full_match(strs({"abc", "abcd", "", "xabc"}), "a.c"), {4},
                      {true, false, false, false});
  expect_tensor<bool>(regex_full_match(Tensor("TF"), "[A-Z]+"), {}, {true});
  expect_error([] { regex_full_match(Tensor("a"), "*"); }, Code::kInvalidArgument,
               {"RegexFullMatch", "Invalid pattern"});
}

// ---- UnsortedSegmentJoin ----

TEST(UnsortedSegmentJoin, JoinsInOrderAndChecksIds) {
  expect_tensor<std::string>(
      unsorted_segment_join(strs({"a", "b", "c", "d"}), Tensor({1, 0, 1, 1}), Tensor(3), ","), {3},
      {"b", "a,c,d", ""});
  // 1-D ids over a [2, 2] input join whole rows.
  expect_tensor<std::string>(unsorted_segment_join(strs({"a", "b", "c", "d"}, {2, 2}),
                                                   Tensor({0, 0}), Tensor(int64_t{1}), "-"),
                             {1, 2}, {"a-c", "b-d"});
  expect_tensor<std::string>(unsorted_segment_join(strs({"x", "y", "z", "w"}, {2, 2}),
                                                   Tensor({{1, 0}, {0, 1}}), Tensor(2)),
                             {2}, {"yz", "xw"});
  expect_tensor<std::string>(
      unsorted_segment_join(strs({}), Tensor::empty(DType::kInt32, {0}), Tensor(2)), {2}, {"", ""});
  expect_error(
      [] {
        unsorted_segment_join(strs({"a", "b"}), Tensor({0, 2}), Tensor(2));
      },
      Code::kInvalidArgument, {"UnsortedSegmentJoin", "segment_ids[1] = 2 is out of range [0, 2)"});
  expect_error(
      [] {
        unsorted_segment_join(strs({"a", "b"}), Tensor({-1, 0}), Tensor(2));
      },
      Code::kInvalidArgument, {"segment_ids[0] = -1"});
  expect_error(
      [] {
        unsorted_segment_join(strs({"a", "b"}), Tensor({0, 0, 0}), Tensor(2));
      },
      Code::kInvalidArgument, {"must be a prefix of inputs' shape"});
  EXPECT_EQ(infer(OpId::UnsortedSegmentJoin,
                  {sym(DType::kString, {-1, 3}), sym(DType::kInt64, {-1}), sym(DType::kInt64, {})},
                  {std::string()})[0]
                .shape,
            Shape({-1, 3}));
}

// ---- StringSplitV2 / _StringCharSplit ----

// Python's str.split, with TensorFlow's one difference: after maxsplit
// whitespace splits the (possibly empty) rest is kept.
std::vector<std::string> split_ref(const std::string& s, const std::string& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (maxsplit == 0) return {s};
  int64_t splits = 0;
  if (sep.empty()) {
    size_t i = 0;
    auto ws = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
    while (i < s.size() && ws(s[i])) ++i;
    while (i < s.size()) {
      size_t j = i;
      while (j < s.size() && !ws(s[j])) ++j;
      out.push_back(s.substr(i, j - i));
      i = j;
      while (i < s.size() && ws(s[i])) ++i;
      if (maxsplit > 0 && ++splits == maxsplit) {
        out.push_back(s.substr(i));
        break;
      }
    }
    return out;
  }
  size_t start = 0;
  for (size_t p; (p = s.find(sep, start)) != std::string::npos;) {
    out.push_back(s.substr(start, p - start));
    start = p + sep.size();
    if (maxsplit > 0 && ++splits == maxsplit) break;
  }
  out.push_back(s.substr(start));
  return out;
}

void expect_split(const StringSplitResult& r, const std::vector<std::vector<std::string>>& rows) {
  std::vector<int64_t> ind;
  std::vector<std::string> vals;
  int64_t widest = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j) {
      ind.push_back(static_cast<int64_t>(i));
      ind.push_back(static_cast<int64_t>(j));
      vals.push_back(rows[i][j]);
    }
    widest = std::max<int64_t>(widest, static_cast<int64_t>(rows[i].size()));
  }
  const int64_t n = static_cast<int64_t>(vals.size());
  expect_tensor<int64_t>(r.indices, {n, 2}, ind);
  expect_tensor<std::string>(r.values, {n}, vals);
  expect_tensor<int64_t>(r.dense_shape, {2}, {static_cast<int64_t>(rows.size()), widest});
}

TEST(StringSplitV2, AgainstPythonsSplit) {
  const Strs in = {"hello world", "a,b,,c", "  lead and trail  ", "",  "   ",
                   "1<>2<>3",     "no-sep", "\tx\ny  z ",         "a "};
  for (const std::string sep : {"", ",", "<>", " ", "-"})
    for (int64_t maxsplit : {-1, 0, 1, 2}) {
      SCOPED_TRACE(str_cat("sep '", sep, "' maxsplit ", maxsplit));
      std::vector<std::vector<std::string>> rows;
      for (const auto& s : in) rows.push_back(split_ref(s, sep, maxsplit));
      expect_split(string_split(strs(in), sep, maxsplit), rows);
    }
  // TensorFlow's documented example.
  expect_split(string_split(strs({"hello world", "a b c"}), ""),
               {{"hello", "world"}, {"a", "b", "c"}});
  expect_split(string_split(strs({"1<>2<>3", "4<>5"}), "<>"), {{"1", "2", "3"}, {"4", "5"}});
  expect_split(string_split(strs({}), ","), {});
  expect_split(string_split(strs({"", "a b"}), ""), {{}, {"a", "b"}});
}

TEST(StringSplitV2, InferenceAndErrors) {
  const auto specs = infer(OpId::StringSplitV2, {sym(DType::kString, {-1}), Tensor(",")}, {-1});
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].shape, Shape({-1, 2}));
  EXPECT_EQ(specs[1].shape, Shape({-1}));
  EXPECT_EQ(specs[2].shape, Shape({2}));
  EXPECT_EQ(infer(OpId::StringSplitV2, {strs({"a,b", "c"}), Tensor(",")}, {-1})[1].shape,
            Shape({3}));
  expect_error([] { string_split(Tensor("a b")); }, Code::kInvalidArgument,
               {"StringSplitV2", "input must be a vector, got shape []"});
  expect_error([] { string_split(strs({"a"}), Tensor({","})); }, Code::kInvalidArgument,
               {"sep must be a scalar"});
}

TEST(StringCharSplit, BytesAndUtf8CharactersWithReplacement) {
  expect_split(string_char_split(strs({"ab", "", "\xc3\xa9"})), {{"a", "b"}, {}, {"\xc3", "\xa9"}});
  const std::string fffd = "\xEF\xBF\xBD";
  expect_split(string_char_split(strs({"h\xc3\xa9\xf0\x9f\x98\x80",
                                       "a\x80"
                                       "b",
                                       "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80",
                                       "\xe2\x82"
                                       "a"}),
                                 "UTF8_CHAR"),
               {{"h", "\xc3\xa9", "\xf0\x9f\x98\x80"},
                {"a", fffd, "b"},
                {fffd},  // a truncated sequence is one maximal subpart
                {fffd, fffd},
                {fffd, fffd, fffd},
                {fffd, "a"}});
  for (const auto& s : kHostile) {  // every byte is accounted for
    const auto r = string_char_split(strs({s}));
    EXPECT_EQ(r.values.num_elements(), static_cast<int64_t>(s.size()));
    string_char_split(strs({s}), "UTF8_CHAR");
  }
}

// ---- StringFormat ----

TEST(StringFormat, TensorsPrintedAsTensorFlow) {
  expect_tensor<std::string>(string_format("x: {}", {Tensor({1, 2, 3})}), {}, {"x: [1 2 3]"});
  expect_tensor<std::string>(
      string_format("{} and {}", {Tensor({{1.5f, 2.f}, {3.f, 4.f}}), Tensor(true)}), {},
      {"[[1.5 2]\n [3 4]] and 1"});
  expect_tensor<std::string>(string_format("{}", {strs({"a", "it's", "q\"\n"})}), {},
                             {"[\"a\" \"it\\'s\" \"q\\\"\\n\"]"});
  expect_tensor<std::string>(string_format("s={}", {Tensor("hi")}), {}, {"s=\"hi\""});
  expect_tensor<std::string>(string_format("{}", {Tensor({0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}), {},
                             {"[0 1 2 ... 7 8 9]"});
  expect_tensor<std::string>(string_format("{}", {Tensor({0, 1, 2, 3, 4, 5})}, "{}", 1), {},
                             {"[0 ... 5]"});
  expect_tensor<std::string>(string_format("{}", {Tensor({0, 1, 2, 3, 4, 5, 6, 7})}, "{}", -1), {},
                             {"[0 1 2 3 4 5 6 7]"});
  expect_tensor<std::string>(string_format("<>: %s", {Tensor(7)}, "%s"), {}, {"<>: 7"});
  expect_tensor<std::string>(string_format("no placeholders", {}), {}, {"no placeholders"});
  expect_error([] { string_format("{} {}", {Tensor(1)}); }, Code::kInvalidArgument,
               {"StringFormat", "num placeholders in template and num inputs must match: 2 vs. 1"});
  expect_error([] { string_format("{}", {Tensor(1)}, ""); }, Code::kInvalidArgument,
               {"placeholder must not be empty"});
}

// ---- traced ----

TEST(StringsTraced, SplitJoinAndParseWithValuesFedAtCallTime) {
  FunctionOptions opts;
  opts.input_signature = std::vector<ArgSpec>{ArgSpec{DType::kString, Shape{-1}, "lines"},
                                              ArgSpec{DType::kString, Shape{}, "pattern"}};
  Function fn(
      [](const std::vector<Value>& a) {
        const Tensor lines = a[0].tensor();
        const StringSplitResult parts = string_split(string_strip(lines), ",");
        const Tensor nums = string_to_number(parts.values, DType::kInt32);
        const Tensor upper = string_upper(regex_replace(lines, a[1].tensor(), Tensor("_")));
        const Tensor joined = reduce_join(string_join({upper, Tensor("!")}, ""));
        const Tensor text = string_format("{} / {}", {nums, string_length(lines)});
        return Value::tuple({Value(nums), Value(parts.dense_shape), Value(joined), Value(text)});
      },
      opts);
  const Value r = fn({strs({" 1,2 ", "30", "4,5,6"}), Tensor("[0-9]")});
  expect_tensor<int32_t>(r.items()[0].tensor(), {6}, {1, 2, 30, 4, 5, 6});
  expect_tensor<int64_t>(r.items()[1].tensor(), {2}, {3, 3});
  expect_tensor<std::string>(r.items()[2].tensor(), {}, {" _,_ !__!_,_,_!"});
  expect_tensor<std::string>(r.items()[3].tensor(), {}, {"[1 2 30 4 5 6] / [5 2 5]"});
  // A second call with other sizes reuses the trace.
  const Value r2 = fn({strs({"7"}), Tensor("x")});
  expect_tensor<int32_t>(r2.items()[0].tensor(), {1}, {7});
  // Value-dependent errors surface at call time, naming the node.
  expect_error(
      [&] {
        fn({strs({"1,x"}), Tensor("a")});
      },
      Code::kInvalidArgument, {"could not correctly convert string: x"});
  expect_error(
      [&] {
        fn({strs({"1"}), Tensor("(")});
      },
      Code::kInvalidArgument, {"Invalid pattern"});
}

TEST(StringsTraced, ConstantInputsFoldAndEveryOpHasNoGradient) {
  Function fn([](const std::vector<Value>&) {
    return Value(string_join({as_string(Tensor({1, 2})), Tensor("x")}, "-"));
  });
  expect_tensor<std::string>(fn({}).tensor(), {2}, {"1-x", "2-x"});
  for (OpId id :
       {OpId::StringLength, OpId::StringJoin, OpId::ReduceJoin, OpId::StringLower,
        OpId::StringUpper, OpId::StringStrip, OpId::Substr, OpId::AsString, OpId::StringToNumber,
        OpId::RegexReplace, OpId::RegexFullMatch, OpId::StringSplitV2, OpId::StringFormat,
        OpId::UnsortedSegmentJoin, OpId::StringCharSplit})
    EXPECT_TRUE(op_def(id).has(kNoGradient)) << op_def(id).type_name;
}

}  // namespace
}  // namespace kiln
