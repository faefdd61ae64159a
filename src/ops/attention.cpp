// _FusedAttention (fuse_attention): softmax(scale * Q K^T) V per batch and
// head, as one node whose scores never leave the cache.
//
// Inputs q, k, v: all float32 or all bfloat16 (the output the same; bf16
// products accumulate in float32, the softmax is float32), all of rank 4 or
// all of rank 3 (one head: a
// rank-3 operand is read as rank 4 with a unit axis inserted at 1, and the
// output has rank 3 too). Each is read as [batch, heads, rows,
// cols] through attr perms (16 ints: for q, k, v and the output, the axis of
// the stored value that holds each of those four dims): q is [B, N, T, H],
// k [B, N, S, H], v [B, N, S, Dv] and the output [B, N, T, Dv]. So a
// Transpose feeding an operand (the heads' split) or taking the output (their
// merge) is read through, never computed. Batch and heads broadcast as
// BatchMatMulV2's batch dims do (a dim of 1 against any). The stored last
// axis of k and v is one of their two matrix dims, the output's is Dv.
// attr scale: the scores' factor (1 / sqrt(H) in Keras). attr mask: "" (no
// fourth input), "add" (a float32 mask added to the scaled scores: the
// transformer tutorial's `mask * -1e9`, a position bias) or "keep" (a bool
// mask: where it is false the score is attr fill and the weight 0, Keras'
// masked softmax). The mask broadcasts to the scores [B, N, T, S] as a
// binary op's operand does (right-aligned, dims of 1), never enlarging them;
// with rank-3 operands, to the scores [B, T, S].
// Kernel: src/kernels/cpu/attention.cpp.
#include <array>
#include <string>

#include "families.h"

namespace kiln {
namespace {

constexpr int kRank = 4;
constexpr size_t kOperands = 4;  // q, k, v, output

// An operand's stored dims as rank 4: a rank-3 one gains a unit axis at 1.
std::array<int64_t, kRank> stored_dims(const Shape& s) {
  std::array<int64_t, kRank> d{};
  const bool three = s.rank() == kRank - 1;
  for (int a = 0, j = 0; j < kRank; ++j)
    d[static_cast<size_t>(j)] = three && j == 1 ? 1 : s.dim(a++);
  return d;
}

// The four dims of operand i as read through its perm (-1: unknown).
std::array<int64_t, kRank> logical_dims(const Shape& s, const int64_t* perm) {
  const auto stored = stored_dims(s);
  std::array<int64_t, kRank> d{};
  for (int j = 0; j < kRank; ++j) d[static_cast<size_t>(j)] = stored[static_cast<size_t>(perm[j])];
  return d;
}

// Two batch dims broadcast (1 against any; unknown stays unknown).
bool broadcast_dim(int64_t a, int64_t b, int64_t& out) {
  if (a == 1 || a == b) {
    out = b;
  } else if (b == 1) {
    out = a;
  } else if (a < 0 || b < 0) {
    out = -1;
  } else {
    return false;
  }
  return true;
}

bool same_or_unknown(int64_t a, int64_t b) {
  return a < 0 || b < 0 || a == b;
}

void check_perms(InferContext& c, const std::vector<int64_t>& perms) {
  if (perms.size() != kOperands * kRank)
    c.fail("perms must hold 16 ints (q, k, v, output), got ", perms.size());
  for (size_t i = 0; i < kOperands; ++i) {
    bool seen[kRank] = {};
    for (size_t j = 0; j < kRank; ++j) {
      const int64_t a = perms[i * kRank + j];
      if (a < 0 || a >= kRank || seen[a]) c.fail("perms[", i, "] must be a permutation of 0..3");
      seen[a] = true;
    }
  }
  // k and v: stored rows or cols innermost; the output: its cols.
  for (size_t i : {size_t{1}, size_t{2}})
    if (perms[i * kRank + 2] != kRank - 1 && perms[i * kRank + 3] != kRank - 1)
      c.fail(c.input_name(i), " must store its rows or its columns innermost");
  if (perms[3 * kRank + 3] != kRank - 1) c.fail("the output must store its columns innermost");
}

// The optional fourth input against attr mask and the scores' dims (rank 4,
// or 3 with rank-3 operands: their heads dim dropped).
void check_mask(InferContext& c, std::array<int64_t, kRank> scores, int rank) {
  const std::string& mode = c.attr_string("mask");
  if (mode != "" && mode != "add" && mode != "keep")
    c.fail("mask must be \"\", \"add\" or \"keep\", got \"", mode, "\"");
  const size_t want = mode.empty() ? 3 : 4;
  if (c.num_inputs() != want)
    c.fail("takes ", want, " inputs with mask \"", mode, "\", got ", c.num_inputs());
  if (mode.empty()) return;
  c.expect_dtype(3, mode == "add" ? DType::kFloat32 : DType::kBool);
  if (rank < kRank) scores = {-1, scores[0], scores[2], scores[3]};  // [B, T, S] right-aligned
  const Shape& m = c.shape(3);
  if (!m.rank_known() || m.rank() > rank)
    c.fail("the mask must have rank at most ", rank, ", got shape ", m.debug_string());
  for (int j = 0; j < m.rank(); ++j) {
    const int64_t d = m.dim(j), want_d = scores[static_cast<size_t>(kRank - m.rank() + j)];
    if (d != 1 && !same_or_unknown(d, want_d))
      c.fail("the mask's shape ", m.debug_string(), " does not broadcast to the scores' dims ",
             Shape(std::vector<int64_t>(scores.begin() + (kRank - rank), scores.end()))
                 .debug_string());
  }
}

void infer_fused_attention(InferContext& c) {
  const auto& perms = c.attr_ints("perms");
  check_perms(c, perms);
  const int rank = c.shape(0).rank_known() ? c.shape(0).rank() : 0;
  if (rank != kRank && rank != kRank - 1)
    c.fail("q must have rank 3 or 4, got shape ", c.shape(0).debug_string());
  const DType type = c.dtype(0);
  if (type != DType::kFloat32 && type != DType::kBFloat16)
    c.fail("q must be float32 or bfloat16, got ", dtype_name(type));
  for (size_t i = 0; i < 3; ++i) {
    c.expect_dtype(i, type);
    if (!c.shape(i).rank_known() || c.shape(i).rank() != rank)
      c.fail(c.input_name(i), " must have q's rank ", rank, ", got shape ",
             c.shape(i).debug_string());
  }
  if (rank < kRank)
    for (size_t i = 0; i < kOperands; ++i)
      if (perms[i * kRank + 1] != 1) c.fail("with rank-3 operands, perms[", i, "][1] must be 1");
  const auto q = logical_dims(c.shape(0), &perms[0]);
  const auto k = logical_dims(c.shape(1), &perms[kRank]);
  const auto v = logical_dims(c.shape(2), &perms[2 * kRank]);
  if (!same_or_unknown(q[3], k[3])) c.fail("q has ", q[3], " columns per row but k has ", k[3]);
  if (!same_or_unknown(k[2], v[2])) c.fail("k has ", k[2], " rows but v has ", v[2]);
  std::array<int64_t, kRank> out{0, 0, q[2], v[3]};
  for (size_t d = 0; d < 2; ++d) {
    int64_t qk = 0;
    if (!broadcast_dim(q[d], k[d], qk) || !broadcast_dim(qk, v[d], out[d]))
      c.fail("the ", d == 0 ? "batch" : "heads", " dims of q (", q[d], "), k (", k[d], ") and v (",
             v[d], ") do not broadcast");
  }
  check_mask(c, {out[0], out[1], q[2], k[2]}, rank);
  std::vector<int64_t> dims(kRank);
  for (size_t j = 0; j < kRank; ++j) dims[static_cast<size_t>(perms[3 * kRank + j])] = out[j];
  if (rank < kRank) dims.erase(dims.begin() + 1);  // the unit heads axis
  c.set_output(0, type, Shape(dims));
}

// Work: rows x keys x (H + Dv) multiply-adds, about output elements times the
// keys' elements per batch and head; the kernel splits itself.
OpCost fused_attention_cost(const CostQuery& q) {
  const double out = static_cast<double>(q.out_elements());
  const double keys = q.in.size() > 1 ? static_cast<double>(std::max<int64_t>(q.in[1], 1)) : 1;
  return {std::max(out, keys) * 64.0, true};
}

}  // namespace

void define_attention_ops(OpTableBuilder& t) {
  t.def(OpId::FusedAttention)
      .inputs({"q", "k", "v", "mask"})
      .outputs({"output"})
      .attr("scale", AttrType::kFloat, 1.0)
      .attr("perms", AttrType::kInts)
      .attr("mask", AttrType::kString, std::string())
      .attr("fill", AttrType::kFloat, -1e9)
      .traits(kVariadicInput | kGraphOnly | kPassOnly | kNoGradient)
      .cost(fused_attention_cost)
      .infer(infer_fused_attention);
}

}  // namespace kiln
