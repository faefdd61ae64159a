// CPU kernels for Select, Cast and ClipByValue.
#include <string>

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

void cast_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const DType to = c.output_spec(0).dtype;
  if (x.dtype() == to) {  // identity (string -> string included): share the value
    c.set_output(0, x);
    return;
  }
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
}

}  // namespace kiln::cpu
