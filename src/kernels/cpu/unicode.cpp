// CPU kernels of the Unicode ops (src/ops/unicode_ops.cpp). UTF-8 is read by
// the string kernels' one decoder (strings::utf8_decode: one U+FFFD per
// maximal ill-formed subsequence, as ICU); other encodings by ICU's
// converters (Reader below). Every byte sequence is handled; decoded outputs are sized from the
// data (a character takes at least one byte, so they never outgrow the input).
#include <unicode/ucnv.h>
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

// The characters of one string at a time: UTF-8 by the string kernels' decoder,
// every other encoding by an ICU converter (what TensorFlow reads with), which
// delimits ill-formed sequences as ICU does and handles byte-order marks.
class Reader {
 public:
  Reader(const OpCall& c, const std::string& encoding) {
    if (encoding == "UTF-8") return;
    UErrorCode err = U_ZERO_ERROR;
    conv_ = ucnv_open(encoding.c_str(), &err);
    if (U_SUCCESS(err))
      ucnv_setToUCallBack(conv_, UCNV_TO_U_CALLBACK_STOP, nullptr, nullptr, nullptr, &err);
    if (U_FAILURE(err)) {
      if (conv_) ucnv_close(conv_);
      c.fail("Could not create converter for input encoding: ", encoding);
    }
  }
  ~Reader() {
    if (conv_) ucnv_close(conv_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  /// Starts a new string (a converter forgets its byte-order mark and state).
  void start() {
    if (conv_) ucnv_resetToUnicode(conv_);
  }
  /// The bytes at i < s.size() taken by the next step (at least 1): a
  /// character (valid, cp), an ill-formed sequence, or, when `none`, bytes
  /// that hold no character (a byte-order mark at the end).
  size_t next(std::string_view s, size_t i, bool& valid, bool& none, char32_t& cp) {
    none = false;
    if (!conv_) return strings::utf8_decode(s, i, valid, cp);
    const char* at = s.data() + i;
    UErrorCode err = U_ZERO_ERROR;
    const UChar32 u = ucnv_getNextUChar(conv_, &at, s.data() + s.size(), &err);
    const auto n = static_cast<size_t>(at - (s.data() + i));
    none = err == U_INDEX_OUTOFBOUNDS_ERROR;
    valid = U_SUCCESS(err);
    cp = static_cast<char32_t>(u);
    return n > 0 ? n : s.size() - i;  // never stuck: an error that took nothing ends the string
  }

 private:
  UConverter* conv_ = nullptr;
};

// Calls emit(code_point, byte_start) for each character of `s`, ill-formed
// ones per o.errors; control characters, when asked, become o.replacement
// (dropped with errors="ignore").
template <typename F>
void decode(const OpCall& c, Reader& r, const unicode::Options& o, std::string_view s, F&& emit) {
  bool valid, none;
  char32_t cp = 0;
  r.start();
  for (size_t i = 0, n; i < s.size(); i += n) {
    n = r.next(s, i, valid, none, cp);
    if (none) continue;
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
  Reader r(c, unicode::input_encoding(c));
  const unicode::Options o = unicode::options(c);
  const Tensor& in = c.input(0);
  const std::string* s = in.data<std::string>();
  std::vector<int64_t> splits{0}, starts;
  std::vector<int32_t> chars;
  for (int64_t i = 0, n = in.num_elements(); i < n; ++i) {
    decode(c, r, o, s[i], [&](char32_t cp, size_t at) {
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
  Reader from(c, unicode::input_encoding(c));
  const Encoding to = unicode::output_encoding(c);
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
