// CPU kernels for Complex, Real, Imag, ComplexAbs and Conj.
#include <complex>

#include "bind.h"
#include "elementwise_util.h"

namespace kiln::cpu {
namespace {

void complex_kernel(KernelContext& c) {
  Tensor& out = c.allocate_output(0);
  visit_types(FloatTypes{}, c.input(0).dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    binary_map<T, std::complex<T>>(c.input(0), c.input(1), out,
                                   [](T re, T im) { return std::complex<T>(re, im); });
  });
}

// complex -> real: f(z) for each element.
template <typename F>
void part_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  visit_types(FloatTypes{}, out.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    const auto* in = x.data<std::complex<T>>();
    T* o = out.mutable_data<T>();
    parallel_for(x.num_elements(), 0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = F{}(in[i]);
    });
  });
}

struct RealPart {
  template <typename T>
  T operator()(const std::complex<T>& z) const {
    return z.real();
  }
};
struct ImagPart {
  template <typename T>
  T operator()(const std::complex<T>& z) const {
    return z.imag();
  }
};
struct Modulus {  // hypot: no overflow for large parts
  template <typename T>
  T operator()(const std::complex<T>& z) const {
    return std::abs(z);
  }
};

void conj_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0, 0);
  visit_types(ComplexTypes{}, x.dtype(), c.op().type_name, [&](auto tag) {
    using C = decltype(tag);
    const C* in = x.data<C>();
    C* o = out.mutable_data<C>();
    parallel_for(x.num_elements(), 0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = std::conj(in[i]);
    });
  });
}

}  // namespace

void bind_complex_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Complex, complex_kernel);
  t.kernel(OpId::Real, part_kernel<RealPart>);
  t.kernel(OpId::Imag, part_kernel<ImagPart>);
  t.kernel(OpId::ComplexAbs, part_kernel<Modulus>);
  t.kernel(OpId::Conj, conj_kernel);
}

}  // namespace kiln::cpu
