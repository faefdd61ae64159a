// Creation ops: Const, Fill, ZerosLike, OnesLike, Range, RandomUniform,
// RandomNormal, Identity — definitions, inference, front functions.
#include "kiln/ops/creation.h"

#include <cmath>
#include <limits>

#include "families.h"
#include "front_util.h"
#include "grad_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops/reduce.h"
#include "onnx_export.h"

namespace kiln {
namespace {

bool is_range_dtype(DType dt) {
  return dt == DType::kInt32 || dt == DType::kInt64 || dt == DType::kFloat32 ||
         dt == DType::kFloat64;
}

void expect_scalar(const InferContext& c, size_t i) {
  const Shape& s = c.shape(i);
  if (s.rank_known() && s.rank() != 0)
    c.fail(c.input_name(i), " must be a scalar, got shape ", s.to_string());
}

// The shape given by a dims input: 1-D int32/int64, non-negative, with a
// representable element count. Unknown values give unknown dims.
Shape shape_from_dims_input(const InferContext& c, size_t i) {
  const std::string name = c.input_name(i);
  const DType dt = c.dtype(i);
  if (dt != DType::kInt32 && dt != DType::kInt64)
    c.fail(name, " must be an int32 or int64 tensor, got ", dtype_name(dt));
  const Shape& s = c.shape(i);
  if (s.rank_known() && s.rank() != 1) c.fail(name, " must be 1-D, got shape ", s.to_string());
  std::vector<int64_t> v;
  if (c.int_values(i, v)) {
    int64_t n = 1;
    for (size_t k = 0; k < v.size(); ++k) {
      if (v[k] < 0) c.fail(name, "[", k, "] = ", v[k], " must be non-negative");
      if (__builtin_mul_overflow(n, v[k], &n))
        c.fail(name, " ", Shape(v).to_string(), " has too many elements (int64 overflow)");
    }
    return Shape(v);
  }
  if (s.rank_known() && s.dim(0) >= 0)
    return Shape(std::vector<int64_t>(static_cast<size_t>(s.dim(0)), Shape::kUnknownDim));
  return Shape::unknown_rank();
}

// The value rides in the `value` attr (a graph's captured constants).
void infer_const(InferContext& c) {
  const Tensor& v = c.attr_tensor("value");
  if (!v.defined() || v.is_symbolic()) c.fail("value must be a concrete tensor");
  c.set_output(0, v.dtype(), v.shape());
}

void infer_fill(InferContext& c) {
  Shape out = shape_from_dims_input(c, 0);
  expect_scalar(c, 1);
  const DType dt = c.dtype(1);
  if (dt == DType::kResource) c.fail("value cannot be a resource");
  c.set_output(0, dt, std::move(out));
}

template <bool kOnes>
void infer_like(InferContext& c) {
  const DType dt = c.dtype(0);
  if (dt == DType::kResource || (kOnes && dt == DType::kString))
    c.fail("unsupported dtype ", dtype_name(dt), " for x");
  c.set_output(0, dt, c.shape(0));
}

// Number of elements of range(start, limit, delta); validates the values.
template <typename T>
int64_t range_size(const InferContext& c, T start, T limit, T delta) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
      c.fail("start, limit and delta must be finite, got ", start, ", ", limit, ", ", delta);
  }
  if (delta == 0) c.fail("delta must be nonzero");
  if (delta > 0 && start > limit)
    c.fail("requires start <= limit when delta > 0, got start = ", start, ", limit = ", limit);
  if (delta < 0 && start < limit)
    c.fail("requires start >= limit when delta < 0, got start = ", start, ", limit = ", limit);
  if constexpr (std::is_floating_point_v<T>) {
    const T q = std::ceil(std::abs((limit - start) / delta));
    if (!(q < static_cast<T>(std::numeric_limits<int64_t>::max())))
      c.fail("range of ", q, " elements is too large");
    return static_cast<int64_t>(q);
  } else {
    // Unsigned arithmetic: limit - start may not fit in T.
    const uint64_t span = delta > 0 ? static_cast<uint64_t>(limit) - static_cast<uint64_t>(start)
                                    : static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
    const uint64_t step =
        delta > 0 ? static_cast<uint64_t>(delta) : uint64_t{0} - static_cast<uint64_t>(delta);
    const uint64_t n = span / step + (span % step != 0 ? 1 : 0);
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      c.fail("range of ", n, " elements is too large");
    return static_cast<int64_t>(n);
  }
}

template <typename T>
int64_t range_size_of(const InferContext& c) {
  return range_size<T>(c, c.value(0)->item<T>(), c.value(1)->item<T>(), c.value(2)->item<T>());
}

void infer_range(InferContext& c) {
  for (size_t i = 0; i < 3; ++i) expect_scalar(c, i);
  c.expect_same_dtype(0, 1);
  c.expect_same_dtype(0, 2);
  const DType dt = c.dtype(0);
  if (!is_range_dtype(dt))
    c.fail("start, limit and delta must be int32, int64, float32 or float64, got ", dtype_name(dt));
  int64_t n = Shape::kUnknownDim;
  if (c.value(0) && c.value(1) && c.value(2)) {
    switch (dt) {
      case DType::kInt32: n = range_size_of<int32_t>(c); break;
      case DType::kInt64: n = range_size_of<int64_t>(c); break;
      case DType::kFloat32: n = range_size_of<float>(c); break;
      default: n = range_size_of<double>(c); break;
    }
  }
  c.set_output(0, dt, Shape{n});
}

template <typename T>
void check_int_bounds(const InferContext& c) {
  const T lo = c.value(1)->item<T>(), hi = c.value(2)->item<T>();
  if (!(lo < hi))
    c.fail("integer uniform values need minval < maxval, got minval = ", lo, ", maxval = ", hi);
}

void infer_random_uniform(InferContext& c) {
  Shape out = shape_from_dims_input(c, 0);
  expect_scalar(c, 1);
  expect_scalar(c, 2);
  c.expect_same_dtype(1, 2);
  const DType dt = c.dtype(1);
  if (!is_range_dtype(dt))
    c.fail("minval and maxval must be float32, float64, int32 or int64, got ", dtype_name(dt));
  const int64_t seed = c.attr_int("seed");
  if (seed < -1) c.fail("seed must be -1 (none) or non-negative, got ", seed);
  if (c.value(1) && c.value(2)) {
    if (dt == DType::kInt32) check_int_bounds<int32_t>(c);
    if (dt == DType::kInt64) check_int_bounds<int64_t>(c);
  }
  c.set_output(0, dt, std::move(out));
}

void infer_random_normal(InferContext& c) {
  Shape out = shape_from_dims_input(c, 0);
  expect_scalar(c, 1);
  expect_scalar(c, 2);
  c.expect_same_dtype(1, 2);
  const DType dt = c.dtype(1);
  if (!is_floating(dt)) c.fail("mean and stddev must be float32 or float64, got ", dtype_name(dt));
  const int64_t seed = c.attr_int("seed");
  if (seed < -1) c.fail("seed must be -1 (none) or non-negative, got ", seed);
  c.set_output(0, dt, std::move(out));
}

void infer_identity(InferContext& c) {
  c.set_output(0, c.dtype(0), c.shape(0));
}

// ---- gradient rules ----
void identity_grad(KILN_GRAD_ARGS) {
  gi[0] = g[0];
}
void fill_grad(KILN_GRAD_ARGS) {
  gi[1] = reduce_sum(g[0]);
}

// TensorFlow's dtype for Python numbers passed to tf.range.
DType natural_range_dtype(std::initializer_list<Scalar> vals) {
  bool any_float = false, fits32 = true;
  for (const Scalar& s : vals) {
    if (s.kind == Scalar::kBool) throw InvalidArgumentError("range: arguments cannot be bool");
    if (s.kind == Scalar::kFloat) any_float = true;
    if (s.kind == Scalar::kInt && s.natural_dtype() == DType::kInt64) fits32 = false;
  }
  return any_float ? DType::kFloat32 : (fits32 ? DType::kInt32 : DType::kInt64);
}

void onnx_fill(onnx::ExportContext& c) {
  c.emit("Expand", {c.in(1), c.cast(c.in(0), c.input_spec(0).dtype, DType::kInt64)});
}
template <int kValue>
void onnx_like(onnx::ExportContext& c) {
  c.emit("Expand", {c.scalar(kValue, c.input_spec(0).dtype), c.node1("Shape", {c.in(0)})});
}

}  // namespace

void define_creation_ops(OpTableBuilder& t) {
  t.def(OpId::Const)
      .outputs({"output"})
      .attr("value", AttrType::kTensor)
      .traits(kSource)
      .infer(infer_const);
  t.def(OpId::Fill)
      .tf()
      .inputs({"dims", "value"})
      .outputs({"output"})
      .infer(infer_fill)
      .grad(fill_grad)
      .onnx(onnx_fill);
  // ZerosLike/OnesLike ignore values: no gradient.
  t.def(OpId::ZerosLike)
      .tf()
      .inputs({"x"})
      .outputs({"y"})
      .traits(kNoGradient | kHalfInFloat)  // kHalfInFloat: float16/bfloat16 in float32
      .infer(infer_like<false>)
      .onnx(onnx_like<0>);
  t.def(OpId::OnesLike)
      .tf()
      .inputs({"x"})
      .outputs({"y"})
      .traits(kNoGradient | kHalfInFloat)  // kHalfInFloat: float16/bfloat16 in float32
      .infer(infer_like<true>)
      .onnx(onnx_like<1>);
  t.def(OpId::Range)
      .tf()
      .inputs({"start", "limit", "delta"})
      .outputs({"output"})
      .traits(kNoGradient)
      .infer(infer_range)
      .onnx("Range");
  for (OpId id : {OpId::RandomUniform, OpId::RandomNormal}) {
    const bool uniform = id == OpId::RandomUniform;
    t.def(id)
        .inputs({"shape", uniform ? "minval" : "mean", uniform ? "maxval" : "stddev"})
        .outputs({"output"})
        .attr("seed", AttrType::kInt, int64_t{-1})
        .traits(kStateful | kRandom | kNoGradient)
        .infer(uniform ? infer_random_uniform : infer_random_normal);
  }
  t.def(OpId::Identity)
      .inputs({"input"})
      .outputs({"output"})
      .traits(kView)
      .infer(infer_identity)
      .grad(identity_grad)
      .jit_lower(jit::lower_identity)
      .onnx("Identity");
  t.def(OpId::StopGradient)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .traits(kView | kNoGradient)
      .infer(infer_identity)
      .jit_lower(jit::lower_identity)
      .onnx("Identity");
}

// ---- front functions ----

ShapeArg::ShapeArg(const Shape& dims) : t_(int64_vector(dims.to_vector())) {}
ShapeArg::ShapeArg(const std::vector<int64_t>& dims) : t_(int64_vector(dims)) {}
ShapeArg::ShapeArg(std::initializer_list<int64_t> dims) : t_(int64_vector(dims)) {}

Tensor constant(const Tensor& value) {
  if (!value.defined()) throw InvalidArgumentError("constant: value is an undefined tensor");
  return value;
}
Tensor constant(Scalar value, DType dtype) {
  return Tensor(value, dtype);
}
Tensor constant(Scalar value, DType dtype, const Shape& shape) {
  return fill(shape, Tensor(value, dtype));
}

Tensor fill(const ShapeArg& dims, const Tensor& value) {
  return call_op1(OpId::Fill, {dims.tensor(), value});
}
Tensor fill(const ShapeArg& dims, Scalar value) {
  return fill(dims, Tensor(value, value.natural_dtype()));
}

namespace {
Tensor filled(const ShapeArg& dims, DType dtype, bool one) {
  if (dtype == DType::kString) {
    if (one) throw InvalidArgumentError("ones: strings have no 'one'");
    return fill(dims, Tensor(std::string()));
  }
  if (dtype == DType::kBool) return fill(dims, Tensor(one));
  return fill(dims, Tensor(Scalar(one ? 1 : 0), dtype));
}
}  // namespace

Tensor zeros(const ShapeArg& dims, DType dtype) {
  return filled(dims, dtype, false);
}
Tensor ones(const ShapeArg& dims, DType dtype) {
  return filled(dims, dtype, true);
}

Tensor zeros_like(const Tensor& x) {
  return call_op1(OpId::ZerosLike, {x});
}
Tensor ones_like(const Tensor& x) {
  return call_op1(OpId::OnesLike, {x});
}

Tensor range(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  return call_op1(OpId::Range, {start, limit, delta});
}
Tensor range(Scalar limit, DType dtype) {
  return range(0, limit, 1, dtype);
}
Tensor range(Scalar start, Scalar limit, Scalar delta, DType dtype) {
  if (dtype == DType::kInvalid) dtype = natural_range_dtype({start, limit, delta});
  return range(Tensor(start, dtype), Tensor(limit, dtype), Tensor(delta, dtype));
}

Tensor random_uniform(const Tensor& shape, const Tensor& minval, const Tensor& maxval,
                      int64_t seed) {
  return call_op1(OpId::RandomUniform, {shape, minval, maxval}, {seed});
}
Tensor random_uniform(const ShapeArg& shape, Scalar minval, Scalar maxval, DType dtype,
                      int64_t seed) {
  return random_uniform(shape.tensor(), Tensor(minval, dtype), Tensor(maxval, dtype), seed);
}

Tensor random_normal(const Tensor& shape, const Tensor& mean, const Tensor& stddev, int64_t seed) {
  return call_op1(OpId::RandomNormal, {shape, mean, stddev}, {seed});
}
Tensor random_normal(const ShapeArg& shape, Scalar mean, Scalar stddev, DType dtype, int64_t seed) {
  return random_normal(shape.tensor(), Tensor(mean, dtype), Tensor(stddev, dtype), seed);
}

Tensor identity(const Tensor& x) {
  return call_op1(OpId::Identity, {x});
}
Tensor stop_gradient(const Tensor& x) {
  return call_op1(OpId::StopGradient, {x});
}

}  // namespace kiln
