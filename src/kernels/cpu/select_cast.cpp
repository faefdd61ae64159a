// CPU kernels for Select, Cast and ClipByValue.
#include <algorithm>
#include <complex>
#include <string>
#include <type_traits>

#include "bind.h"
#include "elementwise_util.h"
#include "functors.h"

namespace kiln::cpu {
namespace {

void select_kernel(KernelContext& c) {
  const Tensor& cond = c.input(0);
  const Tensor& x = c.input(1);
  const Tensor& y = c.input(2);
  Tensor& out = c.allocate_output(0, reusable_input(c, {1, 2}));
  visit_types(AllTypes{}, x.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    ternary_map<bool, T, T>(cond, x, y, out, fn::Select{});
  });
}

// float16/bfloat16 <-> float32 element by element (exact up, rounded down),
// with the branch-free conversions the JIT's kernels use (they vectorize).
template <typename H>
void half_to_float(const H* in, float* out, int64_t n) {
  parallel_for(n, config().parallel_grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if constexpr (std::is_same_v<H, Half>)
        out[i] = fn::detail::f16_to_f32(in[i].bits);
      else
        out[i] = fn::detail::bf16_to_f32(in[i].bits);
    }
  });
}
template <typename H>
void float_to_half(const float* in, H* out, int64_t n) {
  parallel_for(n, config().parallel_grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if constexpr (std::is_same_v<H, Half>)
        out[i].bits = fn::detail::f32_to_f16(in[i]);
      else
        out[i].bits = fn::detail::f32_to_bf16(in[i]);
    }
  });
}

}  // namespace

Tensor as_float32(const Tensor& x, const char* op) {
  if (x.dtype() == DType::kFloat32) return x;
  Tensor f = Tensor::empty(DType::kFloat32, x.shape());
  const int64_t n = x.num_elements();
  if (x.dtype() == DType::kFloat16) {
    half_to_float(x.data<Half>(), f.mutable_data<float>(), n);
  } else if (x.dtype() == DType::kBFloat16) {
    half_to_float(x.data<BFloat16>(), f.mutable_data<float>(), n);
  } else {
    visit_types(PlainTypes{}, x.dtype(), op, [&](auto tag) {
      unary_map(x.data<decltype(tag)>(), f.mutable_data<float>(), n, fn::Cast<float>{});
    });
  }
  return f;
}

void round_to_half(const float* in, Tensor& out) {
  if (out.dtype() == DType::kFloat16)
    float_to_half(in, out.mutable_data<Half>(), out.num_elements());
  else
    float_to_half(in, out.mutable_data<BFloat16>(), out.num_elements());
}

namespace {

// Casts from or to a 16-bit float go through float32 (as Eigen's half does).
void cast_half(KernelContext& c, const Tensor& x, DType to) {
  const char* op = c.op().type_name;
  const Tensor f = as_float32(x, op);
  const int64_t n = x.num_elements();
  if (to == DType::kFloat32) return c.set_output(0, f);
  Tensor& out = c.allocate_output(0);
  if (is_half(to)) {
    round_to_half(f.data<float>(), out);
  } else {
    visit_types(PlainTypes{}, to, op, [&](auto tag) {
      using To = decltype(tag);
      unary_map(f.data<float>(), out.mutable_data<To>(), n, fn::Cast<To>{});
    });
  }
}

// Casts with a complex side: real -> complex has imaginary part 0; complex ->
// real keeps the real part (as TensorFlow); half dtypes go through float32.
void cast_complex(KernelContext& c, const Tensor& x, DType to) {
  const char* op = c.op().type_name;
  const int64_t n = x.num_elements();
  Tensor re = Tensor::empty(DType::kFloat64, x.shape());  // the parts, as double
  Tensor im = Tensor::empty(DType::kFloat64, x.shape());
  double* pr = re.mutable_data<double>();
  double* pi = im.mutable_data<double>();
  if (is_complex(x.dtype())) {
    visit_types(ComplexTypes{}, x.dtype(), op, [&](auto tag) {
      const auto* z = x.data<decltype(tag)>();
      for (int64_t i = 0; i < n; ++i) pr[i] = z[i].real(), pi[i] = z[i].imag();
    });
  } else {
    const Tensor f = is_half(x.dtype()) ? as_float32(x, op) : x;
    visit_types(PlainTypes{}, f.dtype(), op,
                [&](auto tag) { unary_map(f.data<decltype(tag)>(), pr, n, fn::Cast<double>{}); });
    std::fill(pi, pi + n, 0.0);
  }
  Tensor& out = c.allocate_output(0);
  if (is_complex(to)) {
    visit_types(ComplexTypes{}, to, op, [&](auto tag) {
      using C = decltype(tag);
      using R = typename C::value_type;
      C* o = out.mutable_data<C>();
      for (int64_t i = 0; i < n; ++i) o[i] = C(static_cast<R>(pr[i]), static_cast<R>(pi[i]));
    });
  } else if (is_half(to)) {
    Tensor f(Tensor::empty(DType::kFloat32, x.shape()));
    unary_map(pr, f.mutable_data<float>(), n, fn::Cast<float>{});
    round_to_half(f.data<float>(), out);
  } else {
    visit_types(PlainTypes{}, to, op, [&](auto tag) {
      using To = decltype(tag);
      unary_map(static_cast<const double*>(pr), out.mutable_data<To>(), n, fn::Cast<To>{});
    });
  }
}

void cast_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const DType to = c.output_spec(0).dtype;
  if (x.dtype() == to) {  // identity (string -> string included): share the value
    c.set_output(0, x);
    return;
  }
  if (is_complex(x.dtype()) || is_complex(to)) return cast_complex(c, x, to);
  if (is_half(x.dtype()) || is_half(to)) return cast_half(c, x, to);
  Tensor& out = c.allocate_output(0);
  const char* op = c.op().type_name;
  visit_types(PlainTypes{}, x.dtype(), op, [&](auto from_tag) {
    using From = decltype(from_tag);
    visit_types(PlainTypes{}, to, op, [&](auto to_tag) {
      using To = decltype(to_tag);
      unary_map(x.data<From>(), out.mutable_data<To>(), x.num_elements(), fn::Cast<To>{});
    });
  });
}

void clip_kernel(KernelContext& c) {
  const Tensor& t = c.input(0);
  Tensor& out = c.allocate_output(0, 0);
  visit_types(RealTypes{}, t.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    ternary_map<T, T, T>(t, c.input(1), c.input(2), out, fn::ClipByValue{});
  });
}

}  // namespace

void bind_select_cast_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Select, select_kernel);
  t.kernel(OpId::Cast, cast_kernel);
  t.kernel(OpId::ClipByValue, clip_kernel);
  t.jit_cost(OpId::ClipByValue, functor_cost<fn::ClipByValue>);
}

}  // namespace kiln::cpu
