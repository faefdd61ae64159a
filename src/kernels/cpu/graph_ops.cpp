#include "bind.h"

namespace kiln::cpu {
namespace {
// Executors feed placeholders; running one means an argument was not bound.
void placeholder_kernel(KernelContext& c) {
  throw FailedPreconditionError(
      str_cat(c.op().type_name, ": a function argument was not fed a value"));
}
}  // namespace

void bind_graph_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Placeholder, placeholder_kernel);
}

}  // namespace kiln::cpu
