#include "saved_model/proto_io.h"

#include <fcntl.h>
#include <google/protobuf/stubs/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <complex>
#include <cstring>

#include "core/fd_util.h"
#include "kiln/status.h"

namespace kiln::saved_model::detail {
namespace {

struct DTypePair {
  DType kiln;
  pb::DataType proto;
};
constexpr DTypePair kDTypes[] = {
    {DType::kBool, pb::DT_BOOL},
    {DType::kInt8, pb::DT_INT8},
    {DType::kUInt8, pb::DT_UINT8},
    {DType::kInt32, pb::DT_INT32},
    {DType::kInt64, pb::DT_INT64},
    {DType::kFloat32, pb::DT_FLOAT},
    {DType::kFloat64, pb::DT_DOUBLE},
    {DType::kString, pb::DT_STRING},
    {DType::kResource, pb::DT_RESOURCE},
    {DType::kFloat16, pb::DT_HALF},
    {DType::kBFloat16, pb::DT_BFLOAT16},
    {DType::kComplex64, pb::DT_COMPLEX64},
    {DType::kComplex128, pb::DT_COMPLEX128},
};

constexpr int kMaxDepth = 32;  // protobuf itself stops at 100 nested messages

}  // namespace

pb::DataType to_proto(DType t) {
  for (const auto& p : kDTypes)
    if (p.kiln == t) return p.proto;
  throw InvalidArgumentError(str_cat("dtype ", dtype_name(t), " cannot be saved"));
}

DType from_proto(int t, const std::string& where) {
  for (const auto& p : kDTypes)
    if (p.proto == t) return p.kiln;
  if (t == pb::DT_VARIANT) return DType::kResource;  // a TensorList: kiln's are resources
  throw InvalidArgumentError(str_cat(where, ": DataType ", t, " is not one kiln supports"));
}

void to_proto(const Shape& s, pb::TensorShapeProto* out) {
  if (!s.rank_known()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int64_t d : s.dims()) out->add_dim()->set_size(d);
}

Shape from_proto(const pb::TensorShapeProto& s, const std::string& where) {
  if (s.unknown_rank()) {
    if (s.dim_size() != 0) throw InvalidArgumentError(str_cat(where, ": unknown rank with dims"));
    return Shape::unknown_rank();
  }
  if (s.dim_size() > kMaxRank)
    throw InvalidArgumentError(str_cat(where, ": rank ", s.dim_size(), " exceeds ", kMaxRank));
  Shape out;
  for (const auto& d : s.dim()) {
    if (d.size() < -1 || d.size() > kMaxDim)
      throw InvalidArgumentError(str_cat(where, ": dimension ", d.size(), " is out of range"));
    out.push_back(d.size());
  }
  return out;
}

void to_proto(const Tensor& t, pb::TensorProto* out) {
  if (t.is_symbolic()) throw InternalError("to_proto: a symbolic tensor has no value");
  out->set_dtype(to_proto(t.dtype()));
  to_proto(t.shape(), out->mutable_tensor_shape());
  if (t.dtype() == DType::kResource)
    throw InvalidArgumentError("a resource handle cannot be saved as a value");
  if (t.dtype() == DType::kString) {
    const std::string* s = t.data<std::string>();
    for (int64_t i = 0; i < t.num_elements(); ++i) out->add_string_val(s[i]);
    return;
  }
  out->set_tensor_content(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
}

namespace {

// Fills `t` (n elements of T) from `vals`, repeating the last as TensorFlow does.
template <typename T, typename V>
void fill_from(Tensor& t, const V& vals, int64_t n, const std::string& where) {
  if (vals.size() == 0 || static_cast<int64_t>(vals.size()) > n)
    throw InvalidArgumentError(
        str_cat(where, ": a constant holds ", vals.size(), " values for ", n, " elements"));
  T* out = static_cast<T*>(t.mutable_raw_data());
  const auto given = static_cast<int64_t>(vals.size());
  for (int64_t i = 0; i < given; ++i) out[i] = static_cast<T>(vals[i]);
  std::fill(out + given, out + n, static_cast<T>(vals[given - 1]));  // one pass, not per value
}

// TensorFlow's typed value lists (float_val, int_val, ...).
Tensor typed_values(const pb::TensorProto& p, DType dt, const Shape& shape,
                    const std::string& where) {
  const int64_t n = shape.num_elements();
  Tensor t = Tensor::empty(dt, shape);
  switch (dt) {
    case DType::kFloat32: fill_from<float>(t, p.float_val(), n, where); break;
    case DType::kFloat64: fill_from<double>(t, p.double_val(), n, where); break;
    case DType::kInt32: fill_from<int32_t>(t, p.int_val(), n, where); break;
    case DType::kInt8: fill_from<int8_t>(t, p.int_val(), n, where); break;
    case DType::kUInt8: fill_from<uint8_t>(t, p.int_val(), n, where); break;
    case DType::kInt64: fill_from<int64_t>(t, p.int64_val(), n, where); break;
    case DType::kBool: fill_from<bool>(t, p.bool_val(), n, where); break;
    case DType::kFloat16:
    case DType::kBFloat16: fill_from<uint16_t>(t, p.half_val(), n, where); break;
    case DType::kComplex64: {
      if (p.scomplex_val_size() % 2)
        throw InvalidArgumentError(str_cat(where, ": odd complex values"));
      std::vector<std::complex<float>> v;
      for (int i = 0; i + 1 < p.scomplex_val_size(); i += 2)
        v.emplace_back(p.scomplex_val(i), p.scomplex_val(i + 1));
      fill_from<std::complex<float>>(t, v, n, where);
      break;
    }
    case DType::kComplex128: {
      if (p.dcomplex_val_size() % 2)
        throw InvalidArgumentError(str_cat(where, ": odd complex values"));
      std::vector<std::complex<double>> v;
      for (int i = 0; i + 1 < p.dcomplex_val_size(); i += 2)
        v.emplace_back(p.dcomplex_val(i), p.dcomplex_val(i + 1));
      fill_from<std::complex<double>>(t, v, n, where);
      break;
    }
    default:
      throw InvalidArgumentError(str_cat(where, ": a ", dtype_name(dt), " constant without bytes"));
  }
  return t;
}

}  // namespace

Tensor from_proto(const pb::TensorProto& p, const std::string& where) {
  const DType dt = from_proto(p.dtype(), where);
  if (dt == DType::kResource)
    throw InvalidArgumentError(str_cat(where, ": a resource tensor cannot be a constant"));
  const Shape shape = from_proto(p.tensor_shape(), where);
  if (!shape.is_fully_defined())
    throw InvalidArgumentError(
        str_cat(where, ": a constant's shape ", shape.to_string(), " is not fully defined"));
  const int64_t n = shape.num_elements();  // overflow-checked
  if (dt == DType::kString) {
    // kiln writes every string; TensorFlow may write one to repeat
    const int m = p.string_val_size();
    if (!p.tensor_content().empty() || m > n || (m == 0 && n > 0))
      throw InvalidArgumentError(str_cat(where, ": a string tensor of shape ", shape.to_string(),
                                         " holds ", m, " strings"));
    Tensor t = Tensor::empty(dt, shape);
    std::string* s = t.mutable_data<std::string>();
    for (int64_t i = 0; i < n; ++i)
      s[i] = p.string_val(static_cast<int>(std::min<int64_t>(i, m - 1)));
    return t;
  }
  if (p.tensor_content().empty() && n > 0) return typed_values(p, dt, shape, where);
  if (p.string_val_size() != 0)
    throw InvalidArgumentError(str_cat(where, ": a ", dtype_name(dt), " tensor holds strings"));
  const uint64_t want = static_cast<uint64_t>(n) * dtype_size(dt);
  if (static_cast<uint64_t>(n) > (uint64_t{1} << 62) / 16 || p.tensor_content().size() != want)
    throw InvalidArgumentError(str_cat(where, ": a ", dtype_name(dt), " tensor of shape ",
                                       shape.to_string(), " needs ", want, " bytes, the file has ",
                                       p.tensor_content().size()));
  const std::string& bytes = p.tensor_content();
  if (dt == DType::kBool)
    for (unsigned char c : bytes)
      if (c > 1) throw InvalidArgumentError(str_cat(where, ": a bool value is not 0 or 1"));
  Tensor t = Tensor::empty(dt, shape);
  if (want) std::memcpy(t.mutable_raw_data(), bytes.data(), want);
  return t;
}

void to_proto(const Value& v, pb::StructuredValue* out, const std::string& what,
              const VariableId& ids) {
  switch (v.kind()) {
    case Value::Kind::kNone: out->mutable_none_value(); return;
    case Value::Kind::kBool: out->set_bool_value(v.as_bool()); return;
    case Value::Kind::kInt: out->set_int64_value(v.as_int()); return;
    case Value::Kind::kFloat: out->set_float64_value(v.as_float()); return;
    case Value::Kind::kString: out->set_string_value(v.as_string()); return;
    case Value::Kind::kSpec:
    case Value::Kind::kTensor: {
      pb::TensorSpecProto* s = out->mutable_tensor_spec_value();
      const DType dt = v.kind() == Value::Kind::kSpec ? v.spec().dtype : v.tensor().dtype();
      const Shape& sh = v.kind() == Value::Kind::kSpec ? v.spec().shape : v.tensor().shape();
      if (v.kind() == Value::Kind::kSpec) s->set_name(v.spec().name);
      s->set_dtype(to_proto(dt));
      to_proto(sh, s->mutable_shape());
      return;
    }
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      auto* l = v.kind() == Value::Kind::kList ? out->mutable_list_value()->mutable_values()
                                               : out->mutable_tuple_value()->mutable_values();
      for (const Value& x : v.items()) to_proto(x, l->Add(), what, ids);
      return;
    }
    case Value::Kind::kDict: {
      auto* f = out->mutable_dict_value()->mutable_fields();
      for (size_t k = 0; k < v.keys().size(); ++k)
        to_proto(v.items()[k], &(*f)[v.keys()[k]], what, ids);
      return;
    }
    case Value::Kind::kVariable: {
      if (!ids) break;
      const Variable& var = v.variable();
      pb::TypeSpecProto* t = out->mutable_type_spec_value();
      t->set_type_spec_class(pb::TypeSpecProto::VARIABLE_SPEC);
      t->set_type_spec_class_name("VariableSpec");
      t->set_num_flat_components(1);
      auto* state = t->mutable_type_state()->mutable_tuple_value()->mutable_values();
      to_proto(var.shape(), state->Add()->mutable_tensor_shape_value());
      state->Add()->set_tensor_dtype_value(to_proto(var.dtype()));
      state->Add()->set_bool_value(var.trainable());
      state->Add()->set_int64_value(ids(var));
      return;
    }
    case Value::Kind::kOpaque: break;
  }
  throw InvalidArgumentError(str_cat(what, " holds ", v.repr(),
                                     ", which cannot be saved (tensors, specs, variables, None, "
                                     "bool, int, float, str, lists, tuples and dicts can)"));
}

Value from_proto(const pb::StructuredValue& v, const std::string& where, const VariableOf& vars,
                 int depth) {
  if (depth > kMaxDepth)
    throw InvalidArgumentError(str_cat(where, ": a structure nests deeper than ", kMaxDepth));
  using K = pb::StructuredValue;
  switch (v.kind_case()) {
    case K::kNoneValue: return Value();
    case K::kBoolValue: return Value(v.bool_value());
    case K::kInt64Value: return Value(static_cast<int64_t>(v.int64_value()));
    case K::kFloat64Value: return Value(v.float64_value());
    case K::kStringValue: return Value(v.string_value());
    case K::kTensorSpecValue: {
      const auto& s = v.tensor_spec_value();
      return Value(ArgSpec{from_proto(s.dtype(), where), from_proto(s.shape(), where), s.name()});
    }
    case K::kTypeSpecValue: {
      const auto& t = v.type_spec_value();
      const auto& st = t.type_state().tuple_value().values();
      if (t.type_spec_class() != pb::TypeSpecProto::VARIABLE_SPEC || st.size() != 4 ||
          !st[3].has_int64_value() || !vars)
        throw InvalidArgumentError(str_cat(where, ": a type spec kiln does not read"));
      return Value(vars(st[3].int64_value()));
    }
    case K::kListValue:
    case K::kTupleValue: {
      const auto& vals =
          v.kind_case() == K::kListValue ? v.list_value().values() : v.tuple_value().values();
      std::vector<Value> items;
      for (const auto& x : vals) items.push_back(from_proto(x, where, vars, depth + 1));
      return v.kind_case() == K::kListValue ? Value::list(std::move(items))
                                            : Value::tuple(std::move(items));
    }
    case K::kDictValue: {
      std::vector<std::pair<std::string, Value>> items;
      for (const auto& [k, x] : v.dict_value().fields())
        items.emplace_back(k, from_proto(x, where, vars, depth + 1));
      return Value::dict(std::move(items));
    }
    default: break;
  }
  throw InvalidArgumentError(str_cat(where, ": a structured value of an unknown kind (",
                                     static_cast<int>(v.kind_case()), ")"));
}

std::string read_file(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) throw NotFoundError(str_cat(path, ": no such file"));
    throw DataLossError(str_cat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw DataLossError(str_cat(path, ": not a regular file"));
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    throw InvalidArgumentError(
        str_cat(path, ": ", st.st_size, " bytes is more than the limit of ", max_bytes));
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  if (!read_all(fd, bytes)) throw DataLossError(str_cat(path, ": read failed"));
  if (bytes.size() > max_bytes)  // grew while read
    throw InvalidArgumentError(str_cat(path, ": more than the limit of ", max_bytes, " bytes"));
  return bytes;
}

void write_file(const std::string& path, const std::string& bytes) {
  const std::string tmp = str_cat(path, ".tmp", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw FailedPreconditionError(str_cat(tmp, ": cannot create: ", std::strerror(errno)));
  int err = write_all(fd, bytes) && ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw FailedPreconditionError(str_cat(path, ": cannot write: ", std::strerror(err)));
  }
}

bool parse(google::protobuf::MessageLite& m, const std::string& bytes) {
  google::protobuf::LogSilencer quiet;
  return m.ParseFromString(bytes);
}

}  // namespace kiln::saved_model::detail
