// The runtime side of folded reductions (fold.h): blocks of rows computed
// into scratch, folded into per-chunk column accumulators (float64 for
// floats, 64-bit integers otherwise), chunks combined in a fixed order so the
// result does not depend on which thread ran what.
#include <algorithm>
#include <cstdint>

#include "jit/fusion/fold.h"
#include "jit/ir/jit_ir.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/functors.h"
#include "kiln/small_vector.h"
#include "kiln/thread_pool.h"

namespace kiln::jit {
namespace {

// Points of scratch per folded output and block (64 KB of float32).
constexpr int64_t kBlockPoints = 16384;
// A full fold's accumulators per chunk (kBlockPoints is a multiple).
constexpr int64_t kLanes = 16;

// One fold's accumulators: double for floats, int64 for integers (sums and
// products wrap as unsigned, as the eager kernels' do mod 2^bits).
template <typename A>
A combine(OpId op, A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    if (op == OpId::Add) return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
    if (op == OpId::Mul) return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    if (op == OpId::Add) return a + b;
    if (op == OpId::Mul) return a * b;
  }
  return op == OpId::Maximum ? fn::Maximum{}(a, b) : fn::Minimum{}(a, b);
}

template <typename T, typename A>
A init_of(const Fold& f) {
  T v;
  std::memcpy(&v, &f.init, sizeof(T));
  return static_cast<A>(v);
}

// Folds rows [0, rows) of `src` ([rows, cols]) into acc[cols], the op fixed
// at compile time so the column loop vectorizes. kInLanes: cols is kLanes (a
// full fold's lanes), held in registers across the rows.
template <OpId kOp, bool kInLanes, typename T, typename A>
inline void fold_as(const T* src, int64_t rows, int64_t cols, A* acc) {
  if constexpr (kInLanes) {
    A a[kLanes];
    std::copy(acc, acc + kLanes, a);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < kLanes; ++j)
        a[j] = combine<A>(kOp, a[j], static_cast<A>(src[r * kLanes + j]));
    std::copy(a, a + kLanes, acc);
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = src + r * cols;
      for (int64_t j = 0; j < cols; ++j) acc[j] = combine<A>(kOp, acc[j], static_cast<A>(row[j]));
    }
  }
}
#if defined(__GNUC__) && defined(__x86_64__)
// Float32 sums in float64 (batch norm, a loss's mean) with AVX2 where the CPU has it.
template <bool kInLanes>
KILN_AVX2_TARGET void add_f32_avx2(const float* src, int64_t rows, int64_t cols, double* acc) {
  fold_as<OpId::Add, kInLanes>(src, rows, cols, acc);
}
#endif

template <bool kInLanes, typename T, typename A>
void fold_rows(OpId op, const T* src, int64_t rows, int64_t cols, A* acc) {
#if defined(__GNUC__) && defined(__x86_64__)
  if constexpr (std::is_same_v<T, float>)
    if (op == OpId::Add && cpu::detail::simd_level() != cpu::detail::SimdLevel::kBase)
      return add_f32_avx2<kInLanes>(src, rows, cols, acc);
#endif
  switch (op) {
    case OpId::Add: return fold_as<OpId::Add, kInLanes>(src, rows, cols, acc);
    case OpId::Mul: return fold_as<OpId::Mul, kInLanes>(src, rows, cols, acc);
    case OpId::Maximum: return fold_as<OpId::Maximum, kInLanes>(src, rows, cols, acc);
    default: return fold_as<OpId::Minimum, kInLanes>(src, rows, cols, acc);
  }
}

// The folded value v, divided by `count` for a mean, as a T.
template <typename T, typename A>
T result(const Fold& f, A v, int64_t count) {
  const T s = static_cast<T>(v);
  if constexpr (std::is_integral_v<T>)
    return f.mean ? (count == 0 ? T(0) : static_cast<T>(s / static_cast<T>(count))) : s;
  else
    return f.mean ? s / static_cast<T>(count) : s;
}

// The chunks' accumulators combined in order, divided by `count` for a
// mean, into `dst` (C values); for a full fold, the C lanes combined in
// order too, into dst[0].
template <typename T, typename A>
void finish(const Fold& f, const A* acc, int64_t chunks, int64_t cols, int64_t count, T* dst,
            bool full) {
  A all = init_of<T, A>(f);
  for (int64_t j = 0; j < cols; ++j) {
    A v = init_of<T, A>(f);
    for (int64_t i = 0; i < chunks; ++i) v = combine<A>(f.combine, v, acc[i * cols + j]);
    if (full)
      all = combine<A>(f.combine, all, v);
    else
      dst[j] = result<T, A>(f, v, count);
  }
  if (full) dst[0] = result<T, A>(f, all, count);
}

// Calls `body` with T (the stored type) and A (the accumulator) for `dt`.
template <typename F>
void with_types(DType dt, F&& body) {
  switch (dt) {
    case DType::kFloat32: return body(float{}, double{});
    case DType::kFloat64: return body(double{}, double{});
    case DType::kInt32: return body(int32_t{}, int64_t{});
    default: return body(int64_t{}, int64_t{});
  }
}

// Runs fn over points [p0, p1) of a [rows, lc] layout, in order: a partial
// row, whole rows, a partial row (a point's index is row * lc + column).
void run_points(KernelFn fn, const KernelArgs* a, int64_t p0, int64_t p1, int64_t lc) {
  int64_t r = p0 / lc;
  if (const int64_t c = p0 % lc; c != 0) {
    const int64_t e = std::min(lc, c + (p1 - p0));
    fn(a, r, r + 1, c, e);
    p0 += e - c;
    ++r;
  }
  if (const int64_t whole = (p1 - p0) / lc; whole > 0) {
    fn(a, r, r + whole, 0, lc);
    p0 += whole * lc;
    r += whole;
  }
  if (p0 < p1) fn(a, r, r + 1, 0, p1 - p0);
}

}  // namespace

void run_folded(KernelContext& c, const std::vector<Fold>& folds, KernelFn fn,
                const KernelArgs& args, std::span<void*> out, std::span<const int64_t> dims,
                const Layout& l) {
  const auto k0 = static_cast<size_t>(folds[0].outer);
  const auto k1 = k0 + static_cast<size_t>(folds[0].dims);
  // A fold walks folded rows of `cols` points into `cols` accumulators per
  // chunk, the rows of each of the `outer` kept values before them apart; a
  // full fold walks points into kLanes of them (lane = the point's index in
  // its chunk mod kLanes).
  const bool full = k0 == 0 && k1 == dims.size();
  int64_t outer = 1, rows = 1, cols = 1;
  for (size_t d = 0; d < dims.size(); ++d) (d < k0 ? outer : d < k1 ? rows : cols) *= dims[d];
  const int64_t lcols = l.cols();
  if (!full && cols > 0 && (lcols <= 0 || cols % lcols != 0))
    c.fail("the layout does not keep the folded dims apart");
  const int64_t per_row = !full && cols > 0 ? cols / lcols : 0;  // layout rows per folded row
  const int64_t units = rows, width = full ? kLanes : cols;
  const int64_t block =
      full ? kBlockPoints : std::max<int64_t>(1, kBlockPoints / std::max<int64_t>(cols, 1));
  const int64_t blocks = cols > 0 && outer > 0 ? (units + block - 1) / block : 0;
  // Chunks per outer value: together about two per thread.
  const int64_t target = 2 * ThreadPool::global().num_threads();
  const int64_t chunks = std::max<int64_t>(
      1, std::min<int64_t>(std::max<int64_t>(1, target / std::max<int64_t>(outer, 1)), blocks));
  const int64_t tasks = std::max<int64_t>(outer, 1) * chunks;
  for (const Fold& f : folds) {
    const DType dt = c.output(static_cast<size_t>(f.output)).dtype();
    if (!foldable(dt))
      c.fail("a folded output must be float32, float64, int32 or int64, not ", dtype_name(dt));
  }
  // Per fold: tasks x width accumulators, as raw 8-byte slots (inline for
  // small folds: a loss over a few values costs no allocation).
  const auto slots = static_cast<size_t>(tasks * width);
  SmallVec<int64_t, 64> acc_slots(folds.size() * slots);
  auto acc_of = [&](size_t f) { return acc_slots.data() + f * slots; };
  for (size_t f = 0; f < folds.size(); ++f)
    with_types(c.output(static_cast<size_t>(folds[f].output)).dtype(), [&](auto t, auto a) {
      using T = decltype(t);
      using A = decltype(a);
      A* p = reinterpret_cast<A*>(acc_of(f));
      std::fill(p, p + tasks * width, init_of<T, A>(folds[f]));
    });
  if (blocks > 0) {
    const int64_t step = (units + chunks - 1) / chunks;
    // Scratch per fold for the largest block, in 8-byte slots (inline when
    // small; 64 KB of float32 for a full block).
    size_t es = 1;
    for (const Fold& f : folds)
      es = std::max(es, dtype_size(c.output(static_cast<size_t>(f.output)).dtype()));
    const auto per_fold =
        (static_cast<size_t>(std::min(block, step) * cols) * es + 7) / sizeof(int64_t);
    parallel_for(tasks, 1, [&](int64_t c0, int64_t c1) {
      SmallVec<void*, 8> mine(out.data(), out.size());
      KernelArgs a = args;
      a.out = mine.data();
      // 64-byte aligned, not zeroed (the kernel writes it): on the stack when
      // small, else from kiln's allocator.
      const size_t total = folds.size() * per_fold;
      alignas(64) int64_t small[256];
      Tensor large;
      if (total > 256) large = Tensor::empty(DType::kInt64, Shape({static_cast<int64_t>(total)}));
      int64_t* scratch = total > 256 ? large.mutable_data<int64_t>() : small;
      auto scratch_of = [&](size_t f) { return scratch + f * per_fold; };
      auto dtype_of = [&](size_t f) {
        return c.output(static_cast<size_t>(folds[f].output)).dtype();
      };
      for (int64_t ch = c0; ch < c1; ++ch) {
        // Chunk ch % chunks of outer value ch / chunks: its folded rows
        // [lo, hi) are the space's rows base + [lo, hi).
        const int64_t base = ch / chunks * rows;
        const int64_t lo = base + ch % chunks * step, hi = std::min(base + units, lo + step);
        for (int64_t r = lo; r < hi; r += block) {
          const int64_t r1 = std::min(hi, r + block);
          // The kernel writes output o at o's base + point index: shift the
          // scratch so this block's first point lands at its start.
          for (size_t f = 0; f < folds.size(); ++f) {
            const auto es = static_cast<uintptr_t>(dtype_size(dtype_of(f)));
            mine[static_cast<size_t>(folds[f].output)] = reinterpret_cast<void*>(
                reinterpret_cast<uintptr_t>(scratch_of(f)) - static_cast<uintptr_t>(r * cols) * es);
          }
          if (full)
            run_points(fn, &a, r, r1, std::max<int64_t>(lcols, 1));
          else
            fn(&a, r * per_row, r1 * per_row, 0, lcols);
          for (size_t f = 0; f < folds.size(); ++f)
            with_types(dtype_of(f), [&](auto t, auto ac) {
              using T = decltype(t);
              using A = decltype(ac);
              const T* src = reinterpret_cast<const T*>(scratch_of(f));
              A* mine_acc = reinterpret_cast<A*>(acc_of(f)) + ch * width;
              const int64_t n = r1 - r;
              if (!full) return fold_rows<false, T, A>(folds[f].combine, src, n, width, mine_acc);
              const int64_t whole = n - n % kLanes;
              fold_rows<true, T, A>(folds[f].combine, src, whole / kLanes, kLanes, mine_acc);
              if (whole < n)  // the chunk's last points, into the first lanes
                fold_rows<false, T, A>(folds[f].combine, src + whole, 1, n - whole, mine_acc);
            });
        }
      }
    });
  }
  for (size_t f = 0; f < folds.size(); ++f) {
    Tensor& o = c.output(static_cast<size_t>(folds[f].output));
    if (o.num_elements() != outer * (full ? 1 : cols))
      c.fail("a folded output has ", o.num_elements(), " values");
    with_types(o.dtype(), [&](auto t, auto a) {
      using T = decltype(t);
      using A = decltype(a);
      const A* acc = reinterpret_cast<const A*>(acc_of(f));
      for (int64_t i = 0; i < outer; ++i)
        finish<T, A>(folds[f], acc + i * chunks * width, chunks, width, rows,
                     o.mutable_data<T>() + i * cols, full);
    });
  }
}

}  // namespace kiln::jit
