// The fused-elementwise kernel: runs a register program block by block, each
// instruction a vectorizable loop (the ops' block_f32 functions), so values
// stay in cache and no intermediate tensors are allocated.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "bind.h"
#include "core/tls.h"
#include "kiln/small_vector.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kBlock = 512;
// Scratch floats kept on the stack of the thread running a chunk (16 KB);
// programs with many live values on large blocks fall back to the heap.
constexpr int64_t kStackScratch = 4096;

// A program made ready to run: block functions resolved and registers
// mapped to scratch slots. Depends only on the program and on which inputs
// are broadcast scalars, so it is cached per thread under exactly that key.
struct Prepared {
  std::vector<int64_t> prog;    // key
  std::vector<uint8_t> scalar;  // key: input i is a broadcast scalar
  std::vector<BlockFnF32> fns;  // per instruction
  std::vector<int32_t> slot;    // per register: scratch slot, -1 = none
  int32_t n_slots = 0;

  bool matches(std::span<const int64_t> p, std::span<const uint8_t> s) const {
    return p.size() == prog.size() && s.size() == scalar.size() &&
           std::memcmp(p.data(), prog.data(), p.size_bytes()) == 0 &&
           std::memcmp(s.data(), scalar.data(), s.size_bytes()) == 0;
  }

  void prepare(std::span<const int64_t> p, std::span<const uint8_t> s) {
    prog.assign(p.begin(), p.end());
    scalar.assign(s.begin(), s.end());
    const size_t n_in = s.size(), n_instr = p.size() / 3, n_regs = n_in + n_instr;
    const std::span<const OpDef> table = op_table();
    fns.resize(n_instr);
    for (size_t j = 0; j < n_instr; ++j) fns[j] = table[static_cast<size_t>(p[3 * j])].block_f32;
    // An instruction's result takes a scratch slot that is recycled once its
    // last reader has run, so a long chain needs only a few block-sized
    // buffers (which stay in L1).
    std::vector<int32_t> last_use(n_regs, -1), free_slots;
    for (size_t j = 0; j < n_instr; ++j) {
      last_use[static_cast<size_t>(p[3 * j + 1])] = static_cast<int32_t>(j);
      if (p[3 * j + 2] >= 0) last_use[static_cast<size_t>(p[3 * j + 2])] = static_cast<int32_t>(j);
    }
    slot.assign(n_regs, -1);
    n_slots = 0;
    auto take = [&] {
      if (free_slots.empty()) return n_slots++;
      const int32_t x = free_slots.back();
      free_slots.pop_back();
      return x;
    };
    for (size_t i = 0; i < n_in; ++i)
      if (s[i]) slot[i] = take();  // broadcast scalars live in a slot for the whole run
    const int64_t first_result = static_cast<int64_t>(n_in);
    for (size_t j = 0; j < n_instr; ++j) {
      const int64_t a = p[3 * j + 1], b = p[3 * j + 2];
      // x * x reads one register twice: free its slot once.
      for (int64_t r : {a, b == a ? int64_t{-1} : b})
        if (r >= first_result && last_use[static_cast<size_t>(r)] == static_cast<int32_t>(j))
          free_slots.push_back(slot[static_cast<size_t>(r)]);
      if (j + 1 < n_instr) slot[n_in + j] = take();
    }
  }
};

// The last few programs run on this thread, most recent first.
struct PreparedCache {
  static constexpr size_t kEntries = 8;
  Prepared entries[kEntries];
  size_t order[kEntries] = {0, 1, 2, 3, 4, 5, 6, 7};

  const Prepared& get(std::span<const int64_t> p, std::span<const uint8_t> s) {
    size_t k = 0;
    while (k < kEntries && !entries[order[k]].matches(p, s)) ++k;
    if (k == kEntries) {
      k = kEntries - 1;  // evict the least recently used
      entries[order[k]].prepare(p, s);
    }
    const size_t e = order[k];
    std::copy_backward(order, order + k, order + k + 1);
    order[0] = e;
    return entries[e];
  }
};
struct PreparedCacheTag {};

// Runs the instructions over blocks [b0, b1) of the output.
struct Run {
  const Prepared* prep = nullptr;
  const float* const* in = nullptr;
  int64_t n = 0, block = 0;
  float* dst = nullptr;

  void operator()(int64_t b0, int64_t b1) const {
    const size_t n_in = prep->scalar.size(), n_instr = prep->fns.size();
    const int64_t* prog = prep->prog.data();
    const int32_t* slot = prep->slot.data();
    alignas(64) float local[kStackScratch];
    std::unique_ptr<float[]> heap;
    float* scratch = local;
    const int64_t need = std::max<int64_t>(prep->n_slots, 1) * block;
    if (need > kStackScratch) {
      heap.reset(new float[static_cast<size_t>(need)]);
      scratch = heap.get();
    }
    SmallVec<const float*, 256> ptr_buf(n_in + n_instr);
    const float** ptr = ptr_buf.data();
    for (size_t i = 0; i < n_in; ++i)
      if (prep->scalar[i]) {
        float* p = scratch + slot[i] * block;
        std::fill_n(p, block, in[i][0]);
        ptr[i] = p;
      }
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t start = blk * block;
      const int64_t len = std::min(block, n - start);
      for (size_t i = 0; i < n_in; ++i)
        if (!prep->scalar[i]) ptr[i] = in[i] + start;
      for (size_t j = 0; j < n_instr; ++j) {
        const size_t r = n_in + j;
        // The last instruction writes straight into the output.
        float* o = j + 1 == n_instr ? dst + start : scratch + slot[r] * block;
        const int64_t a = prog[3 * j + 1], b = prog[3 * j + 2];
        prep->fns[j](ptr[a], b >= 0 ? ptr[b] : nullptr, o, len);
        ptr[r] = o;
      }
    }
  }
};

void fused_kernel(KernelContext& c) {
  const auto& prog = c.attr_ints("program");
  const size_t n_in = c.num_inputs();
  // Blocks are read before the same positions are written: an input of the
  // output's shape that nothing else holds can take the output in place.
  int reuse = -1;
  for (size_t i = 0; i < n_in && reuse < 0; ++i)
    if (c.input(i).shape() == c.output_spec(0).shape) reuse = static_cast<int>(i);
  Tensor& out = c.allocate_output(0, reuse);
  const int64_t n = out.num_elements();
  SmallVec<const float*, 32> in(n_in);
  SmallVec<uint8_t, 32> scalar(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    in[i] = c.input(i).data<float>();
    scalar[i] = c.input(i).num_elements() == 1 && n != 1;
  }
  // This kernel often runs on 100-element tensors, where preparing the
  // program would cost as much as running it: reuse this thread's copy.
  const std::span<const uint8_t> key(scalar.data(), n_in);
  Prepared uncached;
  PreparedCache* cache = detail::ThreadCache<PreparedCache, PreparedCacheTag>::get();
  const Prepared* prep = cache ? &cache->get(prog, key) : nullptr;
  if (!prep) {
    uncached.prepare(prog, key);
    prep = &uncached;
  }

  Run run;
  run.prep = prep;
  run.in = in.data();
  run.n = n;
  run.block = std::min<int64_t>(kBlock, std::max<int64_t>(n, 1));
  run.dst = out.mutable_data<float>();
  const int64_t blocks = (n + run.block - 1) / run.block;
  if (blocks <= 1) {
    if (n > 0) run(0, 1);
    return;
  }
  parallel_for(blocks, std::max<int64_t>(1, default_parallel_grain() / run.block / 4), run);
}

}  // namespace

void bind_fused_kernels(OpTableBuilder& t) {
  t.kernel(OpId::FusedElementwise, fused_kernel);
}

}  // namespace kiln::cpu
