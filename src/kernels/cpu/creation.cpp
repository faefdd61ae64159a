#include "bind.h"

namespace kiln::cpu {
void bind_creation_kernels(OpTableBuilder&) {}
}  // namespace kiln::cpu
