// _FusedAttention (ops/attention.cpp): softmax(scale * Q K^T [+ mask]) V for
// each batch and head, by blocks of query rows on kiln's pool. A block copies
// its rows of Q scaled (contiguous), computes their scores [rows, S] into a
// buffer, applies the mask, takes the softmax in place (Softmax's row kernel)
// and writes P V straight into the output. Q, K, V and the output are read
// and written in place through their perms (the heads' transposes are never
// made); the products are single-threaded calls (gemm.h).
#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "bind.h"
#include "gemm.h"
#include "kernel_util.h"
#include "softmax.h"

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

// A float32 operand as [batch, heads, rows, cols]: sizes and strides in
// elements, read through its perm; a batch or heads dim of 1 has stride 0
// (broadcast).
struct View {
  float* data = nullptr;
  std::array<int64_t, kRank> dims{}, strides{};

  // A rank-3 `t` is read as rank 4 with a unit axis at 1.
  View(const Tensor& t, const int64_t* perm, float* base) : data(base) {
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
  const float* at(int64_t b, int64_t n) const { return data + b * strides[0] + n * strides[1]; }
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

struct Problem {
  View q, k, v, o;
  float scale;
  int64_t batch, heads, t, s, h, dv;
  Mask mask;
};

// The mask on one block's scores before the softmax (kind 1: added; kind 2:
// the fill where it is false).
void mask_scores(const Problem& p, int64_t b, int64_t n, int64_t r0, int64_t rows, float* scores) {
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
void zero_masked(const Problem& p, int64_t b, int64_t n, int64_t r0, int64_t rows, float* weights) {
  const Mask& m = p.mask;
  for (int64_t i = 0; i < rows; ++i) {
    const bool* keep = static_cast<const bool*>(m.data) + m.row(b, n, r0 + i);
    for (int64_t j = 0; j < p.s; ++j)
      if (!keep[j * m.strides[3]]) weights[i * p.s + j] = 0;
  }
}

// Rows [r0, r1) of one batch and head: `qs` [rows, h] and `scores` [rows, s]
// are this thread's buffers.
void attend_block(const Problem& p, int64_t b, int64_t n, int64_t r0, int64_t r1, float* qs,
                  float* scores) {
  const int64_t rows = r1 - r0;
  const float* q = p.q.at(b, n);
  const int64_t qc = p.q.strides[3];
  for (int64_t i = 0; i < rows; ++i) {
    const float* src = q + (r0 + i) * p.q.strides[2];
    float* dst = qs + i * p.h;
    if (qc == 1) {  // rows contiguous (vectorized)
      for (int64_t j = 0; j < p.h; ++j) dst[j] = p.scale * src[j];
    } else {
      for (int64_t j = 0; j < p.h; ++j) dst[j] = p.scale * src[j * qc];
    }
  }
  // scores = qs K^T: op(B) = K^T [h, s]; K stored [s, h] row-major is B^T.
  if (p.h == 0) {
    std::fill(scores, scores + rows * p.s, 0.f);
  } else {
    f32_gemm_call(
        {false, p.k.row_major(), rows, p.s, p.h, qs, p.h, p.k.at(b, n), p.k.ld(), scores, p.s});
  }
  if (p.mask.kind) mask_scores(p, b, n, r0, rows, scores);
  softmax_rows_in_place(scores, rows, p.s);
  if (p.mask.kind == 2) zero_masked(p, b, n, r0, rows, scores);
  // out rows = P V: op(B) = V [s, dv].
  float* out = const_cast<float*>(p.o.at(b, n)) + r0 * p.o.strides[2];
  f32_gemm_call({false, !p.v.row_major(), rows, p.dv, p.s, scores, p.s, p.v.at(b, n), p.v.ld(), out,
                 p.o.strides[2]});
}

// Rows per block: every thread gets about two blocks when the batch and
// heads alone give fewer.
int64_t block_rows(const Problem& p) {
  int64_t rows = std::min(p.t, kMaxBlockRows);
  const int64_t want = 2 * static_cast<int64_t>(ThreadPool::global().num_threads());
  const int64_t per_matrix = ceil_div(want, std::max<int64_t>(p.batch * p.heads, 1));
  if (per_matrix > 1) rows = std::min(rows, std::max(kMinBlockRows, ceil_div(p.t, per_matrix)));
  return std::max<int64_t>(1, rows);
}

void fused_attention_kernel(KernelContext& c) {
  const auto& perms = c.attr_ints("perms");
  Tensor& out = c.allocate_output(0);
  auto view = [&](const Tensor& t, size_t i) {
    return View(t, &perms[i * kRank], const_cast<float*>(t.data<float>()));
  };
  Problem p{view(c.input(0), 0),
            view(c.input(1), 1),
            view(c.input(2), 2),
            View(out, &perms[3 * kRank], out.mutable_data<float>()),
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
    std::memset(out.mutable_data<float>(), 0, static_cast<size_t>(out.num_elements()) * 4);
    return;
  }
  const int64_t rows = block_rows(p), blocks = ceil_div(p.t, rows);
  const int64_t tasks = p.batch * p.heads * blocks;
  const int64_t work = rows * p.s * (p.h + p.dv);  // multiply-adds per task
  parallel_for(tasks, std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(work, 1)),
               [&](int64_t i0, int64_t i1) {
                 std::vector<float> qs(static_cast<size_t>(rows * p.h));
                 std::vector<float> scores(static_cast<size_t>(rows * p.s));
                 for (int64_t i = i0; i < i1; ++i) {
                   const int64_t bn = i / blocks, r0 = (i % blocks) * rows;
                   attend_block(p, bn / p.heads, bn % p.heads, r0, std::min(p.t, r0 + rows),
                                qs.data(), scores.data());
                 }
               });
}

}  // namespace

void bind_attention_kernels(OpTableBuilder& t) {
  t.kernel(OpId::FusedAttention, fused_attention_kernel);
}

}  // namespace kiln::cpu
