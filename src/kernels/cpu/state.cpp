#include "bind.h"

namespace kiln::cpu {
void bind_state_kernels(OpTableBuilder&) {}
}  // namespace kiln::cpu
