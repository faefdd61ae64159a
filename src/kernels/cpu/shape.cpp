#include "bind.h"

namespace kiln::cpu {
void bind_shape_kernels(OpTableBuilder&) {}
}  // namespace kiln::cpu
