// The fused-elementwise kernel: runs a register program block by block, each
// instruction a vectorizable loop (the ops' block_f32 functions), so values
// stay in cache and no intermediate tensors are allocated.
#include <vector>

#include "bind.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kBlock = 512;

void fused_kernel(KernelContext& c) {
  const auto& prog = c.attr_ints(0);
  const size_t n_in = c.num_inputs();
  const size_t n_instr = prog.size() / 3;
  const size_t n_regs = n_in + n_instr;
  // Blocks are read before the same positions are written: an input of the
  // output's shape that nothing else holds can take the output in place.
  int reuse = -1;
  for (size_t i = 0; i < n_in && reuse < 0; ++i)
    if (c.input(i).shape() == c.output_spec(0).shape) reuse = static_cast<int>(i);
  Tensor& out = c.allocate_output(0, reuse);
  const int64_t n = out.num_elements();
  float* dst = out.mutable_data<float>();
  std::vector<const float*> in(n_in);
  std::vector<bool> scalar(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    in[i] = c.input(i).data<float>();
    scalar[i] = c.input(i).num_elements() == 1 && n != 1;
  }
  std::vector<BlockFnF32> fns(n_instr);
  for (size_t j = 0; j < n_instr; ++j) fns[j] = op_def(static_cast<OpId>(prog[3 * j])).block_f32;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  parallel_for(blocks, std::max<int64_t>(1, default_parallel_grain() / kBlock / 4),
               [&](int64_t b0, int64_t b1) {
                 std::vector<float> regs(n_regs * kBlock);
                 std::vector<const float*> ptr(n_regs);
                 for (size_t i = 0; i < n_in; ++i)
                   if (scalar[i]) {
                     std::fill_n(regs.data() + i * kBlock, kBlock, in[i][0]);
                     ptr[i] = regs.data() + i * kBlock;
                   }
                 for (int64_t blk = b0; blk < b1; ++blk) {
                   const int64_t start = blk * kBlock;
                   const int64_t len = std::min(kBlock, n - start);
                   for (size_t i = 0; i < n_in; ++i)
                     if (!scalar[i]) ptr[i] = in[i] + start;
                   for (size_t j = 0; j < n_instr; ++j) {
                     const size_t r = n_in + j;
                     // The last instruction writes straight into the output.
                     float* o = j + 1 == n_instr ? dst + start : regs.data() + r * kBlock;
                     const int64_t a = prog[3 * j + 1], b = prog[3 * j + 2];
                     fns[j](ptr[static_cast<size_t>(a)],
                            b >= 0 ? ptr[static_cast<size_t>(b)] : nullptr, o, len);
                     ptr[r] = o;
                   }
                 }
               });
}

}  // namespace

void bind_fused_kernels(OpTableBuilder& t) {
  t.kernel(OpId::FusedElementwise, fused_kernel);
}

}  // namespace kiln::cpu
