// CPU kernels for reductions over axes (sum, mean, max, min, prod, any, all).
//
// The input shape is collapsed into alternating groups of kept and reduced
// dims (length-1 dims dropped). Each reduced group is then removed in one pass
// that reduces a [A, R, B] array to [A, B], innermost group first:
//  - B == 1: rows of R contiguous elements, reduced with several independent
//    accumulators (vectorizable);
//  - B > 1: rows of B elements are accumulated elementwise (vectorizable), never
//    a strided walk per output element.
// Long reductions are cut into fixed-size blocks whose partial results are
// combined afterwards (float32 sums combine in float64); the blocks depend on
// the shape only, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "bind.h"
#include "elementwise_util.h"
#include "kernel_util.h"
#include "kiln/small_vector.h"

namespace kiln::cpu {
void bind_scan_kernels(OpTableBuilder& t);  // argmax, argmin, cumsum (scan.cpp)

namespace {

constexpr int64_t kBlock = 1 << 14;     // elements per partial result
constexpr int64_t kCols = 1024;         // columns per task when accumulating rows
constexpr int64_t kRowBlock = 1 << 16;  // elements per partial when accumulating rows
constexpr int kLanes = 16;              // independent accumulators in contiguous loops

// Uninitialized scratch array (std::vector<bool> has no data()).
template <typename T>
struct Scratch {
  std::unique_ptr<T[]> p;
  void resize(int64_t n) { p.reset(new T[static_cast<size_t>(n)]); }
  T* data() const { return p.get(); }
  T& operator[](int64_t i) const { return p[static_cast<size_t>(i)]; }
};

// Wrapping integer arithmetic without signed-overflow UB.
template <typename T, bool = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct WrapOf {
  using type = T;
};
template <typename T>
struct WrapOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using Wrap = typename WrapOf<T>::type;

template <typename T>
struct IsComplex : std::false_type {};
template <typename R>
struct IsComplex<std::complex<R>> : std::true_type {};

// float32 sums (and complex64 parts) accumulate in double.
template <typename T>
using SumAcc = std::conditional_t<
    std::is_same_v<T, float>, double,
    std::conditional_t<std::is_same_v<T, std::complex<float>>, std::complex<double>, T>>;

template <typename T>
struct SumOp {
  using Acc = SumAcc<T>;
  static T id() { return T(0); }
  static T f(T a, T b) { return static_cast<T>(static_cast<Wrap<T>>(a) + static_cast<Wrap<T>>(b)); }
  static Acc acc(Acc a, T b) {
    if constexpr (std::is_same_v<Acc, T>)
      return f(a, b);
    else
      return a + static_cast<Acc>(b);
  }
};
template <typename T>
struct ProdOp {
  using Acc = T;
  static T id() { return T(1); }
  static T f(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<Wrap<T>>(a) * static_cast<Wrap<T>>(b));
    else
      return a * b;
  }
  static Acc acc(Acc a, T b) { return f(a, b); }
};
template <typename T>
struct MaxOp {
  using Acc = T;
  static T id() {
    if constexpr (std::is_floating_point_v<T>)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
  // NaN propagates: a NaN in either operand wins.
  static T f(T a, T b) { return (b > a || b != b) ? b : a; }
  static Acc acc(Acc a, T b) { return f(a, b); }
};
template <typename T>
struct MinOp {
  using Acc = T;
  static T id() {
    if constexpr (std::is_floating_point_v<T>)
      return std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::max();
  }
  static T f(T a, T b) { return (b < a || b != b) ? b : a; }
  static Acc acc(Acc a, T b) { return f(a, b); }
};
struct AnyOp {
  using Acc = bool;
  static bool id() { return false; }
  static bool f(bool a, bool b) { return a | b; }
  static bool acc(bool a, bool b) { return a | b; }
};
struct AllOp {
  using Acc = bool;
  static bool id() { return true; }
  static bool f(bool a, bool b) { return a & b; }
  static bool acc(bool a, bool b) { return a & b; }
};

// Reduces n contiguous elements with kLanes accumulators.
template <typename T, typename Op>
T reduce_contig(const T* p, int64_t n) {
  T lanes[kLanes];
  for (int j = 0; j < kLanes; ++j) lanes[j] = Op::id();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
#pragma omp simd  // GCC keeps max/min folds scalar without it (10x slower)
    for (int j = 0; j < kLanes; ++j) lanes[j] = Op::f(lanes[j], p[i + j]);
  T r = Op::id();
  for (; i < n; ++i) r = Op::f(r, p[i]);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) lanes[j] = Op::f(lanes[j], lanes[j + w]);
  return Op::f(lanes[0], r);
}

// acc[j] = f(id, rows r0.. r1 of column j) of `in` (row stride `ld`): chunks
// of kChunk, then 16, columns whose accumulators stay in registers over all
// the rows (a loop over whole rows loads and stores every accumulator per
// row: 2.5-5x slower on SE blocks' [196, 960] and [3136, 96]), then the
// columns left (fewer than 16) row by row.
#define KILN_ACCUMULATE_ROWS(name, attr, kChunk)                                              \
  template <typename T, typename Op, int64_t C>                                               \
  attr inline void name##_chunk(const T* in, int64_t ld, int64_t r0, int64_t r1, T* acc) {    \
    T a[C];                                                                                   \
    for (int64_t j = 0; j < C; ++j) a[j] = Op::id();                                          \
    for (int64_t r = r0; r < r1; ++r) {                                                       \
      const T* row = in + r * ld;                                                             \
      _Pragma("omp simd") for (int64_t j = 0; j < C; ++j) a[j] = Op::f(a[j], row[j]);         \
    }                                                                                         \
    for (int64_t j = 0; j < C; ++j) acc[j] = a[j];                                            \
  }                                                                                           \
  template <typename T, typename Op>                                                          \
  attr void name(const T* in, int64_t ld, int64_t r0, int64_t r1, int64_t cols, T* acc) {     \
    int64_t j0 = 0;                                                                           \
    for (; j0 + (kChunk) <= cols; j0 += (kChunk))                                             \
      name##_chunk<T, Op, (kChunk)>(in + j0, ld, r0, r1, acc + j0);                           \
    for (; j0 + 16 <= cols; j0 += 16) name##_chunk<T, Op, 16>(in + j0, ld, r0, r1, acc + j0); \
    for (int64_t j = j0; j < cols; ++j) acc[j] = Op::id();                                    \
    for (int64_t r = r0; r < r1 && j0 < cols; ++r) {                                          \
      const T* row = in + r * ld;                                                             \
      for (int64_t j = j0; j < cols; ++j) acc[j] = Op::f(acc[j], row[j]);                     \
    }                                                                                         \
  }
KILN_ACCUMULATE_ROWS(accumulate_rows_base, , 32)
#ifdef KILN_X86_CLONES
KILN_ACCUMULATE_ROWS(accumulate_rows_avx2, KILN_AVX2_TARGET, 64)
KILN_ACCUMULATE_ROWS(accumulate_rows_avx512, KILN_AVX512_TARGET, 128)
#endif
#undef KILN_ACCUMULATE_ROWS

// accumulate_rows_base in the widest vector flavour the CPU has (floating
// point: integer and bool folds keep the baseline build).
template <typename T, typename Op>
void accumulate_rows(const T* in, int64_t ld, int64_t r0, int64_t r1, int64_t cols, T* acc) {
#ifdef KILN_X86_CLONES
  if constexpr (std::is_floating_point_v<T>) {
    switch (detail::simd_level()) {
      case detail::SimdLevel::kAvx512:
        return accumulate_rows_avx512<T, Op>(in, ld, r0, r1, cols, acc);
      case detail::SimdLevel::kAvx2: return accumulate_rows_avx2<T, Op>(in, ld, r0, r1, cols, acc);
      case detail::SimdLevel::kBase: break;
    }
  }
#endif
  accumulate_rows_base<T, Op>(in, ld, r0, r1, cols, acc);
}

// out[a, b] = reduce_r in[a, r, b]. R >= 1.
template <typename T, typename Op>
void reduce3(const T* in, T* out, int64_t A, int64_t R, int64_t B) {
  using Acc = typename Op::Acc;
  const int64_t grain = config().parallel_grain;
  if (B == 1) {
    if (R <= kBlock) {
      parallel_for(A, std::max<int64_t>(1, grain / R), [&](int64_t a0, int64_t a1) {
        for (int64_t a = a0; a < a1; ++a) out[a] = reduce_contig<T, Op>(in + a * R, R);
      });
      return;
    }
    const int64_t nb = (R + kBlock - 1) / kBlock;
    Scratch<T> part;
    part.resize(A * nb);
    parallel_for(A * nb, std::max<int64_t>(1, grain / kBlock), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t a = t / nb, b = t % nb;
        const int64_t s = b * kBlock, e = std::min(R, s + kBlock);
        part[t] = reduce_contig<T, Op>(in + a * R + s, e - s);
      }
    });
    for (int64_t a = 0; a < A; ++a) {
      Acc acc = static_cast<Acc>(Op::id());
      for (int64_t b = 0; b < nb; ++b) acc = Op::acc(acc, part[a * nb + b]);
      out[a] = static_cast<T>(acc);
    }
    return;
  }
  // Rows of B: tasks are (a, column chunk, row block).
  const int64_t nc = (B + kCols - 1) / kCols;
  const int64_t rb = std::max<int64_t>(1, kRowBlock / std::min(B, kCols));
  const int64_t nr = (R + rb - 1) / rb;
  const int64_t tasks = A * nc * nr;
  const int64_t task_elems = std::min(B, kCols) * std::min(R, rb);
  Scratch<T> part;
  if (nr > 1) part.resize(A * nr * B);
  parallel_for(tasks, std::max<int64_t>(1, grain / task_elems), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t a = t / (nc * nr), c = (t / nr) % nc, r = t % nr;
      const int64_t c0 = c * kCols, c1 = std::min(B, c0 + kCols);
      const int64_t r0 = r * rb, r1 = std::min(R, r0 + rb);
      T* dst = nr > 1 ? part.data() + (a * nr + r) * B + c0 : out + a * B + c0;
      accumulate_rows<T, Op>(in + a * R * B + c0, B, r0, r1, c1 - c0, dst);
    }
  });
  if (nr == 1) return;
  parallel_for(A * B, grain, [&](int64_t i0, int64_t i1) {
    Scratch<Acc> acc;
    acc.resize(std::min<int64_t>(i1 - i0, B));
    for (int64_t i = i0; i < i1;) {
      // Combine one output row segment [i, e) of the same a.
      const int64_t a = i / B, e = std::min(i1, (a + 1) * B), b0 = i - a * B;
      for (int64_t j = 0; j < e - i; ++j) acc[j] = static_cast<Acc>(Op::id());
      for (int64_t r = 0; r < nr; ++r) {
        const T* p = part.data() + (a * nr + r) * B + b0;
        for (int64_t j = 0; j < e - i; ++j) acc[j] = Op::acc(acc[j], p[j]);
      }
      for (int64_t j = 0; j < e - i; ++j) out[i + j] = static_cast<T>(acc[j]);
      i = e;
    }
  });
}

struct Group {
  int64_t size;
  bool reduced;
};

using Groups = SmallVec<Group, 8>;  // no allocation for the usual ranks

// Collapses `shape` into alternating kept/reduced groups, dropping length-1 dims.
Groups plan_groups(const Shape& shape, const std::vector<int64_t>& axes) {
  const int64_t rank = shape.rank();
  SmallVec<uint8_t, 16> red(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  Groups g;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t n = shape.dim(d);
    if (n == 1) continue;
    if (!g.empty() && g.back().reduced == static_cast<bool>(red[static_cast<size_t>(d)]))
      g.back().size *= n;
    else
      g.push_back({n, red[static_cast<size_t>(d)] != 0});
  }
  return g;
}

// Runs the passes; `out` receives the reduced values (count = prod of kept).
template <typename T, typename Op>
void run_reduce(const T* in, T* out, Groups g) {
  if (g.size() == 1 && g[0].reduced && g[0].size <= kBlock) {  // one short run (a loop's condition)
    out[0] = reduce_contig<T, Op>(in, g[0].size);
    return;
  }
  Scratch<T> cur, next;
  const T* src = in;
  for (;;) {
    int64_t i = static_cast<int64_t>(g.size()) - 1;
    while (i >= 0 && !g[static_cast<size_t>(i)].reduced) --i;
    int64_t A = 1, B = 1;
    for (int64_t k = 0; k < i; ++k) A *= g[static_cast<size_t>(k)].size;
    for (size_t k = static_cast<size_t>(i) + 1; k < g.size(); ++k) B *= g[k].size;
    const int64_t R = g[static_cast<size_t>(i)].size;
    g.erase(static_cast<size_t>(i));
    if (i > 0 && static_cast<size_t>(i) < g.size()) {  // merge the kept neighbours
      g[static_cast<size_t>(i - 1)].size *= g[static_cast<size_t>(i)].size;
      g.erase(static_cast<size_t>(i));
    }
    const bool last =
        std::none_of(g.data(), g.data() + g.size(), [](const Group& x) { return x.reduced; });
    T* dst = out;
    if (!last) {
      next.resize(A * B);
      dst = next.data();
    }
    reduce3<T, Op>(src, dst, A, R, B);
    if (last) return;
    std::swap(cur, next);
    src = cur.data();
  }
}

enum class Kind { kSum, kMean, kMax, kMin, kProd, kAny, kAll };

template <typename T, Kind K>
auto op_for() {
  if constexpr (K == Kind::kSum || K == Kind::kMean)
    return SumOp<T>{};
  else if constexpr (K == Kind::kMax)
    return MaxOp<T>{};
  else if constexpr (K == Kind::kMin)
    return MinOp<T>{};
  else if constexpr (K == Kind::kProd)
    return ProdOp<T>{};
  else if constexpr (K == Kind::kAny)
    return AnyOp{};
  else
    return AllOp{};
}

template <Kind K>
void reduce_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const std::vector<int64_t>& axes = c.attr_ints("axis");
  const Shape& out_shape = c.output_spec(0).shape;
  const int64_t n = x.num_elements();
  // A small whole reduction (a loop's condition) needs no groups.
  const bool small_whole = n > 1 && n <= kBlock && out_shape.num_elements() == 1;
  Groups g = small_whole ? Groups{{n, true}} : plan_groups(x.shape(), axes);
  const bool any_reduced =
      std::any_of(g.data(), g.data() + g.size(), [](const Group& x) { return x.reduced; });
  if (n > 0 && !any_reduced) {  // only length-1 dims reduced: same values
    c.set_output(0, x.view(out_shape));
    return;
  }
  Tensor& out = c.allocate_output(0);
  const int64_t n_out = out.num_elements();
  const int64_t count = n_out == 0 ? 0 : n / n_out;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    using Op = decltype(op_for<T, K>());
    T* o = out.mutable_data<T>();
    if (n == 0) {
      T v = Op::id();
      if constexpr (K == Kind::kMean && std::is_floating_point_v<T>)
        v = std::numeric_limits<T>::quiet_NaN();
      if constexpr (K == Kind::kMean && IsComplex<T>::value)
        v = T(std::numeric_limits<typename T::value_type>::quiet_NaN(),
              std::numeric_limits<typename T::value_type>::quiet_NaN());
      std::fill(o, o + n_out, v);
      return;
    }
    run_reduce<T, Op>(x.data<T>(), o, std::move(g));
    if constexpr (K == Kind::kMean) {
      if (count == 1) return;
      if constexpr (std::is_floating_point_v<T> || IsComplex<T>::value) {
        const T cnt = static_cast<T>(count);
        for (int64_t i = 0; i < n_out; ++i) o[i] = o[i] / cnt;
      } else {
        for (int64_t i = 0; i < n_out; ++i) o[i] = static_cast<T>(o[i] / count);
      }
    }
  };
  if constexpr (K == Kind::kAny || K == Kind::kAll) {
    run(bool{});
  } else if (x.dtype() == DType::kComplex64 || x.dtype() == DType::kComplex128) {
    // Sum, mean and product only (inference refuses the others).
    if constexpr (K == Kind::kSum || K == Kind::kMean || K == Kind::kProd) {
      if (x.dtype() == DType::kComplex64)
        run(std::complex<float>{});
      else
        run(std::complex<double>{});
    }
  } else {
    visit_numeric(x.dtype(), c.op().type_name, [&](auto tag) {
      if constexpr (!std::is_same_v<decltype(tag), bool>) run(tag);
    });
  }
}

}  // namespace

void bind_reduce_kernels(OpTableBuilder& t) {
  t.kernel(OpId::ReduceSum, reduce_kernel<Kind::kSum>);
  t.kernel(OpId::ReduceMean, reduce_kernel<Kind::kMean>);
  t.kernel(OpId::ReduceMax, reduce_kernel<Kind::kMax>);
  t.kernel(OpId::ReduceMin, reduce_kernel<Kind::kMin>);
  t.kernel(OpId::ReduceProd, reduce_kernel<Kind::kProd>);
  t.kernel(OpId::ReduceAny, reduce_kernel<Kind::kAny>);
  t.kernel(OpId::ReduceAll, reduce_kernel<Kind::kAll>);
  bind_scan_kernels(t);
}

}  // namespace kiln::cpu
