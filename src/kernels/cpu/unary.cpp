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
template <typename F, typename Types>
void predicate_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& out = c.allocate_output(0);
  visit_types(Types{}, x.dtype(), c.op().type_name, [&](auto tag) {
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

// One row of unary.def: the kernel over the row's dtypes, and the float32
// block kernel when the row takes float32.
template <typename F, DTypeSet S>
void bind_unary(OpTableBuilder& t, OpId id) {
  t.kernel(id, unary_kernel<F, TypesOf<S>>);
  t.jit_cost(id, functor_cost<F>);
  if constexpr ((S & dtype_bit(DType::kFloat32)) != 0) t.block_kernel(id, block_unary<F>);
}

void bind_unary_kernels(OpTableBuilder& t) {
#define KILN_UNARY(op, dtypes, rule, onnx) bind_unary<fn::op, dtypes>(t, OpId::op);
#define KILN_PREDICATE(op, dtypes, onnx)                         \
  t.kernel(OpId::op, predicate_kernel<fn::op, TypesOf<dtypes>>); \
  t.jit_cost(OpId::op, functor_cost<fn::op>);
#include "ops/unary.def"
#undef KILN_UNARY
#undef KILN_PREDICATE
}

}  // namespace kiln::cpu
