#include "signature.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

namespace kiln::detail {
namespace {

enum Code : int64_t {
  kTensorCode = 1,
  kVariableCode,
  kIntCode,
  kFloatCode,
  kStringCode,
  kNoneCode,
  kListCode,
  kTupleCode,
  kDictCode,
  kOpaqueCode
};

template <typename K>
void push_string(K& k, const std::string& s) {
  k.push_back(static_cast<int64_t>(s.size()));
  for (size_t i = 0; i < s.size(); i += 8) {
    int64_t w = 0;
    std::memcpy(&w, s.data() + i, std::min<size_t>(8, s.size() - i));
    k.push_back(w);
  }
}

template <typename K>
void push_tensor_key(K& k, DType dt, const Shape& shape) {
  k.push_back(kTensorCode);
  k.push_back(static_cast<int64_t>(dt));
  k.push_back(shape.rank());
  for (int64_t d : shape.dims()) k.push_back(d);
}

std::string tensor_desc(DType dt, const Shape& s) {
  return str_cat(dtype_name(dt), s.debug_string());
}

// One walk for both uses. Describe: fill every field of `f` (key, structure,
// specs, leaves, tensors). Otherwise only `key` and `tensors` (the cache-hit
// path: no strings built, `path` and `f` unused).
template <bool Describe, typename K, typename T>
void walk(const Value& v, const std::string& path, K& key, T& tensors, Flat* f) {
  auto both = [&](int64_t x) {
    key.push_back(x);
    if constexpr (Describe) f->structure.push_back(x);
  };
  switch (v.kind()) {
    case Value::Kind::kTensor:
    case Value::Kind::kSpec: {
      DType dt;
      const Shape* shape;
      if (v.kind() == Value::Kind::kTensor) {
        const Tensor& t = v.tensor();
        dt = t.dtype();
        shape = &t.shape();
        if (dt == DType::kResource) {
          if constexpr (!Describe) {  // never cached: the slow path reports it
            key.push_back(-1);
            return;
          }
          throw InvalidArgumentError(str_cat(path, ": pass the Variable itself, not its handle"));
        }
        tensors.push_back(t);
      } else {
        dt = v.spec().dtype;
        shape = &v.spec().shape;
      }
      push_tensor_key(key, dt, *shape);
      if constexpr (Describe) {
        f->structure.push_back(kTensorCode);
        f->structure.push_back(static_cast<int64_t>(dt));
        ArgSpec spec{dt, *shape, v.kind() == Value::Kind::kSpec ? v.spec().name : std::string()};
        f->specs.push_back(std::move(spec));
        f->leaves.push_back({path, tensor_desc(dt, *shape), true, "Tensor"});
      }
      return;
    }
    case Value::Kind::kVariable:
      both(kVariableCode);
      both(v.variable().id());
      if constexpr (Describe)
        f->leaves.push_back({path, str_cat("'", v.variable().name(), "'"), false, "Variable"});
      return;
    // Python numbers key by value, as TensorFlow's Literal types compare with
    // ==: 1, 1.0 and True share a trace.
    case Value::Kind::kBool:
      both(kIntCode);
      both(v.as_bool());
      break;
    case Value::Kind::kInt:
      both(kIntCode);
      both(v.as_int());
      break;
    case Value::Kind::kFloat: {
      const double d = v.as_float();
      if (d == std::trunc(d) && d >= -0x1p63 && d < 0x1p63) {
        both(kIntCode);
        both(static_cast<int64_t>(d));
        break;
      }
      both(kFloatCode);
      int64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      both(bits);
      break;
    }
    case Value::Kind::kString:
      both(kStringCode);
      push_string(key, v.as_string());
      if constexpr (Describe) push_string(f->structure, v.as_string());
      break;
    case Value::Kind::kNone: both(kNoneCode); break;
    case Value::Kind::kOpaque:
      both(kOpaqueCode);
      both(static_cast<int64_t>(v.opaque_id()));
      break;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
    case Value::Kind::kDict: {
      const bool dict = v.kind() == Value::Kind::kDict;
      both(dict ? kDictCode : v.kind() == Value::Kind::kList ? kListCode : kTupleCode);
      both(static_cast<int64_t>(v.items().size()));
      if (dict)
        for (const std::string& k : v.keys()) {
          push_string(key, k);
          if constexpr (Describe) push_string(f->structure, k);
        }
      for (size_t i = 0; i < v.items().size(); ++i) {
        if constexpr (Describe)
          walk<true>(v.items()[i],
                     dict ? str_cat(path, "['", v.keys()[i], "']") : str_cat(path, "[", i, "]"),
                     key, tensors, f);
        else
          walk<false>(v.items()[i], path, key, tensors, f);
      }
      return;
    }
  }
  if constexpr (Describe) {
    const char* kind = "object";
    switch (v.kind()) {
      case Value::Kind::kBool: kind = "bool"; break;
      case Value::Kind::kInt: kind = "int"; break;
      case Value::Kind::kFloat: kind = "float"; break;
      case Value::Kind::kString: kind = "str"; break;
      case Value::Kind::kNone: kind = "NoneType"; break;
      default: break;
    }
    f->leaves.push_back({path, v.repr(), false, kind});
  }
}

}  // namespace

Flat flatten_args(const std::vector<Value>& args, const std::vector<std::string>& names) {
  Flat f;
  f.key.push_back(static_cast<int64_t>(args.size()));
  f.structure.push_back(static_cast<int64_t>(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    walk<true>(args[i], i < names.size() ? names[i] : str_cat("args_", i), f.key, f.tensors, &f);
  return f;
}

void flatten_key(const std::vector<Value>& args, KeyBuf& key, LeafTensors& tensors) {
  key.push_back(static_cast<int64_t>(args.size()));
  static const std::string kNoPath;
  for (const Value& a : args) walk<false>(a, kNoPath, key, tensors, nullptr);
}

void flatten_key(std::span<const Tensor> args, KeyBuf& key) {
  key.push_back(static_cast<int64_t>(args.size()));
  for (const Tensor& t : args) {
    if (t.dtype() == DType::kResource)
      key.push_back(-1);  // as above: the slow path reports it
    else
      push_tensor_key(key, t.dtype(), t.shape());
  }
}

std::string placeholder_name(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "arg" : out;
}

bool has_variable(const Value& v) {
  if (v.kind() == Value::Kind::kVariable) return true;
  if (v.kind() != Value::Kind::kList && v.kind() != Value::Kind::kTuple &&
      v.kind() != Value::Kind::kDict)
    return false;
  return std::any_of(v.items().begin(), v.items().end(), has_variable);
}

namespace {
// v with each variable read.
Value read_variables(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kVariable: return Value(v.variable().read_value());
    case Value::Kind::kList:
    case Value::Kind::kTuple:
    case Value::Kind::kDict: {
      std::vector<Value> items;
      for (const Value& x : v.items()) items.push_back(read_variables(x));
      return v.with_items(std::move(items));
    }
    default: return v;
  }
}

}  // namespace

std::vector<Value> read_signature_variables(const std::vector<Value>& args) {
  if (!std::any_of(args.begin(), args.end(), has_variable)) return args;
  std::vector<Value> out;
  for (const Value& a : args) out.push_back(read_variables(a));
  return out;
}

}  // namespace kiln::detail
