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
template <typename F>
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
  same_type_kernel<F, RealTypes>(c);
}

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
  same_type_kernel<fn::Pow, RealTypes>(c);
}

void add_kernel(KernelContext& c) {
  if (c.input(0).dtype() == DType::kString) {
    Tensor& out = c.allocate_output(0);
    binary_map<std::string, std::string>(
        c.input(0), c.input(1), out,
        [](const std::string& x, const std::string& y) { return x + y; });
    return;
  }
  same_type_kernel<fn::Add, RealTypes>(c);
}

// float32 block form, for the fused-elementwise kernel.
template <typename F>
void block_binary(const float* a, const float* b, float* out, int64_t n) {
  detail::binary_run<true, true>(a, b, out, n, F{});
}

}  // namespace

void bind_binary_kernels(OpTableBuilder& t) {
  t.block_kernel(OpId::Add, block_binary<fn::Add>);
  t.block_kernel(OpId::Sub, block_binary<fn::Sub>);
  t.block_kernel(OpId::Mul, block_binary<fn::Mul>);
  t.block_kernel(OpId::Div, block_binary<fn::Div>);
  t.block_kernel(OpId::Pow, block_binary<fn::Pow>);
  t.block_kernel(OpId::Maximum, block_binary<fn::Maximum>);
  t.block_kernel(OpId::Minimum, block_binary<fn::Minimum>);
  t.block_kernel(OpId::SquaredDifference, block_binary<fn::SquaredDifference>);
  t.kernel(OpId::Add, add_kernel);
  t.kernel(OpId::Sub, same_type_kernel<fn::Sub, RealTypes>);
  t.kernel(OpId::Mul, same_type_kernel<fn::Mul, RealTypes>);
  t.kernel(OpId::Div, division_kernel<fn::Div>);
  t.kernel(OpId::FloorDiv, division_kernel<fn::FloorDiv>);
  t.kernel(OpId::FloorMod, division_kernel<fn::FloorMod>);
  t.kernel(OpId::Pow, pow_kernel);
  t.kernel(OpId::Maximum, same_type_kernel<fn::Maximum, RealTypes>);
  t.kernel(OpId::Minimum, same_type_kernel<fn::Minimum, RealTypes>);
  t.kernel(OpId::SquaredDifference, same_type_kernel<fn::SquaredDifference, RealTypes>);
  t.kernel(OpId::Equal, compare_kernel<fn::Equal, AllTypes>);
  t.kernel(OpId::NotEqual, compare_kernel<fn::NotEqual, AllTypes>);
  t.kernel(OpId::Less, compare_kernel<fn::Less, RealTypes>);
  t.kernel(OpId::LessEqual, compare_kernel<fn::LessEqual, RealTypes>);
  t.kernel(OpId::Greater, compare_kernel<fn::Greater, RealTypes>);
  t.kernel(OpId::GreaterEqual, compare_kernel<fn::GreaterEqual, RealTypes>);
  t.kernel(OpId::LogicalAnd, same_type_kernel<fn::LogicalAnd, BoolTypes>);
  t.kernel(OpId::LogicalOr, same_type_kernel<fn::LogicalOr, BoolTypes>);
  t.kernel(OpId::LogicalXor, same_type_kernel<fn::LogicalXor, BoolTypes>);
  t.kernel(OpId::BitwiseAnd, same_type_kernel<fn::BitwiseAnd, IntTypes>);
  t.kernel(OpId::BitwiseOr, same_type_kernel<fn::BitwiseOr, IntTypes>);
  t.kernel(OpId::BitwiseXor, same_type_kernel<fn::BitwiseXor, IntTypes>);
  t.kernel(OpId::LeftShift, same_type_kernel<fn::LeftShift, IntTypes>);
  t.kernel(OpId::RightShift, same_type_kernel<fn::RightShift, IntTypes>);
}

}  // namespace kiln::cpu
