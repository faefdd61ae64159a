// CPU kernels for Complex, Real, Imag, ComplexAbs and Conj: the scalar
// functions are kiln::fn::<Op> (functors.h), over GCC's builtin complex types,
// shared with the JIT's generated code.
#include <complex>

#include "bind.h"
#include "elementwise_util.h"
#include "functors.h"

namespace kiln::cpu {
namespace {

// A std::complex<T> tensor's values as GCC's complex type (the same layout).
template <typename T>
const kiln::fn::complex_t<T>* builtin(const std::complex<T>* z) {
  return reinterpret_cast<const kiln::fn::complex_t<T>*>(z);
}

void complex_kernel(KernelContext& c) {
  Tensor& out = c.allocate_output(0);
  visit_types(FloatTypes{}, c.input(0).dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    binary_map<T, std::complex<T>>(c.input(0), c.input(1), out, [](T re, T im) {
      return std::complex<T>(kiln::fn::Complex{}(re, im));  // from GCC's type
    });
  });
}

// complex -> real (Real, Imag, ComplexAbs) or complex (Conj): F(z) for each
// value; the output's dtype picks the type.
template <typename F, bool kToComplex>
void part_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = kToComplex ? c.allocate_output(0, 0) : c.allocate_output(0);  // Conj may reuse x
  const DType real = x.dtype() == DType::kComplex128 ? DType::kFloat64 : DType::kFloat32;
  visit_types(FloatTypes{}, real, c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    using Out = std::conditional_t<kToComplex, kiln::fn::complex_t<T>, T>;
    const kiln::fn::complex_t<T>* in = builtin(x.data<std::complex<T>>());
    Out* o = reinterpret_cast<Out*>(out.mutable_raw_data());
    parallel_for(x.num_elements(), 0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = F{}(in[i]);
    });
  });
}

}  // namespace

void bind_complex_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Complex, complex_kernel);
  t.kernel(OpId::Real, part_kernel<kiln::fn::Real, false>);
  t.kernel(OpId::Imag, part_kernel<kiln::fn::Imag, false>);
  t.kernel(OpId::ComplexAbs, part_kernel<kiln::fn::ComplexAbs, false>);
  t.kernel(OpId::Conj, part_kernel<kiln::fn::Conj, true>);
  t.jit_cost(OpId::Complex, functor_cost<kiln::fn::Complex>);
  t.jit_cost(OpId::Real, functor_cost<kiln::fn::Real>);
  t.jit_cost(OpId::Imag, functor_cost<kiln::fn::Imag>);
  t.jit_cost(OpId::ComplexAbs, functor_cost<kiln::fn::ComplexAbs>);
  t.jit_cost(OpId::Conj, functor_cost<kiln::fn::Conj>);
}

}  // namespace kiln::cpu
