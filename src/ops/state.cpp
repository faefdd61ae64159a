#include "families.h"

namespace kiln {
void define_state_ops(OpTableBuilder&) {}
}  // namespace kiln
