// Predict JSON <-> tensors (convert.h). The request is parsed by simdjson's
// DOM parser (depth-limited, non-recursive); walking a value recurses only
// as deep as the tensor's rank, which that limit bounds.
#include "convert.h"

#include <simdjson.h>

#include <limits>
#include <mutex>

#include "json.h"
#include "kiln/half.h"
#include "kiln/status.h"

namespace kiln::serve {

using simdjson::dom::element;

namespace {

// Parsers kept between requests: a parser's buffers grow to the largest body
// it has parsed, and allocating (and faulting in) them per request cost a
// 3 MB body about as much as parsing it. Parsers that grew past kKeepBytes
// are freed rather than kept.
class ParserPool {
 public:
  static constexpr size_t kKeep = 64;
  static constexpr size_t kKeepBytes = size_t{16} << 20;

  std::unique_ptr<simdjson::dom::parser> acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return std::make_unique<simdjson::dom::parser>();
    auto p = std::move(free_.back());
    free_.pop_back();
    return p;
  }
  void release(std::unique_ptr<simdjson::dom::parser> p) {
    if (!p || p->capacity() > kKeepBytes) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kKeep) free_.push_back(std::move(p));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<simdjson::dom::parser>> free_;
};

ParserPool& parser_pool() {
  static auto* pool = new ParserPool;  // never destroyed: requests may outlive statics
  return *pool;
}

}  // namespace

struct PredictRequest::Impl {
  std::unique_ptr<simdjson::dom::parser> parser = parser_pool().acquire();
  element data;  // the value of "instances" or "inputs"
  ~Impl() { parser_pool().release(std::move(parser)); }
};

PredictRequest::PredictRequest() : impl_(std::make_unique<Impl>()) {}
PredictRequest::~PredictRequest() = default;

namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw InvalidArgumentError(msg);
}

std::string json_error(simdjson::error_code e) {
  if (e == simdjson::DEPTH_ERROR)
    return "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  return std::string("malformed JSON: ") + simdjson::error_message(e);
}

// {"b64": "..."}: a string tensor's bytes.
bool is_b64(element e) {
  simdjson::dom::object o;
  return !e.get_object().get(o) && o.size() == 1 && !o["b64"].error();
}

// The dims of a nested list, read along its first elements.
std::vector<int64_t> infer_dims(element e) {
  std::vector<int64_t> dims;
  simdjson::dom::array a;
  while (!e.get_array().get(a)) {
    dims.push_back(static_cast<int64_t>(a.size()));
    if (a.size() == 0) break;
    e = a.at(0).value_unsafe();
  }
  return dims;
}

// Leaf converters: a JSON value as one element of the tensor's dtype.
template <typename T>
T int_leaf(element e, const std::string& name) {
  int64_t v = 0;
  if (e.get_int64().get(v) || v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      v > static_cast<int64_t>(std::numeric_limits<T>::max()))
    invalid("input '" + name + "': expected integers that fit its dtype, got " +
            simdjson::to_string(e).substr(0, 64));
  return static_cast<T>(v);
}

double number_leaf(element e, const std::string& name) {
  double v = 0;
  if (e.get_double().get(v))
    invalid("input '" + name + "': expected numbers, got " + simdjson::to_string(e).substr(0, 64));
  return v;
}

std::string string_leaf(element e, const std::string& name) {
  std::string_view s;
  if (!e.get_string().get(s)) return std::string(s);
  if (is_b64(e) && !e["b64"].get_string().get(s)) {
    if (auto bytes = base64_decode(s)) return std::move(*bytes);
    invalid("input '" + name + "': invalid base64 in {\"b64\": ...}");
  }
  invalid("input '" + name + "': expected strings or {\"b64\": \"...\"}");
}

uint8_t bool_leaf(element e, const std::string& name) {
  bool b = false;
  if (e.get_bool().get(b)) invalid("input '" + name + "': expected true or false");
  return b;
}

// Appends the leaves of `e`, checked against `dims` from `level` on.
template <typename S, typename Leaf>
void collect(element e, const std::vector<int64_t>& dims, size_t level, std::vector<S>& out,
             const std::string& name, const Leaf& leaf) {
  simdjson::dom::array a;
  const bool is_array = !e.get_array().get(a);
  if (level == dims.size()) {
    if (is_array)
      invalid("input '" + name + "': ragged or mixed nesting (a list where a value was expected)");
    out.push_back(leaf(e, name));
    return;
  }
  if (!is_array || static_cast<int64_t>(a.size()) != dims[level])
    invalid("input '" + name + "': ragged lists (dimension " + std::to_string(level) +
            " should have " + std::to_string(dims[level]) + " elements)");
  for (element c : a) collect(c, dims, level + 1, out, name, leaf);
}

// A tensor from `items` (stacked as rows when `stacked`, else the one value).
template <typename S, typename T = S, typename Leaf>
Tensor build(const std::vector<element>& items, bool stacked, const TensorInfo& info,
             const Leaf& leaf) {
  std::vector<int64_t> dims = infer_dims(items[0]);
  std::vector<S> flat;
  for (element e : items) collect(e, dims, 0, flat, info.name, leaf);
  if (stacked) dims.insert(dims.begin(), static_cast<int64_t>(items.size()));
  Tensor t = Tensor::empty(dtype_v<T>, Shape(dims));
  T* p = t.mutable_data<T>();
  for (size_t i = 0; i < flat.size(); ++i) p[i] = static_cast<T>(flat[i]);
  return t;
}

Tensor to_tensor(const std::vector<element>& items, bool stacked, const TensorInfo& info) {
  auto f64 = [](element e, const std::string& n) { return number_leaf(e, n); };
  switch (info.dtype) {
    case DType::kFloat32: return build<double, float>(items, stacked, info, f64);
    case DType::kFloat64: return build<double>(items, stacked, info, f64);
    case DType::kInt32: return build<int32_t>(items, stacked, info, int_leaf<int32_t>);
    case DType::kInt64: return build<int64_t>(items, stacked, info, int_leaf<int64_t>);
    case DType::kInt8: return build<int8_t>(items, stacked, info, int_leaf<int8_t>);
    case DType::kUInt8: return build<uint8_t>(items, stacked, info, int_leaf<uint8_t>);
    case DType::kBool: return build<uint8_t, bool>(items, stacked, info, bool_leaf);
    case DType::kString: return build<std::string>(items, stacked, info, string_leaf);
    case DType::kFloat16:
      return build<Half>(items, stacked, info, [](element e, const std::string& n) {
        return to_half(static_cast<float>(number_leaf(e, n)));
      });
    case DType::kBFloat16:
      return build<BFloat16>(items, stacked, info, [](element e, const std::string& n) {
        return to_bfloat16(static_cast<float>(number_leaf(e, n)));
      });
    default: break;
  }
  invalid("input '" + info.name + "' has dtype " + std::string(dtype_name(info.dtype)) +
          ", which JSON requests cannot carry");
}

std::string names_of(const std::vector<TensorInfo>& inputs) {
  std::string s;
  for (const auto& i : inputs) s += (s.empty() ? "'" : ", '") + i.name + "'";
  return s;
}

// An object's members must be exactly the signature's inputs.
void check_keys(simdjson::dom::object o, const std::vector<TensorInfo>& inputs,
                const std::string& where) {
  for (auto [k, v] : o) {
    bool known = false;
    for (const auto& i : inputs) known = known || i.name == k;
    if (!known)
      invalid(where + " names '" + std::string(k.substr(0, 64)) +
              "', which is not an input of the signature (" + names_of(inputs) + ")");
  }
  for (const auto& i : inputs)
    if (o[i.name].error()) invalid(where + " is missing input '" + i.name + "'");
}

}  // namespace

void PredictRequest::parse(std::string_view body) {
  auto& p = *impl_->parser;
  if (p.capacity() < body.size() || p.max_depth() != kMaxJsonDepth) {
    if (p.allocate(std::max<size_t>(body.size(), 64), kMaxJsonDepth))
      invalid("request body too large to parse");
  }
  element root;
  if (auto err = p.parse(body.data(), body.size()).get(root)) invalid(json_error(err));
  simdjson::dom::object o;
  if (root.get_object().get(o)) invalid("the request body must be a JSON object");
  element sig, instances, inputs;
  if (!o["signature_name"].get(sig)) {
    std::string_view s;
    if (sig.get_string().get(s)) invalid("'signature_name' must be a string");
    signature_ = std::string(s);
  }
  const bool has_rows = !o["instances"].get(instances), has_cols = !o["inputs"].get(inputs);
  if (has_rows == has_cols)
    invalid(has_rows ? "give one of 'instances' and 'inputs', not both"
                     : "missing 'instances' or 'inputs' key");
  rows_ = has_rows;
  impl_->data = has_rows ? instances : inputs;
}

std::map<std::string, Tensor> PredictRequest::tensors(const std::vector<TensorInfo>& inputs) const {
  std::map<std::string, Tensor> out;
  if (inputs.empty()) invalid("the signature takes no inputs");
  const element data = impl_->data;
  simdjson::dom::object obj;
  if (!rows_) {
    if (data.get_object().get(obj) || is_b64(data)) {
      if (inputs.size() != 1) invalid("'inputs' must be an object naming " + names_of(inputs));
      out[inputs[0].name] = to_tensor({data}, false, inputs[0]);
      return out;
    }
    check_keys(obj, inputs, "'inputs'");
    for (const auto& i : inputs) out[i.name] = to_tensor({obj[i.name].value_unsafe()}, false, i);
    return out;
  }
  simdjson::dom::array rows;
  if (data.get_array().get(rows)) invalid("'instances' must be a list");
  if (rows.size() == 0) invalid("'instances' is empty");
  const element first = rows.at(0).value_unsafe();
  const bool named = first.is_object() && !is_b64(first);
  if (!named && inputs.size() != 1)
    invalid("each instance must be an object naming " + names_of(inputs));
  std::vector<std::vector<element>> columns(inputs.size());
  size_t r = 0;
  for (element row : rows) {
    const std::string where = "instance " + std::to_string(r++);
    if (!named) {
      columns[0].push_back(row);
      continue;
    }
    if (row.get_object().get(obj) || is_b64(row))
      invalid(where + " is not an object like instance 0");
    check_keys(obj, inputs, where);
    for (size_t i = 0; i < inputs.size(); ++i)
      columns[i].push_back(obj[inputs[i].name].value_unsafe());
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    out[inputs[i].name] = to_tensor(columns[i], true, inputs[i]);
  return out;
}

namespace {

// Writes elements [begin, begin + count) of `t` nested per dims[level:].
template <typename Elem>
void write_nested(JsonWriter& w, std::span<const int64_t> dims, size_t level, int64_t begin,
                  const Elem& elem) {
  if (level == dims.size()) return elem(begin);
  int64_t stride = 1;
  for (size_t k = level + 1; k < dims.size(); ++k) stride *= dims[k];
  w.begin_array();
  for (int64_t i = 0; i < dims[level]; ++i)
    write_nested(w, dims, level + 1, begin + i * stride, elem);
  w.end_array();
}

// Calls `fn(elem)` with the element writer for t's dtype.
template <typename Fn>
void with_writer(JsonWriter& w, const Tensor& t, const std::string& name, const Fn& fn) {
  switch (t.dtype()) {
    case DType::kFloat32: return fn([&, p = t.data<float>()](int64_t i) { w.float32(p[i]); });
    case DType::kFloat64: return fn([&, p = t.data<double>()](int64_t i) { w.float64(p[i]); });
    case DType::kInt32: return fn([&, p = t.data<int32_t>()](int64_t i) { w.int64(p[i]); });
    case DType::kInt64: return fn([&, p = t.data<int64_t>()](int64_t i) { w.int64(p[i]); });
    case DType::kInt8: return fn([&, p = t.data<int8_t>()](int64_t i) { w.int64(p[i]); });
    case DType::kUInt8: return fn([&, p = t.data<uint8_t>()](int64_t i) { w.int64(p[i]); });
    case DType::kBool: return fn([&, p = t.data<bool>()](int64_t i) { w.boolean(p[i]); });
    case DType::kFloat16:
      return fn([&, p = t.data<Half>()](int64_t i) { w.float32(to_float(p[i])); });
    case DType::kBFloat16:
      return fn([&, p = t.data<BFloat16>()](int64_t i) { w.float32(to_float(p[i])); });
    case DType::kString: {
      const bool bytes = name.size() >= 6 && name.compare(name.size() - 6, 6, "_bytes") == 0;
      return fn([&, bytes, p = t.data<std::string>()](int64_t i) {
        if (!bytes && valid_utf8(p[i])) return void(w.string(p[i]));
        w.begin_object().key("b64").string(base64_encode(p[i])).end_object();
      });
    }
    default: break;
  }
  throw UnimplementedError("output '" + name + "' has dtype " + std::string(dtype_name(t.dtype())) +
                           ", which kiln-serve cannot write as JSON");
}

void write_tensor(JsonWriter& w, const Tensor& t, const std::string& name) {
  with_writer(w, t, name, [&](const auto& elem) { write_nested(w, t.shape().dims(), 0, 0, elem); });
}

// Row `r` of t (dims after the first).
void write_row(JsonWriter& w, const Tensor& t, const std::string& name, int64_t r) {
  auto dims = t.shape().dims().subspan(1);
  int64_t stride = 1;
  for (int64_t d : dims) stride *= d;
  with_writer(w, t, name, [&](const auto& elem) { write_nested(w, dims, 0, r * stride, elem); });
}

void write_rows(JsonWriter& w, const std::map<std::string, Tensor>& outputs,
                const std::vector<std::string>& order) {
  int64_t n = -1;
  for (const auto& k : order) {
    const Tensor& t = outputs.at(k);
    if (t.rank() < 1)
      invalid("output '" + k +
              "' is a scalar, which has no rows: send \"inputs\" instead of \"instances\"");
    if (n >= 0 && t.dim(0) != n)
      invalid("outputs have different batch sizes ('" + k + "' has " + std::to_string(t.dim(0)) +
              " rows, not " + std::to_string(n) + "): send \"inputs\" instead of \"instances\"");
    n = t.dim(0);
  }
  w.key("predictions").begin_array();
  for (int64_t r = 0; r < n; ++r) {
    if (order.size() == 1) {
      write_row(w, outputs.at(order[0]), order[0], r);
      continue;
    }
    w.begin_object();
    for (const auto& k : order) write_row(w.key(k), outputs.at(k), k, r);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string predict_response(const std::map<std::string, Tensor>& outputs,
                             const std::vector<std::string>& order, bool row_format) {
  JsonWriter w;
  w.begin_object();
  if (row_format) {
    write_rows(w, outputs, order);
  } else if (order.size() == 1) {
    write_tensor(w.key("outputs"), outputs.at(order[0]), order[0]);
  } else {
    w.key("outputs").begin_object();
    for (const auto& k : order) write_tensor(w.key(k), outputs.at(k), k);
    w.end_object();
  }
  w.end_object();
  return w.take();
}

std::string tf_dtype_name(DType d) {
  switch (d) {
    case DType::kFloat32: return "DT_FLOAT";
    case DType::kFloat64: return "DT_DOUBLE";
    case DType::kInt32: return "DT_INT32";
    case DType::kInt64: return "DT_INT64";
    case DType::kInt8: return "DT_INT8";
    case DType::kUInt8: return "DT_UINT8";
    case DType::kBool: return "DT_BOOL";
    case DType::kString: return "DT_STRING";
    case DType::kFloat16: return "DT_HALF";
    case DType::kBFloat16: return "DT_BFLOAT16";
    case DType::kComplex64: return "DT_COMPLEX64";
    case DType::kComplex128: return "DT_COMPLEX128";
    case DType::kResource: return "DT_RESOURCE";
    default: return "DT_INVALID";
  }
}

}  // namespace kiln::serve
