#include "signature.h"

#include <cctype>
#include <cstring>

namespace kiln::detail {
namespace {

enum Code : int64_t {
  kTensorCode = 1,
  kVariableCode,
  kBoolCode,
  kIntCode,
  kFloatCode,
  kStringCode,
  kNoneCode,
  kListCode,
  kTupleCode,
  kDictCode,
  kOpaqueCode
};

void push_string(std::vector<int64_t>& k, const std::string& s) {
  k.push_back(static_cast<int64_t>(s.size()));
  for (size_t i = 0; i < s.size(); i += 8) {
    int64_t w = 0;
    std::memcpy(&w, s.data() + i, std::min<size_t>(8, s.size() - i));
    k.push_back(w);
  }
}

std::string tensor_desc(DType dt, const Shape& s) {
  return str_cat(dtype_name(dt), s.debug_string());
}

// With describe == false only `key` and `tensors` are filled (the cache-hit
// path: no strings built); `path` is then ignored.
void walk(const Value& v, const std::string& path, Flat& f, bool describe) {
  auto both = [&](int64_t x) {
    f.key.push_back(x);
    if (describe) f.structure.push_back(x);
  };
  switch (v.kind()) {
    case Value::Kind::kTensor:
    case Value::Kind::kSpec: {
      DType dt;
      Shape shape;
      if (v.kind() == Value::Kind::kTensor) {
        const Tensor& t = v.tensor();
        dt = t.dtype();
        if (!describe) {                 // no Shape copy on the hit path
          if (dt == DType::kResource) {  // never cached: the slow path reports it
            f.key.push_back(-1);
            return;
          }
          f.tensors.push_back(t);
          both(kTensorCode);
          both(static_cast<int64_t>(dt));
          f.key.push_back(t.shape().rank());
          for (int64_t d : t.shape().dims()) f.key.push_back(d);
          return;
        }
        shape = t.shape();
        f.tensors.push_back(t);
        if (dt == DType::kResource)
          throw InvalidArgumentError(str_cat(path, ": pass the Variable itself, not its handle"));
      } else {
        dt = v.spec().dtype;
        shape = v.spec().shape;
      }
      both(kTensorCode);
      both(static_cast<int64_t>(dt));
      f.key.push_back(shape.rank());
      for (int64_t d : shape.dims()) f.key.push_back(d);
      if (!describe) return;
      ArgSpec spec{dt, shape, v.kind() == Value::Kind::kSpec ? v.spec().name : std::string()};
      f.specs.push_back(std::move(spec));
      f.leaves.push_back({path, tensor_desc(dt, shape), true, "Tensor"});
      return;
    }
    case Value::Kind::kVariable:
      both(kVariableCode);
      both(v.variable().id());
      if (describe)
        f.leaves.push_back({path, str_cat("'", v.variable().name(), "'"), false, "Variable"});
      return;
    case Value::Kind::kBool:
      both(kBoolCode);
      both(v.as_bool());
      break;
    case Value::Kind::kInt:
      both(kIntCode);
      both(v.as_int());
      break;
    case Value::Kind::kFloat: {
      both(kFloatCode);
      int64_t bits;
      double d = v.as_float();
      std::memcpy(&bits, &d, sizeof bits);
      both(bits);
      break;
    }
    case Value::Kind::kString:
      both(kStringCode);
      push_string(f.key, v.as_string());
      if (describe) push_string(f.structure, v.as_string());
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
          push_string(f.key, k);
          if (describe) push_string(f.structure, k);
        }
      for (size_t i = 0; i < v.items().size(); ++i)
        walk(v.items()[i],
             !describe ? path
             : dict    ? str_cat(path, "['", v.keys()[i], "']")
                       : str_cat(path, "[", i, "]"),
             f, describe);
      return;
    }
  }
  if (!describe) return;
  const char* kind = "object";
  switch (v.kind()) {
    case Value::Kind::kBool: kind = "bool"; break;
    case Value::Kind::kInt: kind = "int"; break;
    case Value::Kind::kFloat: kind = "float"; break;
    case Value::Kind::kString: kind = "str"; break;
    case Value::Kind::kNone: kind = "NoneType"; break;
    default: break;
  }
  f.leaves.push_back({path, v.repr(), false, kind});
}

}  // namespace

Flat flatten_args(const std::vector<Value>& args, const std::vector<std::string>& names) {
  Flat f;
  f.key.push_back(static_cast<int64_t>(args.size()));
  f.structure.push_back(static_cast<int64_t>(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    walk(args[i], i < names.size() ? names[i] : str_cat("args_", i), f, true);
  return f;
}

void flatten_key(const std::vector<Value>& args, Flat& f) {
  f.key.clear();
  f.tensors.clear();
  f.key.push_back(static_cast<int64_t>(args.size()));
  static const std::string kNoPath;
  for (const Value& a : args) walk(a, kNoPath, f, false);
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

}  // namespace kiln::detail
