// Complex numbers: Complex (build from real and imaginary parts), Real, Imag,
// ComplexAbs and Conj: definitions, inference and fronts. Arithmetic on
// complex tensors is the binary/unary rows (Add, Sub, Mul, Div, Neg, Equal).
// No gradient rules yet (tapes watch real floats only).
#include "elementwise_infer.h"
#include "families.h"
#include "front_util.h"
#include "jit/ir/jit_ir.h"
#include "kiln/context.h"
#include "kiln/ops.h"

namespace kiln {
namespace {

DType complex_of(DType real) {
  return real == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64;
}
DType real_of(DType c) {
  return c == DType::kComplex128 ? DType::kFloat64 : DType::kFloat32;
}

// (real, imag) float32/float64 of one dtype, broadcast -> complex.
void infer_complex(InferContext& c) {
  expect_dtype_in(c, 0, kFloatSet);
  c.expect_same_dtype(0, 1);
  c.set_output(0, complex_of(c.dtype(0)),
               broadcast_shapes(c.shape(0), c.shape(1), c.op().type_name));
}

// complex -> its real part's dtype (Real, Imag, ComplexAbs).
void infer_part(InferContext& c) {
  expect_dtype_in(c, 0, kComplexSet);
  c.set_output(0, real_of(c.dtype(0)), c.shape(0));
}

void infer_conj(InferContext& c) {
  expect_dtype_in(c, 0, kComplexSet);
  c.set_output(0, c.dtype(0), c.shape(0));
}

}  // namespace

void define_complex_ops(OpTableBuilder& t) {
  t.def(OpId::Complex)
      .tf()
      .inputs({"real", "imag"})
      .outputs({"out"})
      .traits(kElementwise | kNoGradient)
      .infer(infer_complex);
  for (OpId id : {OpId::Real, OpId::Imag, OpId::ComplexAbs})
    t.def(id)
        .tf()
        .inputs({"input"})
        .outputs({"output"})
        .traits(kElementwise | kNoGradient)
        .infer(infer_part);
  t.def(OpId::Conj)
      .tf()
      .inputs({"input"})
      .outputs({"output"})
      .traits(kElementwise | kNoGradient)
      .infer(infer_conj);
  // Each is its scalar function fn::<Op> (functors.h) under jit_compile.
  for (OpId id : {OpId::Complex, OpId::Real, OpId::Imag, OpId::ComplexAbs, OpId::Conj})
    t.def(id).jit_lower(jit::lower_functor);
}

Tensor complex(const Tensor& real, const Tensor& imag) {
  return call_op1(OpId::Complex, {real, imag});
}
Tensor real(const Tensor& input) {
  return call_op1(OpId::Real, {input});
}
Tensor imag(const Tensor& input) {
  return call_op1(OpId::Imag, {input});
}
Tensor complex_abs(const Tensor& x) {
  return call_op1(OpId::ComplexAbs, {x});
}
Tensor conj(const Tensor& input) {
  return call_op1(OpId::Conj, {input});
}

}  // namespace kiln
