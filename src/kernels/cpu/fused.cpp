// The fused-elementwise kernel: runs a register program block by block, each
// instruction a vectorizable loop (the ops' block_f32 functions), so values
// stay in cache and no intermediate tensors are allocated.
#include <algorithm>
#include <memory>
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

  // Register allocation: an instruction's result takes a scratch slot that
  // is recycled once its last reader has run, so a long chain needs only a
  // few block-sized buffers (which stay in L1).
  std::vector<int64_t> last_use(n_regs, -1);
  for (size_t j = 0; j < n_instr; ++j) {
    last_use[static_cast<size_t>(prog[3 * j + 1])] = static_cast<int64_t>(j);
    if (prog[3 * j + 2] >= 0)
      last_use[static_cast<size_t>(prog[3 * j + 2])] = static_cast<int64_t>(j);
  }
  std::vector<int64_t> slot(n_regs, -1);
  std::vector<int64_t> free_slots;
  int64_t n_slots = 0;
  auto take = [&] {
    if (!free_slots.empty()) {
      int64_t x = free_slots.back();
      free_slots.pop_back();
      return x;
    }
    return n_slots++;
  };
  for (size_t i = 0; i < n_in; ++i)
    if (scalar[i]) slot[i] = take();  // broadcast scalars live in a slot for the whole run
  for (size_t j = 0; j < n_instr; ++j) {
    for (int k = 1; k <= 2; ++k) {
      const int64_t r = prog[3 * j + k];
      if (r >= static_cast<int64_t>(n_in) &&
          last_use[static_cast<size_t>(r)] == static_cast<int64_t>(j))
        free_slots.push_back(slot[static_cast<size_t>(r)]);
    }
    if (j + 1 < n_instr) slot[n_in + j] = take();
  }

  const int64_t block = std::min<int64_t>(kBlock, std::max<int64_t>(n, 1));
  const int64_t blocks = (n + block - 1) / block;
  parallel_for(blocks, std::max<int64_t>(1, default_parallel_grain() / block / 4),
               [&](int64_t b0, int64_t b1) {
                 std::unique_ptr<float[]> scratch(
                     new float[static_cast<size_t>(std::max<int64_t>(n_slots, 1) * block)]);
                 std::vector<const float*> ptr(n_regs);
                 for (size_t i = 0; i < n_in; ++i)
                   if (scalar[i]) {
                     float* p = scratch.get() + slot[i] * block;
                     std::fill_n(p, block, in[i][0]);
                     ptr[i] = p;
                   }
                 for (int64_t blk = b0; blk < b1; ++blk) {
                   const int64_t start = blk * block;
                   const int64_t len = std::min(block, n - start);
                   for (size_t i = 0; i < n_in; ++i)
                     if (!scalar[i]) ptr[i] = in[i] + start;
                   for (size_t j = 0; j < n_instr; ++j) {
                     const size_t r = n_in + j;
                     // The last instruction writes straight into the output.
                     float* o = j + 1 == n_instr ? dst + start : scratch.get() + slot[r] * block;
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
