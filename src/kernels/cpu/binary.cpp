// CPU kernels for binary elementwise ops.
#include <string>

#include "functors.h"
#include "kernel_util.h"

namespace kiln::cpu {
namespace {

// Same-dtype arithmetic: output dtype = input dtype.
template <typename F>
void arith_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  int reuse = a.shape() == c.output_spec(0).shape ? 0 : (b.shape() == c.output_spec(0).shape ? 1 : -1);
  Tensor& out = c.allocate_output(0, reuse);
  visit_numeric(a.dtype(), c.op().type_name, [&](auto tag) {
    using T = decltype(tag);
    map_binary<T, T>(a, b, out, F{});
  });
}

void add_kernel(KernelContext& c) {
  if (c.input(0).dtype() == DType::kString) {
    Tensor& out = c.allocate_output(0);
    map_binary<std::string, std::string>(c.input(0), c.input(1), out,
                                         [](const std::string& x, const std::string& y) {
                                           return x + y;
                                         });
    return;
  }
  arith_kernel<fn::Add>(c);
}

}  // namespace

void bind_binary_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Add, add_kernel);
  t.kernel(OpId::Sub, arith_kernel<fn::Sub>);
  t.kernel(OpId::Mul, arith_kernel<fn::Mul>);
}

}  // namespace kiln::cpu
