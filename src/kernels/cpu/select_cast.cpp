#include "bind.h"

namespace kiln::cpu {
void bind_select_cast_kernels(OpTableBuilder&) {}
}  // namespace kiln::cpu
