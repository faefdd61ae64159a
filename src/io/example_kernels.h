// Internal: the CPU kernels of _ParseExampleDense, _ParseExampleVarLen
// (tf.io.parse_example) and _ParseSequenceFeatureList (parse_sequence_example), bound into the op
// table by the registry (src/registry/op_table.cpp).
#pragma once
#include "kiln/op.h"

namespace kiln::io {
void bind_example_kernels(OpTableBuilder& t);
}  // namespace kiln::io
