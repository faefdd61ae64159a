// String ops (tf.strings): definitions, inference, front functions and the
// helpers the kernels share (string_util.h). Kernels: src/kernels/cpu/strings.cpp.
// Ops whose output size depends on the values (StringSplitV2, _StringCharSplit)
// count it here when the input's value is known, as Where does; a traced graph
// then has an unknown count that the executor infers at run time.
#include <re2/re2.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/format.h"
#include "families.h"
#include "front_util.h"
#include "kiln/context.h"
#include "kiln/ops.h"
#include "kiln/ops/strings.h"
#include "string_util.h"

namespace kiln {
namespace strings {

std::string escape_for_message(std::string_view s, size_t max) {
  std::string out;
  detail::append_escaped(out, s.substr(0, max), '\'');
  if (s.size() > max) out += "...";
  return out;
}

std::string quote_for_message(std::string_view s) {
  return "b'" + escape_for_message(s, 80) + "'";
}

std::shared_ptr<const re2::RE2> compile_regex(const OpCall& c, const std::string& pattern) {
  // Patterns repeat (one per op call of a traced function): compiling costs far
  // more than a lookup. The cache is cleared when full; long patterns are not kept.
  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, std::shared_ptr<const re2::RE2>>;
  constexpr size_t kMaxEntries = 256, kMaxPatternBytes = 4096;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find(pattern);
    if (it != cache->end()) return it->second;
  }
  re2::RE2::Options opts;
  opts.set_log_errors(false);
  auto re = std::make_shared<const re2::RE2>(pattern, opts);
  if (!re->ok())
    c.fail("Invalid pattern: ", quote_for_message(pattern),
           ", error: ", escape_for_message(re->error(), 200));
  if (pattern.size() <= kMaxPatternBytes) {
    std::lock_guard<std::mutex> lock(mu);
    if (cache->size() >= kMaxEntries) cache->clear();
    cache->emplace(pattern, re);
  }
  return re;
}

void check_rewrite(const OpCall& c, const re2::RE2& re, const std::string& rewrite) {
  std::string error;
  if (!re.CheckRewriteString(rewrite, &error))
    c.fail("Invalid rewrite pattern: ", quote_for_message(rewrite),
           ", error: ", escape_for_message(error, 200));
}

std::vector<std::string> split_template(std::string_view tmpl, std::string_view placeholder) {
  std::vector<std::string> pieces;
  size_t start = 0;
  for (size_t p; (p = tmpl.find(placeholder, start)) != std::string_view::npos;) {
    pieces.emplace_back(tmpl.substr(start, p - start));
    start = p + placeholder.size();
  }
  pieces.emplace_back(tmpl.substr(start));
  return pieces;
}

bool unit_is_utf8(const OpCall& c) {
  const std::string& u = c.attr_string("unit");
  if (u == "BYTE") return false;
  if (u == "UTF8_CHAR") return true;
  c.fail("unit must be \"BYTE\" or \"UTF8_CHAR\", got '", escape_for_message(u, 40), "'");
}

void split_v2(std::string_view text, std::string_view sep, int64_t maxsplit,
              std::vector<std::string_view>& out) {
  out.clear();
  if (maxsplit == 0) {
    out.push_back(text);
    return;
  }
  int64_t splits = 0;
  if (sep.empty()) {
    size_t i = 0;
    auto skip_space = [&] {
      while (i < text.size() && is_ascii_space(text[i])) ++i;
    };
    skip_space();
    while (i < text.size()) {
      const size_t start = i;
      while (i < text.size() && !is_ascii_space(text[i])) ++i;
      out.push_back(text.substr(start, i - start));
      skip_space();
      if (maxsplit > 0 && ++splits == maxsplit) {
        out.push_back(text.substr(i));  // TensorFlow keeps the rest, even when empty
        return;
      }
    }
    return;
  }
  size_t start = 0;
  for (size_t p; (p = text.find(sep, start)) != std::string_view::npos;) {
    out.push_back(text.substr(start, p - start));
    start = p + sep.size();
    if (maxsplit > 0 && ++splits == maxsplit) break;
  }
  out.push_back(text.substr(start));
}

size_t utf8_next(std::string_view s, size_t i, bool& valid) {
  char32_t code_point;
  return utf8_decode(s, i, valid, code_point);
}

size_t utf8_decode(std::string_view s, size_t i, bool& valid, char32_t& code_point) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = at(i);
  code_point = b;
  valid = b < 0x80;
  if (valid) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;  // no overlong forms
    if (b == 0xED) hi = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 1;  // a continuation byte or a byte no character starts with
  }
  size_t k = 1;
  if (i + 1 < s.size() && at(i + 1) >= lo && at(i + 1) <= hi) {
    k = 2;
    while (k < n && i + k < s.size() && is_trail_byte(at(i + k))) ++k;
  }
  valid = k == n;
  if (valid) {
    code_point = b & (0x7F >> n);  // the lead byte's payload bits
    for (size_t j = 1; j < n; ++j) code_point = (code_point << 6) | (at(i + j) & 0x3F);
  }
  return k;
}

}  // namespace strings

namespace {
using strings::quote_for_message;

void expect_string(const InferContext& c, size_t i) {
  if (c.dtype(i) != DType::kString)
    c.fail(c.input_name(i), " must be a string tensor, got ", dtype_name(c.dtype(i)));
}

void expect_scalar(const InferContext& c, size_t i) {
  const Shape& s = c.shape(i);
  if (s.rank_known() && s.rank() != 0)
    c.fail(c.input_name(i), " must be a scalar, got shape ", s.debug_string());
}

void expect_vector(const InferContext& c, size_t i) {
  const Shape& s = c.shape(i);
  if (s.rank_known() && s.rank() != 1)
    c.fail(c.input_name(i), " must be a vector, got shape ", s.debug_string());
}

void expect_int(const InferContext& c, size_t i) {
  if (c.dtype(i) != DType::kInt32 && c.dtype(i) != DType::kInt64)
    c.fail(c.input_name(i), " must be int32 or int64, got ", dtype_name(c.dtype(i)));
}

// Same rank and no two known dims that differ; unknown dims take the other's.
bool merge_shapes(const Shape& a, const Shape& b, Shape& out) {
  if (!a.rank_known()) return out = b, true;
  if (!b.rank_known()) return out = a, true;
  if (a.rank() != b.rank()) return false;
  out = a;
  for (int64_t d = 0; d < a.rank(); ++d) {
    if (a.dim(d) >= 0 && b.dim(d) >= 0 && a.dim(d) != b.dim(d)) return false;
    if (a.dim(d) < 0) out.set_dim(d, b.dim(d));
  }
  return true;
}

// An elementwise string -> string op.
void infer_string_map(InferContext& c) {
  expect_string(c, 0);
  c.set_output(0, DType::kString, c.shape(0));
}

void infer_length(InferContext& c) {
  expect_string(c, 0);
  strings::unit_is_utf8(c);
  c.set_output(0, DType::kInt32, c.shape(0));
}

// inputs: input (strings); attrs: num_buckets (>= 1), key (Strong: two ints).
void infer_hash_bucket(InferContext& c) {
  expect_string(c, 0);
  if (c.attr_int("num_buckets") < 1)
    c.fail("num_buckets must be >= 1, got ", c.attr_int("num_buckets"));
  if (c.op().attr_index("key") >= 0 && c.attr_ints("key").size() != 2)
    c.fail("key must be a list of two integers, got ", c.attr_ints("key").size());
  c.set_output(0, DType::kInt64, c.shape(0));
}

// ReadFile: a scalar filename -> the file's bytes; WriteFile: (filename,
// contents) scalars, no outputs.
void infer_read_file(InferContext& c) {
  expect_string(c, 0);
  if (c.shape(0).rank_known() && c.shape(0).rank() != 0)
    c.fail("filename must be a scalar, got shape ", c.shape(0).to_string());
  c.set_output(0, DType::kString, Shape{});
}
void infer_write_file(InferContext& c) {
  for (int i = 0; i < 2; ++i) {
    expect_string(c, i);
    if (c.shape(i).rank_known() && c.shape(i).rank() != 0)
      c.fail(i ? "contents" : "filename", " must be a scalar, got shape ", c.shape(i).to_string());
  }
}

void infer_case(InferContext& c) {
  const std::string& enc = c.attr_string("encoding");
  if (!enc.empty() && enc != "utf-8")
    c.fail("only utf-8 or '' (no encoding) is supported, received ", quote_for_message(enc));
  infer_string_map(c);
}

// Non-scalars must agree; all scalars (known rank 0) give a scalar. Inputs of
// unknown rank may be scalars, so they do not fix the shape.
void infer_join(InferContext& c) {
  bool all_scalar = true;
  Shape out = Shape::unknown_rank();
  size_t first = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    expect_string(c, i);
    const Shape& s = c.shape(i);
    if (!s.rank_known() || s.rank() != 0) all_scalar = false;
    if (!s.rank_known() || s.rank() == 0) continue;
    if (!out.rank_known()) first = i;
    if (!merge_shapes(out, s, out))
      c.fail("Input shapes do not match: ", c.input_name(first), " has shape ",
             c.shape(first).debug_string(), " but ", c.input_name(i), " has shape ",
             s.debug_string(), " (inputs must be scalars or all have the same shape)");
  }
  c.set_output(0, DType::kString, all_scalar ? Shape{} : out);
}

void infer_reduce_join(InferContext& c) {
  expect_string(c, 0);
  expect_int(c, 1);
  const Shape& in = c.shape(0);
  const bool keep = c.attr_bool("keep_dims");
  std::vector<int64_t> axes;
  const bool known = c.int_values(1, axes);
  if (!in.rank_known()) return c.set_output(0, DType::kString, Shape::unknown_rank());
  const int64_t r = in.rank();
  if (!known) {
    // Which axes is unknown; how many is known when reduction_indices' shape is.
    const int64_t n = c.shape(1).num_elements_or_unknown();
    if (n > r) c.fail("reduction_indices has ", n, " entries for an input of rank ", r);
    if (!keep && n < 0) return c.set_output(0, DType::kString, Shape::unknown_rank());
    Shape out;
    for (int64_t d = 0; d < (keep ? r : r - n); ++d) out.push_back(Shape::kUnknownDim);
    return c.set_output(0, DType::kString, std::move(out));
  }
  std::vector<bool> reduced(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    if (a < -r || a >= r)
      c.fail("Invalid reduction dimension ", a, " for input with ", r, " dimension(s)");
    const size_t t = static_cast<size_t>(a < 0 ? a + r : a);
    if (reduced[t]) c.fail("Duplicate reduction dimension ", a);
    reduced[t] = true;
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d) {
    if (!reduced[static_cast<size_t>(d)])
      out.push_back(in.dim(d));
    else if (keep)
      out.push_back(1);
  }
  c.set_output(0, DType::kString, std::move(out));
}

void infer_substr(InferContext& c) {
  expect_string(c, 0);
  expect_int(c, 1);
  expect_int(c, 2);
  if (c.dtype(1) != c.dtype(2))
    c.fail("pos and len must have the same dtype, got ", dtype_name(c.dtype(1)), " and ",
           dtype_name(c.dtype(2)));
  strings::unit_is_utf8(c);
  Shape pos;
  if (!merge_shapes(c.shape(1), c.shape(2), pos))
    c.fail("pos and len shapes must match: ", c.shape(1).debug_string(), " vs. ",
           c.shape(2).debug_string());
  c.set_output(0, DType::kString, broadcast_shapes(c.shape(0), pos, c.op().type_name));
}

void infer_as_string(InferContext& c) {
  const DType dt = c.dtype(0);
  if (dt != DType::kBool && dt != DType::kString && !is_numeric(dt) && !is_complex(dt))
    c.fail("input must be numeric, complex, bool or string, got ", dtype_name(dt));
  const bool scientific = c.attr_bool("scientific"), shortest = c.attr_bool("shortest");
  const int64_t precision = c.attr_int("precision"), width = c.attr_int("width");
  const std::string& fill = c.attr_string("fill");
  if (!is_floating(dt) && !is_complex(dt) && dt != DType::kString) {
    if (scientific || shortest)
      c.fail("scientific and shortest format not supported for datatype ", dtype_name(dt));
    if (precision >= 0) c.fail("precision not supported for datatype ", dtype_name(dt));
  }
  if (fill.size() > 1) c.fail("Fill string must be one or fewer characters");
  if (scientific && shortest) c.fail("Cannot select both scientific and shortest notation");
  if (!fill.empty() && std::string_view(" +-0#").find(fill[0]) == std::string_view::npos)
    c.fail("Fill argument not supported: ", quote_for_message(fill));
  if (width > INT_MAX) c.fail("width must be at most ", INT_MAX, ", got ", width);
  if (precision > INT_MAX) c.fail("precision must be at most ", INT_MAX, ", got ", precision);
  c.set_output(0, DType::kString, c.shape(0));
}

void infer_to_number(InferContext& c) {
  expect_string(c, 0);
  const DType out = c.attr_dtype("out_type");
  if (out != DType::kFloat32 && out != DType::kFloat64 && out != DType::kInt32 &&
      out != DType::kInt64)
    c.fail("out_type must be float32, float64, int32 or int64, got ", dtype_name(out));
  c.set_output(0, out, c.shape(0));
}

// The pattern (input 1) compiled when its value is known while inferring.
std::shared_ptr<const re2::RE2> known_regex(const InferContext& c) {
  for (size_t i = 0; i < c.num_inputs(); ++i) expect_string(c, i);
  for (size_t i = 1; i < c.num_inputs(); ++i) expect_scalar(c, i);
  const Tensor* p = c.value(1);
  return p ? strings::compile_regex(c, p->data<std::string>()[0]) : nullptr;
}

void infer_regex_replace(InferContext& c) {
  const auto re = known_regex(c);
  const Tensor* rewrite = c.value(2);
  if (re && rewrite) strings::check_rewrite(c, *re, rewrite->data<std::string>()[0]);
  c.set_output(0, DType::kString, c.shape(0));
}

void infer_regex_full_match(InferContext& c) {
  known_regex(c);
  c.set_output(0, DType::kBool, c.shape(0));
}

void set_split_outputs(InferContext& c, int64_t n) {
  c.set_output(0, DType::kInt64, Shape{n, 2});
  c.set_output(1, DType::kString, Shape{n});
  c.set_output(2, DType::kInt64, Shape{2});
}

void infer_split_v2(InferContext& c) {
  expect_string(c, 0);
  expect_string(c, 1);
  expect_vector(c, 0);
  expect_scalar(c, 1);
  const Tensor* in = c.value(0);
  const Tensor* sep = c.value(1);
  int64_t n = Shape::kUnknownDim;
  if (in && sep) {
    const std::string* s = in->data<std::string>();
    const std::string& sp = sep->data<std::string>()[0];
    std::vector<std::string_view> parts;
    n = 0;
    for (int64_t i = 0, e = in->num_elements(); i < e; ++i) {
      strings::split_v2(s[i], sp, c.attr_int("maxsplit"), parts);
      n += static_cast<int64_t>(parts.size());
    }
  }
  set_split_outputs(c, n);
}

void infer_char_split(InferContext& c) {
  expect_string(c, 0);
  expect_vector(c, 0);
  const bool utf8 = strings::unit_is_utf8(c);
  int64_t n = Shape::kUnknownDim;
  if (const Tensor* in = c.value(0)) {
    const std::string* s = in->data<std::string>();
    n = 0;
    for (int64_t i = 0, e = in->num_elements(); i < e; ++i) {
      if (!utf8) {
        n += static_cast<int64_t>(s[i].size());
        continue;
      }
      bool valid;
      for (size_t k = 0; k < s[i].size(); ++n) k += strings::utf8_next(s[i], k, valid);
    }
  }
  set_split_outputs(c, n);
}

void infer_format(InferContext& c) {
  const std::string& placeholder = c.attr_string("placeholder");
  if (placeholder.empty()) c.fail("placeholder must not be empty");
  const size_t n = strings::split_template(c.attr_string("template"), placeholder).size() - 1;
  if (n != c.num_inputs())
    c.fail("num placeholders in template and num inputs must match: ", n, " vs. ", c.num_inputs());
  c.set_output(0, DType::kString, Shape{});
}

// (inputs, segment_ids, num_segments) -> [num_segments] + inputs.shape[ids.rank:].
void infer_segment_join(InferContext& c) {
  expect_string(c, 0);
  expect_int(c, 1);
  expect_int(c, 2);
  expect_scalar(c, 2);
  const Shape &in = c.shape(0), &ids = c.shape(1);
  std::vector<int64_t> v;
  const int64_t num = c.int_values(2, v) ? v.at(0) : Shape::kUnknownDim;
  if (c.value(2) && num < 0) c.fail("num_segments must be non-negative, got ", num);
  if (!in.rank_known() || !ids.rank_known())
    return c.set_output(0, DType::kString, Shape::unknown_rank());
  if (ids.rank() > in.rank())
    c.fail("segment_ids (shape ", ids.debug_string(), ") must be a prefix of inputs' shape ",
           in.debug_string());
  for (int64_t d = 0; d < ids.rank(); ++d)
    if (ids.dim(d) >= 0 && in.dim(d) >= 0 && ids.dim(d) != in.dim(d))
      c.fail("segment_ids (shape ", ids.debug_string(), ") must be a prefix of inputs' shape ",
             in.debug_string());
  Shape out{num};
  for (int64_t d = ids.rank(); d < in.rank(); ++d) out.push_back(in.dim(d));
  c.set_output(0, DType::kString, std::move(out));
}

StringSplitResult as_split_result(std::vector<Tensor> r) {
  return {std::move(r.at(0)), std::move(r.at(1)), std::move(r.at(2))};
}

}  // namespace

void define_string_ops(OpTableBuilder& t) {
  t.def(OpId::StringLength)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("unit", AttrType::kString, std::string("BYTE"))
      .traits(kNoGradient)
      .infer(infer_length);
  t.def(OpId::StringJoin)
      .tf()
      .inputs({"inputs"})
      .outputs({"output"})
      .attr("separator", AttrType::kString, std::string())
      .traits(kNoGradient | kVariadicInput)
      .infer(infer_join);
  t.def(OpId::ReduceJoin)
      .tf()
      .inputs({"inputs", "reduction_indices"})
      .outputs({"output"})
      .attr("keep_dims", AttrType::kBool, false)
      .attr("separator", AttrType::kString, std::string())
      .traits(kNoGradient)
      .infer(infer_reduce_join);
  for (OpId id : {OpId::StringLower, OpId::StringUpper})
    t.def(id)
        .tf()
        .inputs({"input"})
        .outputs({"output"})
        .attr("encoding", AttrType::kString, std::string())
        .traits(kNoGradient)
        .infer(infer_case);
  t.def(OpId::StringStrip)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .traits(kNoGradient)
      .infer(infer_string_map);
  t.def(OpId::Substr)
      .tf()
      .inputs({"input", "pos", "len"})
      .outputs({"output"})
      .attr("unit", AttrType::kString, std::string("BYTE"))
      .traits(kNoGradient)
      .infer(infer_substr);
  t.def(OpId::AsString)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("precision", AttrType::kInt, int64_t{-1})
      .attr("scientific", AttrType::kBool, false)
      .attr("shortest", AttrType::kBool, false)
      .attr("width", AttrType::kInt, int64_t{-1})
      .attr("fill", AttrType::kString, std::string())
      .traits(kNoGradient)
      .infer(infer_as_string);
  t.def(OpId::StringToNumber)
      .tf()
      .inputs({"string_tensor"})
      .outputs({"output"})
      .attr("out_type", AttrType::kDType, DType::kFloat32)
      .traits(kNoGradient)
      .infer(infer_to_number);
  t.def(OpId::RegexReplace)
      .tf()
      .inputs({"input", "pattern", "rewrite"})
      .outputs({"output"})
      .attr("replace_global", AttrType::kBool, true)
      .traits(kNoGradient)
      .infer(infer_regex_replace);
  t.def(OpId::RegexFullMatch)
      .tf()
      .inputs({"input", "pattern"})
      .outputs({"output"})
      .traits(kNoGradient)
      .infer(infer_regex_full_match);
  t.def(OpId::StringSplitV2)
      .tf()
      .inputs({"input", "sep"})
      .outputs({"indices", "values", "shape"})
      .attr("maxsplit", AttrType::kInt, int64_t{-1})
      .traits(kNoGradient)
      .infer(infer_split_v2);
  t.def(OpId::StringFormat)
      .tf()
      .inputs({"inputs"})
      .outputs({"output"})
      .attr("template", AttrType::kString, std::string("%s"))
      .attr("placeholder", AttrType::kString, std::string("%s"))
      .attr("summarize", AttrType::kInt, int64_t{3})
      .traits(kNoGradient | kVariadicInput)
      .infer(infer_format);
  t.def(OpId::UnsortedSegmentJoin)
      .tf()
      .inputs({"inputs", "segment_ids", "num_segments"})
      .outputs({"output"})
      .attr("separator", AttrType::kString, std::string())
      .traits(kNoGradient)
      .infer(infer_segment_join);
  t.def(OpId::StringToHashBucketFast)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("num_buckets", AttrType::kInt)
      .traits(kNoGradient)
      .infer(infer_hash_bucket);
  t.def(OpId::StringToHashBucketStrong)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .attr("num_buckets", AttrType::kInt)
      .attr("key", AttrType::kInts)
      .traits(kNoGradient)
      .infer(infer_hash_bucket);
  // Files are read and written when the step runs (never folded or merged).
  t.def(OpId::ReadFile)
      .tf()
      .inputs({"filename"})
      .outputs({"contents"})
      .traits(kNoGradient | kStateful)
      .infer(infer_read_file);
  t.def(OpId::WriteFile)
      .tf()
      .inputs({"filename", "contents"})
      .traits(kNoGradient | kStateful)
      .infer(infer_write_file);
  t.def(OpId::StringCharSplit)
      .inputs({"input"})
      .outputs({"indices", "values", "shape"})
      .attr("unit", AttrType::kString, std::string("BYTE"))
      .traits(kNoGradient)
      .infer(infer_char_split);
  // Strings never run in jit_compile=True functions (as with XLA).
  for (auto i = static_cast<size_t>(OpId::StringLength);
       i <= static_cast<size_t>(OpId::StringCharSplit); ++i)
    t.def(static_cast<OpId>(i)).traits(kNoJit);
}

// ---- fronts ----

Tensor string_length(const Tensor& input, const std::string& unit) {
  return call_op1(OpId::StringLength, {input}, {unit});
}

Tensor string_to_hash_bucket_fast(const Tensor& input, int64_t num_buckets) {
  return call_op1(OpId::StringToHashBucketFast, {input}, {num_buckets});
}

Tensor string_to_hash_bucket_strong(const Tensor& input, int64_t num_buckets,
                                    const std::vector<int64_t>& key) {
  return call_op1(OpId::StringToHashBucketStrong, {input}, {num_buckets, key});
}

Tensor read_file(const Tensor& filename) {
  return call_op1(OpId::ReadFile, {filename});
}

void write_file(const Tensor& filename, const Tensor& contents) {
  const Tensor in[] = {filename, contents};
  call_op(OpId::WriteFile, in);
}

Tensor string_join(const std::vector<Tensor>& inputs, const std::string& separator) {
  return call_op1(OpId::StringJoin, std::span<const Tensor>(inputs), {separator});
}

Tensor reduce_join(const Tensor& inputs, const Tensor& reduction_indices, bool keep_dims,
                   const std::string& separator) {
  return call_op1(OpId::ReduceJoin, {inputs, reduction_indices}, {keep_dims, separator});
}

Tensor reduce_join(const Tensor& inputs, std::optional<std::vector<int64_t>> axis, bool keep_dims,
                   const std::string& separator) {
  if (axis) return reduce_join(inputs, int64_vector(*axis), keep_dims, separator);
  // Every axis, last first: the kernel's first-listed-fastest order then joins
  // in row-major order (tf.strings.reduce_join with axis=None).
  Tensor all;
  if (inputs.shape().rank_known()) {
    std::vector<int64_t> v;
    for (int64_t d = inputs.shape().rank() - 1; d >= 0; --d) v.push_back(d);
    all = int64_vector(v);
  } else {
    all = range(rank(inputs) - 1, Tensor(-1), Tensor(-1));
  }
  return reduce_join(inputs, all, keep_dims, separator);
}

Tensor string_lower(const Tensor& input, const std::string& encoding) {
  return call_op1(OpId::StringLower, {input}, {encoding});
}

Tensor string_upper(const Tensor& input, const std::string& encoding) {
  return call_op1(OpId::StringUpper, {input}, {encoding});
}

Tensor string_strip(const Tensor& input) {
  return call_op1(OpId::StringStrip, {input});
}

Tensor substr(const Tensor& input, const Tensor& pos, const Tensor& len, const std::string& unit) {
  return call_op1(OpId::Substr, {input, pos, len}, {unit});
}

Tensor substr(const Tensor& input, int64_t pos, int64_t len, const std::string& unit) {
  const bool small = pos >= INT32_MIN && pos <= INT32_MAX && len >= INT32_MIN && len <= INT32_MAX;
  if (small)
    return substr(input, Tensor(static_cast<int32_t>(pos)), Tensor(static_cast<int32_t>(len)),
                  unit);
  return substr(input, Tensor(pos), Tensor(len), unit);
}

Tensor as_string(const Tensor& input, int64_t precision, bool scientific, bool shortest,
                 int64_t width, const std::string& fill) {
  return call_op1(OpId::AsString, {input}, {precision, scientific, shortest, width, fill});
}

Tensor string_to_number(const Tensor& input, DType out_type) {
  return call_op1(OpId::StringToNumber, {input}, {out_type});
}

Tensor regex_replace(const Tensor& input, const Tensor& pattern, const Tensor& rewrite,
                     bool replace_global) {
  return call_op1(OpId::RegexReplace, {input, pattern, rewrite}, {replace_global});
}

Tensor regex_replace(const Tensor& input, const std::string& pattern, const std::string& rewrite,
                     bool replace_global) {
  return regex_replace(input, Tensor(pattern), Tensor(rewrite), replace_global);
}

Tensor regex_full_match(const Tensor& input, const Tensor& pattern) {
  return call_op1(OpId::RegexFullMatch, {input, pattern});
}

Tensor regex_full_match(const Tensor& input, const std::string& pattern) {
  return regex_full_match(input, Tensor(pattern));
}

Tensor unsorted_segment_join(const Tensor& inputs, const Tensor& segment_ids,
                             const Tensor& num_segments, const std::string& separator) {
  return call_op1(OpId::UnsortedSegmentJoin, {inputs, segment_ids, num_segments}, {separator});
}

StringSplitResult string_split(const Tensor& input, const Tensor& sep, int64_t maxsplit) {
  const Tensor args[] = {input, sep};
  return as_split_result(call_op(OpId::StringSplitV2, args, {maxsplit}));
}

StringSplitResult string_split(const Tensor& input, const std::string& sep, int64_t maxsplit) {
  return string_split(input, Tensor(sep), maxsplit);
}

StringSplitResult string_char_split(const Tensor& input, const std::string& unit) {
  const Tensor args[] = {input};
  return as_split_result(call_op(OpId::StringCharSplit, args, {unit}));
}

Tensor string_format(const std::string& template_, const std::vector<Tensor>& inputs,
                     const std::string& placeholder, int64_t summarize) {
  return call_op1(OpId::StringFormat, std::span<const Tensor>(inputs),
                  {template_, placeholder, summarize});
}

}  // namespace kiln
