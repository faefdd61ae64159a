// Internal: the CPU kernels of SerializeTensor and ParseTensor (TensorProto
// bytes), bound into the op table by the registry (src/registry/op_table.cpp).
#pragma once
#include "kiln/op.h"

namespace kiln::saved_model {
void bind_tensor_codec_kernels(OpTableBuilder& t);
}  // namespace kiln::saved_model
