#include "onnx/onnx_io.h"

#include <cstring>
#include <limits>

#include "kiln/half.h"
#include "kiln/status.h"

namespace kiln::onnx::detail {
namespace {

using TP = pb::TensorProto;

struct DTypePair {
  DType kiln;
  int proto;
  const char* name;
};
constexpr DTypePair kDTypes[] = {
    {DType::kFloat32, TP::FLOAT, "FLOAT"},
    {DType::kUInt8, TP::UINT8, "UINT8"},
    {DType::kInt8, TP::INT8, "INT8"},
    {DType::kInt32, TP::INT32, "INT32"},
    {DType::kInt64, TP::INT64, "INT64"},
    {DType::kString, TP::STRING, "STRING"},
    {DType::kBool, TP::BOOL, "BOOL"},
    {DType::kFloat16, TP::FLOAT16, "FLOAT16"},
    {DType::kFloat64, TP::DOUBLE, "DOUBLE"},
    {DType::kComplex64, TP::COMPLEX64, "COMPLEX64"},
    {DType::kComplex128, TP::COMPLEX128, "COMPLEX128"},
    {DType::kBFloat16, TP::BFLOAT16, "BFLOAT16"},
};
constexpr const char* kOtherNames[] = {"UNDEFINED",  "FLOAT",   "UINT8",  "INT8",   "UINT16",
                                       "INT16",      "INT32",   "INT64",  "STRING", "BOOL",
                                       "FLOAT16",    "DOUBLE",  "UINT32", "UINT64", "COMPLEX64",
                                       "COMPLEX128", "BFLOAT16"};

Shape dims_of(const TP& p, const std::string& where) {
  if (p.dims_size() > kMaxRank)
    throw InvalidArgumentError(str_cat(where, ": rank ", p.dims_size(), " exceeds ", kMaxRank));
  Shape s;
  for (int64_t d : p.dims()) {
    if (d < 0 || d > kMaxDim)
      throw InvalidArgumentError(str_cat(where, ": dimension ", d, " is out of range"));
    s.push_back(d);
  }
  s.num_elements();  // overflow-checked
  return s;
}

// Copies the typed repeated field `src` (n values) into `t` as T.
template <typename T, typename Field>
void copy_typed(const Field& src, Tensor& t, int64_t n) {
  T* out = t.mutable_data<T>();
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(src[static_cast<int>(i)]);
}

size_t typed_count(const TP& p, DType dt) {
  switch (dt) {
    case DType::kFloat32: return static_cast<size_t>(p.float_data_size());
    case DType::kComplex64: return static_cast<size_t>(p.float_data_size()) / 2;
    case DType::kFloat64: return static_cast<size_t>(p.double_data_size());
    case DType::kComplex128: return static_cast<size_t>(p.double_data_size()) / 2;
    case DType::kInt64: return static_cast<size_t>(p.int64_data_size());
    default: return static_cast<size_t>(p.int32_data_size());
  }
}

size_t typed_fields_used(const TP& p) {
  return static_cast<size_t>(p.float_data_size() + p.double_data_size() + p.int64_data_size() +
                             p.int32_data_size() + p.uint64_data_size() + p.string_data_size());
}

void fill_typed(const TP& p, DType dt, Tensor& t, int64_t n, const std::string& where) {
  switch (dt) {
    case DType::kFloat32: copy_typed<float>(p.float_data(), t, n); return;
    case DType::kFloat64: copy_typed<double>(p.double_data(), t, n); return;
    case DType::kInt64: copy_typed<int64_t>(p.int64_data(), t, n); return;
    case DType::kInt32: copy_typed<int32_t>(p.int32_data(), t, n); return;
    case DType::kInt8: copy_typed<int8_t>(p.int32_data(), t, n); return;
    case DType::kUInt8: copy_typed<uint8_t>(p.int32_data(), t, n); return;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = p.int32_data(static_cast<int>(i));
        if (v != 0 && v != 1) throw InvalidArgumentError(str_cat(where, ": a bool is ", v));
        t.mutable_data<bool>()[i] = v != 0;
      }
      return;
    case DType::kFloat16:
    case DType::kBFloat16: {  // the bits, one per int32
      auto* out = static_cast<uint16_t*>(t.mutable_raw_data());
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<uint16_t>(p.int32_data(static_cast<int>(i)));
      return;
    }
    case DType::kComplex64: copy_typed<float>(p.float_data(), t, 2 * n); return;
    case DType::kComplex128: copy_typed<double>(p.double_data(), t, 2 * n); return;
    default: throw InternalError("fill_typed: unexpected dtype");
  }
}

}  // namespace

int to_proto(DType t) {
  for (const auto& p : kDTypes)
    if (p.kiln == t) return p.proto;
  throw InvalidArgumentError(str_cat("dtype ", dtype_name(t), " has no ONNX type"));
}

DType from_proto(int t, const std::string& where) {
  for (const auto& p : kDTypes)
    if (p.proto == t) return p.kiln;
  throw InvalidArgumentError(
      str_cat(where, ": ONNX type ", onnx_dtype_name(t), " is not one kiln supports"));
}

std::string onnx_dtype_name(int t) {
  if (t >= 0 && t < static_cast<int>(std::size(kOtherNames))) return kOtherNames[t];
  return str_cat("<data type ", t, ">");
}

void to_proto(const Tensor& t, pb::TensorProto* out) {
  if (t.is_symbolic()) throw InternalError("to_proto: a symbolic tensor has no value");
  out->set_data_type(to_proto(t.dtype()));
  for (int64_t d : t.shape().dims()) out->add_dims(d);
  if (t.dtype() == DType::kString) {
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.num_elements(); ++i) out->add_string_data(s[i]);
    return;
  }
  out->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
}

Tensor from_proto(const TP& p, const std::string& where) {
  if (p.data_location() == TP::EXTERNAL || p.external_data_size() > 0)
    throw InvalidArgumentError(
        str_cat(where,
                ": external data (a tensor stored outside the model file) is not "
                "supported; save the model with its tensors inside"));
  const DType dt = from_proto(p.data_type(), where);
  const Shape shape = dims_of(p, where);
  const int64_t n = shape.num_elements();
  // Sizes are checked against the file's bytes before anything is allocated.
  if (dt == DType::kString) {
    if (p.has_raw_data() || p.string_data_size() != n || typed_fields_used(p) != size_t(n))
      throw InvalidArgumentError(str_cat(where, ": a string tensor of shape ", shape.to_string(),
                                         " holds ", p.string_data_size(), " strings"));
    Tensor t = Tensor::empty(dt, shape);
    std::string* s = t.mutable_data<std::string>();
    for (int64_t i = 0; i < n; ++i) s[i] = p.string_data(static_cast<int>(i));
    return t;
  }
  const uint64_t want = static_cast<uint64_t>(n) * dtype_size(dt);
  if (p.has_raw_data()) {
    if (typed_fields_used(p) != 0 || p.raw_data().size() != want)
      throw InvalidArgumentError(str_cat(where, ": a ", dtype_name(dt), " tensor of shape ",
                                         shape.to_string(), " needs ", want,
                                         " bytes of raw data, the file has ", p.raw_data().size()));
    const std::string& bytes = p.raw_data();
    if (dt == DType::kBool)
      for (unsigned char c : bytes)
        if (c > 1) throw InvalidArgumentError(str_cat(where, ": a bool value is not 0 or 1"));
    Tensor t = Tensor::empty(dt, shape);
    if (want) std::memcpy(t.mutable_raw_data(), bytes.data(), want);
    return t;
  }
  const size_t have = typed_count(p, dt);
  if (have != static_cast<size_t>(n) ||
      typed_fields_used(p) !=
          (dt == DType::kComplex64 || dt == DType::kComplex128 ? 2 * have : have))
    throw InvalidArgumentError(str_cat(where, ": a ", dtype_name(dt), " tensor of shape ",
                                       shape.to_string(), " holds ", have, " values"));
  Tensor t = Tensor::empty(dt, shape);
  fill_typed(p, dt, t, n, where);
  return t;
}

void to_proto(const std::string& name, const TensorSpec& spec, pb::ValueInfoProto* out) {
  out->set_name(name);
  auto* tt = out->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(to_proto(spec.dtype));
  if (!spec.shape.rank_known()) return;
  auto* shape = tt->mutable_shape();
  int unknown = 0;
  for (int64_t d : spec.shape.dims()) {
    auto* dim = shape->add_dim();
    if (d >= 0)
      dim->set_dim_value(d);
    else
      dim->set_dim_param(str_cat(name, "_dim_", unknown++));
  }
}

TensorSpec from_proto(const pb::ValueInfoProto& v, const std::string& where) {
  if (!v.has_type() || !v.type().has_tensor_type())
    throw InvalidArgumentError(str_cat(where, ": value '", v.name(),
                                       "' is not a tensor (sequences, maps and optionals "
                                       "are not supported)"));
  const auto& tt = v.type().tensor_type();
  TensorSpec spec;
  spec.dtype = from_proto(tt.elem_type(), str_cat(where, " value '", v.name(), "'"));
  if (!tt.has_shape()) {
    spec.shape = Shape::unknown_rank();
    return spec;
  }
  if (tt.shape().dim_size() > kMaxRank)
    throw InvalidArgumentError(str_cat(where, ": value '", v.name(), "' has rank ",
                                       tt.shape().dim_size(), " (at most ", kMaxRank, ")"));
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0 || d.dim_value() > kMaxDim)
        throw InvalidArgumentError(
            str_cat(where, ": value '", v.name(), "' has dimension ", d.dim_value()));
      spec.shape.push_back(d.dim_value());
    } else {
      spec.shape.push_back(-1);
    }
  }
  return spec;
}

}  // namespace kiln::onnx::detail
