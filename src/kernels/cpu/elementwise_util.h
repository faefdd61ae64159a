// Helpers for the elementwise CPU kernels (unary, binary, select, cast,
// clip): dispatch over dtype lists, and maps over contiguous or broadcast
// operands written so the inner loops vectorize.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "kernel_util.h"
#include "ops/elementwise_infer.h"

namespace kiln::cpu {

template <typename... Ts>
struct TypeList {};
using BoolTypes = TypeList<bool>;
using IntTypes = TypeList<int8_t, uint8_t, int32_t, int64_t>;
using FloatTypes = TypeList<float, double>;
using SignedRealTypes = TypeList<int8_t, int32_t, int64_t, float, double>;
using RealTypes = TypeList<int8_t, uint8_t, int32_t, int64_t, float, double>;
using PlainTypes = TypeList<bool, int8_t, uint8_t, int32_t, int64_t, float, double>;
using ComplexTypes = TypeList<std::complex<float>, std::complex<double>>;
using AllTypes = TypeList<bool, int8_t, uint8_t, int32_t, int64_t, float, double, std::string,
                          std::complex<float>, std::complex<double>>;

/// The C++ types of a DTypeSet (src/ops/elementwise_infer.h), so a kernel
/// instantiates for exactly the dtypes its op's row accepts.
template <DTypeSet S, typename Out = TypeList<>, typename In = AllTypes>
struct TypesOfImpl;
template <DTypeSet S, typename... Out>
struct TypesOfImpl<S, TypeList<Out...>, TypeList<>> {
  using type = TypeList<Out...>;
};
template <DTypeSet S, typename... Out, typename T, typename... Rest>
struct TypesOfImpl<S, TypeList<Out...>, TypeList<T, Rest...>> {
  using type = typename TypesOfImpl<
      S,
      std::conditional_t<(S & dtype_bit(dtype_v<T>)) != 0, TypeList<Out..., T>, TypeList<Out...>>,
      TypeList<Rest...>>::type;
};
template <DTypeSet S>
using TypesOf = typename TypesOfImpl<S>::type;

/// Calls f(T{}) for the type in `Types` matching `dt`; inference has already
/// rejected other dtypes, so a miss is reported as InvalidArgument naming `op`.
template <typename... Ts, typename F>
void visit_types(TypeList<Ts...>, DType dt, const char* op, F&& f) {
  const bool hit = ((dt == dtype_v<Ts> ? (f(Ts{}), true) : false) || ...);
  if (!hit) throw InvalidArgumentError(str_cat(op, ": unsupported dtype ", dtype_name(dt)));
}

namespace detail {

// For arithmetic types with n >= W (W = one 64-byte vector) and n % W != 0,
// the last W elements run once more through the vector loop instead of
// GCC's scalar epilogue (which cost as much as the vector loop for
// 100-element float32 tanh): they are copied before the main loop (it may
// run in place) and written back whole; the overlap is recomputed from the
// same inputs, so it gets the same values. The tail loop's bound is hidden
// from the optimizer so that it is not unrolled into scalar code.
template <typename T>
inline constexpr int64_t kSpanBlock = std::max<int64_t>(8, 64 / static_cast<int64_t>(sizeof(T)));

#define KILN_UNARY_SPAN(name, attrs)                                               \
  template <typename T, typename U, typename F>                                    \
  attrs void name(const T* in, U* out, int64_t n, F f) {                           \
    constexpr int64_t W = kSpanBlock<T>;                                           \
    if constexpr (std::is_arithmetic_v<T> && std::is_arithmetic_v<U>) {            \
      if (n > W && n % W != 0) {                                                   \
        T a[W];                                                                    \
        U b[W];                                                                    \
        std::memcpy(a, in + n - W, sizeof(a));                                     \
        const int64_t full = n - n % W;                                            \
        _Pragma("GCC ivdep") for (int64_t i = 0; i < full; ++i) out[i] = f(in[i]); \
        int64_t w = W;                                                             \
        __asm__("" : "+r"(w));                                                     \
        _Pragma("GCC ivdep") for (int64_t j = 0; j < w; ++j) b[j] = f(a[j]);       \
        std::memcpy(out + n - W, b, sizeof(b));                                    \
        return;                                                                    \
      }                                                                            \
    }                                                                              \
    _Pragma("GCC ivdep") for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);        \
  }
KILN_UNARY_SPAN(unary_span, )

#if defined(__GNUC__) && defined(__x86_64__)
#define KILN_X86_CLONES 1
// The same loop compiled for AVX2 (8 floats per instruction) and AVX-512 (16),
// picked at run time. These may contract a * b + c into FMA, so float results
// can differ from the baseline SSE2 build in the last ulp (as Eigen's do).
#define KILN_AVX2_TARGET __attribute__((target("avx2,fma")))
#define KILN_AVX512_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
KILN_UNARY_SPAN(unary_span_avx2, KILN_AVX2_TARGET)
KILN_UNARY_SPAN(unary_span_avx512, KILN_AVX512_TARGET)

enum class SimdLevel { kBase, kAvx2, kAvx512 };
inline SimdLevel simd_level() {
  static const SimdLevel level = [] {
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
      return SimdLevel::kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SimdLevel::kAvx2;
    return SimdLevel::kBase;
  }();
  return level;
}
#endif
#undef KILN_UNARY_SPAN

/// Of a function's flavours (the second and third compiled with
/// KILN_AVX2_TARGET and KILN_AVX512_TARGET), the widest this CPU runs.
template <typename F>
F widest(F base, [[maybe_unused]] F avx2, [[maybe_unused]] F avx512) {
#ifdef KILN_X86_CLONES
  switch (simd_level()) {
    case SimdLevel::kAvx512: return avx512;
    case SimdLevel::kAvx2: return avx2;
    case SimdLevel::kBase: break;
  }
#endif
  return base;
}

}  // namespace detail

/// The widest flavour of name_base / name_avx2 / name_avx512 (the last two
/// exist only where KILN_X86_CLONES is defined).
#ifdef KILN_X86_CLONES
#define KILN_WIDEST(name) ::kiln::cpu::detail::widest(name##_base, name##_avx2, name##_avx512)
#else
#define KILN_WIDEST(name) ::kiln::cpu::detail::widest(name##_base, name##_base, name##_base)
#endif

/// out[i] = f(in[i]) over n contiguous elements on the calling thread, in
/// the widest vector flavour the CPU has (floating-point loops only: the
/// polynomial exp/log/tanh/sigmoid); `in` may equal `out`.
template <typename T, typename U, typename F>
void unary_span_best(const T* in, U* out, int64_t n, F f) {
#ifdef KILN_X86_CLONES
  if constexpr (std::is_floating_point_v<T> && std::is_same_v<T, U>) {
    switch (detail::simd_level()) {
      case detail::SimdLevel::kAvx512: detail::unary_span_avx512(in, out, n, f); return;
      case detail::SimdLevel::kAvx2: detail::unary_span_avx2(in, out, n, f); return;
      case detail::SimdLevel::kBase: break;
    }
  }
#endif
  detail::unary_span(in, out, n, f);
}

/// unary_span_best split over the thread pool when large.
template <typename T, typename U, typename F>
void unary_map(const T* in, U* out, int64_t n, F f) {
  parallel_for(n, 0,
               [in, out, f](int64_t b, int64_t e) { unary_span_best(in + b, out + b, e - b, f); });
}

/// Broadcast iteration plan for N inputs against an output shape: dims of
/// size 1 are dropped and neighbouring dims with the same broadcast pattern
/// are merged, so e.g. [8,1000,1000] + [1000,1000] becomes rows of 1e6.
template <size_t N>
struct BroadcastPlan {
  SmallVec<int64_t, 6> dims;                    // collapsed output dims (rank >= 1)
  std::array<SmallVec<int64_t, 6>, N> strides;  // per input, 0 on broadcast dims
  int64_t inner() const { return dims[dims.size() - 1]; }
  bool inner_contiguous(size_t k) const { return strides[k][dims.size() - 1] != 0; }
};

template <size_t N>
BroadcastPlan<N> make_broadcast_plan(const Shape& out, const std::array<const Shape*, N>& in) {
  BroadcastPlan<N> p;
  std::array<SmallVec<int64_t, 6>, N> in_dims;
  std::array<bool, N> prev{};
  const int64_t r = out.rank();
  for (int64_t d = 0; d < r; ++d) {
    const int64_t od = out.dim(d);
    if (od == 1) continue;
    std::array<bool, N> pat{};
    std::array<int64_t, N> idim{};
    for (size_t k = 0; k < N; ++k) {
      const int64_t off = r - in[k]->rank();
      idim[k] = d < off ? 1 : in[k]->dim(d - off);
      pat[k] = idim[k] == 1;
    }
    if (!p.dims.empty() && pat == prev) {
      p.dims[p.dims.size() - 1] *= od;
      for (size_t k = 0; k < N; ++k) in_dims[k][in_dims[k].size() - 1] *= idim[k];
    } else {
      p.dims.push_back(od);
      for (size_t k = 0; k < N; ++k) in_dims[k].push_back(idim[k]);
      prev = pat;
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    for (size_t k = 0; k < N; ++k) in_dims[k].push_back(1);
  }
  for (size_t k = 0; k < N; ++k) {
    const size_t rr = p.dims.size();
    p.strides[k] = SmallVec<int64_t, 6>(rr, 0);
    int64_t acc = 1;
    for (size_t d = rr; d-- > 0;) {
      p.strides[k][d] = in_dims[k][d] == 1 ? 0 : acc;
      acc *= in_dims[k][d];
    }
  }
  return p;
}

namespace detail {
// Inner loops specialized on which operands advance (true) or stay put.
template <bool A, bool B, typename T, typename U, typename F>
inline void binary_run(const T* a, const T* b, U* o, int64_t n, F f) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[A ? i : 0], b[B ? i : 0]);
}
template <bool A, bool B, bool C, typename TC, typename T, typename U, typename F>
inline void ternary_run(const TC* a, const T* b, const T* c, U* o, int64_t n, F f) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[A ? i : 0], b[B ? i : 0], c[C ? i : 0]);
}

#ifdef KILN_X86_CLONES
#define KILN_BINARY_RUN(name, attrs)                                                           \
  template <bool A, bool B, typename T, typename U, typename F>                                \
  attrs void name(const T* a, const T* b, U* o, int64_t n, F f) {                              \
    _Pragma("GCC ivdep") for (int64_t i = 0; i < n; ++i) o[i] = f(a[A ? i : 0], b[B ? i : 0]); \
  }
#define KILN_TERNARY_RUN(name, attrs)                                                \
  template <bool A, bool B, bool C, typename TC, typename T, typename U, typename F> \
  attrs void name(const TC* a, const T* b, const T* c, U* o, int64_t n, F f) {       \
    _Pragma("GCC ivdep") for (int64_t i = 0; i < n; ++i) o[i] =                      \
        f(a[A ? i : 0], b[B ? i : 0], c[C ? i : 0]);                                 \
  }
KILN_BINARY_RUN(binary_run_avx2, KILN_AVX2_TARGET)
KILN_BINARY_RUN(binary_run_avx512, KILN_AVX512_TARGET)
KILN_TERNARY_RUN(ternary_run_avx2, KILN_AVX2_TARGET)
KILN_TERNARY_RUN(ternary_run_avx512, KILN_AVX512_TARGET)
#undef KILN_TERNARY_RUN
#undef KILN_BINARY_RUN
#endif

// Integer loops take the AVX2 / AVX-512 builds where the CPU has them: SSE2
// has no per-lane shifts and few 8- and 64-bit integer ops (uint8
// right_shift is scalar there, 5x slower). Floating-point loops keep the
// baseline build so that their results never depend on the path taken (the
// clones may contract a * b + c into FMA).
template <bool A, bool B, typename T, typename U, typename F>
inline void binary_run_best(const T* a, const T* b, U* o, int64_t n, F f) {
#ifdef KILN_X86_CLONES
  if constexpr (std::is_integral_v<T> && std::is_integral_v<U>) {
    switch (simd_level()) {
      case SimdLevel::kAvx512: binary_run_avx512<A, B>(a, b, o, n, f); return;
      case SimdLevel::kAvx2: binary_run_avx2<A, B>(a, b, o, n, f); return;
      case SimdLevel::kBase: break;
    }
  }
#endif
  binary_run<A, B>(a, b, o, n, f);
}
template <bool A, bool B, bool C, typename TC, typename T, typename U, typename F>
inline void ternary_run_best(const TC* a, const T* b, const T* c, U* o, int64_t n, F f) {
#ifdef KILN_X86_CLONES
  if constexpr (std::is_integral_v<TC> && std::is_integral_v<T> && std::is_integral_v<U>) {
    switch (simd_level()) {
      case SimdLevel::kAvx512: ternary_run_avx512<A, B, C>(a, b, c, o, n, f); return;
      case SimdLevel::kAvx2: ternary_run_avx2<A, B, C>(a, b, c, o, n, f); return;
      case SimdLevel::kBase: break;
    }
  }
#endif
  ternary_run<A, B, C>(a, b, c, o, n, f);
}

// o[i] = f(a[i], b[i]) where an operand whose flag is false stays at element 0.
template <typename T, typename U, typename F>
inline void binary_span(const T* a, bool sa, const T* b, bool sb, U* o, int64_t n, F f) {
  if (sa && sb)
    binary_run_best<true, true>(a, b, o, n, f);
  else if (sa)
    binary_run_best<true, false>(a, b, o, n, f);
  else if (sb)
    binary_run_best<false, true>(a, b, o, n, f);
  else
    binary_run_best<false, false>(a, b, o, n, f);
}
template <typename TC, typename T, typename U, typename F>
inline void ternary_span(const TC* a, bool sa, const T* b, bool sb, const T* c, bool sc, U* o,
                         int64_t n, F f) {
  switch ((sa ? 4 : 0) | (sb ? 2 : 0) | (sc ? 1 : 0)) {
    case 7: ternary_run_best<true, true, true>(a, b, c, o, n, f); break;
    case 6: ternary_run_best<true, true, false>(a, b, c, o, n, f); break;
    case 5: ternary_run_best<true, false, true>(a, b, c, o, n, f); break;
    case 4: ternary_run_best<true, false, false>(a, b, c, o, n, f); break;
    case 3: ternary_run_best<false, true, true>(a, b, c, o, n, f); break;
    case 2: ternary_run_best<false, true, false>(a, b, c, o, n, f); break;
    case 1: ternary_run_best<false, false, true>(a, b, c, o, n, f); break;
    default: ternary_run_best<false, false, false>(a, b, c, o, n, f); break;
  }
}

// dst[r * inner + c] = src[r * stride] for r < rows, c < inner. Rows of 2 to
// 12 elements (the only columns tiled, kTileMaxColumnRow) get a loop with a
// constant row length, which GCC turns into a few wide stores per row.
template <typename T, int C>
void repeat_fixed(const T* s, int64_t stride, int64_t rows, T* d) {
  for (int64_t r = 0; r < rows; ++r) {
    const T v = s[r * stride];
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) d[r * C + c] = v;
  }
}
template <typename T, int... Cs>
bool repeat_small(const T* s, int64_t stride, int64_t rows, int64_t inner, T* d,
                  std::integer_sequence<int, Cs...>) {
  return ((inner == Cs + 2 ? (repeat_fixed<T, Cs + 2>(s, stride, rows, d), true) : false) || ...);
}
template <typename T>
void repeat_rows(const void* src, int64_t stride, int64_t rows, int64_t inner, void* dst) {
  const T* s = static_cast<const T*>(src);
  T* d = static_cast<T*>(dst);
  if (repeat_small(s, stride, rows, inner, d, std::make_integer_sequence<int, 11>{})) return;
  for (int64_t r = 0; r < rows; ++r) {
    const T v = s[r * stride];
    for (int64_t c = 0; c < inner; ++c) d[r * inner + c] = v;
  }
}
using RepeatFn = void (*)(const void*, int64_t, int64_t, int64_t, void*);

// Tiles: a broadcast operand of a block of short rows copied out so that the
// block runs as one long contiguous loop (which vectorizes) instead of one
// call per row. kTileBytes bounds each operand's tile (on the stack).
inline constexpr int64_t kTileBytes = 8192;
// Rows of at most this many bytes (of the widest operand) are tiled; longer
// rows vectorize well one at a time. Copying a column out costs a store per
// element, which pays only for rows of a few elements (measured: a float32
// [R, 1] + [R, C] gains 1.7x at C = 8 and loses 15 % at C = 16).
inline constexpr int64_t kTileMaxRowBytes = 256;
inline constexpr int64_t kTileMaxColumnRow = 12;

// How an operand moves over the last two collapsed dims [rows, inner].
enum class RunKind : uint8_t {
  kFull,      // its own [rows, inner] block: row stride inner, inner stride 1
  kPeriodic,  // one row repeated (stride 0 over rows): [R, C] op [C]
  kColumn,    // one element per row, repeated along it: [R, C] op [R, 1]
  kConst,     // one element for the whole block
  kOther,     // not seen in collapsed plans; runs row by row
};
}  // namespace detail

/// One input of for_each_span: its elements, their size, and how to repeat
/// them into a tile (null when its type is not trivially copyable, which
/// turns tiling off).
struct SpanOperand {
  const char* data;
  int64_t elem_size;
  detail::RepeatFn repeat;
};

template <typename T>
SpanOperand span_operand(const T* p) {
  detail::RepeatFn rep = nullptr;
  if constexpr (std::is_trivially_copyable_v<T>) rep = &detail::repeat_rows<T>;
  return {reinterpret_cast<const char*>(p), static_cast<int64_t>(sizeof(T)), rep};
}

/// Calls run(ptrs, advance, out_offset, len) over the plan's output in
/// contiguous pieces, in parallel when large (chunks of about
/// config().parallel_grain elements): element i of the piece is
/// f(ptrs[k][advance[k] ? i : 0]...) for output element out_offset + i,
/// where ptrs[k] points into operand k (as char*; run casts it back).
/// Rank-2 and higher plans walk rows of the last collapsed dim with their
/// row offsets computed by multiplication; short rows (detail::
/// kTileMaxRowBytes, kTileMaxColumnRow) are grouped into blocks, their
/// broadcast operands copied into tiles, so each call covers many rows.
template <size_t N, typename RunFn>
void for_each_span(const BroadcastPlan<N>& p, const std::array<SpanOperand, N>& in,
                   const RunFn& run) {
  using Ptrs = std::array<const char*, N>;
  using Flags = std::array<bool, N>;
  const size_t r = p.dims.size();
  const int64_t inner = p.inner();
  if (r == 1) {
    parallel_for(inner, 0, [&](int64_t b, int64_t e) {
      Ptrs ptr;
      Flags adv;
      for (size_t k = 0; k < N; ++k) {
        adv[k] = p.strides[k][0] != 0;
        ptr[k] = in[k].data + b * p.strides[k][0] * in[k].elem_size;
      }
      run(ptr, adv, b, e - b);
    });
    return;
  }
  // [slabs..., rows, inner]: the outer dims index slabs of [rows, inner].
  const size_t outer = r - 2;
  const int64_t rows = p.dims[r - 2];
  int64_t slabs = 1;
  for (size_t d = 0; d < outer; ++d) slabs *= p.dims[d];
  std::array<int64_t, N> rs{}, step{};  // row stride, element size
  std::array<detail::RunKind, N> kind{};
  Flags adv_inner{};
  bool tile = true;
  int64_t max_size = 1;
  for (size_t k = 0; k < N; ++k) {
    rs[k] = p.strides[k][r - 2];
    step[k] = in[k].elem_size;
    adv_inner[k] = p.strides[k][r - 1] != 0;
    using detail::RunKind;
    if (adv_inner[k])
      kind[k] = rs[k] == inner ? RunKind::kFull : rs[k] == 0 ? RunKind::kPeriodic : RunKind::kOther;
    else
      kind[k] = rs[k] != 0 ? RunKind::kColumn : RunKind::kConst;
    tile = tile && kind[k] != RunKind::kOther && in[k].repeat != nullptr;
    max_size = std::max(max_size, step[k]);
  }
  tile = tile && inner * max_size <= detail::kTileMaxRowBytes &&
         (inner <= detail::kTileMaxColumnRow ||
          std::find(kind.begin(), kind.end(), detail::RunKind::kColumn) == kind.end());
  const int64_t block_rows = std::max<int64_t>(1, detail::kTileBytes / (inner * max_size));

  const int64_t grain = std::max<int64_t>(1, config().parallel_grain / inner);
  parallel_for(slabs * rows, grain, [&](int64_t rb, int64_t re) {
    // Tiles for this chunk; a periodic tile is rebuilt only when its slab's
    // row changes or a longer block needs more copies of it.
    alignas(64) unsigned char tiles[N][detail::kTileBytes];  // uninitialized: no cost unless used
    Ptrs tile_src{};
    std::array<int64_t, N> tile_rows{};

    // Rows [j0, j1) of one slab whose operands start at base.
    auto do_rows = [&](const Ptrs& base, int64_t j0, int64_t j1, int64_t o0) {
      Ptrs ptr;
      if (!tile) {
        for (int64_t j = j0; j < j1; ++j) {
          for (size_t k = 0; k < N; ++k) ptr[k] = base[k] + j * rs[k] * step[k];
          run(ptr, adv_inner, o0 + j * inner, inner);
        }
        return;
      }
      Flags adv;
      for (int64_t j = j0; j < j1; j += block_rows) {
        const int64_t m = std::min(block_rows, j1 - j);
        for (size_t k = 0; k < N; ++k) {
          const char* src = base[k] + j * rs[k] * step[k];
          adv[k] = true;
          switch (kind[k]) {
            case detail::RunKind::kFull: ptr[k] = src; break;
            case detail::RunKind::kPeriodic: {
              unsigned char* t = tiles[k];
              if (tile_src[k] != src || tile_rows[k] < m) {
                const int64_t row_bytes = inner * step[k], total = m * row_bytes;
                std::memcpy(t, src, static_cast<size_t>(row_bytes));
                for (int64_t have = row_bytes; have < total; have *= 2)
                  std::memcpy(t + have, t, static_cast<size_t>(std::min(have, total - have)));
                tile_src[k] = src;
                tile_rows[k] = m;
              }
              ptr[k] = reinterpret_cast<const char*>(t);
              break;
            }
            case detail::RunKind::kColumn:
              in[k].repeat(src, rs[k], m, inner, tiles[k]);
              ptr[k] = reinterpret_cast<const char*>(tiles[k]);
              break;
            default:
              ptr[k] = src;
              adv[k] = false;
              break;
          }
        }
        run(ptr, adv, o0 + j * inner, m * inner);
      }
    };

    SmallVec<int64_t, 6> idx(outer, 0);
    int64_t slab = rb / rows;
    for (int64_t d = static_cast<int64_t>(outer) - 1, rem = slab; d >= 0; --d) {
      idx[d] = rem % p.dims[d];
      rem /= p.dims[d];
    }
    for (int64_t g = rb; g < re; ++slab) {
      const int64_t j0 = g - slab * rows;
      const int64_t j1 = std::min(rows, j0 + (re - g));
      Ptrs base;
      for (size_t k = 0; k < N; ++k) {
        int64_t off = 0;
        for (size_t d = 0; d < outer; ++d) off += idx[d] * p.strides[k][d];
        base[k] = in[k].data + off * step[k];
      }
      do_rows(base, j0, j1, slab * rows * inner);
      g += j1 - j0;
      for (size_t d = outer; d-- > 0;) {
        if (++idx[d] < p.dims[d]) break;
        idx[d] = 0;
      }
    }
  });
}

/// out = f(a, b) with NumPy broadcasting (out already allocated with the
/// broadcast shape). T: input element type, U: output element type.
template <typename T, typename U, typename F>
void binary_map(const Tensor& ta, const Tensor& tb, Tensor& tout, F f) {
  const int64_t n = tout.num_elements();
  if (n == 0) return;
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  U* out = tout.mutable_data<U>();
  // Fast path (no plan): same element count means the same layout.
  const int64_t na = ta.num_elements(), nb = tb.num_elements();
  if ((na == n || na == 1) && (nb == n || nb == 1)) {
    parallel_for(n, 0, [=](int64_t s, int64_t e) {
      const bool sa = na == n, sb = nb == n;
      detail::binary_span(a + (sa ? s : 0), sa, b + (sb ? s : 0), sb, out + s, e - s, f);
    });
    return;
  }
  const auto p = make_broadcast_plan<2>(tout.shape(), {&ta.shape(), &tb.shape()});
  for_each_span(p, {span_operand(a), span_operand(b)},
                [&](const std::array<const char*, 2>& ptr, const std::array<bool, 2>& adv,
                    int64_t o, int64_t len) {
                  detail::binary_span(reinterpret_cast<const T*>(ptr[0]), adv[0],
                                      reinterpret_cast<const T*>(ptr[1]), adv[1], out + o, len, f);
                });
}

/// out = f(a, b, c) with three-way broadcasting. `a` has element type TC
/// (Select's bool condition), b and c type T, out type U. A bool `a` reaches
/// f as uint8_t 0/1: GCC does not vectorize loads of bool.
template <typename TC, typename T, typename U, typename F>
void ternary_map(const Tensor& ta, const Tensor& tb, const Tensor& tc, Tensor& tout, F f) {
  const int64_t n = tout.num_elements();
  if (n == 0) return;
  using TA = std::conditional_t<std::is_same_v<TC, bool>, uint8_t, TC>;
  const TA* a = reinterpret_cast<const TA*>(ta.data<TC>());
  const T* b = tb.data<T>();
  const T* c = tc.data<T>();
  U* out = tout.mutable_data<U>();
  const int64_t na = ta.num_elements(), nb = tb.num_elements(), nc = tc.num_elements();
  BroadcastPlan<3> p;
  if ((na == n || na == 1) && (nb == n || nb == 1) && (nc == n || nc == 1)) {
    // No plan needed: one run of n, each operand stepping by 1 or 0.
    p.dims.push_back(n);
    p.strides[0].push_back(na == n ? 1 : 0);
    p.strides[1].push_back(nb == n ? 1 : 0);
    p.strides[2].push_back(nc == n ? 1 : 0);
  } else {
    p = make_broadcast_plan<3>(tout.shape(), {&ta.shape(), &tb.shape(), &tc.shape()});
  }
  for_each_span(p, {span_operand(a), span_operand(b), span_operand(c)},
                [&](const std::array<const char*, 3>& ptr, const std::array<bool, 3>& adv,
                    int64_t o, int64_t len) {
                  detail::ternary_span(reinterpret_cast<const TA*>(ptr[0]), adv[0],
                                       reinterpret_cast<const T*>(ptr[1]), adv[1],
                                       reinterpret_cast<const T*>(ptr[2]), adv[2], out + o, len, f);
                });
}

/// Index of an input whose shape and dtype equal output 0's spec (so its
/// buffer may be reused in place), else -1.
inline int reusable_input(const KernelContext& c, std::initializer_list<int> candidates) {
  const TensorSpec& s = c.output_spec(0);
  for (int i : candidates) {
    const Tensor& t = c.input(static_cast<size_t>(i));
    if (t.dtype() == s.dtype && t.shape() == s.shape) return i;
  }
  return -1;
}

}  // namespace kiln::cpu
