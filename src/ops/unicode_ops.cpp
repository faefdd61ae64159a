// Unicode string ops (tf.strings.unicode_*): UnicodeDecode(WithOffsets),
// UnicodeEncode, UnicodeTranscode and UnicodeScript, with TensorFlow's names,
// attributes and error texts. Definitions, inference and the attribute
// helpers (unicode_util.h); kernels: src/kernels/cpu/unicode.cpp. Decoding
// yields as many characters as the bytes hold: the counts are unknown here
// and the kernels size their outputs.
#include <unicode/ucnv.h>

#include <string>

#include "families.h"
#include "kiln/context.h"
#include "string_util.h"
#include "unicode_util.h"

namespace kiln {
namespace unicode {

const std::string& input_encoding(const OpCall& c) {
  const std::string& e = c.attr_string("input_encoding");
  if (e == "UTF-8") return e;
  UErrorCode err = U_ZERO_ERROR;
  UConverter* conv = e.empty() ? nullptr : ucnv_open(e.c_str(), &err);
  if (conv) ucnv_close(conv);
  if (!conv || U_FAILURE(err))
    c.fail("Could not create converter for input encoding: ", strings::escape_for_message(e, 40));
  return e;
}

Encoding output_encoding(const OpCall& c) {
  const std::string& e = c.attr_string("output_encoding");
  if (e == "UTF-8") return Encoding::kUtf8;
  if (e == "UTF-16-BE") return Encoding::kUtf16Be;
  if (e == "UTF-32-BE") return Encoding::kUtf32Be;
  c.fail("Value for attr 'output_encoding' of \"", strings::escape_for_message(e, 40),
         "\" is not in the list of allowed values: \"UTF-8\", \"UTF-16-BE\", \"UTF-32-BE\"");
}

Options options(const OpCall& c) {
  Options o;
  const std::string& e = c.attr_string("errors");
  if (e == "strict") {
    o.errors = Errors::kStrict;
  } else if (e == "ignore") {
    o.errors = Errors::kIgnore;
  } else if (e != "replace") {
    c.fail("Value for attr 'errors' of \"", strings::escape_for_message(e, 40),
           "\" is not in the list of allowed values: \"strict\", \"replace\", \"ignore\"");
  }
  const int64_t r = c.attr_int("replacement_char");
  if (r < 0 || r > 0x10FFFF) c.fail("replacement_char out of unicode codepoint range");
  o.replacement = static_cast<char32_t>(r);
  if (c.op().attr_index("replace_control_characters") >= 0)
    o.replace_control = c.attr_bool("replace_control_characters");
  return o;
}

}  // namespace unicode

namespace {

void expect_string(const InferContext& c, size_t i) {
  if (c.dtype(i) != DType::kString)
    c.fail(c.input_name(i), " must be a string tensor, got ", dtype_name(c.dtype(i)));
}

DType splits_dtype(const InferContext& c) {
  const DType t = c.attr_dtype("Tsplits");
  if (t != DType::kInt32 && t != DType::kInt64)
    c.fail("Value for attr 'Tsplits' of ", dtype_name(t),
           " is not in the list of allowed values: int32, int64");
  return t;
}

// input -> row_splits [n + 1], char_values [?] (and char_to_byte_starts [?]).
void infer_decode(InferContext& c) {
  expect_string(c, 0);
  unicode::input_encoding(c);
  unicode::options(c);
  const Shape& in = c.shape(0);
  const int64_t k = in.num_elements_or_unknown();
  const int64_t n = k >= 0 ? k + 1 : Shape::kUnknownDim;
  c.set_output(0, splits_dtype(c), Shape{n});
  c.set_output(1, DType::kInt32, Shape{Shape::kUnknownDim});
  if (c.op().outputs.size() == 3) c.set_output(2, DType::kInt64, Shape{Shape::kUnknownDim});
}

// (input_values [k], input_splits [n + 1]) -> output [n].
void infer_encode(InferContext& c) {
  c.expect_dtype(0, DType::kInt32);
  if (c.dtype(1) != DType::kInt32 && c.dtype(1) != DType::kInt64)
    c.fail("input_splits must be int32 or int64, got ", dtype_name(c.dtype(1)));
  unicode::output_encoding(c);
  unicode::options(c);
  const Shape &v = c.shape(0), &s = c.shape(1);
  if ((v.rank_known() && v.rank() != 1) || (s.rank_known() && s.rank() != 1))
    c.fail("Both the input_tensor and input_splits should be of rank 1.");
  int64_t n = Shape::kUnknownDim;
  if (s.rank_known() && s.dim(0) >= 0) n = s.dim(0) > 0 ? s.dim(0) - 1 : 0;
  c.set_output(0, DType::kString, Shape{n});
}

void infer_transcode(InferContext& c) {
  expect_string(c, 0);
  unicode::input_encoding(c);
  unicode::output_encoding(c);
  unicode::options(c);
  c.set_output(0, DType::kString, c.shape(0));
}

void infer_script(InferContext& c) {
  c.expect_dtype(0, DType::kInt32);
  c.set_output(0, DType::kInt32, c.shape(0));
}

void def_decode(OpTableBuilder& t, OpId id, std::vector<const char*> outputs) {
  t.def(id)
      .tf()
      .inputs({"input"})
      .outputs(std::move(outputs))
      .attr("input_encoding", AttrType::kString)
      .attr("errors", AttrType::kString, std::string("replace"))
      .attr("replacement_char", AttrType::kInt, int64_t{0xFFFD})
      .attr("replace_control_characters", AttrType::kBool, false)
      .attr("Tsplits", AttrType::kDType, DType::kInt64)
      .traits(kNoGradient | kNoJit)
      .infer(infer_decode);
}

}  // namespace

void define_unicode_ops(OpTableBuilder& t) {
  def_decode(t, OpId::UnicodeDecode, {"row_splits", "char_values"});
  def_decode(t, OpId::UnicodeDecodeWithOffsets,
             {"row_splits", "char_values", "char_to_byte_starts"});
  t.def(OpId::UnicodeEncode)
      .tf()
      .inputs({"input_values", "input_splits"})
      .outputs({"output"})
      .attr("errors", AttrType::kString, std::string("replace"))
      .attr("output_encoding", AttrType::kString)
      .attr("replacement_char", AttrType::kInt, int64_t{0xFFFD})
      .traits(kNoGradient | kNoJit)
      .infer(infer_encode);
  t.def(OpId::UnicodeTranscode)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("input_encoding", AttrType::kString)
      .attr("output_encoding", AttrType::kString)
      .attr("errors", AttrType::kString, std::string("replace"))
      .attr("replacement_char", AttrType::kInt, int64_t{0xFFFD})
      .attr("replace_control_characters", AttrType::kBool, false)
      .traits(kNoGradient | kNoJit)
      .infer(infer_transcode);
  t.def(OpId::UnicodeScript)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .traits(kNoGradient | kNoJit)
      .infer(infer_script);
}

}  // namespace kiln
