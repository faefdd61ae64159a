// Binds every family's CPU kernels into the op table.
#include "bind.h"

namespace kiln {

void bind_cpu_kernels(OpTableBuilder& t) {
  cpu::bind_creation_kernels(t);
  cpu::bind_unary_kernels(t);
  cpu::bind_binary_kernels(t);
  cpu::bind_select_cast_kernels(t);
  cpu::bind_shape_kernels(t);
  cpu::bind_reduce_kernels(t);
  cpu::bind_selection_kernels(t);
  cpu::bind_linalg_kernels(t);
  cpu::bind_image_kernels(t);
  cpu::bind_string_kernels(t);
  cpu::bind_unicode_kernels(t);
  cpu::bind_decode_raw_kernels(t);
  cpu::bind_complex_kernels(t);
  cpu::bind_nn_kernels(t);
  cpu::bind_state_kernels(t);
  cpu::bind_graph_kernels(t);
  cpu::bind_control_flow_kernels(t);
  cpu::bind_fused_kernels(t);
  cpu::bind_collective_kernels(t);
}

}  // namespace kiln
