// Internal: one binder per kernel family file.
#pragma once
#include "kiln/op.h"

namespace kiln {
/// Sets cpu_kernel (and block kernels) on every row (bind.cpp).
void bind_cpu_kernels(OpTableBuilder& t);
}  // namespace kiln

namespace kiln::cpu {
void bind_creation_kernels(OpTableBuilder& t);
void bind_unary_kernels(OpTableBuilder& t);
void bind_binary_kernels(OpTableBuilder& t);
void bind_select_cast_kernels(OpTableBuilder& t);
void bind_shape_kernels(OpTableBuilder& t);
void bind_reduce_kernels(OpTableBuilder& t);
void bind_selection_kernels(OpTableBuilder& t);
void bind_string_kernels(OpTableBuilder& t);
void bind_complex_kernels(OpTableBuilder& t);
void bind_nn_kernels(OpTableBuilder& t);
void bind_state_kernels(OpTableBuilder& t);
void bind_graph_kernels(OpTableBuilder& t);
void bind_control_flow_kernels(OpTableBuilder& t);
void bind_fused_kernels(OpTableBuilder& t);
void bind_collective_kernels(OpTableBuilder& t);
}  // namespace kiln::cpu
