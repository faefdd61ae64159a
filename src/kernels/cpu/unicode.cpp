// CPU kernels of the Unicode ops (src/ops/unicode_ops.cpp). UTF-8 is read by
// the string kernels' one decoder (strings::utf8_decode: one U+FFFD per
// maximal ill-formed subsequence); UTF-16-BE and UTF-32-BE by next_char
// below. Every byte sequence is handled; decoded outputs are sized from the
// data (a character takes at least one byte, so they never outgrow the input).
#include <unicode/uscript.h>

#include <string>
#include <string_view>
#include <vector>

#include "bind.h"
#include "ops/string_util.h"
#include "ops/unicode_util.h"

namespace kiln::cpu {
namespace {
using unicode::Encoding;
using unicode::Errors;

uint32_t be_unit(std::string_view s, size_t i, size_t bytes) {
  uint32_t u = 0;
  for (size_t k = 0; k < bytes; ++k) u = (u << 8) | static_cast<unsigned char>(s[i + k]);
  return u;
}

// UTF-16-BE: a lone or unpaired surrogate is one ill-formed unit; an odd last
// byte is ill-formed on its own, or with a high surrogate just before it.
size_t utf16_next(std::string_view s, size_t i, bool& valid, char32_t& cp) {
  const size_t left = s.size() - i;
  valid = false;
  if (left < 2) return left;
  const uint32_t u = be_unit(s, i, 2);
  if (u >= 0xDC00 && u <= 0xDFFF) return 2;
  if (u >= 0xD800 && u <= 0xDBFF) {
    if (left == 3) return 3;  // with the cut-off unit after it (ICU's truncated sequence)
    const uint32_t lo = left >= 4 ? be_unit(s, i + 2, 2) : 0;
    if (lo < 0xDC00 || lo > 0xDFFF) return 2;
    cp = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
    valid = true;
    return 4;
  }
  cp = u;
  valid = true;
  return 2;
}

// UTF-32-BE: a unit that is no scalar value, or a cut-off last unit, is ill-formed.
size_t utf32_next(std::string_view s, size_t i, bool& valid, char32_t& cp) {
  const size_t left = s.size() - i;
  valid = false;
  if (left < 4) return left;
  cp = be_unit(s, i, 4);
  valid = unicode::is_scalar_value(cp);
  return 4;
}

// The character at byte i < s.size(): its length in bytes (at least 1).
size_t next_char(Encoding e, std::string_view s, size_t i, bool& valid, char32_t& cp) {
  switch (e) {
    case Encoding::kUtf8: return strings::utf8_decode(s, i, valid, cp);
    case Encoding::kUtf16Be: return utf16_next(s, i, valid, cp);
    case Encoding::kUtf32Be: return utf32_next(s, i, valid, cp);
  }
  return 1;
}

// Calls emit(code_point, byte_start) for each character of `s`, ill-formed
// ones per o.errors; control characters, when asked, become o.replacement
// (dropped with errors="ignore").
template <typename F>
void decode(const OpCall& c, Encoding e, const unicode::Options& o, std::string_view s, F&& emit) {
  bool valid;
  char32_t cp = 0;
  for (size_t i = 0, n; i < s.size(); i += n) {
    n = next_char(e, s, i, valid, cp);
    if (!valid) {
      if (o.errors == Errors::kStrict) c.fail("Invalid formatting on input string");
      if (o.errors == Errors::kIgnore) continue;
      cp = o.replacement;
    } else if (o.replace_control && cp < 0x20) {
      if (o.errors == Errors::kIgnore) continue;  // dropped, as TensorFlow does
      cp = o.replacement;
    }
    emit(cp, i);
  }
}

void append_be(std::string& out, uint32_t u, size_t bytes) {
  for (size_t k = bytes; k-- > 0;) out.push_back(static_cast<char>((u >> (8 * k)) & 0xFF));
}

// `cp` (at most U+10FFFF; a surrogate only as a replacement_char) in encoding e.
void append(Encoding e, char32_t cp, std::string& out) {
  if (e == Encoding::kUtf32Be) return append_be(out, cp, 4);
  if (e == Encoding::kUtf16Be) {
    if (cp < 0x10000) return append_be(out, cp, 2);
    append_be(out, 0xD800 + ((cp - 0x10000) >> 10), 2);
    return append_be(out, 0xDC00 + ((cp - 0x10000) & 0x3FF), 2);
  }
  if (cp < 0x80) return out.push_back(static_cast<char>(cp));
  const size_t n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  static constexpr unsigned char kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  out.push_back(static_cast<char>(kLead[n] | (cp >> (6 * (n - 1)))));
  for (size_t k = n - 1; k-- > 0;)
    out.push_back(static_cast<char>(0x80 | ((cp >> (6 * k)) & 0x3F)));
}

// ---- UnicodeDecode / UnicodeDecodeWithOffsets ----

template <typename T>
Tensor splits_tensor(const std::vector<int64_t>& splits) {
  std::vector<T> v(splits.begin(), splits.end());
  return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())});
}

void decode_kernel(KernelContext& c) {
  const Encoding e = unicode::input_encoding(c);
  const unicode::Options o = unicode::options(c);
  const Tensor& in = c.input(0);
  const std::string* s = in.data<std::string>();
  std::vector<int64_t> splits{0}, starts;
  std::vector<int32_t> chars;
  for (int64_t i = 0, n = in.num_elements(); i < n; ++i) {
    decode(c, e, o, s[i], [&](char32_t cp, size_t at) {
      chars.push_back(static_cast<int32_t>(cp));
      starts.push_back(static_cast<int64_t>(at));
    });
    splits.push_back(static_cast<int64_t>(chars.size()));
  }
  const bool wide = c.attr_dtype("Tsplits") == DType::kInt64;
  c.set_output(0, wide ? splits_tensor<int64_t>(splits) : splits_tensor<int32_t>(splits));
  const int64_t k = static_cast<int64_t>(chars.size());
  c.set_output(1, Tensor::from_vector(chars, Shape{k}));
  if (c.num_outputs() == 3) c.set_output(2, Tensor::from_vector(starts, Shape{k}));
}

// ---- UnicodeEncode ----

std::vector<int64_t> checked_splits(const KernelContext& c, int64_t num_values) {
  const Tensor& t = c.input(1);
  const int64_t n = t.num_elements();
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        t.dtype() == DType::kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
  if (v.empty())
    c.fail("Input_splits should contain elements, but given input_values has ", num_values,
           " elements");
  if (v[0] != 0) c.fail("First value in input_splits must be zero.");
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] < v[i - 1])
      c.fail("input_splits must be non-decreasing, got ", v[i], " after ", v[i - 1]);
  if (v.back() != num_values)
    c.fail("Last value in input_splits must be equal to length of input_tensor.");
  return v;
}

void encode_kernel(KernelContext& c) {
  const Encoding e = unicode::output_encoding(c);
  const unicode::Options o = unicode::options(c);
  const Tensor& values = c.input(0);
  const int32_t* v = values.data<int32_t>();
  const std::vector<int64_t> splits = checked_splits(c, values.num_elements());
  const int64_t rows = static_cast<int64_t>(splits.size()) - 1;
  Tensor out = Tensor::empty(DType::kString, Shape{rows});
  std::string* o_str = out.mutable_data<std::string>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = splits[static_cast<size_t>(r)]; k < splits[static_cast<size_t>(r) + 1]; ++k) {
      char32_t cp = static_cast<char32_t>(v[k]);
      if (!unicode::is_scalar_value(v[k])) {
        if (o.errors == Errors::kStrict)
          c.fail("Code point is out of range for Unicode, or is a surrogate.");
        if (o.errors == Errors::kIgnore) continue;
        cp = o.replacement;
      }
      append(e, cp, o_str[r]);
    }
  }
  c.set_output(0, std::move(out));
}

// ---- UnicodeTranscode ----

void transcode_kernel(KernelContext& c) {
  const Encoding from = unicode::input_encoding(c), to = unicode::output_encoding(c);
  const unicode::Options o = unicode::options(c);
  const Tensor& in = c.input(0);
  const std::string* s = in.data<std::string>();
  std::string* out = c.allocate_output(0).mutable_data<std::string>();
  for (int64_t i = 0, n = in.num_elements(); i < n; ++i) {
    std::string r;
    decode(c, from, o, s[i], [&](char32_t cp, size_t) { append(to, cp, r); });
    out[i] = std::move(r);
  }
}

// ---- UnicodeScript ----

// ICU's script code (UScriptCode) of each code point; -1 for values that are
// no code point.
void script_kernel(KernelContext& c) {
  const Tensor& in = c.input(0);
  const int32_t* x = in.data<int32_t>();
  int32_t* o = c.allocate_output(0).mutable_data<int32_t>();
  for (int64_t i = 0, n = in.num_elements(); i < n; ++i) {
    UErrorCode err = U_ZERO_ERROR;
    const int32_t s = x[i] >= 0 && x[i] <= 0x10FFFF ? uscript_getScript(x[i], &err) : -1;
    o[i] = U_FAILURE(err) ? -1 : s;
  }
}

}  // namespace

void bind_unicode_kernels(OpTableBuilder& t) {
  t.kernel(OpId::UnicodeDecode, decode_kernel);
  t.kernel(OpId::UnicodeDecodeWithOffsets, decode_kernel);
  t.kernel(OpId::UnicodeEncode, encode_kernel);
  t.kernel(OpId::UnicodeTranscode, transcode_kernel);
  t.kernel(OpId::UnicodeScript, script_kernel);
}

}  // namespace kiln::cpu
