// Binary elementwise ops: definitions, inference, front functions.
#include "kiln/ops/binary.h"

#include "families.h"
#include "front_util.h"
#include "kiln/context.h"

namespace kiln {
namespace {

enum class Allowed { kNumeric, kNumericOrString, kAll };

// Same dtype for both inputs, broadcast shapes, output dtype = input dtype.
template <Allowed A>
void infer_arith(InferContext& c) {
  c.expect_same_dtype(0, 1);
  const DType dt = c.dtype(0);
  const bool ok = A == Allowed::kAll                 ? dt != DType::kResource
                  : A == Allowed::kNumericOrString ? (is_numeric(dt) || dt == DType::kString)
                                                   : is_numeric(dt);
  if (!ok) c.fail("unsupported dtype ", dtype_name(dt));
  c.set_output(0, dt, broadcast_shapes(c.shape(0), c.shape(1), c.op().type_name));
}

}  // namespace

void define_binary_ops(OpTableBuilder& t) {
  t.def(OpId::Add)
      .inputs({"x", "y"})
      .outputs({"z"})
      .traits(kElementwise | kCommutative)
      .infer(infer_arith<Allowed::kNumericOrString>);
  t.def(OpId::Sub).inputs({"x", "y"}).outputs({"z"}).traits(kElementwise).infer(
      infer_arith<Allowed::kNumeric>);
  t.def(OpId::Mul)
      .inputs({"x", "y"})
      .outputs({"z"})
      .traits(kElementwise | kCommutative)
      .infer(infer_arith<Allowed::kNumeric>);
}

Tensor add(const Tensor& a, const Tensor& b) { return call_op1(OpId::Add, {a, b}); }
Tensor add(const Tensor& a, Scalar b) { return add(a, scalar_like(b, a)); }
Tensor add(Scalar a, const Tensor& b) { return add(scalar_like(a, b), b); }
Tensor subtract(const Tensor& a, const Tensor& b) { return call_op1(OpId::Sub, {a, b}); }
Tensor subtract(const Tensor& a, Scalar b) { return subtract(a, scalar_like(b, a)); }
Tensor subtract(Scalar a, const Tensor& b) { return subtract(scalar_like(a, b), b); }
Tensor multiply(const Tensor& a, const Tensor& b) { return call_op1(OpId::Mul, {a, b}); }
Tensor multiply(const Tensor& a, Scalar b) { return multiply(a, scalar_like(b, a)); }
Tensor multiply(Scalar a, const Tensor& b) { return multiply(scalar_like(a, b), b); }

}  // namespace kiln
