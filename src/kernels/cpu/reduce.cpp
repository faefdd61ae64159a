#include "bind.h"

namespace kiln::cpu {
void bind_reduce_kernels(OpTableBuilder&) {}
}  // namespace kiln::cpu
