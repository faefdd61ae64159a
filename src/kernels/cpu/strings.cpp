// CPU kernels of the string ops (src/ops/string_ops.cpp). Elementwise ones
// split their elements over the pool; a value-dependent failure (a Substr
// position out of range, a string that is not a number) reports the first
// failing element whatever the thread split. Every byte sequence is handled
// (no kernel assumes valid UTF-8); output sizes that inputs can multiply
// (StringJoin's repeated scalars, AsString's width) are checked against the
// allocation cap before anything is built.
#include <locale.h>  // newlocale, strtod_l: number parsing independent of the process locale
#include <re2/re2.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "bind.h"
#include "core/string_hash.h"
#include "kernel_util.h"
#include "kiln/half.h"
#include "ops/string_util.h"

namespace kiln::cpu {
namespace {
using strings::is_ascii_space;
using strings::is_trail_byte;

// Strings per task: string work is heavier per element than arithmetic.
int64_t string_grain() {
  return std::max<int64_t>(1, config().parallel_grain / 16);
}

// Runs f(i) -> bool over [0, n) on the pool; returns the smallest i for which
// f failed, or -1.
template <typename F>
int64_t for_each_element(int64_t n, F&& f) {
  std::atomic<int64_t> first_bad{std::numeric_limits<int64_t>::max()};
  parallel_for(n, string_grain(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if (i > first_bad.load(std::memory_order_relaxed)) return;
      if (!f(i)) {
        int64_t cur = first_bad.load();
        while (i < cur && !first_bad.compare_exchange_weak(cur, i)) {
        }
        return;
      }
    }
  });
  const int64_t bad = first_bad.load();
  return bad == std::numeric_limits<int64_t>::max() ? -1 : bad;
}

// Adds to a byte count, saturating at int64's maximum.
void add_bytes(int64_t& total, int64_t count, int64_t bytes) {
  int64_t p;
  if (__builtin_mul_overflow(count, bytes, &p) || __builtin_add_overflow(total, p, &total))
    total = std::numeric_limits<int64_t>::max();
}

void check_bytes(const KernelContext& c, int64_t total) {
  if (total > max_allocation_bytes())
    throw ResourceExhaustedError(str_cat(c.op().type_name, ": the result would hold ", total,
                                         " bytes of strings, above the allocation cap of ",
                                         max_allocation_bytes(), " bytes"));
}

// ---- StringLength ----

void length_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  const std::string* s = x.data<std::string>();
  int32_t* o = out.mutable_data<int32_t>();
  const bool utf8 = strings::unit_is_utf8(c);
  const int64_t bad = for_each_element(x.num_elements(), [&](int64_t i) {
    int64_t n = static_cast<int64_t>(s[i].size());
    if (utf8) {
      n = 0;  // every byte that is not a continuation byte starts a character
      for (char ch : s[i]) n += !is_trail_byte(static_cast<unsigned char>(ch));
    }
    if (n > INT32_MAX) return false;
    o[i] = static_cast<int32_t>(n);
    return true;
  });
  if (bad >= 0) c.fail("the string at index ", bad, " is too long for an int32 length");
}

// ---- StringJoin ----

void join_kernel(KernelContext& c) {
  Tensor& out = c.allocate_output(0);
  const int64_t n = out.num_elements();
  const std::string& sep = c.attr_string("separator");
  const size_t k = c.num_inputs();
  std::vector<const std::string*> in(k);
  std::vector<bool> scalar(k);
  int64_t total = 0;
  for (size_t j = 0; j < k; ++j) {
    const Tensor& t = c.input(j);
    in[j] = t.data<std::string>();
    scalar[j] = t.rank() == 0;
    if (scalar[j]) {
      add_bytes(total, n, static_cast<int64_t>(in[j][0].size()));
    } else {
      for (int64_t i = 0; i < n; ++i) add_bytes(total, 1, static_cast<int64_t>(in[j][i].size()));
    }
  }
  if (k > 1) add_bytes(total, n, static_cast<int64_t>(sep.size() * (k - 1)));
  check_bytes(c, total);
  std::string* o = out.mutable_data<std::string>();
  for_each_element(n, [&](int64_t i) {
    std::string& r = o[i];
    for (size_t j = 0; j < k; ++j) {
      if (j) r += sep;
      r += in[j][scalar[j] ? 0 : i];
    }
    return true;
  });
}

// ---- ReduceJoin ----

// TensorFlow's LinearSubIndexToFullIndex: `index` over the dims in `dims`,
// the last listed varying fastest, as an offset into the input.
int64_t sub_index_offset(int64_t index, const std::vector<int64_t>& dims, const Shape& shape,
                         const SmallVec<int64_t, 6>& strides) {
  int64_t offset = 0;
  for (size_t k = dims.size(); k-- > 0;) {
    const int64_t d = dims[k], size = shape.dim(d);
    offset += strides[static_cast<size_t>(d)] * (index % size);
    index /= size;
  }
  return offset;
}

void reduce_join_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Shape& shape = x.shape();
  const int64_t r = shape.rank();
  Tensor& out = c.allocate_output(0);
  const std::string& sep = c.attr_string("separator");
  // Inference has checked the axes. Reduced dims in reverse order of
  // reduction_indices (so the first listed varies fastest), kept dims in order.
  std::vector<int64_t> reduced, kept;
  std::vector<bool> is_reduced(static_cast<size_t>(r), false);
  for (int64_t a : int_values(c.input(1))) {
    const int64_t d = a < 0 ? a + r : a;
    reduced.insert(reduced.begin(), d);
    is_reduced[static_cast<size_t>(d)] = true;
  }
  int64_t group = 1;
  for (int64_t d = 0; d < r; ++d) {
    if (is_reduced[static_cast<size_t>(d)])
      group *= shape.dim(d);
    else
      kept.push_back(d);
  }
  const int64_t n = out.num_elements();
  const std::string* s = x.data<std::string>();
  int64_t total = 0;
  for (int64_t i = 0, e = x.num_elements(); i < e; ++i)
    add_bytes(total, 1, static_cast<int64_t>(s[i].size()));
  if (group > 1) add_bytes(total, n * (group - 1), static_cast<int64_t>(sep.size()));
  check_bytes(c, total);
  const SmallVec<int64_t, 6> strides = contiguous_strides(shape);
  std::string* o = out.mutable_data<std::string>();
  for_each_element(n, [&](int64_t i) {
    const int64_t base = sub_index_offset(i, kept, shape, strides);
    std::string& res = o[i];
    for (int64_t j = 0; j < group; ++j) {
      if (j) res += sep;
      res += s[base + sub_index_offset(j, reduced, shape, strides)];
    }
    return true;
  });
}

// ---- StringLower / StringUpper / StringStrip ----

template <typename F>
void map_strings(KernelContext& c, F&& f) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  const std::string* s = x.data<std::string>();
  std::string* o = out.mutable_data<std::string>();
  for_each_element(x.num_elements(), [&](int64_t i) {
    o[i] = f(s[i]);
    return true;
  });
}

template <bool kUpper>
void case_kernel(KernelContext& c) {
  map_strings(c, [](const std::string& s) {
    std::string r = s;
    for (char& ch : r) {
      if (kUpper && ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
      if (!kUpper && ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    }
    return r;
  });
}

void strip_kernel(KernelContext& c) {
  map_strings(c, [](const std::string& s) {
    size_t b = 0, e = s.size();
    while (b < e && is_ascii_space(s[b])) ++b;
    while (e > b && is_ascii_space(s[e - 1])) --e;
    return s.substr(b, e - b);
  });
}

// ---- Substr ----

// Moves `pos` forward over n UTF-8 characters (a lead byte and the
// continuation bytes after it), stopping at the end; false if it got there first.
bool forward_chars(std::string_view s, int64_t n, size_t& pos) {
  int64_t moved = 0;
  while (moved < n && pos < s.size()) {
    ++pos;
    while (pos < s.size() && is_trail_byte(static_cast<unsigned char>(s[pos]))) ++pos;
    ++moved;
  }
  return moved == n;
}

bool back_chars(std::string_view s, int64_t n, size_t& pos) {
  int64_t moved = 0;
  while (moved < n && pos > 0) {
    --pos;
    while (pos > 0 && is_trail_byte(static_cast<unsigned char>(s[pos]))) --pos;
    ++moved;
  }
  return moved == n;
}

// The substring as TensorFlow's Substr kernel takes it; false when pos is out
// of range.
bool substring(std::string_view s, int64_t pos, int64_t len, bool utf8, std::string& out) {
  const int64_t size = static_cast<int64_t>(s.size());
  if (pos > size || pos < -size) return false;  // also out of range in characters
  if (!utf8) {
    const size_t p = static_cast<size_t>(pos < 0 ? pos + size : pos);
    out.assign(s.substr(p, len < 0 ? std::string_view::npos : static_cast<size_t>(len)));
    return true;
  }
  size_t begin = 0, end = 0;
  if (pos >= 0) {
    if (!forward_chars(s, pos, begin)) return false;
    end = begin;
    if (len > 0) forward_chars(s, len, end);  // capped at the end
  } else {
    // Back from the end: first over the characters after the substring,
    // then over the substring itself.
    end = s.size();
    const int64_t after = len < 0 ? 0 : std::max<int64_t>(0, -pos - len);
    if (!back_chars(s, after, end)) return false;
    begin = end;
    if (!back_chars(s, -pos - after, begin)) return false;
    if (len < 0) end = begin;
  }
  out.assign(s.substr(begin, end - begin));
  return true;
}

void substr_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  const Shape& os = out.shape();
  const bool utf8 = strings::unit_is_utf8(c);
  const std::vector<int64_t> pos = int_values(c.input(1)), len = int_values(c.input(2));
  const SmallVec<int64_t, 6> xs = broadcast_strides(x.shape(), os);
  const SmallVec<int64_t, 6> ps = broadcast_strides(c.input(1).shape(), os);
  const SmallVec<int64_t, 6> ostr = contiguous_strides(os);
  const std::string* s = x.data<std::string>();
  std::string* o = out.mutable_data<std::string>();
  auto offsets = [&](int64_t i, int64_t& xi, int64_t& pi) {
    xi = pi = 0;
    for (int64_t d = 0; d < os.rank(); ++d) {
      const int64_t k = (i / ostr[static_cast<size_t>(d)]) % os.dim(d);
      xi += k * xs[static_cast<size_t>(d)];
      pi += k * ps[static_cast<size_t>(d)];
    }
  };
  const int64_t bad = for_each_element(out.num_elements(), [&](int64_t i) {
    int64_t xi, pi;
    offsets(i, xi, pi);
    return substring(s[xi], pos[static_cast<size_t>(pi)], len[static_cast<size_t>(pi)], utf8, o[i]);
  });
  if (bad >= 0) {
    int64_t xi, pi;
    offsets(bad, xi, pi);
    c.fail("pos ", pos[static_cast<size_t>(pi)], " out of range for string ",
           strings::quote_for_message(s[xi]), " at index ", xi);
  }
}

// ---- AsString ----

// printf into a std::string; false when the result would not fit an int.
template <typename... A>
bool format_into(std::string& out, const char* fmt, A... args) {
  char buf[128];
  const int n = std::snprintf(buf, sizeof buf, fmt, args...);
  if (n < 0) return false;
  if (static_cast<size_t>(n) < sizeof buf) {
    out.assign(buf, static_cast<size_t>(n));
    return true;
  }
  out.resize(static_cast<size_t>(n));
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return true;
}

void as_string_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  const int64_t n = x.num_elements();
  const DType dt = x.dtype();
  const int width = static_cast<int>(std::max<int64_t>(0, c.attr_int("width")));
  const int precision = static_cast<int>(std::max<int64_t>(-1, c.attr_int("precision")));
  const std::string& fill = c.attr_string("fill");
  std::string* o = out.mutable_data<std::string>();
  if (dt == DType::kBool) {  // TensorFlow ignores width for bools
    const bool* b = x.data<bool>();
    for_each_element(n, [&](int64_t i) {
      o[i] = b[i] ? "true" : "false";
      return true;
    });
    return;
  }
  if (dt == DType::kString) {  // padded to width; precision cuts (as %*.*s)
    const std::string* s = x.data<std::string>();
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i)
      add_bytes(total, 1, std::max<int64_t>(width, static_cast<int64_t>(s[i].size())));
    check_bytes(c, total);
    const bool left = fill == "-";
    for_each_element(n, [&](int64_t i) {
      std::string_view v = s[i];
      if (width > 0 && precision >= 0) v = v.substr(0, static_cast<size_t>(precision));
      const size_t pad = static_cast<size_t>(width) > v.size() ? width - v.size() : 0;
      o[i].assign(left ? 0 : pad, ' ');
      o[i] += v;
      if (left) o[i].append(pad, ' ');
      return true;
    });
    return;
  }
  // Numbers: at most width or the number's own digits (a double has <= 309
  // before the point) plus the precision.
  int64_t each = std::max<int64_t>(width, 330);
  if (precision > 0) each += precision;
  if (is_complex(dt)) each = 2 * each + 3;
  int64_t total = 0;
  add_bytes(total, n, each);
  check_bytes(c, total);
  char conv = 'd';
  if (is_floating(dt) || is_complex(dt))
    conv = c.attr_bool("shortest") ? 'g' : c.attr_bool("scientific") ? 'e' : 'f';
  else if (dt == DType::kUInt8)
    conv = 'u';
  const std::string fmt = str_cat("%", fill, "*.*", dt == DType::kInt64 ? "ll" : "", conv);
  auto run = [&](auto get) {
    const int64_t bad = for_each_element(
        n, [&](int64_t i) { return format_into(o[i], fmt.c_str(), width, precision, get(i)); });
    if (bad >= 0) c.fail("the string for element ", bad, " would be too long");
  };
  switch (dt) {
    case DType::kInt8: run([p = x.data<int8_t>()](int64_t i) { return int{p[i]}; }); break;
    case DType::kUInt8: run([p = x.data<uint8_t>()](int64_t i) { return unsigned{p[i]}; }); break;
    case DType::kInt32: run([p = x.data<int32_t>()](int64_t i) { return int{p[i]}; }); break;
    case DType::kInt64:
      run([p = x.data<int64_t>()](int64_t i) { return static_cast<long long>(p[i]); });
      break;
    case DType::kFloat32: run([p = x.data<float>()](int64_t i) { return double{p[i]}; }); break;
    case DType::kFloat64: run([p = x.data<double>()](int64_t i) { return p[i]; }); break;
    case DType::kFloat16:
      run([p = x.data<Half>()](int64_t i) { return double{to_float(p[i])}; });
      break;
    case DType::kBFloat16:
      run([p = x.data<BFloat16>()](int64_t i) { return double{to_float(p[i])}; });
      break;
    case DType::kComplex64:
    case DType::kComplex128: {  // "(real,imag)", each part formatted as a float
      const int64_t bad = for_each_element(n, [&](int64_t i) {
        const auto [re, im] =
            dt == DType::kComplex64
                ? std::pair<double, double>(x.data<std::complex<float>>()[i].real(),
                                            x.data<std::complex<float>>()[i].imag())
                : std::pair<double, double>(x.data<std::complex<double>>()[i].real(),
                                            x.data<std::complex<double>>()[i].imag());
        std::string a, b;
        if (!format_into(a, fmt.c_str(), width, precision, re) ||
            !format_into(b, fmt.c_str(), width, precision, im))
          return false;
        o[i] = "(" + a + "," + b + ")";
        return true;
      });
      if (bad >= 0) c.fail("the string for element ", bad, " would be too long");
      break;
    }
    default: c.fail("unsupported dtype ", dtype_name(dt));
  }
}

// ---- StringToNumber ----

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (x != b[i]) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_digit(char ch) {
  return ch >= '0' && ch <= '9';
}

// TensorFlow's safe_strto32/64: optional surrounding whitespace, an optional
// '-', decimal digits, within range.
template <typename T>
bool parse_int(std::string_view s, T& out) {
  s = trim(s);
  const bool neg = !s.empty() && s.front() == '-';
  if (neg) s.remove_prefix(1);
  if (s.empty()) return false;
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<T>::max()) + (neg ? 1 : 0);
  uint64_t v = 0;
  for (char ch : s) {
    if (!is_digit(ch)) return false;
    const uint64_t digit = static_cast<uint64_t>(ch - '0');
    if (v > (limit - digit) / 10) return false;
    v = v * 10 + digit;
  }
  out = neg ? static_cast<T>(0 - v) : static_cast<T>(v);
  return true;
}

locale_t c_locale() {
  static const locale_t loc = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  return loc;
}

// As TensorFlow's safe_strtof/strtod (double-conversion with hex, case-insensitive
// inf/nan and surrounding whitespace): anything else, trailing junk included, fails.
template <typename T>
bool parse_float(std::string_view s, T& out) {
  s = trim(s);
  std::string_view body = s;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) body.remove_prefix(1);
  if (body.empty()) return false;
  const bool neg = s.front() == '-';
  if (iequals(body, "inf") || iequals(body, "nan")) {
    const T v = iequals(body, "inf") ? std::numeric_limits<T>::infinity()
                                     : std::numeric_limits<T>::quiet_NaN();
    out = neg ? -v : v;
    return true;
  }
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    for (char ch : body.substr(2))
      if (!is_digit(ch) && !((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')) return false;
  } else {
    if (!is_digit(body[0]) && body[0] != '.') return false;
    for (char ch : body)
      if (!is_digit(ch) && ch != '.' && ch != 'e' && ch != 'E' && ch != '+' && ch != '-')
        return false;
  }
  const std::string z(s);  // strtod needs the terminating NUL
  char* end = nullptr;
  if constexpr (std::is_same_v<T, float>)
    out = strtof_l(z.c_str(), &end, c_locale());
  else
    out = strtod_l(z.c_str(), &end, c_locale());
  return end == z.c_str() + z.size();  // out of range gives +-inf or 0, as TensorFlow
}

void to_number_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  const std::string* s = x.data<std::string>();
  int64_t bad = -1;
  auto run = [&](auto* o, auto parse) {
    bad = for_each_element(x.num_elements(), [&](int64_t i) { return parse(s[i], o[i]); });
  };
  switch (out.dtype()) {
    case DType::kFloat32: run(out.mutable_data<float>(), parse_float<float>); break;
    case DType::kFloat64: run(out.mutable_data<double>(), parse_float<double>); break;
    case DType::kInt32: run(out.mutable_data<int32_t>(), parse_int<int32_t>); break;
    case DType::kInt64: run(out.mutable_data<int64_t>(), parse_int<int64_t>); break;
    default: c.fail("unsupported out_type ", dtype_name(out.dtype()));
  }
  if (bad >= 0)
    c.fail("StringToNumberOp could not correctly convert string: ",
           strings::escape_for_message(s[bad]));
}

// ---- RegexReplace / RegexFullMatch ----

void regex_replace_kernel(KernelContext& c) {
  const auto re = strings::compile_regex(c, c.input(1).data<std::string>()[0]);
  const std::string& rewrite = c.input(2).data<std::string>()[0];
  strings::check_rewrite(c, *re, rewrite);
  const bool global = c.attr_bool("replace_global");
  map_strings(c, [&](const std::string& s) {
    std::string r = s;
    if (global)
      re2::RE2::GlobalReplace(&r, *re, rewrite);
    else
      re2::RE2::Replace(&r, *re, rewrite);
    return r;
  });
}

void regex_full_match_kernel(KernelContext& c) {
  const auto re = strings::compile_regex(c, c.input(1).data<std::string>()[0]);
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  const std::string* s = x.data<std::string>();
  bool* o = out.mutable_data<bool>();
  for_each_element(x.num_elements(), [&](int64_t i) {
    o[i] = re2::RE2::FullMatch(s[i], *re);
    return true;
  });
}

// ---- UnsortedSegmentJoin ----

void segment_join_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const std::vector<int64_t> ids = int_values(c.input(1));
  Tensor& out = c.allocate_output(0);
  const std::string& sep = c.attr_string("separator");
  const int64_t num = out.dim(0);
  const int64_t prefix = static_cast<int64_t>(ids.size());
  const int64_t inner = prefix ? x.num_elements() / prefix : 0;
  const std::string* s = x.data<std::string>();
  int64_t total = 0;
  for (int64_t i = 0, e = x.num_elements(); i < e; ++i)
    add_bytes(total, 1, static_cast<int64_t>(s[i].size() + sep.size()));
  check_bytes(c, total);
  for (int64_t i = 0; i < prefix; ++i)
    if (ids[static_cast<size_t>(i)] < 0 || ids[static_cast<size_t>(i)] >= num)
      c.fail("segment_ids[", i, "] = ", ids[static_cast<size_t>(i)], " is out of range [0, ", num,
             ")");
  std::string* o = out.mutable_data<std::string>();
  std::vector<bool> started(static_cast<size_t>(num), false);
  for (int64_t i = 0; i < prefix; ++i) {
    const int64_t k = ids[static_cast<size_t>(i)];
    for (int64_t j = 0; j < inner; ++j) {
      std::string& r = o[k * inner + j];
      if (started[static_cast<size_t>(k)]) r += sep;
      r += s[i * inner + j];
    }
    started[static_cast<size_t>(k)] = true;
  }
}

// ---- StringSplitV2 / _StringCharSplit ----

// Writes the sparse form of the pieces `split(i, pieces)` gives for each of
// the input's strings; inference has counted them.
template <typename F>
void write_split(KernelContext& c, F&& split) {
  const int64_t rows = c.input(0).num_elements();
  Tensor& indices = c.allocate_output(0);
  Tensor& values = c.allocate_output(1);
  Tensor& shape = c.allocate_output(2);
  const int64_t n = values.num_elements();
  int64_t* ind = indices.mutable_data<int64_t>();
  std::string* val = values.mutable_data<std::string>();
  std::vector<std::string_view> pieces;
  int64_t k = 0, widest = 0;
  for (int64_t i = 0; i < rows; ++i) {
    split(i, pieces);
    const int64_t m = static_cast<int64_t>(pieces.size());
    if (k + m > n) throw InternalError(str_cat(c.op().type_name, ": more pieces than inferred"));
    for (int64_t j = 0; j < m; ++j, ++k) {
      ind[2 * k] = i;
      ind[2 * k + 1] = j;
      val[k].assign(pieces[static_cast<size_t>(j)]);
    }
    widest = std::max(widest, m);
  }
  if (k != n) throw InternalError(str_cat(c.op().type_name, ": fewer pieces than inferred"));
  shape.mutable_data<int64_t>()[0] = rows;
  shape.mutable_data<int64_t>()[1] = widest;
}

void split_v2_kernel(KernelContext& c) {
  const std::string* s = c.input(0).data<std::string>();
  const std::string& sep = c.input(1).data<std::string>()[0];
  const int64_t maxsplit = c.attr_int("maxsplit");
  write_split(c, [&](int64_t i, std::vector<std::string_view>& pieces) {
    strings::split_v2(s[i], sep, maxsplit, pieces);
  });
}

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

void char_split_kernel(KernelContext& c) {
  const std::string* s = c.input(0).data<std::string>();
  const bool utf8 = strings::unit_is_utf8(c);
  write_split(c, [&](int64_t i, std::vector<std::string_view>& pieces) {
    const std::string_view v = s[i];
    pieces.clear();
    bool valid = true;
    for (size_t k = 0, step; k < v.size(); k += step) {
      step = utf8 ? strings::utf8_next(v, k, valid) : 1;
      pieces.push_back(valid ? v.substr(k, step) : kReplacementChar);
    }
  });
}

// ---- StringFormat ----

void format_kernel(KernelContext& c) {
  const std::vector<std::string> pieces =
      strings::split_template(c.attr_string("template"), c.attr_string("placeholder"));
  PrintOptions opts;
  opts.summarize = std::max<int64_t>(-1, c.attr_int("summarize"));
  opts.quote_strings = true;
  std::string text = pieces[0];
  for (size_t i = 1; i < pieces.size(); ++i) {
    text += format_tensor(c.input(i - 1), opts);
    text += pieces[i];
  }
  c.allocate_output(0).mutable_data<std::string>()[0] = std::move(text);
}

// ---- ReadFile / WriteFile ----

void read_file_kernel(KernelContext& c) {
  const std::string& name = c.input(0).data<std::string>()[0];
  std::error_code ec;
  const auto size = std::filesystem::file_size(name, ec);
  if (ec) throw NotFoundError(str_cat("ReadFile: ", name, ": ", ec.message()));
  check_bytes(c, static_cast<int64_t>(size));
  std::ifstream f(name, std::ios::binary);
  std::string data(size, '\0');
  if (!f || !f.read(data.data(), static_cast<std::streamsize>(size)))
    throw NotFoundError(str_cat("ReadFile: cannot read ", name));
  c.allocate_output(0).mutable_data<std::string>()[0] = std::move(data);
}

void write_file_kernel(KernelContext& c) {
  const std::string& name = c.input(0).data<std::string>()[0];
  const std::string& data = c.input(1).data<std::string>()[0];
  std::ofstream f(name, std::ios::binary | std::ios::trunc);
  if (!f || !f.write(data.data(), static_cast<std::streamsize>(data.size())) || !f.flush())
    throw NotFoundError(str_cat("WriteFile: cannot write ", name));
}

// ---- StringToHashBucketFast / Strong ----

template <bool kStrong>
void hash_bucket_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const std::string* s = x.data<std::string>();
  int64_t* o = c.allocate_output(0).mutable_data<int64_t>();
  const auto buckets = static_cast<uint64_t>(c.attr_int("num_buckets"));
  uint64_t k0 = 0, k1 = 0;
  if constexpr (kStrong) {
    k0 = static_cast<uint64_t>(c.attr_ints("key")[0]);
    k1 = static_cast<uint64_t>(c.attr_ints("key")[1]);
  }
  for_each_element(x.num_elements(), [&](int64_t i) {
    const uint64_t h = kStrong ? hash::siphash24(s[i], k0, k1) : hash::fingerprint64(s[i]);
    o[i] = static_cast<int64_t>(h % buckets);
    return true;
  });
}

}  // namespace

void bind_string_kernels(OpTableBuilder& t) {
  t.kernel(OpId::StringLength, length_kernel);
  t.kernel(OpId::StringJoin, join_kernel);
  t.kernel(OpId::ReduceJoin, reduce_join_kernel);
  t.kernel(OpId::StringLower, case_kernel<false>);
  t.kernel(OpId::StringUpper, case_kernel<true>);
  t.kernel(OpId::StringStrip, strip_kernel);
  t.kernel(OpId::Substr, substr_kernel);
  t.kernel(OpId::AsString, as_string_kernel);
  t.kernel(OpId::StringToNumber, to_number_kernel);
  t.kernel(OpId::RegexReplace, regex_replace_kernel);
  t.kernel(OpId::RegexFullMatch, regex_full_match_kernel);
  t.kernel(OpId::StringSplitV2, split_v2_kernel);
  t.kernel(OpId::StringCharSplit, char_split_kernel);
  t.kernel(OpId::ReadFile, read_file_kernel);
  t.kernel(OpId::WriteFile, write_file_kernel);
  t.kernel(OpId::StringToHashBucketFast, hash_bucket_kernel<false>);
  t.kernel(OpId::StringToHashBucketStrong, hash_bucket_kernel<true>);
  t.kernel(OpId::StringFormat, format_kernel);
  t.kernel(OpId::UnsortedSegmentJoin, segment_join_kernel);
}

}  // namespace kiln::cpu
