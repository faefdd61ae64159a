// CPU kernels for unary elementwise ops. The math lives in functors.h.
#include "bind.h"
#include "elementwise_util.h"
#include "functors.h"

namespace kiln::cpu {
namespace {

// Same dtype in and out; reuses the input buffer when nothing else holds it.
template <typename F, typename Types>
void unary_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0, 0);
  visit_types(Types{}, x.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    unary_map(x.data<T>(), out.mutable_data<T>(), x.num_elements(), F{});
  });
}

// Float predicates: bool output.
template <typename F>
void predicate_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  visit_types(FloatTypes{}, x.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    unary_map(x.data<T>(), out.mutable_data<bool>(), x.num_elements(), F{});
  });
}

// float32 block form, for the fused-elementwise kernel (which splits the
// work itself: a block runs on the calling thread).
template <typename F>
void block_unary(const float* a, const float*, float* out, int64_t n) {
  unary_span_best(a, out, n, F{});
}

}  // namespace

void bind_unary_kernels(OpTableBuilder& t) {
  t.block_kernel(OpId::Neg, block_unary<fn::Neg>);
  t.block_kernel(OpId::Abs, block_unary<fn::Abs>);
  t.block_kernel(OpId::Sign, block_unary<fn::Sign>);
  t.block_kernel(OpId::Square, block_unary<fn::Square>);
  t.block_kernel(OpId::Sqrt, block_unary<fn::Sqrt>);
  t.block_kernel(OpId::Rsqrt, block_unary<fn::Rsqrt>);
  t.block_kernel(OpId::Exp, block_unary<fn::Exp>);
  t.block_kernel(OpId::Log, block_unary<fn::Log>);
  t.block_kernel(OpId::Log1p, block_unary<fn::Log1p>);
  t.block_kernel(OpId::Tanh, block_unary<fn::Tanh>);
  t.block_kernel(OpId::Sigmoid, block_unary<fn::Sigmoid>);
  t.block_kernel(OpId::Relu, block_unary<fn::Relu>);
  t.block_kernel(OpId::Sin, block_unary<fn::Sin>);
  t.block_kernel(OpId::Cos, block_unary<fn::Cos>);
  t.block_kernel(OpId::Floor, block_unary<fn::Floor>);
  t.block_kernel(OpId::Ceil, block_unary<fn::Ceil>);
  t.block_kernel(OpId::Round, block_unary<fn::Round>);
  t.kernel(OpId::Neg, unary_kernel<fn::Neg, SignedRealTypes>);
  t.kernel(OpId::Abs, unary_kernel<fn::Abs, SignedRealTypes>);
  t.kernel(OpId::Sign, unary_kernel<fn::Sign, SignedRealTypes>);
  t.kernel(OpId::Square, unary_kernel<fn::Square, RealTypes>);
  t.kernel(OpId::Sqrt, unary_kernel<fn::Sqrt, FloatTypes>);
  t.kernel(OpId::Rsqrt, unary_kernel<fn::Rsqrt, FloatTypes>);
  t.kernel(OpId::Exp, unary_kernel<fn::Exp, FloatTypes>);
  t.kernel(OpId::Log, unary_kernel<fn::Log, FloatTypes>);
  t.kernel(OpId::Log1p, unary_kernel<fn::Log1p, FloatTypes>);
  t.kernel(OpId::Tanh, unary_kernel<fn::Tanh, FloatTypes>);
  t.kernel(OpId::Sigmoid, unary_kernel<fn::Sigmoid, FloatTypes>);
  t.kernel(OpId::Relu, unary_kernel<fn::Relu, RealTypes>);
  t.kernel(OpId::Sin, unary_kernel<fn::Sin, FloatTypes>);
  t.kernel(OpId::Cos, unary_kernel<fn::Cos, FloatTypes>);
  t.kernel(OpId::Floor, unary_kernel<fn::Floor, FloatTypes>);
  t.kernel(OpId::Ceil, unary_kernel<fn::Ceil, FloatTypes>);
  t.kernel(OpId::Round, unary_kernel<fn::Round, SignedRealTypes>);
  t.kernel(OpId::LogicalNot, unary_kernel<fn::LogicalNot, BoolTypes>);
  t.kernel(OpId::Invert, unary_kernel<fn::Invert, IntTypes>);
  t.kernel(OpId::IsNan, predicate_kernel<fn::IsNan>);
  t.kernel(OpId::IsFinite, predicate_kernel<fn::IsFinite>);
}

}  // namespace kiln::cpu
