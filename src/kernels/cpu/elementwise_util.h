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

#include "kernel_util.h"

namespace kiln::cpu {

template <typename... Ts>
struct TypeList {};
using BoolTypes = TypeList<bool>;
using IntTypes = TypeList<int8_t, uint8_t, int32_t, int64_t>;
using FloatTypes = TypeList<float, double>;
using SignedRealTypes = TypeList<int8_t, int32_t, int64_t, float, double>;
using RealTypes = TypeList<int8_t, uint8_t, int32_t, int64_t, float, double>;
using PlainTypes = TypeList<bool, int8_t, uint8_t, int32_t, int64_t, float, double>;
using AllTypes = TypeList<bool, int8_t, uint8_t, int32_t, int64_t, float, double, std::string>;

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
KILN_UNARY_SPAN(unary_span_avx2, __attribute__((target("avx2,fma"))))
KILN_UNARY_SPAN(unary_span_avx512,
                __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"))))

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

}  // namespace detail

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

/// Calls row(out_offset, in_offsets, len) over the plan's output in pieces
/// that are each a contiguous run of the last collapsed dim (or a part of it
/// when there is only one dim), in parallel when large.
template <size_t N, typename RowFn>
void for_each_run(const BroadcastPlan<N>& p, const RowFn& row) {
  const int64_t inner = p.inner();
  const size_t r = p.dims.size();
  if (r == 1) {
    parallel_for(inner, 0, [&](int64_t b, int64_t e) {
      std::array<int64_t, N> offs;
      for (size_t k = 0; k < N; ++k) offs[k] = b * p.strides[k][0];
      row(b, offs, e - b);
    });
    return;
  }
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < r; ++d) rows *= p.dims[d];
  const int64_t grain = std::max<int64_t>(1, config().parallel_grain / std::max<int64_t>(inner, 1));
  parallel_for(rows, grain, [&](int64_t rb, int64_t re) {
    SmallVec<int64_t, 6> idx(r - 1, 0);
    int64_t rem = rb;
    for (size_t d = r - 1; d-- > 0;) {
      idx[d] = rem % p.dims[d];
      rem /= p.dims[d];
    }
    for (int64_t rw = rb; rw < re; ++rw) {
      std::array<int64_t, N> offs{};
      for (size_t d = 0; d + 1 < r; ++d)
        for (size_t k = 0; k < N; ++k) offs[k] += idx[d] * p.strides[k][d];
      row(rw * inner, offs, inner);
      for (size_t d = r - 1; d-- > 0;) {
        if (++idx[d] < p.dims[d]) break;
        idx[d] = 0;
      }
    }
  });
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
}  // namespace detail

/// out = f(a, b) with NumPy broadcasting (out already allocated with the
/// broadcast shape). T: input element type, U: output element type.
template <typename T, typename U, typename F>
void binary_map(const Tensor& ta, const Tensor& tb, Tensor& tout, F f) {
  const int64_t n = tout.num_elements();
  if (n == 0) return;
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  U* out = tout.mutable_data<U>();
  // Fast paths (no plan): same element count means the same layout.
  const int64_t na = ta.num_elements(), nb = tb.num_elements();
  if ((na == n || na == 1) && (nb == n || nb == 1)) {
    parallel_for(n, 0, [=](int64_t s, int64_t e) {
      const int64_t len = e - s;
      U* po = out + s;
      if (na == n && nb == n)
        detail::binary_run<true, true>(a + s, b + s, po, len, f);
      else if (na == n)
        detail::binary_run<true, false>(a + s, b, po, len, f);
      else if (nb == n)
        detail::binary_run<false, true>(a, b + s, po, len, f);
      else
        detail::binary_run<false, false>(a, b, po, len, f);
    });
    return;
  }
  const auto p = make_broadcast_plan<2>(tout.shape(), {&ta.shape(), &tb.shape()});
  const bool ca = p.inner_contiguous(0), cb = p.inner_contiguous(1);
  for_each_run(p, [&](int64_t o, const std::array<int64_t, 2>& off, int64_t len) {
    const T* pa = a + off[0];
    const T* pb = b + off[1];
    U* po = out + o;
    if (ca && cb)
      detail::binary_run<true, true>(pa, pb, po, len, f);
    else if (ca)
      detail::binary_run<true, false>(pa, pb, po, len, f);
    else if (cb)
      detail::binary_run<false, true>(pa, pb, po, len, f);
    else
      detail::binary_run<false, false>(pa, pb, po, len, f);
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
  const int mode = (p.inner_contiguous(0) ? 4 : 0) | (p.inner_contiguous(1) ? 2 : 0) |
                   (p.inner_contiguous(2) ? 1 : 0);
  for_each_run(p, [&](int64_t o, const std::array<int64_t, 3>& off, int64_t len) {
    const TA* pa = a + off[0];
    const T* pb = b + off[1];
    const T* pc = c + off[2];
    U* po = out + o;
    switch (mode) {
      case 7: detail::ternary_run<true, true, true>(pa, pb, pc, po, len, f); break;
      case 6: detail::ternary_run<true, true, false>(pa, pb, pc, po, len, f); break;
      case 5: detail::ternary_run<true, false, true>(pa, pb, pc, po, len, f); break;
      case 4: detail::ternary_run<true, false, false>(pa, pb, pc, po, len, f); break;
      case 3: detail::ternary_run<false, true, true>(pa, pb, pc, po, len, f); break;
      case 2: detail::ternary_run<false, true, false>(pa, pb, pc, po, len, f); break;
      case 1: detail::ternary_run<false, false, true>(pa, pb, pc, po, len, f); break;
      default: detail::ternary_run<false, false, false>(pa, pb, pc, po, len, f); break;
    }
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
