// TensorFlow-style value formatting (tf.print / Tensor::SummarizeValue).
#include "format.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kiln/tensor.h"

namespace kiln {

void detail::append_escaped(std::string& out, std::string_view s, char quote) {
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
}

namespace {

// Shortest of 6/9 (float) or 15/17 (double) significant digits that
// round-trips, as TensorFlow's FloatToBuffer/DoubleToBuffer do.
std::string format_float(double v, bool single) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const int short_digits = single ? FLT_DIG : DBL_DIG;
  std::snprintf(buf, sizeof buf, "%.*g", short_digits, v);
  bool exact = single ? (std::strtof(buf, nullptr) == static_cast<float>(v))
                      : (std::strtod(buf, nullptr) == v);
  if (!exact) std::snprintf(buf, sizeof buf, "%.*g", single ? FLT_DIG + 3 : DBL_DIG + 2, v);
  return buf;
}

std::string bytes_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = (has_single && !has_double) ? '"' : '\'';
  std::string out = "b";
  out += q;
  detail::append_escaped(out, s, q);
  out += q;
  return out;
}

// NumPy's form: (1+2j), (1-2j).
std::string complex_text(const std::string& re, const std::string& im) {
  return "(" + re + (im.empty() || im[0] == '-' ? "" : "+") + im + "j)";
}

// absl::Utf8SafeCEscape in double quotes (TensorFlow's print_v2 strings).
std::string quoted_c_escape(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\'': out += "\\'"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\%03o", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string element(const Tensor& t, int64_t i, bool quote_strings) {
  switch (t.dtype()) {
    case DType::kBool: return t.data<bool>()[i] ? "1" : "0";
    case DType::kInt8: return std::to_string(t.data<int8_t>()[i]);
    case DType::kUInt8: return std::to_string(t.data<uint8_t>()[i]);
    case DType::kInt32: return std::to_string(t.data<int32_t>()[i]);
    case DType::kInt64: return std::to_string(t.data<int64_t>()[i]);
    case DType::kFloat32: return format_float(t.data<float>()[i], true);
    case DType::kFloat64: return format_float(t.data<double>()[i], false);
    case DType::kFloat16: return format_float(to_float(t.data<Half>()[i]), true);
    case DType::kBFloat16: return format_float(to_float(t.data<BFloat16>()[i]), true);
    case DType::kComplex64: {
      const auto z = t.data<std::complex<float>>()[i];
      return complex_text(format_float(z.real(), true), format_float(z.imag(), true));
    }
    case DType::kComplex128: {
      const auto z = t.data<std::complex<double>>()[i];
      return complex_text(format_float(z.real(), false), format_float(z.imag(), false));
    }
    case DType::kString:
      return quote_strings ? quoted_c_escape(t.data<std::string>()[i])
                           : bytes_repr(t.data<std::string>()[i]);
    case DType::kResource: {
      auto* r = reinterpret_cast<Resource* const*>(t.raw_data())[i];
      if (!r) return "<null resource>";
      std::string s = "<";
      s += r->debug_name();
      s += '>';
      return s;
    }
    default: return "?";
  }
}

void format_rec(const Tensor& t, int64_t dim, int64_t offset, const SmallVec<int64_t, 6>& strides,
                const PrintOptions& opts, std::string& out) {
  const int64_t summarize = opts.summarize;
  const int64_t n = t.dim(dim);
  const bool last = dim == t.rank() - 1;
  const bool cut = summarize >= 0 && n > 2 * summarize;
  auto sep = [&] {
    if (last) {
      out += ' ';
      return;
    }
    out += '\n';
    for (int64_t k = 0; k < t.rank() - dim - 2; ++k) out += '\n';
    out.append(static_cast<size_t>(dim + 1), ' ');
  };
  out += '[';
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) sep();
    if (cut && i == summarize) {
      out += "...";
      i = n - summarize - 1;
      continue;
    }
    const int64_t off = offset + i * strides[static_cast<size_t>(dim)];
    if (last)
      out += element(t, off, opts.quote_strings);
    else
      format_rec(t, dim + 1, off, strides, opts, out);
  }
  out += ']';
}

}  // namespace

std::string format_tensor(const Tensor& t, const PrintOptions& opts) {
  if (t.is_symbolic())
    return str_cat("Tensor(\"", t.symbol()->tensor_name(t.output_index()),
                   "\", shape=", t.shape().to_string(), ", dtype=", dtype_name(t.dtype()), ")");
  if (t.rank() == 0) return element(t, 0, opts.quote_strings);
  std::string out;
  format_rec(t, 0, 0, contiguous_strides(t.shape()), opts, out);
  return out;
}

}  // namespace kiln
