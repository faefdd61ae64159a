// The op table, assembled from every layer in one place above them all: the
// ops' rows (inputs, attrs, traits, inference, gradient rules), the CPU
// kernels (the JIT's kernel op included; SerializeTensor/ParseTensor's from
// the saved-model layer, the Example parsers' from the io layer, the summary
// writers' from the summary layer), and autodiff's rules for the ops that run
// bodies. Also installs autodiff's hooks for the function layer (see
// src/function/subgraph.h).
#include "autodiff/autodiff.h"
#include "io/example_kernels.h"
#include "jit/runtime/runtime.h"
#include "kernels/cpu/bind.h"
#include "ops/families.h"
#include "saved_model/tensor_codec_kernels.h"
#include "summary/summary_kernels.h"

namespace kiln::detail {

void assemble_op_table(OpTableBuilder& t) {
  define_all_ops(t);
  bind_cpu_kernels(t);
  saved_model::bind_tensor_codec_kernels(t);
  io::bind_example_kernels(t);
  summary::bind_summary_kernels(t);
  jit::bind_jit_kernels(t);
  define_subgraph_grads(t);
  install_autodiff();
}

}  // namespace kiln::detail
