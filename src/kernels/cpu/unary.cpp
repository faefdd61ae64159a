#include "bind.h"

namespace kiln::cpu {
void bind_unary_kernels(OpTableBuilder&) {}
}  // namespace kiln::cpu
