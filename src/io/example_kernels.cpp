#include "example_kernels.h"

#include <algorithm>
#include <string>
#include <vector>

#include "example_wire.h"

namespace kiln::io {
namespace {

// The values of one dtype: float32, int64 or string (bytes viewed in place).
template <typename T>
struct Kind;
template <>
struct Kind<float> {
  using Elem = float;
  static constexpr FeatureKind kind = FeatureKind::kFloat;
  static bool append(const FeatureView& f, std::vector<Elem>* out) { return append_floats(f, out); }
};
template <>
struct Kind<int64_t> {
  using Elem = int64_t;
  static constexpr FeatureKind kind = FeatureKind::kInt64;
  static bool append(const FeatureView& f, std::vector<Elem>* out) { return append_int64s(f, out); }
};
template <>
struct Kind<std::string> {
  using Elem = std::string_view;
  static constexpr FeatureKind kind = FeatureKind::kBytes;
  static bool append(const FeatureView& f, std::vector<Elem>* out) { return append_bytes(f, out); }
};

std::string shape_text(std::span<const int64_t> dims, bool rows) {
  std::string s = rows ? "[?" : "[";
  for (size_t i = 0; i < dims.size(); ++i) s += str_cat(i || rows ? "," : "", dims[i]);
  return s + "]";
}

std::string escaped_prefix(std::string_view bytes) {
  std::string s;
  for (unsigned char ch : bytes.substr(0, 64)) {
    if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '\'')
      s += static_cast<char>(ch);
    else
      s += str_cat("\\", static_cast<int>(ch >> 6), static_cast<int>((ch >> 3) & 7),
                   static_cast<int>(ch & 7));
  }
  return bytes.size() > 64 ? s + "..." : s;
}

// Reads the feature of each serialized example in turn, with TensorFlow's
// messages for what goes wrong.
struct Examples {
  const std::string& key;
  const std::string* serialized;
  const std::string* names;
  int64_t count;
  FeatureView view;
  std::string error;

  explicit Examples(KernelContext& ctx)
      : key(ctx.attr_string("key")),
        serialized(ctx.input(0).data<std::string>()),
        names(ctx.input(1).data<std::string>()),
        count(ctx.input(0).num_elements()) {
    const int64_t n = ctx.input(1).num_elements();
    if (n != 0 && n != count)
      throw InvalidArgumentError(str_cat("Expected len(names) == len(serialized), got ", n,
                                         " names for ", count, " examples"));
    if (n == 0) names = nullptr;
  }
  std::string name(int64_t i) const { return names ? names[i] : std::string("<unknown>"); }
  std::string where(int64_t i) const {
    return str_cat("Name: ", name(i), ", Key: ", key, ", Index: ", i, ".  ");
  }
  // The feature of example i (view.kind kNone when absent or empty of a kind).
  const FeatureView& at(int64_t i) {
    if (!find_feature(serialized[i], key, &view, &error))
      throw InvalidArgumentError(str_cat("Name: ", name(i),
                                         ", Could not parse example input, value: '",
                                         escaped_prefix(serialized[i]), "'"));
    return view;
  }
};

template <typename T>
void dense(KernelContext& c, std::span<const int64_t> dims, bool variable_length) {
  using K = Kind<T>;
  Examples ex(c);
  const Tensor& def = c.input(2);
  int64_t stride = 1;
  for (int64_t d : dims) stride *= d;
  if (!variable_length && def.num_elements() != 0 && def.num_elements() != stride)
    c.fail("dense_default must hold ", stride, " values (the feature's shape) or none, got ",
           def.num_elements());
  if (variable_length && def.num_elements() > 1)
    c.fail("dense_default of a variable-length feature is one padding value, got ",
           def.num_elements());
  const char* want = kind_name(K::kind);
  std::vector<typename K::Elem> values;
  std::vector<int64_t> sizes(static_cast<size_t>(ex.count), -1);  // -1: use the default
  for (int64_t i = 0; i < ex.count; ++i) {
    const FeatureView& f = ex.at(i);
    if (f.kind == FeatureKind::kNone) {
      if (variable_length)
        sizes[i] = 0;
      else if (def.num_elements() == 0)
        throw InvalidArgumentError(str_cat("Name: ", ex.name(i), ", Feature: ", ex.key,
                                           " (data type: ", want,
                                           ") is required but could not be found."));
      continue;
    }
    if (f.kind != K::kind)
      throw InvalidArgumentError(str_cat(ex.where(i), "Data types don't match. Data type: ",
                                         kind_name(f.kind), " but expected type: ", want));
    const size_t before = values.size();
    if (!K::append(f, &values))
      throw InvalidArgumentError(
          str_cat(ex.where(i), "Can't parse serialized Example: the ", want, " list is malformed"));
    const auto n = static_cast<int64_t>(values.size() - before);
    if (!variable_length && n != stride)
      throw InvalidArgumentError(str_cat(ex.where(i), "Number of ", want,
                                         " values != expected.  Values size: ", n,
                                         " but output shape: ", shape_text(dims, false)));
    if (variable_length && (stride == 0 ? n != 0 : n % stride != 0))
      throw InvalidArgumentError(str_cat(ex.where(i), "Number of ", want,
                                         " values is not a multiple of stride length. Saw ", n,
                                         " values but output shape is: ", shape_text(dims, true)));
    sizes[i] = n;
  }
  int64_t rows = 0;
  if (variable_length)
    for (int64_t n : sizes) rows = std::max(rows, stride == 0 ? 0 : n / stride);
  const int64_t per_example = variable_length ? rows * stride : stride;
  std::vector<int64_t> shape;
  if (c.input(0).rank() == 1) shape.push_back(ex.count);
  if (variable_length) shape.push_back(rows);
  shape.insert(shape.end(), dims.begin(), dims.end());
  Tensor out = Tensor::empty(c.attr_dtype("Tdense"), Shape(shape));
  T* o = out.mutable_data<T>();
  const T* d = def.num_elements() ? def.data<T>() : nullptr;
  size_t next = 0;
  for (int64_t i = 0; i < ex.count; ++i, o += per_example) {
    const int64_t n = sizes[i] < 0 ? 0 : sizes[i];
    for (int64_t k = 0; k < n; ++k) o[k] = T(values[next + k]);
    next += static_cast<size_t>(n);
    if (sizes[i] < 0)
      std::copy(d, d + stride, o);  // the default example
    else
      std::fill(o + n, o + per_example, d ? d[0] : T{});  // padding rows
  }
  c.set_output(0, std::move(out));
}

template <typename T>
void varlen(KernelContext& c) {
  using K = Kind<T>;
  Examples ex(c);
  const char* want = kind_name(K::kind);
  std::vector<typename K::Elem> values;
  std::vector<int64_t> splits{0};
  for (int64_t i = 0; i < ex.count; ++i) {
    const FeatureView& f = ex.at(i);
    if (f.kind != FeatureKind::kNone && f.kind != K::kind)
      throw InvalidArgumentError(str_cat(ex.where(i), "Data types don't match. Expected type: ",
                                         want, ", Actual type: ", kind_name(f.kind)));
    if (f.kind != FeatureKind::kNone && !K::append(f, &values))
      throw InvalidArgumentError(
          str_cat(ex.where(i), "Can't parse serialized Example: the ", want, " list is malformed"));
    splits.push_back(static_cast<int64_t>(values.size()));
  }
  Tensor out = Tensor::empty(c.attr_dtype("dtype"), Shape{static_cast<int64_t>(values.size())});
  T* o = out.mutable_data<T>();
  for (size_t k = 0; k < values.size(); ++k) o[k] = T(values[k]);
  c.set_output(0, std::move(out));
  c.set_output(1, Tensor::from_vector(splits, Shape{static_cast<int64_t>(splits.size())}));
}

// One feature list of each serialized SequenceExample: the values of every
// step of every example, split per step and per example. A dense list
// (FixedLenSequenceFeature) needs dense_shape's count of values per step and,
// unless allow_missing, the list itself.
template <typename T>
void feature_list(KernelContext& c) {
  using K = Kind<T>;
  Examples ex(c);
  const char* want = kind_name(K::kind);
  const bool dense = c.attr_bool("dense");
  const std::vector<int64_t>& dims = c.attr_ints("dense_shape");
  int64_t stride = 1;
  for (int64_t d : dims) stride *= d;
  std::vector<typename K::Elem> values;
  std::vector<int64_t> value_splits{0}, step_splits{0};
  FeatureListView list;
  for (int64_t i = 0; i < ex.count; ++i) {
    if (!find_feature_list(ex.serialized[i], ex.key, &list))
      throw InvalidArgumentError(
          str_cat("Invalid protocol message input, example id: ", ex.name(i)));
    if (dense && !list.found && !c.attr_bool("allow_missing"))
      throw InvalidArgumentError(
          str_cat("Name: ", ex.name(i), ", Feature list '", ex.key,
                  "' is required but could not be found.  Did you mean to include it in "
                  "feature_list_dense_missing_assumed_empty or feature_list_dense_defaults?"));
    for (const FeatureView& step : list.steps) {
      if (step.kind != FeatureKind::kNone && step.kind != K::kind)
        throw InvalidArgumentError(str_cat("Name: ", ex.name(i), ", Feature list: ", ex.key,
                                           ", Index: ", i,
                                           ".  Data types don't match. Expected type: ", want));
      const size_t before = values.size();
      if (step.kind != FeatureKind::kNone && !K::append(step, &values))
        throw InvalidArgumentError(str_cat(ex.where(i),
                                           "Can't parse serialized SequenceExample: "
                                           "the ",
                                           want, " list is malformed"));
      const auto n = static_cast<int64_t>(values.size() - before);
      if (dense && n != stride)
        throw InvalidArgumentError(str_cat(ex.where(i),
                                           "Number of values != expected.  values size: ", n,
                                           " but output shape: ", shape_text(dims, false)));
      value_splits.push_back(static_cast<int64_t>(values.size()));
    }
    step_splits.push_back(static_cast<int64_t>(value_splits.size()) - 1);
  }
  Tensor out = Tensor::empty(c.attr_dtype("dtype"), Shape{static_cast<int64_t>(values.size())});
  T* o = out.mutable_data<T>();
  for (size_t k = 0; k < values.size(); ++k) o[k] = T(values[k]);
  c.set_output(0, std::move(out));
  c.set_output(1,
               Tensor::from_vector(value_splits, Shape{static_cast<int64_t>(value_splits.size())}));
  c.set_output(2,
               Tensor::from_vector(step_splits, Shape{static_cast<int64_t>(step_splits.size())}));
}

void feature_list_kernel(KernelContext& c) {
  switch (c.attr_dtype("dtype")) {
    case DType::kFloat32: return feature_list<float>(c);
    case DType::kInt64: return feature_list<int64_t>(c);
    default: return feature_list<std::string>(c);
  }
}

void dense_kernel(KernelContext& c) {
  const std::vector<int64_t>& dims = c.attr_ints("dense_shape");
  const bool rows = c.attr_bool("variable_length");
  switch (c.attr_dtype("Tdense")) {
    case DType::kFloat32: return dense<float>(c, dims, rows);
    case DType::kInt64: return dense<int64_t>(c, dims, rows);
    default: return dense<std::string>(c, dims, rows);
  }
}

void varlen_kernel(KernelContext& c) {
  switch (c.attr_dtype("dtype")) {
    case DType::kFloat32: return varlen<float>(c);
    case DType::kInt64: return varlen<int64_t>(c);
    default: return varlen<std::string>(c);
  }
}

}  // namespace

void bind_example_kernels(OpTableBuilder& t) {
  t.kernel(OpId::ParseExampleDense, dense_kernel);
  t.kernel(OpId::ParseExampleVarLen, varlen_kernel);
  t.kernel(OpId::ParseSequenceFeatureList, feature_list_kernel);
}

}  // namespace kiln::io
