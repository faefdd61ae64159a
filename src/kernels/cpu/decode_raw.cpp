// DecodeRaw / DecodePaddedRaw (tf.io.decode_raw): each string's bytes read as
// values of out_type, in the byte order `little_endian` says.
#include <algorithm>
#include <bit>
#include <cstring>

#include "bind.h"
#include "kiln/context.h"

namespace kiln::cpu {
namespace {

// TensorFlow's DataTypeString, as its messages name dtypes.
std::string_view tf_dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float";
    case DType::kFloat64: return "double";
    case DType::kFloat16: return "half";
    default: return dtype_name(t);
  }
}

// Puts the `n` bytes of a row (whole elements) in the machine's order: each
// element's bytes reversed when the data's order differs; bools become 0/1.
void to_native(DType t, bool little_endian, char* row, size_t n) {
  const size_t width = dtype_size(t);
  // Complex values are two floats, each swapped on its own.
  const size_t part = t == DType::kComplex64 ? 4 : t == DType::kComplex128 ? 8 : width;
  if (little_endian != (std::endian::native == std::endian::little) && part > 1)
    for (size_t i = 0; i + part <= n; i += part) std::reverse(row + i, row + i + part);
  if (t == DType::kBool)
    for (size_t i = 0; i < n; ++i) row[i] = row[i] != 0;
}

void decode(KernelContext& c, bool padded) {
  const DType t = c.attr_dtype("out_type");
  const bool little = c.attr_bool("little_endian");
  const int64_t width = static_cast<int64_t>(dtype_size(t));
  const Tensor& in = c.input(0);
  const std::string* s = in.data<std::string>();
  const int64_t n = in.num_elements();
  int64_t bytes = 0;
  if (padded) {
    bytes = c.input(1).data<int32_t>()[0];
    if (bytes < 0) c.fail("fixed_length must not be negative, got ", bytes);
    if (bytes % width != 0)
      c.fail("fixed_length (", bytes, ") must be a multiple of the size of out_type (", width, ")");
  } else {
    bytes = n > 0 ? static_cast<int64_t>(s[0].size()) : 0;
    for (int64_t i = 1; i < n; ++i)
      if (static_cast<int64_t>(s[i].size()) != bytes)
        c.fail("DecodeRaw requires input strings to all be the same size, but element ", i,
               " has size ", bytes, " != ", s[i].size());  // TensorFlow's order
    if (bytes % width != 0)
      c.fail("Input to DecodeRaw has length ", bytes, " that is not a multiple of ", width,
             ", the size of ", tf_dtype_name(t));
  }
  std::vector<int64_t> dims(in.shape().dims().begin(), in.shape().dims().end());
  dims.push_back(bytes / width);
  Tensor out = Tensor::empty(t, Shape(dims));
  char* o = static_cast<char*>(out.mutable_raw_data());
  for (int64_t i = 0; i < n && bytes > 0; ++i) {  // (no row: o may be null)
    char* row = o + i * bytes;
    const size_t have = std::min<size_t>(s[i].size(), static_cast<size_t>(bytes));
    std::memcpy(row, s[i].data(), have);
    std::memset(row + have, 0, static_cast<size_t>(bytes) - have);  // padded: zeros after
    to_native(t, little, row, static_cast<size_t>(bytes));
  }
  c.set_output(0, std::move(out));
}

}  // namespace

void bind_decode_raw_kernels(OpTableBuilder& t) {
  t.kernel(OpId::DecodeRaw, [](KernelContext& c) { decode(c, false); });
  t.kernel(OpId::DecodePaddedRaw, [](KernelContext& c) { decode(c, true); });
}

}  // namespace kiln::cpu
