// Internal: the per-family definers that fill the op table. One per file in
// src/ops/; the CPU kernels are bound by bind_cpu_kernels (src/kernels/cpu/).
#pragma once
#include "kiln/op.h"

namespace kiln {
void define_creation_ops(OpTableBuilder& t);
void define_unary_ops(OpTableBuilder& t);
void define_binary_ops(OpTableBuilder& t);
void define_select_cast_ops(OpTableBuilder& t);
void define_shape_ops(OpTableBuilder& t);
void define_reduce_ops(OpTableBuilder& t);
void define_nn_ops(OpTableBuilder& t);
void define_state_ops(OpTableBuilder& t);
void define_graph_ops(OpTableBuilder& t);
void define_control_flow_ops(OpTableBuilder& t);
void define_fused_ops(OpTableBuilder& t);
/// Sets cpu_kernel on every row (src/kernels/cpu/bind.cpp).
void bind_cpu_kernels(OpTableBuilder& t);
}  // namespace kiln
