// Internal: the per-family definers that fill the op table's rows. One per
// file in src/ops/; src/registry/ assembles the table from them, the CPU
// kernels and autodiff's rules.
#pragma once
#include "kiln/op.h"

namespace kiln {
void define_creation_ops(OpTableBuilder& t);
void define_unary_ops(OpTableBuilder& t);
void define_binary_ops(OpTableBuilder& t);
void define_select_cast_ops(OpTableBuilder& t);
void define_shape_ops(OpTableBuilder& t);
void define_reduce_ops(OpTableBuilder& t);
void define_selection_ops(OpTableBuilder& t);
void define_string_ops(OpTableBuilder& t);
void define_complex_ops(OpTableBuilder& t);
void define_nn_ops(OpTableBuilder& t);
void define_state_ops(OpTableBuilder& t);
void define_graph_ops(OpTableBuilder& t);
void define_control_flow_ops(OpTableBuilder& t);
void define_fused_ops(OpTableBuilder& t);
void define_attention_ops(OpTableBuilder& t);
void define_rnn_ops(OpTableBuilder& t);
void define_collective_ops(OpTableBuilder& t);
void define_linalg_ops(OpTableBuilder& t);
void define_image_ops(OpTableBuilder& t);
void define_tensor_codec_ops(OpTableBuilder& t);
void define_parse_example_ops(OpTableBuilder& t);
void define_unicode_ops(OpTableBuilder& t);
void define_summary_ops(OpTableBuilder& t);
/// Every family above, in order.
void define_all_ops(OpTableBuilder& t);
}  // namespace kiln
