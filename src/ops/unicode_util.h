// Internal: what the Unicode ops' inference (src/ops/unicode_ops.cpp) and
// their CPU kernels (src/kernels/cpu/unicode.cpp) share: the encodings, error
// modes and replacement options their attributes name, read and checked once.
#pragma once
#include <cstdint>
#include <string>

#include "kiln/op.h"

namespace kiln::unicode {

/// The encodings TensorFlow's Unicode ops write (they read any ICU knows).
enum class Encoding : uint8_t { kUtf8, kUtf16Be, kUtf32Be };
/// The `errors` attribute: fail, substitute `replacement`, or drop.
enum class Errors : uint8_t { kStrict, kReplace, kIgnore };

/// How ill-formed input and control characters are handled.
struct Options {
  Errors errors = Errors::kReplace;
  char32_t replacement = 0xFFFD;
  bool replace_control = false;  ///< C0 controls (U+0000..U+001F) become `replacement`
};

/// "input_encoding": UTF-8 (kiln's decoder) or any encoding ICU's converters
/// read; InvalidArgument with TensorFlow's text for a name ICU does not know.
const std::string& input_encoding(const OpCall& c);
/// "output_encoding"; InvalidArgument with TensorFlow's allowed-values text.
Encoding output_encoding(const OpCall& c);
/// "errors", "replacement_char" and (when the row has it)
/// "replace_control_characters", checked with TensorFlow's texts.
Options options(const OpCall& c);

/// True for a Unicode scalar value (not a surrogate, at most U+10FFFF).
inline bool is_scalar_value(int64_t cp) {
  return cp >= 0 && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
}

}  // namespace kiln::unicode
