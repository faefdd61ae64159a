#include "kiln/npy.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "kiln/status.h"

namespace kiln::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMaxHeader = 1 << 16;

struct Descr {
  const char* text;  // NumPy's descr, little-endian
  DType dtype;
};
constexpr Descr kDescrs[] = {
    {"|b1", DType::kBool},        {"|i1", DType::kInt8},    {"|u1", DType::kUInt8},
    {"<i4", DType::kInt32},       {"<i8", DType::kInt64},   {"<f2", DType::kFloat16},
    {"<f4", DType::kFloat32},     {"<f8", DType::kFloat64}, {"<c8", DType::kComplex64},
    {"<c16", DType::kComplex128},
};

// The value after 'key': in a header dict, e.g. "'<f4'" or "(2, 3)".
std::string_view field(std::string_view h, std::string_view key, const std::string& where) {
  const std::string k = str_cat("'", key, "':");
  const size_t p = h.find(k);
  if (p == std::string_view::npos)
    throw InvalidArgumentError(str_cat(where, ": the .npy header has no '", key, "'"));
  std::string_view v = h.substr(p + k.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return v;
}

Shape parse_shape(std::string_view v, const std::string& where) {
  if (v.empty() || v.front() != '(') throw InvalidArgumentError(str_cat(where, ": bad .npy shape"));
  const size_t close = v.find(')');
  if (close == std::string_view::npos)
    throw InvalidArgumentError(str_cat(where, ": bad .npy shape"));
  std::string_view body = v.substr(1, close - 1);
  Shape s;
  while (true) {
    while (!body.empty() && (body.front() == ' ' || body.front() == ',')) body.remove_prefix(1);
    if (body.empty()) break;
    int64_t d = 0;
    auto r = std::from_chars(body.data(), body.data() + body.size(), d);
    if (r.ec != std::errc() || d < 0 || s.rank() >= 64)
      throw InvalidArgumentError(str_cat(where, ": bad .npy shape (", v.substr(0, close + 1), ")"));
    s.push_back(d);
    body.remove_prefix(static_cast<size_t>(r.ptr - body.data()));
  }
  return s;
}

}  // namespace

Tensor parse(const std::string& bytes, const std::string& where) {
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic) != 0)
    throw InvalidArgumentError(str_cat(where, ": not a .npy file (no \\x93NUMPY magic)"));
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t hlen, start;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) |
           static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InvalidArgumentError(str_cat(where, ": truncated .npy header"));
    uint32_t n;
    std::memcpy(&n, bytes.data() + 8, 4);
    hlen = n;
    start = 12;
  } else {
    throw InvalidArgumentError(
        str_cat(where, ": .npy format version ", major, " is not supported"));
  }
  if (hlen > kMaxHeader || bytes.size() - start < hlen)
    throw InvalidArgumentError(str_cat(where, ": truncated .npy header"));
  const std::string_view h(bytes.data() + start, hlen);
  std::string_view descr = field(h, "descr", where);
  DType dt = DType::kInvalid;
  for (const Descr& d : kDescrs) {
    const std::string quoted = str_cat("'", d.text, "'");
    if (descr.substr(0, quoted.size()) == quoted) dt = d.dtype;
  }
  int64_t width = 0;  // |S<width>: NumPy's fixed-width byte strings
  if (dt == DType::kInvalid && descr.substr(0, 3) == "'|S") {
    auto r = std::from_chars(descr.data() + 3, descr.data() + descr.size(), width);
    if (r.ec == std::errc() && r.ptr < descr.data() + descr.size() && *r.ptr == '\'' && width > 0 &&
        width <= (int64_t{1} << 30))
      dt = DType::kString;
  }
  if (dt == DType::kInvalid)
    throw InvalidArgumentError(
        str_cat(where, ": .npy dtype ", descr.substr(0, descr.find(',')), " is not supported"));
  if (field(h, "fortran_order", where).substr(0, 5) != "False")
    throw InvalidArgumentError(
        str_cat(where, ": Fortran-order arrays are not supported (save np.ascontiguousarray(a))"));
  const Shape shape = parse_shape(field(h, "shape", where), where);
  const int64_t n = shape.num_elements();  // overflow-checked
  const size_t data = start + hlen;
  const uint64_t item = dt == DType::kString ? static_cast<uint64_t>(width) : dtype_size(dt);
  const uint64_t want = static_cast<uint64_t>(n) * item;
  if (static_cast<uint64_t>(n) > (uint64_t{1} << 58) || bytes.size() - data != want)
    throw InvalidArgumentError(str_cat(where, ": a ", dtype_name(dt), shape.to_string(),
                                       " array needs ", want, " data bytes, the file has ",
                                       bytes.size() - data));
  if (dt == DType::kBool)
    for (size_t i = data; i < bytes.size(); ++i)
      if (static_cast<unsigned char>(bytes[i]) > 1)
        throw InvalidArgumentError(str_cat(where, ": a bool value is not 0 or 1"));
  Tensor t = Tensor::empty(dt, shape);
  if (dt == DType::kString) {
    std::string* out = t.mutable_data<std::string>();
    for (int64_t i = 0; i < n; ++i) {
      std::string_view v(bytes.data() + data + static_cast<size_t>(i * width),
                         static_cast<size_t>(width));
      out[i] = std::string(v.substr(0, v.find_last_not_of('\0') + 1));  // NumPy drops trailing NULs
    }
    return t;
  }
  if (want) std::memcpy(t.mutable_raw_data(), bytes.data() + data, want);
  return t;
}

Tensor read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw NotFoundError(str_cat(path, ": cannot open"));
  std::string bytes{std::istreambuf_iterator<char>(f), {}};
  return parse(bytes, path);
}

std::string serialize(const Tensor& t) {
  if (t.is_symbolic()) throw InvalidArgumentError("npy: a symbolic tensor has no value");
  std::string descr;
  size_t width = 0;
  for (const Descr& d : kDescrs)
    if (d.dtype == t.dtype()) descr = d.text;
  if (t.dtype() == DType::kString) {  // as NumPy's |S<width>, NUL-padded
    width = 1;
    for (int64_t i = 0; i < t.num_elements(); ++i)
      width = std::max(width, t.data<std::string>()[i].size());
    descr = str_cat("|S", width);
  }
  if (descr.empty())
    throw InvalidArgumentError(str_cat("npy: dtype ", dtype_name(t.dtype()), " cannot be written"));
  std::string shape = "(";
  for (int64_t d : t.shape().dims()) shape += str_cat(d, ",");
  if (t.shape().rank() > 1) shape.pop_back();
  shape += ")";
  std::string header =
      str_cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad so the data starts at a multiple of 64, the header ending in '\n'.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  if (t.dtype() == DType::kString) {
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      const std::string& v = t.data<std::string>()[i];
      out += v;
      out.append(width - v.size(), '\0');
    }
    return out;
  }
  out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

void write(const std::string& path, const Tensor& t) {
  const std::string bytes = serialize(t);
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  int err = ok ? 0 : errno;
  if (f && std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok)
    throw FailedPreconditionError(
        str_cat(path, ": cannot write: ", err ? std::strerror(err) : "write failed"));
}

}  // namespace kiln::npy
