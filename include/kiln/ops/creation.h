// Creation ops: constants, filled tensors, ranges, random tensors, identity.
// Shape arguments are int32/int64 tensors as in TensorFlow; ShapeArg also
// accepts a Shape or a list of dims and builds the int64 tensor for you.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

/// The value itself (TensorFlow's tf.constant on a tensor). While tracing,
/// the graph layer captures it as a constant node.
Tensor constant(const Tensor& value);
/// A scalar of `dtype` holding `value` (checked to be representable).
Tensor constant(Scalar value, DType dtype);
/// A tensor of `shape` with every element `value` (tf.constant(v, shape=...)).
Tensor constant(Scalar value, DType dtype, const Shape& shape);
/// A tensor of `shape` holding `values` in row-major order (sizes must agree).
/// Element types map as for Tensor's initializer lists (int -> int32, bool,
/// const char* -> string, ...).
template <typename T>
Tensor constant(const std::vector<T>& values, const Shape& shape) {
  using E = detail::cxx_elem_t<T>;
  Tensor t = Tensor::empty(dtype_v<E>, shape);
  KILN_CHECK_ARG(static_cast<int64_t>(values.size()) == t.num_elements(),
                 "constant: ", values.size(), " values for shape ", shape.to_string());
  E* p = t.mutable_data<E>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = E(values[i]);
  return t;
}

/// A shape argument: a 1-D int32/int64 tensor (as TensorFlow takes), a
/// Shape, or a list of dims (`zeros({2, 3})`); lists become int64 tensors.
class ShapeArg {
 public:
  ShapeArg(const Tensor& dims) : t_(dims) {}      // NOLINT: implicit by design
  ShapeArg(const Shape& dims);                    // NOLINT
  ShapeArg(const std::vector<int64_t>& dims);     // NOLINT
  ShapeArg(std::initializer_list<int64_t> dims);  // NOLINT
  const Tensor& tensor() const { return t_; }

 private:
  Tensor t_;
};

/// A tensor of shape `dims` (non-negative) filled with the scalar `value`
/// (any dtype, strings included).
Tensor fill(const ShapeArg& dims, const Tensor& value);
/// `value` takes its natural dtype: bool, int32 (int64 if it does not fit),
/// float32.
Tensor fill(const ShapeArg& dims, Scalar value);

/// All zeros / all ones of `dtype` (bool: false / true; zeros of string: "").
Tensor zeros(const ShapeArg& dims, DType dtype = DType::kFloat32);
Tensor ones(const ShapeArg& dims, DType dtype = DType::kFloat32);

/// Zeros of x's shape and dtype ("" for strings, false for bool).
Tensor zeros_like(const Tensor& x);
/// Ones of x's shape and dtype (strings are an error).
Tensor ones_like(const Tensor& x);

/// [start, start + delta, ...) up to `limit` (exclusive), as tf.range. The
/// three scalars share one dtype (int32, int64, float32 or float64). delta
/// must be nonzero and point from start towards limit (start <= limit for
/// delta > 0, start >= limit for delta < 0), else InvalidArgument, as in
/// TensorFlow.
Tensor range(const Tensor& start, const Tensor& limit, const Tensor& delta);
/// range(0, limit, 1). `dtype` kInvalid picks TensorFlow's default: float32
/// if any argument is a floating-point number, else int32 (int64 when a value
/// does not fit).
Tensor range(Scalar limit, DType dtype = DType::kInvalid);
Tensor range(Scalar start, Scalar limit, Scalar delta = 1, DType dtype = DType::kInvalid);

/// Uniform random values in [minval, maxval) (tf.random.uniform). dtype
/// float32/float64 (24/53 random mantissa bits) or int32/int64 (requires
/// maxval > minval). `seed` is the op-level seed: -1 = none. With a seed,
/// successive calls continue one reproducible stream; set_random_seed resets
/// all streams.
Tensor random_uniform(const Tensor& shape, const Tensor& minval, const Tensor& maxval,
                      int64_t seed = -1);
Tensor random_uniform(const ShapeArg& shape, Scalar minval = 0, Scalar maxval = 1,
                      DType dtype = DType::kFloat32, int64_t seed = -1);

/// Normal random values, mean + stddev * N(0, 1) (tf.random.normal), float32
/// or float64; Box-Muller on Philox output. `seed` as for random_uniform.
Tensor random_normal(const Tensor& shape, const Tensor& mean, const Tensor& stddev,
                     int64_t seed = -1);
Tensor random_normal(const ShapeArg& shape, Scalar mean = 0, Scalar stddev = 1,
                     DType dtype = DType::kFloat32, int64_t seed = -1);

/// The global seed (tf.random.set_seed): restarts every random stream, so the
/// same sequence of random op calls produces the same values again.
void set_random_seed(int64_t seed);

/// Returns x unchanged (the Identity op; useful as a graph node).
Tensor identity(const Tensor& x);

/// Returns x's value, with no gradient flowing through it (tf.stop_gradient):
/// gradient tapes treat the result as a constant.
Tensor stop_gradient(const Tensor& x);

}  // namespace kiln
