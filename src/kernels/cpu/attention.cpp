// _FusedAttention (ops/attention.cpp): softmax(scale * Q K^T [+ mask]) V for
// each batch and head, by blocks of query rows on kiln's pool. A block copies
// its rows of Q scaled (contiguous), computes their scores [rows, S] into a
// buffer, applies the mask, turns each row into e^(s - max) and 1 / its sum,
// writes P V straight into the output and scales each output row by its
// 1 / sum (one pass over the weights fewer than normalizing them). Q, K, V
// and the output are read and written in place through their perms (the
// heads' transposes are never made); the products are single-threaded calls
// (gemm.h). bfloat16 operands: Q's block scaled and rounded to bf16, the
// scores float32 from oneDNN's bf16 product, the weights rounded to bf16,
// P V accumulated in float32 and rounded once after its scaling.
#include <algorithm>
#ifdef __x86_64__
#include <immintrin.h>
#endif
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "bind.h"
#include "elementwise_util.h"
#include "float_math.h"
#include "gemm.h"
#include "kernel_util.h"
#include "softmax.h"
#include "threading.h"

namespace kiln::cpu {
namespace {

constexpr int kRank = 4;
// Query rows per block: each product packs its K or V operand once per call,
// so blocks are as tall as the parallelism allows, at most kMaxBlockRows and
// at least kMinBlockRows. 1x1024x8x64 (Keras' layout) took 25.9 ms in blocks
// of 16 rows, 18.9 ms of 64, 15.7 ms of 256 (unfused: 17.5 ms); 1x2048x4x64
// 51 ms of 128, 29 ms of 256; 8x128x4x64 the same from 32 to 128.
constexpr int64_t kMaxBlockRows = 256;
constexpr int64_t kMinBlockRows = 64;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// An operand of T as [batch, heads, rows, cols]: sizes and strides in
// elements, read through its perm; a batch or heads dim of 1 has stride 0
// (broadcast).
template <typename T>
struct View {
  T* data = nullptr;
  std::array<int64_t, kRank> dims{}, strides{};

  // A rank-3 `t` is read as rank 4 with a unit axis at 1.
  View(const Tensor& t, const int64_t* perm, T* base) : data(base) {
    int64_t sizes[kRank], stored[kRank];
    for (int a = 0, j = 0; j < kRank; ++j) sizes[j] = t.rank() < kRank && j == 1 ? 1 : t.dim(a++);
    int64_t step = 1;
    for (int a = kRank - 1; a >= 0; --a) {
      stored[a] = step;
      step *= sizes[a];
    }
    for (int j = 0; j < kRank; ++j) {
      dims[static_cast<size_t>(j)] = sizes[perm[j]];
      strides[static_cast<size_t>(j)] =
          dims[static_cast<size_t>(j)] == 1 && j < 2 ? 0 : stored[perm[j]];
    }
  }
  T* at(int64_t b, int64_t n) const { return data + b * strides[0] + n * strides[1]; }
  // The matrix of one batch and head as gemm's B operand of op(B) [rows, cols]
  // (transposed: op(B) = this^T): its storage order and leading dimension.
  bool row_major() const { return strides[3] == 1; }
  int64_t ld() const { return row_major() ? strides[2] : strides[3]; }
};

// The optional mask as [B, N, T, S]: strides right-aligned to the scores'
// dims ([B, T, S] when the operands have rank `rank` 3), 0 where its dim is
// 1 (broadcast). kind: 0 none, 1 added to the scores, 2 bool keep mask.
struct Mask {
  int kind = 0;
  float fill = 0;
  const void* data = nullptr;
  std::array<int64_t, kRank> strides{};

  Mask() = default;
  Mask(const Tensor& m, int kind_, float fill_, int rank)
      : kind(kind_), fill(fill_), data(m.raw_data()) {
    int64_t step = 1;
    for (int a = m.rank() - 1, j = kRank - 1; a >= 0; --a, --j) {
      if (rank < kRank && j == 1) --j;  // no heads dim to align with
      strides[static_cast<size_t>(j)] = m.dim(a) == 1 ? 0 : step;
      step *= m.dim(a);
    }
  }
  int64_t row(int64_t b, int64_t n, int64_t r) const {
    return b * strides[0] + n * strides[1] + r * strides[2];
  }
};

template <typename T>
struct Problem {
  View<T> q, k, v, o;
  float scale;
  int64_t batch, heads, t, s, h, dv;
  Mask mask;
};

// The mask on one block's scores before the softmax (kind 1: added; kind 2:
// the fill where it is false).
template <typename T>
void mask_scores(const Problem<T>& p, int64_t b, int64_t n, int64_t r0, int64_t rows,
                 float* scores) {
  const Mask& m = p.mask;
  const int64_t sc = m.strides[3];
  for (int64_t i = 0; i < rows; ++i) {
    float* row = scores + i * p.s;
    const int64_t off = m.row(b, n, r0 + i);
    if (m.kind == 1) {
      const float* add = static_cast<const float*>(m.data) + off;
      for (int64_t j = 0; j < p.s; ++j) row[j] += add[j * sc];
    } else {
      const bool* keep = static_cast<const bool*>(m.data) + off;
      for (int64_t j = 0; j < p.s; ++j) row[j] = keep[j * sc] ? row[j] : m.fill;
    }
  }
}

// A bool mask's false entries get weight 0 (a row masked whole: all 0).
template <typename T, typename W>
void zero_masked(const Problem<T>& p, int64_t b, int64_t n, int64_t r0, int64_t rows, W* weights) {
  const Mask& m = p.mask;
  for (int64_t i = 0; i < rows; ++i) {
    const bool* keep = static_cast<const bool*>(m.data) + m.row(b, n, r0 + i);
    for (int64_t j = 0; j < p.s; ++j)
      if (!keep[j * m.strides[3]]) weights[i * p.s + j] = W{};
  }
}

// bf16 rounding loops (ties to even, as Cast), in the widest vectors the CPU
// has: out = bf16(scale * in) over bf16, and out = bf16(in) over float32.
#define KILN_BF16_LOOPS(suffix, target)                                                          \
  target void scale_bf16##suffix(const uint16_t* in, float scale, uint16_t* out, int64_t n) {    \
    for (int64_t i = 0; i < n; ++i)                                                              \
      out[i] = fn::detail::f32_to_bf16(scale * fn::detail::bf16_to_f32(in[i]));                  \
  }                                                                                              \
  target void round_bf16##suffix(const float* in, uint16_t* out, int64_t n) {                    \
    for (int64_t i = 0; i < n; ++i) out[i] = fn::detail::f32_to_bf16(in[i]);                     \
  }                                                                                              \
  target void scale_round_bf16##suffix(const float* in, float scale, uint16_t* out, int64_t n) { \
    for (int64_t i = 0; i < n; ++i) out[i] = fn::detail::f32_to_bf16(scale * in[i]);             \
  }
KILN_BF16_LOOPS(_base, )
#ifdef KILN_X86_CLONES
KILN_BF16_LOOPS(_avx512, KILN_AVX512_TARGET)
KILN_BF16_LOOPS(_avx2, KILN_AVX2_TARGET)
#endif
#undef KILN_BF16_LOOPS

uint16_t* bits(BFloat16* p) {
  return reinterpret_cast<uint16_t*>(p);
}

void scale_bf16(const BFloat16* in, float scale, BFloat16* out, int64_t n) {
  KILN_WIDEST(scale_bf16)(reinterpret_cast<const uint16_t*>(in), scale, bits(out), n);
}
void round_bf16(const float* in, BFloat16* out, int64_t n) {
  KILN_WIDEST(round_bf16)(in, bits(out), n);
}
void scale_round_bf16(const float* in, float scale, BFloat16* out, int64_t n) {
  KILN_WIDEST(scale_round_bf16)(in, scale, bits(out), n);
}

#ifdef KILN_X86_CLONES
// e^x for x in [kExpNormalLo, 0] (float_math.h's exp_f32_normal, 16 lanes).
KILN_AVX512_TARGET inline __m512 exp_normal16(__m512 x) {
  namespace d = fn::detail;
  const __m512 magic = _mm512_set1_ps(d::kRoundMagic);
  const __m512 t = _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(d::kLog2e)), magic);
  const __m512i n = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(d::kRoundMagicBits));
  const __m512 nf = _mm512_sub_ps(t, magic);
  __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(d::kExpLn2Hi), x);
  r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(d::kExpLn2Lo), r);
  __m512 p = _mm512_set1_ps(d::kExpPoly[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(d::kExpPoly[i]));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.f));
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(y), _mm512_slli_epi32(n, 23)));
}

// 16 finite floats to bf16, ties to even.
KILN_AVX512_TARGET inline __m256i to_bf16_16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd);
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
}

KILN_AVX512_TARGET inline __m512 exp_shifted16(__m512 v, __m512 m) {
  return exp_normal16(_mm512_max_ps(_mm512_sub_ps(v, m), _mm512_set1_ps(fn::detail::kExpNormalLo)));
}

// 16 weights stored: float32, or rounded to bf16.
KILN_AVX512_TARGET inline void store16(float* w, __mmask16 k, __m512 e) {
  _mm512_mask_storeu_ps(w, k, e);
}
KILN_AVX512_TARGET inline void store16(uint16_t* w, __mmask16 k, __m512 e) {
  _mm256_mask_storeu_epi16(w, k, to_bf16_16(e));
}

// One row's e^(x - max) of `n` floats at `x` into `w` (float32, which may be
// `x`, or bf16), and 1 / their sum (the product of these weights and V is
// scaled by it: one pass fewer than normalizing the weights); NaN (nothing
// written) when the row holds inf or NaN. Lanes further than kExpNormalLo
// below the max get e^kExpNormalLo (~1.7e-38) instead of their e^x (<
// 1.7e-38): specks beside the max's weight of 1.
// (GCC 12's AVX-512 intrinsics pass undefined vectors through their mask
// forms: false -W(maybe-)uninitialized warnings, GCC bug 105593.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
template <typename W>
KILN_AVX512_TARGET float exp_row_avx512(const float* x, int64_t n, W* w) {
  const int64_t pairs = n - n % 32, full = n - n % 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - full)) - 1);
  const __mmask16 all = static_cast<__mmask16>(0xffff);
  const __m512 low = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512 zero = _mm512_setzero_ps();
  // The max, and sum(x * 0) (0 unless inf or NaN); two chains each.
  __m512 hi0 = low, hi1 = low, chk0 = zero, chk1 = zero;
  for (int64_t j = 0; j < pairs; j += 32) {
    const __m512 a = _mm512_loadu_ps(x + j), b = _mm512_loadu_ps(x + j + 16);
    hi0 = _mm512_max_ps(hi0, a);
    hi1 = _mm512_max_ps(hi1, b);
    chk0 = _mm512_fmadd_ps(a, zero, chk0);
    chk1 = _mm512_fmadd_ps(b, zero, chk1);
  }
  for (int64_t j = pairs; j < n; j += 16) {
    const __mmask16 k = j < full ? all : tail;
    const __m512 a = _mm512_mask_loadu_ps(low, k, x + j);
    hi0 = _mm512_max_ps(hi0, a);
    chk0 = _mm512_add_ps(chk0, _mm512_maskz_mul_ps(k, a, zero));
  }
  if (_mm512_reduce_add_ps(_mm512_add_ps(chk0, chk1)) != 0)
    return std::numeric_limits<float>::quiet_NaN();
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(hi0, hi1)));
  __m512 sum0 = zero, sum1 = zero;
  for (int64_t j = 0; j < pairs; j += 32) {
    const __m512 a = exp_shifted16(_mm512_loadu_ps(x + j), m);
    const __m512 b = exp_shifted16(_mm512_loadu_ps(x + j + 16), m);
    sum0 = _mm512_add_ps(sum0, a);
    sum1 = _mm512_add_ps(sum1, b);
    store16(w + j, all, a);
    store16(w + j + 16, all, b);
  }
  for (int64_t j = pairs; j < n; j += 16) {
    const __mmask16 k = j < full ? all : tail;
    const __m512 e = exp_shifted16(_mm512_maskz_loadu_ps(k, x + j), m);
    sum0 = _mm512_mask_add_ps(sum0, k, sum0, e);
    store16(w + j, k, e);
  }
  return 1.f / _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1));
}
#pragma GCC diagnostic pop
#endif

// The weights of `rows` rows of `n` scores at `x` into `w` (float32: `x`
// itself; or bf16, `x` then overwritten), each row up to its factor
// `inv[row]`: softmax = w * inv.
template <typename W>
void softmax_rows_scaled(float* x, int64_t rows, int64_t n, W* w, float* inv) {
  for (int64_t r = 0; r < rows; ++r) {
#ifdef KILN_X86_CLONES
    if (detail::simd_level() == detail::SimdLevel::kAvx512) {
      if constexpr (std::is_same_v<W, float>)
        inv[r] = exp_row_avx512(x + r * n, n, x + r * n);
      else
        inv[r] = exp_row_avx512(x + r * n, n, bits(w + r * n));
      if (!std::isnan(inv[r])) continue;
    }
#endif
    softmax_rows_in_place(x + r * n, 1, n);  // Softmax's own values (inf, NaN)
    if constexpr (!std::is_same_v<W, float>) round_bf16(x + r * n, w + r * n, n);
    inv[r] = 1;
  }
}

// x[i] *= scale over n floats.
void scale_floats(float* x, float scale, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

// Rows [r0, r1) of q's matrix (b, n), scaled, into `qs` [rows, h].
template <typename T>
void scaled_rows(const Problem<T>& p, int64_t b, int64_t n, int64_t r0, int64_t rows, T* qs) {
  const T* q = p.q.at(b, n);
  const int64_t qc = p.q.strides[3];
  for (int64_t i = 0; i < rows; ++i) {
    const T* src = q + (r0 + i) * p.q.strides[2];
    T* dst = qs + i * p.h;
    if constexpr (std::is_same_v<T, float>) {
      if (qc == 1) {  // rows contiguous (vectorized)
        for (int64_t j = 0; j < p.h; ++j) dst[j] = p.scale * src[j];
        continue;
      }
      for (int64_t j = 0; j < p.h; ++j) dst[j] = p.scale * src[j * qc];
    } else if (qc == 1) {
      scale_bf16(src, p.scale, dst, p.h);
    } else {
      for (int64_t j = 0; j < p.h; ++j) dst[j] = to_bfloat16(p.scale * to_float(src[j * qc]));
    }
  }
}

// A thread's buffers for one block: q's rows scaled [rows, h], the scores
// [rows, s]; bf16: the weights rounded [rows, s] and their rows' factors,
// K [s, h] and V [s, dv] dense (oneDNN 2.6 runs its AMX / bf16 brgemm kernels
// on dense operands only, strided ones on a 2x slower gemm), P V [rows, dv]
// in float32.
template <typename T>
struct Scratch {
  std::vector<T> qs;
  std::vector<float> scores, inv, pv;
  std::vector<T> weights, k, v;
  // Grows the buffers to these sizes (never shrinks them).
  void fit(int64_t rows, int64_t h, int64_t s, int64_t dv) {
    grow(qs, rows * h);
    grow(scores, rows * s);
    grow(inv, rows);
    if constexpr (!std::is_same_v<T, float>) {
      grow(weights, rows * s);
      grow(k, s * h);
      grow(v, s * dv);
      grow(pv, rows * dv);
    }
  }
  template <typename U>
  static void grow(std::vector<U>& b, int64_t n) {
    if (b.size() < static_cast<size_t>(n)) b.resize(static_cast<size_t>(n));
  }
};

// Buffers up to this size stay with their thread between calls.
constexpr int64_t kKeptScratchBytes = 8 << 20;

// Runs body(buffers) with this thread's kept buffers, or new ones when they
// would be larger than kKeptScratchBytes.
template <typename T, typename Body>
void with_scratch(int64_t rows, int64_t h, int64_t s, int64_t dv, Body body) {
  const int64_t bytes = 4 * rows * (h + 2 * s + dv) + 4 * s * (h + dv);
  if (bytes > kKeptScratchBytes) {
    Scratch<T> own;
    own.fit(rows, h, s, dv);
    body(own);
    return;
  }
  thread_local Scratch<T> kept;
  kept.fit(rows, h, s, dv);
  body(kept);
}

// Matrix (b, n) of `m` ([rows, cols] through its view) as dense row-major
// into `dst`.
template <typename T>
void dense_copy(const View<T>& m, int64_t b, int64_t n, T* dst) {
  const T* src = m.at(b, n);
  const int64_t rows = m.dims[2], cols = m.dims[3], rs = m.strides[2], cs = m.strides[3];
  for (int64_t i = 0; i < rows; ++i) {
    T* d = dst + i * cols;
    const T* r = src + i * rs;
    if (cs == 1) {
      std::memcpy(d, r, static_cast<size_t>(cols) * sizeof(T));
    } else {
      for (int64_t j = 0; j < cols; ++j) d[j] = r[j * cs];
    }
  }
}

// Rows [r0, r1) of one batch and head.
template <typename T>
void attend_block(const Problem<T>& p, int64_t b, int64_t n, int64_t r0, int64_t r1,
                  Scratch<T>& buf) {
  const int64_t rows = r1 - r0;
  T* qs = buf.qs.data();
  float* scores = buf.scores.data();
  scaled_rows(p, b, n, r0, rows, qs);
  // scores = qs K^T: op(B) = K^T [h, s]; K stored [s, h] row-major is B^T.
  if (p.h == 0) {
    std::fill(scores, scores + rows * p.s, 0.f);
  } else if constexpr (std::is_same_v<T, float>) {
    f32_gemm_call(
        {false, p.k.row_major(), rows, p.s, p.h, qs, p.h, p.k.at(b, n), p.k.ld(), scores, p.s});
  } else {
    dense_copy(p.k, b, n, buf.k.data());
    bf16_gemm_call_f32({false, true, rows, p.s, p.h, qs, p.h, buf.k.data(), p.h, nullptr, p.s},
                       scores);
  }
  if (p.mask.kind) mask_scores(p, b, n, r0, rows, scores);
  // out rows = P V: op(B) = V [s, dv].
  T* out = p.o.at(b, n) + r0 * p.o.strides[2];
  if constexpr (std::is_same_v<T, float>) {
    float* inv = buf.inv.data();
    softmax_rows_scaled(scores, rows, p.s, scores, inv);
    if (p.mask.kind == 2) zero_masked(p, b, n, r0, rows, scores);
    f32_gemm_call({false, !p.v.row_major(), rows, p.dv, p.s, scores, p.s, p.v.at(b, n), p.v.ld(),
                   out, p.o.strides[2]});
    for (int64_t i = 0; i < rows; ++i)  // the rows normalized
      if (inv[i] != 1) scale_floats(out + i * p.o.strides[2], inv[i], p.dv);
  } else {
    T* w = buf.weights.data();
    float* inv = buf.inv.data();
    softmax_rows_scaled(scores, rows, p.s, w, inv);
    if (p.mask.kind == 2) zero_masked(p, b, n, r0, rows, w);
    dense_copy(p.v, b, n, buf.v.data());
    float* pv = buf.pv.data();
    bf16_gemm_call_f32({false, false, rows, p.dv, p.s, w, p.s, buf.v.data(), p.dv, nullptr, p.dv},
                       pv);
    for (int64_t i = 0; i < rows; ++i)  // the rows normalized, rounded once
      scale_round_bf16(pv + i * p.dv, inv[i], out + i * p.o.strides[2], p.dv);
  }
}

// Rows per block: every thread gets about two blocks when the batch and
// heads alone give fewer.
template <typename T>
int64_t block_rows(const Problem<T>& p) {
  int64_t rows = std::min(p.t, kMaxBlockRows);
  const int64_t want = 2 * static_cast<int64_t>(ThreadPool::global().num_threads());
  const int64_t per_matrix = ceil_div(want, std::max<int64_t>(p.batch * p.heads, 1));
  if (per_matrix > 1) rows = std::min(rows, std::max(kMinBlockRows, ceil_div(p.t, per_matrix)));
  return std::max<int64_t>(1, rows);
}

template <typename T>
void attend(KernelContext& c) {
  const auto& perms = c.attr_ints("perms");
  Tensor& out = c.allocate_output(0);
  auto view = [&](const Tensor& t, size_t i) {
    return View<T>(t, &perms[i * kRank], const_cast<T*>(t.data<T>()));
  };
  Problem<T> p{view(c.input(0), 0),
               view(c.input(1), 1),
               view(c.input(2), 2),
               View<T>(out, &perms[3 * kRank], out.mutable_data<T>()),
               static_cast<float>(c.attr_float("scale")),
               0,
               0,
               0,
               0,
               0,
               0,
               Mask()};
  if (const std::string& mode = c.attr_string("mask"); !mode.empty())
    p.mask = Mask(c.input(3), mode == "add" ? 1 : 2, static_cast<float>(c.attr_float("fill")),
                  c.input(0).rank());
  p.batch = p.o.dims[0];
  p.heads = p.o.dims[1];
  p.t = p.o.dims[2];
  p.dv = p.o.dims[3];
  p.s = p.k.dims[2];
  p.h = p.q.dims[3];
  if (out.num_elements() == 0) return;
  if (p.s == 0) {  // softmax over no keys: no weights, zero rows
    std::memset(out.mutable_raw_data(), 0, static_cast<size_t>(out.num_elements()) * sizeof(T));
    return;
  }
  const int64_t rows = block_rows(p), blocks = ceil_div(p.t, rows);
  const int64_t tasks = p.batch * p.heads * blocks;
  const int64_t work = rows * p.s * (p.h + p.dv);  // multiply-adds per task
  parallel_for(tasks, std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(work, 1)),
               [&](int64_t i0, int64_t i1) {
                 LibrariesSingleThreaded single;  // one product per thread
                 with_scratch<T>(rows, p.h, p.s, p.dv, [&](Scratch<T>& buf) {
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t bn = i / blocks, r0 = (i % blocks) * rows;
                     attend_block(p, bn / p.heads, bn % p.heads, r0, std::min(p.t, r0 + rows), buf);
                   }
                 });
               });
}

void fused_attention_kernel(KernelContext& c) {
  if (c.input(0).dtype() == DType::kBFloat16)
    attend<BFloat16>(c);
  else
    attend<float>(c);
}

}  // namespace

void bind_attention_kernels(OpTableBuilder& t) {
  t.kernel(OpId::FusedAttention, fused_attention_kernel);
}

}  // namespace kiln::cpu
