#include "bind.h"

namespace kiln::cpu {
void bind_nn_kernels(OpTableBuilder&) {}
}  // namespace kiln::cpu
