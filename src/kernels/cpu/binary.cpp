// CPU kernels for binary elementwise ops. The math lives in functors.h.
#include <string>

#include "bind.h"
#include "elementwise_util.h"
#include "functors.h"

namespace kiln::cpu {
namespace {

// Output dtype = input dtype; reuses an input buffer of the output's shape.
template <typename F, typename Types>
void same_type_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  Tensor& out = c.allocate_output(0, reusable_input(c, {0, 1}));
  visit_types(Types{}, a.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    binary_map<T, T>(a, b, out, F{});
  });
}

// Comparisons: bool output.
template <typename F, typename Types>
void compare_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  Tensor& out = c.allocate_output(0, reusable_input(c, {0, 1}));
  visit_types(Types{}, a.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    binary_map<T, bool>(a, b, out, F{});
  });
}

template <typename T, typename Pred>
bool any_of(const Tensor& t, Pred pred) {
  const T* p = t.data<T>();
  const int64_t n = t.num_elements();
  bool any = false;
  for (int64_t i = 0; i < n; ++i) any |= pred(p[i]);
  return any;
}

// Integer Div/FloorDiv/FloorMod: a zero divisor is an error (value-dependent,
// so it is checked here, before any output is written).
template <typename F, typename Types>
void division_kernel(KernelContext& c) {
  const Tensor& b = c.input(1);
  if (is_integer(b.dtype()) && c.output_spec(0).shape.num_elements() > 0) {
    visit_types(IntTypes{}, b.dtype(), c.op().type_name, [&](auto tag) {
      using T = decltype(tag);
      if (any_of<T>(b, [](T v) { return v == T(0); }))
        throw InvalidArgumentError(
            str_cat(c.op().type_name, ": integer division by zero (y contains 0)"));
    });
  }
  same_type_kernel<F, Types>(c);
}

template <typename Types>
void pow_kernel(KernelContext& c) {
  const Tensor& b = c.input(1);
  const DType dt = b.dtype();
  if (is_signed(dt) && is_integer(dt) && c.output_spec(0).shape.num_elements() > 0) {
    visit_types(TypeList<int8_t, int32_t, int64_t>{}, dt, c.op().type_name, [&](auto tag) {
      using T = decltype(tag);
      if (any_of<T>(b, [](T v) { return v < T(0); }))
        throw InvalidArgumentError(
            str_cat(c.op().type_name,
                    ": integers to negative integer powers are not allowed (y contains a negative "
                    "value; cast x to a float dtype first)"));
    });
  }
  same_type_kernel<fn::Pow, Types>(c);
}

template <typename Types>
void add_kernel(KernelContext& c) {
  if (c.input(0).dtype() == DType::kString) {
    Tensor& out = c.allocate_output(0);
    binary_map<std::string, std::string>(
        c.input(0), c.input(1), out,
        [](const std::string& x, const std::string& y) { return x + y; });
    return;
  }
  same_type_kernel<fn::Add, Types>(c);
}

// float32 block form, for the fused-elementwise kernel.
template <typename F>
void block_binary(const float* a, const float* b, float* out, int64_t n) {
  detail::binary_run<true, true>(a, b, out, n, F{});
}

// One row of binary.def: its kernel and, where the row takes float32 and the
// kind allows it, the block kernel for fusion.
template <typename F, DTypeSet S, KernelFn K, bool kBlock = true>
void bind(OpTableBuilder& t, OpId id) {
  t.kernel(id, K);
  t.jit_cost(id, functor_cost<F>);
  if constexpr (kBlock && (S & dtype_bit(DType::kFloat32)) != 0)
    t.block_kernel(id, block_binary<F>);
}
// The kinds binary.def names.
template <typename F, DTypeSet S>
constexpr auto bind_same = bind<F, S, same_type_kernel<F, TypesOf<S>>>;
template <typename F, DTypeSet S>
constexpr auto bind_compare = bind<F, S, compare_kernel<F, TypesOf<S>>, false>;
template <typename F, DTypeSet S>
constexpr auto bind_division = bind<F, S, division_kernel<F, TypesOf<S>>>;
template <typename F, DTypeSet S>
constexpr auto bind_floor_division = bind<F, S, division_kernel<F, TypesOf<S>>, false>;
template <typename F, DTypeSet S>
constexpr auto bind_add = bind<F, S, add_kernel<TypesOf<S & ~kStringSet>>>;
template <typename F, DTypeSet S>
constexpr auto bind_pow = bind<F, S, pow_kernel<TypesOf<S>>>;

}  // namespace

void bind_binary_kernels(OpTableBuilder& t) {
#define KILN_BINARY(op, dtypes, kind, traits, rule, onnx) bind_##kind<fn::op, dtypes>(t, OpId::op);
#include "ops/binary.def"
#undef KILN_BINARY
}

}  // namespace kiln::cpu
