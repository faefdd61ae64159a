#include "runtime.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "jit/fusion/fold.h"
#include "jit/ir/jit_ir.h"
#include "jit/ir/program.h"
#include "jit/runtime/layout.h"
#include "kernels/cpu/copy_util.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_util.h"
#include "kiln/small_vector.h"
#include "kiln/thread_pool.h"

namespace kiln::jit {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, KernelFn> kernels;
  std::vector<std::shared_ptr<LoadedModule>> modules;
};
Registry& registry() {
  static Registry* r = new Registry;  // outlives every static graph
  return *r;
}

// Copies the values of an output smaller than the iteration space (its
// inputs broadcast over fewer dims) out of a full-size result.
void extract(const char* full, std::span<const int64_t> dims, const Shape& out_shape, char* dst,
             size_t elem) {
  const size_t rank = dims.size();
  const size_t off = rank - static_cast<size_t>(out_shape.rank());
  int64_t stride[kMaxDims], idx[kMaxDims] = {};
  int64_t s = 1;
  for (size_t d = rank; d-- > 0;) {
    const int64_t od = d >= off ? out_shape.dim(static_cast<int>(d - off)) : 1;
    stride[d] = od == 1 && dims[d] != 1 ? -1 : s;  // -1: this output is broadcast here
    s *= dims[d];
  }
  const int64_t n = out_shape.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d)
      if (stride[d] > 0) src += idx[d] * stride[d];
    std::memcpy(dst + static_cast<size_t>(i) * elem, full + static_cast<size_t>(src) * elem, elem);
    for (size_t d = rank; d-- > 0;) {
      if (stride[d] < 0) continue;
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

// The kernel's output buffers. An output smaller than what the kernel
// writes (its inputs broadcast over fewer dims at run time) gets a full-size
// temporary -- the space, or one value per row -- copied out afterwards.
struct Outputs {
  SmallVec<void*, 8> ptrs;
  std::vector<Tensor> full;  // only for smaller outputs (rare)
  std::vector<std::vector<int64_t>> full_dims, keep_dims;

  Outputs(KernelContext& c, std::span<const int64_t> dims, int reduced, int64_t total, int64_t rows,
          std::span<const Fold> folds)
      : ptrs(c.num_outputs()) {
    const size_t rank = dims.size(), n_out = c.num_outputs();
    for (size_t o = 0; o < n_out; ++o) {
      Tensor& t = c.allocate_output(o);
      if (std::any_of(folds.begin(), folds.end(),
                      [&](const Fold& f) { return f.output == static_cast<int64_t>(o); }))
        continue;  // written by run_folded
      if (t.num_elements() == total || (reduced > 0 && t.num_elements() == rows)) {
        ptrs[o] = t.mutable_raw_data();
        continue;
      }
      // A per-row output has its reduced dims 1 or dropped (keepdims).
      const Shape& s = t.shape();
      bool row = reduced > 0 && static_cast<size_t>(s.rank()) < rank;
      if (reduced > 0 && !row) {
        row = true;
        for (int d = s.rank() - reduced; d < s.rank(); ++d) row &= d >= 0 && s.dim(d) == 1;
      }
      std::vector<int64_t> fd(dims.begin(), dims.end()), kd(s.dims().begin(), s.dims().end());
      if (row) {
        std::fill(fd.end() - reduced, fd.end(), 1);
        if (kd.size() < rank) kd.resize(kd.size() + static_cast<size_t>(reduced), 1);
      }
      full.resize(n_out);
      full_dims.resize(n_out);
      keep_dims.resize(n_out);
      full[o] = Tensor::empty(t.dtype(), Shape(fd));
      ptrs[o] = full[o].mutable_raw_data();
      full_dims[o] = std::move(fd);
      keep_dims[o] = std::move(kd);
    }
  }

  void finish(KernelContext& c) {
    for (size_t o = 0; o < full.size(); ++o)
      if (full[o].defined()) {
        Tensor& t = c.output(o);
        extract(static_cast<const char*>(full[o].raw_data()), full_dims[o], Shape(keep_dims[o]),
                static_cast<char*>(t.mutable_raw_data()), dtype_size(t.dtype()));
      }
  }
};

// Inputs read transposed (an inner stride other than 0 and 1): the kernel
// runs over tiles of `rows` rows (within one run of the layout's
// next-to-last dim) by `cols` columns, so each of the input's cache lines,
// one per column, is read once for all the tile's rows. When every such
// input steps by 1 from row to row (`buffered`), each tile is first copied
// out transposed (cpu::transpose_block, through registers) and the kernel
// reads it row by row (KernelArgs::tile).
struct TilePlan {
  int64_t rows = 0, cols = 0;   // 0 rows: no tiles
  SmallVec<int32_t, 4> inputs;  // the inputs read transposed
  SmallVec<DType, 4> dtypes;    // their dtypes
  bool buffered = false;
};

// Input k's offset (in values) at the start of layout row r.
int64_t row_offset(const Layout& l, size_t k, int64_t r) {
  int64_t off = 0;
  for (int d = l.rank - 2; d >= 0; --d) {
    off += r % l.shape[d] * l.strides[k * static_cast<size_t>(l.rank) + static_cast<size_t>(d)];
    r /= l.shape[d];
  }
  return off;
}

void run_tiles(KernelFn fn, const KernelArgs& args, const Layout& l, const TilePlan& t,
               int64_t grain) {
  const int64_t h = l.shape[l.rank - 2], per = (h + t.rows - 1) / t.rows, cols = l.cols();
  const int64_t tiles = l.rows() / h * per, n_in = static_cast<int64_t>(l.strides.size()) / l.rank;
  auto run = [&](int64_t b, int64_t e) {
    KernelArgs a = args;
    SmallVec<const void*, 16> tile(static_cast<size_t>(n_in), nullptr);
    size_t size = 0;  // a tile of the largest value
    for (DType dt : t.dtypes)
      size = std::max(size, static_cast<size_t>(t.rows * t.cols) * dtype_size(dt));
    std::unique_ptr<char[]> buf;
    if (t.buffered) {
      buf.reset(new char[t.inputs.size() * size]);
      a.tile = tile.data();
      a.tile_pitch = t.cols;
    }
    for (int64_t q = b; q < e; ++q) {
      const int64_t r0 = q / per * h + q % per * t.rows,
                    r1 = std::min(r0 + t.rows, q / per * h + h);
      for (int64_t c0 = 0; c0 < cols; c0 += t.cols) {
        const int64_t c1 = std::min(cols, c0 + t.cols);
        for (size_t i = 0; t.buffered && i < t.inputs.size(); ++i) {
          const auto k = static_cast<size_t>(t.inputs[i]);
          const int64_t ss = l.inner(k), bytes = static_cast<int64_t>(dtype_size(t.dtypes[i]));
          char* dst = buf.get() + i * size;
          const char* src =
              static_cast<const char*>(args.in[k]) + (row_offset(l, k, r0) + c0 * ss) * bytes;
          cpu::transpose_block(t.dtypes[i], src, dst, r1 - r0, c1 - c0, ss, t.cols);
          tile[k] = dst;
        }
        fn(&a, r0, r1, c0, c1);
      }
    }
  };
  if (l.rows() * cols <= grain)
    run(0, tiles);
  else
    parallel_for(tiles, std::max<int64_t>(1, grain / (t.rows * cols)), run);
}

// Splits rows [0, rows) x cols over the pool above one grain (columns when
// there is one row and the kernel allows it). The grain, in points, shrinks
// with the kernel's work per point (its cost, stages.h), to kMinGrain points:
// y * sigmoid(y) over [32, 1024] splits, as graph mode's interpreter does,
// and a costly chain over 10,000 points splits into chunks small enough
// that a thread slowed by other work does not hold the others up. Nothing
// below grain / 16 points splits. Tiles (above) when an input is read
// transposed.
void split(int64_t work, KernelFn fn, const KernelArgs& args, int64_t rows, int64_t cols,
           bool by_cols, const Layout* l = nullptr, const TilePlan* tiles = nullptr) {
  const int64_t total = rows * cols;
  int64_t grain = default_parallel_grain();
  constexpr int64_t kMinGrain = 512;
  if (total > grain / 16)
    grain = std::max(grain / std::max<int64_t>(work, 1), std::min(grain / 16, kMinGrain));
  if (tiles && tiles->rows > 0) return run_tiles(fn, args, *l, *tiles, grain);
  if (total <= grain || (rows == 1 && !by_cols)) {
    fn(&args, 0, rows, 0, cols);
  } else if (rows == 1) {
    parallel_for(cols, grain, [&](int64_t b, int64_t e) { fn(&args, 0, 1, b, e); });
  } else {
    parallel_for(rows, std::max<int64_t>(1, grain / std::max<int64_t>(cols, 1)),
                 [&](int64_t b, int64_t e) { fn(&args, b, e, 0, cols); });
  }
}

// A product the kernel computes itself (Program::product, see jit::Product): kernel input `slot` is
// op(A) x op(B), A the node's input `slot` and B its last input. With B of rank 2, A's leading dims
// fold into the rows; else there is one product per batch, stacked.
struct ProductCall {
  ProductInput in;  // the program's: the kernel inputs reading the product
  DType dtype = DType::kInvalid;
  struct {
    bool ta = false, tb = false;
    int64_t m = 0, n = 0, k = 0;  // m: every row of every batch
  } g;
  int64_t batches = 1, batch_rows = 0;  // rows per batch (g.m when one)
  SmallVec<int64_t, kMaxDims> dims;     // the product's shape
  uint64_t b_version = 0;               // float32 B read packed (gemm_packable_b)

  // Checks the operands (their shapes are only known now).
  ProductCall(KernelContext& c, const ProductInput& program_in) : in(program_in) {
    const size_t n = c.num_inputs();
    const auto slot = static_cast<size_t>(in.slot);
    const Product& how = in.how;
    g.ta = how.transpose_a;
    g.tb = how.transpose_b;
    const Tensor &a = c.input(slot), &b = c.input(n - 1);
    dtype = a.dtype();
    int64_t d[kMaxDims];
    if (const std::string why =
            product_dims(how, {a.dtype(), a.shape()}, {b.dtype(), b.shape()}, d);
        !why.empty())
      c.fail(why);
    const int r = a.shape().rank();
    dims = SmallVec<int64_t, kMaxDims>(d, static_cast<size_t>(r));
    const Shape& bs = b.shape();
    g.k = g.tb ? bs.dim(bs.rank() - 1) : bs.dim(bs.rank() - 2);
    g.n = d[r - 1];
    g.m = 1;
    for (int j = 0; j + 1 < r; ++j) g.m *= d[j];
    batch_rows = bs.rank() > 2 ? d[r - 2] : g.m;
    batches = bs.rank() > 2 ? g.m / std::max<int64_t>(1, batch_rows) : 1;
    if (!cpu::gemm_fits(batch_rows, g.n, g.k))
      c.fail("a matrix dimension of the product is above the BLAS backend's limit");
    if (batches == 1 && !g.ta) b_version = cpu::gemm_packable_b(b, g.m, g.n, g.k);
  }

  bool reads(size_t k) const { return in.reads(k); }

  // Batch i's operands.
  template <typename T>
  cpu::GemmArgs<T> typed(KernelContext& c, int64_t i) const {
    const T* a = c.input(static_cast<size_t>(in.slot)).data<T>() + i * batch_rows * g.k;
    const T* b = c.input(c.num_inputs() - 1).data<T>() + (batches > 1 ? i * g.k * g.n : 0);
    return {g.ta, g.tb, batch_rows, g.n, g.k, a, b, b_version};
  }
  // Rows [r0, r1) into `out` (row r0's storage), one OpenBLAS call per batch
  // they cross; or with `all`, every batch as MatMul runs them.
  void rows(KernelContext& c, int64_t r0, int64_t r1, void* out, bool all) const {
    auto run = [&](auto zero) {
      using T = decltype(zero);
      T* dst = static_cast<T*>(out);
      if (all) {
        cpu::gemm_batches(typed<T>(c, 0), batches, batch_rows * g.k, batches > 1 ? g.k * g.n : 0,
                          dst);
        return;
      }
      for (int64_t i = r0 / std::max<int64_t>(1, batch_rows); i < batches; ++i) {
        const int64_t lo = std::max(r0, i * batch_rows), hi = std::min(r1, (i + 1) * batch_rows);
        if (hi <= lo) break;
        cpu::gemm_product_rows(typed<T>(c, i), lo - i * batch_rows, hi - i * batch_rows,
                               dst + (lo - r0) * g.n);
      }
    };
    if (dtype == DType::kFloat32)
      run(0.f);
    else if (dtype == DType::kFloat64)
      run(0.0);
    else
      run(BFloat16{});
  }
};

// Runs `fn` with a product computed first. When the kernel's rows are the
// product's (the space is the product's shape, or its reads of the product
// are views of column runs of whole rows) and the product is worth splitting,
// each thread computes its block of rows (MatMul's row blocks, or blocks of
// a product MatMul would split by columns: gemm_kernel_row_blocks) and runs
// the kernel over it at once, while the rows are in cache; otherwise the
// whole product comes first. (Computing a few rows at a time into a scratch
// block was no faster on a [4096, 32] x [32, 1024] dense layer, and OpenBLAS
// rounds small calls differently: docs/BENCHMARKS.md.)
void run_with_product(KernelContext& c, const Program& prog, const ProductCall& pc, KernelFn fn,
                      const KernelArgs& args, std::span<const void*> in,
                      std::span<const int64_t> offset, std::span<const int64_t> dims,
                      const Layout& l, int reduced, int64_t work) {
  const size_t rank = pc.dims.size();
  const std::span<const int64_t> pdims(pc.dims.data(), rank);
  bool rows = dims.size() == rank && l.rows() == pc.g.m && reduced <= 1, all_viewed = true;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!pc.reads(k)) continue;
    all_viewed &= prog.viewed(k);
    if (prog.viewed(k)) rows &= reads_columns(prog.views[k], pdims);
  }
  for (size_t d = 0; rows && d < rank; ++d)
    rows = dims[d] == pdims[d] || (all_viewed && d + 1 == rank);
  const int64_t elem = static_cast<int64_t>(dtype_size(pc.dtype));
  // The kernel's own work counts beside the product's (a recurrent cell's
  // transcendentals): cost units per point, as split() weighs them.
  int64_t kernel_work;
  if (__builtin_mul_overflow(work, l.rows() * l.cols(), &kernel_work))
    kernel_work = std::numeric_limits<int64_t>::max();
  const int64_t blocks = rows ? cpu::gemm_kernel_row_blocks(pc.g.m, pc.g.n, pc.g.k,
                                                            pc.g.k * pc.g.n * elem, kernel_work)
                              : 0;
  Tensor prod = Tensor::empty(pc.dtype, Shape(pdims));
  char* base = static_cast<char*>(prod.mutable_raw_data());
  for (size_t k = 0; k < in.size(); ++k)
    if (pc.reads(k)) in[k] = base + offset[k];  // args.in is `in`
  if (blocks < 2) {
    pc.rows(c, 0, pc.g.m, base, true);
    split(work, fn, args, l.rows(), l.cols(), reduced == 0);
    return;
  }
  const int64_t step = (pc.g.m + blocks - 1) / blocks;
  const int64_t row_bytes = pc.g.n * elem;
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i) {
      const int64_t lo = i * step, hi = std::min(pc.g.m, lo + step);
      if (hi <= lo) continue;
      pc.rows(c, lo, hi, base + lo * row_bytes, false);
      fn(&args, lo, hi, 0, l.cols());
    }
  });
}

// Input t of a row kernel whose N is known at run time, built for full rows
// of it, but broadcast along its row at run time (a reduced dim 1 where the
// space's is not; its dims `d`, right-aligned to the space's rank): copied to
// full rows, since a row kernel reads rows with unit stride. Rare: a tensor
// that broadcasts along a softmax's axis. Updates `d`.
Tensor full_rows(const Tensor& t, int64_t* d, std::span<const int64_t> dims, int reduced) {
  const size_t rank = dims.size();
  std::vector<int64_t> res(d, d + rank);
  for (size_t j = rank - static_cast<size_t>(reduced); j < rank; ++j) res[j] = dims[j];
  int64_t src_st[kMaxDims], dst_st[kMaxDims];
  contiguous_strides(d, rank, src_st);
  contiguous_strides(res.data(), rank, dst_st);
  cpu::CopyPlan plan;
  for (size_t j = 0; j < rank; ++j) plan.add(res[j], d[j] == 1 ? 0 : src_st[j], dst_st[j]);
  Tensor out = Tensor::empty(t.dtype(), Shape(res));
  if (out.num_elements() > 0)
    cpu::strided_copy(t.dtype(), t.raw_data(), out.mutable_raw_data(), plan);
  std::copy(res.begin(), res.end(), d);
  return out;
}

// What a call derives from its program and its inputs' shapes: the
// iteration space, its collapsed layout and where each input starts.
struct Prepared {
  size_t rank = 0, n_in = 0;
  int reduced = 0;
  int64_t work = 1;
  int64_t dims[kMaxDims];
  int64_t total = 0;
  Layout l;
  SmallVec<int64_t, 8> offset;  // per input: its first value, in bytes
  bool fast = true;             // every input has the inner stride the kernel was built for
  bool direct = false;          // an elementwise call whose outputs all fill the space
  TilePlan tiles;               // inputs read transposed (split())
  std::span<const int64_t> space() const { return {dims, rank}; }
};

// The per-call work beside the layout: a product computed first, outputs
// folded over their leading dims, inputs expanded to full rows. All but the
// expanded inputs (copies of this call's values) follow from the program
// and shapes, so a call without them is reused whole.
struct Extras {
  std::optional<ProductCall> product;
  std::vector<Fold> folds;
  std::vector<Tensor> expanded;  // sized only when an input is expanded
  bool none() const { return !product && folds.empty() && expanded.empty(); }
  bool reusable() const { return expanded.empty(); }
};

// Tiles for an elementwise layout with inputs read transposed (TilePlan):
// two cache lines' worth of rows for the smallest such value, 32 KB per
// tile (a [2048, 2048] swap: 1.51 ms vs 1.55–1.87 for 1 or 8 lines, 16 KB).
// Buffered when every input built as transposed (pattern 2) is read so at
// run time, stepping by 1 from row to row.
void plan_tiles(KernelContext& c, std::span<const uint8_t> pattern, Prepared& p) {
  const Layout& l = p.l;
  TilePlan& t = p.tiles;
  t = TilePlan{};
  if (p.reduced > 0 || l.rank < 2 || l.rows() <= 1) return;
  int64_t small = 16, large = 1;
  t.buffered = true;
  for (size_t k = 0; k < p.n_in; ++k) {
    // Tiled: an inner stride that the row stride interleaves (a transpose;
    // x[:, ::2] reads its rows one after another).
    const int64_t ss = l.inner(k), rs = l.strides[k * static_cast<size_t>(l.rank) + l.rank - 2];
    const bool strided = (ss > 1 || ss < -1) && std::abs(rs) < std::abs(ss);
    if (pattern[k] == 2) t.buffered &= strided && rs == 1;
    if (!strided) continue;
    const DType dt = c.input(k).dtype();
    const auto bytes = static_cast<int64_t>(dtype_size(dt));
    t.inputs.push_back(static_cast<int32_t>(k));
    t.dtypes.push_back(dt);
    small = std::min(small, bytes);
    large = std::max(large, bytes);
  }
  if (t.inputs.empty()) return;
  t.rows = 128 / small;
  t.cols = std::max<int64_t>(16, 32768 / (t.rows * large));
}

// Each kernel input's dims aligned to the space's rank (into in_dims) and,
// when the program reads views, its strides and first value (p.offset); the
// space's dims (p.dims) broadcast from them.
void input_layouts(KernelContext& c, const Program& prog, const std::optional<ProductCall>& product,
                   Prepared& p, std::span<int64_t> in_dims, std::span<int64_t> in_strides) {
  const size_t rank = p.rank, n_in = p.n_in;
  int64_t* dims = p.dims;
  std::fill_n(dims, rank, 1);
  const bool mapped = !prog.views.empty();
  p.offset = SmallVec<int64_t, 8>(n_in, 0);
  const Shape product_shape =
      product ? Shape(std::span<const int64_t>(product->dims.data(), product->dims.size()))
              : Shape();
  for (size_t k = 0; k < n_in; ++k) {
    const Shape& s = product && product->reads(k) ? product_shape : c.input(k).shape();
    int64_t* d = in_dims.data() + k * rank;
    const bool viewed = prog.viewed(k);
    const View* v = viewed ? &prog.views[k] : nullptr;
    const size_t r = viewed ? v->dims.size() : static_cast<size_t>(s.rank());
    if (r > rank) c.fail("input ", k, " has rank ", r, ", over the kernel's ", rank);
    const size_t off = rank - r;
    std::fill_n(d, off, 1);
    if (viewed) {
      if (const std::string why = view_dims(*v, s, d + off); !why.empty())
        c.fail("input ", k, ": ", why);
    } else {
      for (size_t j = 0; j < r; ++j) d[off + j] = s.dim(static_cast<int>(j));
    }
    if (mapped) {
      int64_t* st = in_strides.data() + k * rank;
      std::fill_n(st, off, 0);
      if (viewed) {
        const int64_t first = view_strides(*v, s, st + off);
        // A view of no values (the rest of a dim past its end) reads nothing.
        const bool none = std::count(d + off, d + rank, 0) > 0;
        p.offset[k] = none ? 0 : first * static_cast<int64_t>(dtype_size(c.input(k).dtype()));
      } else {
        contiguous_strides(d + off, r, st + off);
      }
    }
    for (size_t j = 0; j < rank; ++j) {
      if (d[j] == 1 || d[j] == dims[j]) continue;
      if (dims[j] != 1) c.fail("Incompatible shapes in fused kernel: input ", k, " has ", s);
      dims[j] = d[j];
    }
  }
  p.total = 1;
  for (size_t d = 0; d < rank; ++d) p.total *= dims[d];
}

// Fills `p` (and `x`) from the program and the call's inputs.
void prepare(KernelContext& c, const Program& prog, Prepared& p, Extras& x) {
  if (prog.product) x.product.emplace(c, *prog.product);
  const std::optional<ProductCall>& product = x.product;
  // The kernel's inputs: the node's, less the product's second operand.
  const size_t rank = static_cast<size_t>(prog.kernel.rank), n_in = prog.num_kernel_inputs();
  const int reduced = prog.kernel.reduced;
  const std::span<const uint8_t> pattern = prog.pattern;
  if (rank > static_cast<size_t>(kMaxDims)) c.fail("rank ", rank, " is over ", kMaxDims);
  if (c.num_inputs() != n_in + (product ? 1 : 0))
    c.fail("the kernel reads ", n_in + (product ? 1 : 0), " inputs, not ", c.num_inputs());
  p.rank = rank;
  p.n_in = n_in;
  p.reduced = reduced;
  p.work = prog.work;
  x.folds = prog.folds;  // outputs folded over their leading dims (fold.h)
  const bool mapped = !prog.views.empty();
  SmallVec<int64_t, 8 * kMaxDims> in_dims(n_in * rank);
  SmallVec<int64_t, 8 * kMaxDims> in_strides(mapped ? n_in * rank : 0);
  input_layouts(c, prog, product, p, in_dims, in_strides);
  const int64_t* dims = p.dims;
  // N known at run time: inputs built for full rows but broadcast along them.
  if (reduced > 0 && prog.row_points < 0 && !mapped)
    for (size_t k = 0; k < n_in; ++k) {
      int64_t* d = in_dims.data() + k * rank;
      bool broadcast = false;
      for (size_t j = rank - static_cast<size_t>(reduced); j < rank; ++j)
        broadcast |= d[j] != dims[j];
      if (broadcast && pattern[k] == 1 && !(product && product->reads(k))) {
        x.expanded.resize(n_in);
        x.expanded[k] = full_rows(c.input(k), d, p.space(), reduced);
      }
    }
  Layout& l = p.l;
  if (reduced > 0) {
    SmallVec<int64_t, 16 * (kMaxDims + 1)> scratch(2 * n_in * (kMaxDims + 1));
    if (!collapse_rows(p.space(), reduced, n_in, in_dims.data(), scratch.data(), l,
                       mapped ? in_strides.data() : nullptr))
      c.fail("an input's view does not read whole rows of its source");
    int64_t n = 1;
    for (size_t d = rank - static_cast<size_t>(reduced); d < rank; ++d) n *= dims[d];
    if (l.cols() != n || (prog.row_points >= 0 && n != prog.row_points))
      c.fail("reduced dims hold ", n, " values, not ",
             prog.row_points >= 0 ? prog.row_points : l.cols());
  } else {
    // A product keeps its rows (the blocks it is computed in), a fold its
    // folded dims apart from the others (a full fold walks points in order).
    const int64_t fold_end = x.folds.empty() ? 0 : x.folds[0].outer + x.folds[0].dims;
    const bool split = !x.folds.empty() && fold_end < static_cast<int64_t>(rank);
    collapse(p.space(), n_in, in_dims.data(), l, product.has_value() || split,
             mapped ? in_strides.data() : nullptr, split ? static_cast<int>(fold_end) : -1);
  }
  // (Rows of one point read any inner stride alike: a run-time N of 1.)
  // (Pattern 2 reads any inner stride.)
  p.fast = true;
  for (size_t k = 0; k < n_in; ++k)
    p.fast &= pattern[k] == 2 || pattern[k] == l.inner(k) || (reduced > 0 && l.cols() == 1);
  plan_tiles(c, pattern, p);
  const bool empty = l.rows() == 0 || (reduced == 0 && p.total == 0);
  if (reduced > 0 && !p.fast && !empty)
    c.fail("inputs do not have the layout the kernel was built for");
  p.direct = reduced == 0 && !empty && x.none() && c.num_outputs() <= 8;
  for (size_t o = 0; o < c.num_outputs(); ++o)
    p.direct &= c.output_spec(o).shape.num_elements() == p.total;
}

// execute() for a direct call: no temporaries, nothing to copy out.
void execute_direct(KernelContext& c, KernelFn fn, const Prepared& p) {
  void* out[8];
  for (size_t o = 0; o < c.num_outputs(); ++o) out[o] = c.allocate_output(o).mutable_raw_data();
  SmallVec<const void*, 16> in(p.n_in);
  for (size_t k = 0; k < p.n_in; ++k)
    in[k] = static_cast<const char*>(c.input(k).raw_data()) + p.offset[k];
  const Layout& l = p.l;
  const KernelArgs args{in.data(), out, l.rank, l.shape, l.strides.data(), p.fast, false};
  split(p.work, fn, args, l.rows(), l.cols(), true, &l, &p.tiles);
}

// Runs kernel `fn` as `p` and `x` say.
void execute(KernelContext& c, const Program& prog, const Prepared& p, const Extras& x) {
  const KernelFn fn = prog.fn;
  const Layout& l = p.l;
  const int64_t rows = l.rows();
  Outputs outs(c, p.space(), p.reduced, p.total, rows, x.folds);
  if (rows == 0 || (p.reduced == 0 && p.total == 0)) {
    if (!x.folds.empty())  // the folds of nothing: their starting values
      run_folded(c, x.folds, nullptr, KernelArgs{}, {}, p.space(), l);
    return;
  }
  SmallVec<const void*, 16> in(p.n_in);
  for (size_t k = 0; k < p.n_in; ++k)
    in[k] = x.product && x.product->reads(k) ? nullptr  // set by run_with_product
            : k < x.expanded.size() && x.expanded[k].defined()
                ? x.expanded[k].raw_data()
                : static_cast<const char*>(c.input(k).raw_data()) + p.offset[k];
  // Row kernels stream outputs too large to stay in cache (no read for
  // ownership of each line).
  bool stream = false;
  if (p.reduced > 0) {
    size_t out_bytes = 0;
    for (size_t o = 0; o < c.num_outputs(); ++o) out_bytes += c.output(o).nbytes();
    stream = out_bytes >= cpu::stream_bytes();
  }
  const KernelArgs args{in.data(),        outs.ptrs.data(), l.rank, l.shape,
                        l.strides.data(), p.fast,           stream};
  if (x.product)
    run_with_product(c, prog, *x.product, fn, args, std::span<const void*>(in.data(), in.size()),
                     std::span<const int64_t>(p.offset.data(), p.offset.size()), p.space(), l,
                     p.reduced, p.work);
  else if (!x.folds.empty())
    run_folded(c, x.folds, fn, args, std::span<void*>(outs.ptrs.data(), outs.ptrs.size()),
               p.space(), l);
  else
    split(p.work, fn, args, rows, l.cols(), p.reduced == 0, &l, &p.tiles);
  outs.finish(c);
}

using InputShapes = SmallVec<int64_t, 4 * (kMaxDims + 1)>;

// The call's input shapes: per input, its rank and dims.
void input_shapes(const KernelContext& c, InputShapes& out) {
  out.clear();
  for (size_t k = 0; k < c.num_inputs(); ++k) {
    const Shape& s = c.input(k).shape();
    out.push_back(s.rank());
    for (int64_t j = 0; j < s.rank(); ++j) out.push_back(s.dim(j));
  }
}

bool same_shapes(const KernelContext& c, const InputShapes& shapes) {
  size_t i = 0;
  for (size_t k = 0; k < c.num_inputs(); ++k) {
    const Shape& s = c.input(k).shape();
    const size_t r = static_cast<size_t>(s.rank());
    if (i + 1 + r > shapes.size() || shapes[i] != static_cast<int64_t>(r)) return false;
    for (size_t j = 0; j < r; ++j)
      if (shapes[i + 1 + j] != s.dim(static_cast<int>(j))) return false;
    i += 1 + r;
  }
  return i == shapes.size();
}

}  // namespace

// A program's last prepared call (Program::last_call) and the input shapes
// it was made for: a step of a train loop calls a few dozen kernels with the
// same shapes each time.
struct PreparedCall {
  InputShapes shapes;
  Prepared p;
  Extras x;
};

namespace {

void jit_kernel(KernelContext& c) {
  const auto& prog = c.attr_object<Program>("program");
  if (const std::shared_ptr<const PreparedCall> last = prog.last_call.load();
      last && same_shapes(c, last->shapes)) {
    if (last->p.direct)
      execute_direct(c, prog.fn, last->p);
    else
      execute(c, prog, last->p, last->x);
    return;
  }
  auto call = std::make_shared<PreparedCall>();
  prepare(c, prog, call->p, call->x);  // checks the inputs against the program first
  if (!prog.fn) c.fail("kernel ", prog.kernel.name, " is not loaded in this process");
  execute(c, prog, call->p, call->x);
  if (call->x.reusable()) {
    input_shapes(c, call->shapes);
    prog.last_call.store(std::move(call));
  }
}

}  // namespace

void register_module(const std::string& module, std::shared_ptr<LoadedModule> so,
                     const std::vector<std::string>& symbols) {
  std::vector<std::pair<std::string, KernelFn>> found;
  for (const std::string& s : symbols)
    found.emplace_back(str_cat(module, "/", s), reinterpret_cast<KernelFn>(so->symbol(s.c_str())));
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& [k, f] : found) r.kernels[k] = f;
  r.modules.push_back(std::move(so));
}

KernelFn find_kernel(const std::string& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.kernels.find(key);
  return it == r.kernels.end() ? nullptr : it->second;
}

void bind_jit_kernels(OpTableBuilder& t) {
  t.kernel(OpId::JitKernel, jit_kernel);
}

}  // namespace kiln::jit
