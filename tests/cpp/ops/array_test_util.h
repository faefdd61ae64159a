// Helpers for the data-movement op tests: dtype-generic test tensors, a
// checker for "output element j is input element src[j]", and symbolic
// tensors to exercise inference with unknown dims.
#pragma once
#include <complex>
#include <string>
#include <vector>

#include "test_util.h"

namespace kiln::testing {

inline const std::vector<DType> kAllDTypes = {
    DType::kBool,    DType::kInt8,    DType::kUInt8,     DType::kInt32,      DType::kInt64,
    DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128, DType::kString};

/// A test tensor whose element i is distinguishable: i (numeric; modulo the
/// range for 8-bit types), i % 3 != 0 (bool), "s<i>" (string).
inline Tensor iota(DType dt, const Shape& shape) {
  Tensor t = Tensor::empty(dt, shape);
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    switch (dt) {
      case DType::kBool: t.mutable_data<bool>()[i] = i % 3 != 0; break;
      case DType::kInt8: t.mutable_data<int8_t>()[i] = static_cast<int8_t>(i % 127); break;
      case DType::kUInt8: t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i % 251); break;
      case DType::kInt32: t.mutable_data<int32_t>()[i] = static_cast<int32_t>(i); break;
      case DType::kInt64: t.mutable_data<int64_t>()[i] = i * 1000003; break;
      case DType::kFloat32: t.mutable_data<float>()[i] = static_cast<float>(i) + 0.5f; break;
      case DType::kFloat64: t.mutable_data<double>()[i] = static_cast<double>(i) - 0.25; break;
      case DType::kComplex64:
        t.mutable_data<std::complex<float>>()[i] = {static_cast<float>(i),
                                                    -0.5f * static_cast<float>(i)};
        break;
      case DType::kComplex128:
        t.mutable_data<std::complex<double>>()[i] = {0.25 - static_cast<double>(i),
                                                     static_cast<double>(i)};
        break;
      case DType::kString: {
        std::string& e = t.mutable_data<std::string>()[i];
        e.push_back('s');  // (not `= "s"`: GCC 12 gives a bogus -Wrestrict)
        e += std::to_string(i);
        break;
      }
      default: ADD_FAILURE() << "iota: bad dtype";
    }
  }
  return t;
}

/// Element i of t, printed.
inline std::string elem_str(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kBool: return t.data<bool>()[i] ? "true" : "false";
    case DType::kInt8: return std::to_string(t.data<int8_t>()[i]);
    case DType::kUInt8: return std::to_string(t.data<uint8_t>()[i]);
    case DType::kInt32: return std::to_string(t.data<int32_t>()[i]);
    case DType::kInt64: return std::to_string(t.data<int64_t>()[i]);
    case DType::kFloat32: return std::to_string(t.data<float>()[i]);
    case DType::kFloat64: return std::to_string(t.data<double>()[i]);
    case DType::kComplex64: {
      const std::complex<float> z = t.data<std::complex<float>>()[i];
      return std::to_string(z.real()) + "+" + std::to_string(z.imag()) + "i";
    }
    case DType::kComplex128: {
      const std::complex<double> z = t.data<std::complex<double>>()[i];
      return std::to_string(z.real()) + "+" + std::to_string(z.imag()) + "i";
    }
    case DType::kString: {
      std::string s = "'";
      s += t.data<std::string>()[i];
      s += "'";
      return s;
    }
    default: return "?";
  }
}

/// Checks `out` has in's dtype, `shape`, and out[j] == in[src[j]] for every
/// j (src[j] == -1: out[j] == fill[0]).
inline void expect_moved(const Tensor& out, const Tensor& in, const Shape& shape,
                         const std::vector<int64_t>& src, const Tensor& fill = Tensor()) {
  ASSERT_TRUE(out.defined());
  ASSERT_EQ(out.dtype(), in.dtype()) << dtype_name(out.dtype());
  ASSERT_EQ(out.shape(), shape);
  ASSERT_EQ(out.num_elements(), static_cast<int64_t>(src.size()));
  for (size_t j = 0; j < src.size(); ++j) {
    const std::string want = src[j] < 0 ? elem_str(fill, 0) : elem_str(in, src[j]);
    ASSERT_EQ(elem_str(out, static_cast<int64_t>(j)), want)
        << "at flat index " << j << " (dtype " << dtype_name(in.dtype()) << ")";
  }
}

/// Row-major multi-index of `flat` in `shape`, and back.
inline std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int64_t d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = flat % shape.dim(d);
    flat /= shape.dim(d);
  }
  return idx;
}
inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (int64_t d = 0; d < shape.rank(); ++d)
    flat = flat * shape.dim(d) + idx[static_cast<size_t>(d)];
  return flat;
}

/// Pointer to a tensor's first byte, for checking views share buffers.
inline const void* data_ptr(const Tensor& t) {
  return t.raw_data();
}
/// True when `a` lies inside `b`'s buffer (a view of it).
inline bool shares_buffer(const Tensor& a, const Tensor& b) {
  return a.buffer() == b.buffer();
}

/// A symbolic value for inference tests (what the tracing layer provides).
class FakeSymbol : public Symbol {
 public:
  std::string tensor_name(int32_t i) const override { return "fake:" + std::to_string(i); }
  std::string describe() const override { return "a fake node"; }
};
inline Tensor sym(DType dt, const Shape& shape) {
  return Tensor::symbolic(new FakeSymbol, 0, dt, shape);
}

/// Runs only the inference of `id` (tensors may be symbolic).
inline std::vector<TensorSpec> infer(OpId id, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  const OpDef& op = op_def(id);
  complete_attrs(op, attrs);
  InferContext c(op, inputs, attrs);
  op.infer(c);
  return std::vector<TensorSpec>(c.outputs().begin(), c.outputs().end());
}
inline Shape infer_shape(OpId id, const std::vector<Tensor>& inputs, Attrs attrs = {}) {
  auto specs = infer(id, inputs, std::move(attrs));
  EXPECT_EQ(specs.size(), 1u);
  return specs.empty() ? Shape() : specs[0].shape;
}

/// Runs `fn` with config().max_allocation_bytes set to `cap`, restoring it.
template <typename F>
void with_allocation_cap(int64_t cap, F&& fn) {
  const int64_t saved = config().max_allocation_bytes;
  config().max_allocation_bytes = cap;
  try {
    fn();
  } catch (...) {
    config().max_allocation_bytes = saved;
    throw;
  }
  config().max_allocation_bytes = saved;
}

}  // namespace kiln::testing
