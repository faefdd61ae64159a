// The _FusedAttention kernel (src/kernels/cpu/attention.cpp) called directly:
// every stored layout its perms allow, broadcast batch and heads, blocks of
// query rows (long keys, few heads), empty dims, against a float64 reference;
// and the inference's errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace {

using Perm = std::vector<int64_t>;
const Perm kBNTH = {0, 1, 2, 3};  // stored as read: [B, N, rows, cols]
const Perm kBTNH = {0, 2, 1, 3};  // heads after the rows (Keras' projections)
const Perm kBNHT = {0, 1, 3, 2};  // cols before rows (k stored K^T)
const Perm kTNBH = {2, 1, 0, 3};  // rows first (time-major), one head only

std::vector<float> pattern(int64_t n, double freq, double phase) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(std::sin(freq * static_cast<double>(i) + phase));
  return v;
}

// The stored shape of logical dims `d` ([B, N, rows, cols]) under `p`.
Shape stored(const std::vector<int64_t>& d, const Perm& p) {
  std::vector<int64_t> s(4);
  for (size_t j = 0; j < 4; ++j) s[static_cast<size_t>(p[j])] = d[j];
  return Shape(s);
}

// Element (b, n, r, c) of a stored tensor read through `p` (dims of 1 broadcast).
double at(const std::vector<float>& v, const Shape& s, const Perm& p, int64_t b, int64_t n,
          int64_t r, int64_t c) {
  int64_t idx[4] = {b, n, r, c}, pos[4];
  for (size_t j = 0; j < 4; ++j) {
    const int64_t a = p[j];
    pos[a] = s.dim(static_cast<int>(a)) == 1 ? 0 : idx[j];
  }
  int64_t off = 0;
  for (int a = 0; a < 4; ++a) off = off * s.dim(a) + pos[a];
  return v[static_cast<size_t>(off)];
}

struct Case {
  int64_t b, n, t, s, h, dv;
  Perm pq, pk, pv, po;
  int64_t kb = -1, kn = -1;  // k and v's batch and heads (-1: b, n); 1 broadcasts
  float scale = 0.125f;
  std::string mask{};                // "", "add" or "keep"
  std::vector<int64_t> mask_dims{};  // right-aligned against [B, N, T, S] ([B, T, S]: rank 3)
  bool rank3 = false;                // operands of rank 3 (n == 1, no heads axis)
  bool bf16 = false;                 // bfloat16 operands and output
};

// The values of `v` as bfloat16 holds them.
std::vector<float> rounded(const std::vector<float>& v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = to_float(to_bfloat16(v[i]));
  return r;
}

// Without the unit axis 1 when the operands have rank 3.
Shape operand_shape(const Shape& s, bool rank3) {
  return rank3 ? Shape({s.dim(0), s.dim(2), s.dim(3)}) : s;
}

// Mask element (b, n, t, s) of a mask of `dims` (right-aligned to the
// scores' dims, dims of 1 broadcast).
int64_t mask_index(const Case& c, int64_t b, int64_t n, int64_t t, int64_t s) {
  const std::vector<int64_t>& dims = c.mask_dims;
  const std::vector<int64_t> idx =
      c.rank3 ? std::vector<int64_t>{b, t, s} : std::vector<int64_t>{b, n, t, s};
  int64_t off = 0;
  for (size_t a = 0; a < dims.size(); ++a) {
    const int64_t i = idx[idx.size() - dims.size() + a];
    off = off * dims[a] + (dims[a] == 1 ? 0 : i);
  }
  return off;
}

void check(const Case& c) {
  const int64_t kb = c.kb < 0 ? c.b : c.kb, kn = c.kn < 0 ? c.n : c.kn;
  const Shape sq = stored({c.b, c.n, c.t, c.h}, c.pq), sk = stored({kb, kn, c.s, c.h}, c.pk);
  const Shape sv = stored({kb, kn, c.s, c.dv}, c.pv);
  auto q = pattern(sq.num_elements(), 0.37, 0.1), k = pattern(sk.num_elements(), 0.71, 0.4);
  auto v = pattern(sv.num_elements(), 0.53, 0.9);
  if (c.bf16) {  // the reference reads the values the kernel gets
    q = rounded(q);
    k = rounded(k);
    v = rounded(v);
  }
  auto operand = [&](const std::vector<float>& x, const Shape& st) {
    const Tensor t = Tensor::from_vector(x, operand_shape(st, c.rank3));
    return c.bf16 ? cast(t, DType::kBFloat16) : t;
  };
  Perm perms = c.pq;
  for (const Perm* p : {&c.pk, &c.pv, &c.po}) perms.insert(perms.end(), p->begin(), p->end());
  std::vector<Tensor> in = {operand(q, sq), operand(k, sk), operand(v, sv)};
  // "add": a bias with some -1e9 entries; "keep": every third entry hidden,
  // and the first query row of every matrix whole (all its weights 0).
  const Shape sm(c.mask_dims);
  std::vector<float> add = pattern(sm.num_elements(), 0.29, 0.3);
  for (size_t i = 0; i < add.size(); i += 4) add[i] = -1e9f;
  std::vector<uint8_t> keep(static_cast<size_t>(sm.num_elements()));
  const size_t cols = c.mask_dims.empty() ? 1 : static_cast<size_t>(c.mask_dims.back());
  const size_t rows = c.mask_dims.size() < 2 ? 1 : static_cast<size_t>(c.mask_dims.end()[-2]);
  for (size_t i = 0; i < keep.size(); ++i) keep[i] = i % 3 != 0 && (rows == 1 || i / cols % rows);
  if (c.mask == "add") in.push_back(Tensor::from_vector(add, sm));
  if (c.mask == "keep") {
    Tensor m = Tensor::empty(DType::kBool, sm);
    std::memcpy(m.mutable_raw_data(), keep.data(), keep.size());
    in.push_back(m);
  }
  const Tensor got = call_op1(OpId::FusedAttention, std::span<const Tensor>(in),
                              Attrs{double{c.scale}, perms, c.mask, -1e9});
  const Shape so = stored({c.b, c.n, c.t, c.dv}, c.po);
  ASSERT_EQ(got.shape(), operand_shape(so, c.rank3));
  ASSERT_EQ(got.dtype(), c.bf16 ? DType::kBFloat16 : DType::kFloat32);
  const std::vector<float> out = cast(got, DType::kFloat32).to_vector<float>();
  // bf16: q's rows scaled and the weights rounded to bf16 (2^-9 relative
  // each), the output rounded once (outputs are within [-1, 1]).
  const double tol = c.bf16 ? 4e-3 : 2e-5;
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t t = 0; t < c.t; ++t) {
        std::vector<double> w(static_cast<size_t>(c.s));
        double hi = -INFINITY, sum = 0;
        for (int64_t s = 0; s < c.s; ++s) {
          double d = 0;
          for (int64_t h = 0; h < c.h; ++h)
            d += at(q, sq, c.pq, b, n, t, h) * at(k, sk, c.pk, b, n, s, h);
          const int64_t mi = c.mask.empty() ? 0 : mask_index(c, b, n, t, s);
          double x = c.scale * d;
          if (c.mask == "add") x += add[static_cast<size_t>(mi)];
          if (c.mask == "keep" && !keep[static_cast<size_t>(mi)]) x = -1e9;
          w[static_cast<size_t>(s)] = x;
          hi = std::max(hi, x);
        }
        for (double& x : w) sum += x = std::exp(x - hi);
        if (c.mask == "keep")
          for (int64_t s = 0; s < c.s; ++s)
            if (!keep[static_cast<size_t>(mask_index(c, b, n, t, s))])
              w[static_cast<size_t>(s)] = 0;
        for (int64_t e = 0; e < c.dv; ++e) {
          double want = 0;
          for (int64_t s = 0; s < c.s; ++s)
            want += w[static_cast<size_t>(s)] / sum * at(v, sv, c.pv, b, n, s, e);
          ASSERT_NEAR(at(out, so, c.po, b, n, t, e), want, tol)
              << "b " << b << " n " << n << " t " << t << " e " << e;
        }
      }
}

// Keras' layout throughout; the tutorial's (as read); k stored K^T and v
// V^T; cross attention (T != S, H != Dv); one query row (decoding); long
// keys and one head and batch (rows split for the threads, a ragged last
// block); more rows than a block takes;
// k and v shared by every batch / head (broadcast); no head dim.
TEST(FusedAttentionKernel, EveryLayoutAgainstAReference) {
  for (const Case& c : {
           Case{2, 4, 32, 32, 16, 16, kBTNH, kBTNH, kBTNH, kBTNH},
           Case{2, 3, 20, 20, 8, 8, kBNTH, kBNTH, kBNTH, kBNTH},
           Case{1, 2, 17, 23, 5, 7, kBNTH, kBNHT, kBNHT, kBTNH},
           Case{3, 2, 9, 40, 12, 6, kBTNH, kBNTH, kBTNH, kBNTH},
           Case{2, 2, 1, 50, 8, 8, kBTNH, kBTNH, kBTNH, kBTNH},
           Case{1, 1, 70, 2100, 4, 3, kBNTH, kBTNH, kBNTH, kBNTH},
           Case{1, 1, 130, 64, 8, 8, kBNTH, kBNTH, kBNTH, kBNTH},
           Case{4, 1, 300, 20, 4, 4, kBTNH, kBTNH, kBTNH, kBTNH},
           Case{3, 2, 11, 13, 4, 5, kBNTH, kBNTH, kBNTH, kBNTH, 1, 1},
           Case{2, 3, 11, 13, 4, 5, kBTNH, kBTNH, kBTNH, kBTNH, 2, 1, 1.7f},
       }) {
    SCOPED_TRACE(str_cat(c.b, "x", c.n, " t ", c.t, " s ", c.s, " h ", c.h, " dv ", c.dv));
    check(c);
  }
}

// Masks: added (full, per batch row, one for all) and kept (full, per batch
// and query, one row for all), over Keras' layout.
TEST(FusedAttentionKernel, Masks) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> masks = {
      {"add", {2, 3, 9, 11}},  {"add", {2, 1, 1, 11}},  {"add", {9, 11}},
      {"keep", {2, 3, 9, 11}}, {"keep", {2, 1, 9, 11}}, {"keep", {11}},
  };
  for (const auto& [mode, dims] : masks) {
    SCOPED_TRACE(str_cat(mode, " ", Shape(dims).debug_string()));
    Case c{2, 3, 9, 11, 8, 5, kBTNH, kBTNH, kBTNH, kBTNH};
    c.mask = mode;
    c.mask_dims = dims;
    check(c);
  }
}

// One head of rank 3 (Keras' Attention layer): as read, k stored K^T and
// v V^T, time-major q and output, k and v shared by the batch; masks
// right-aligned to [B, T, S].
TEST(FusedAttentionKernel, RankThree) {
  std::vector<Case> cases = {
      Case{3, 1, 9, 11, 8, 5, kBNTH, kBNTH, kBNTH, kBNTH},
      Case{2, 1, 17, 23, 5, 7, kBNTH, kBNHT, kBNHT, kBNTH},
      Case{2, 1, 300, 20, 4, 4, kTNBH, kBNTH, kBNTH, kTNBH},
      Case{3, 1, 11, 13, 4, 5, kBNTH, kBNTH, kBNTH, kBNTH, 1, 1},
  };
  for (const auto& [mode, dims] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"add", {3, 9, 11}}, {"add", {9, 11}}, {"keep", {3, 1, 11}}, {"keep", {1, 9, 11}}}) {
    Case c{3, 1, 9, 11, 8, 5, kBNTH, kBNTH, kBNTH, kBNTH};
    c.mask = mode;
    c.mask_dims = dims;
    cases.push_back(c);
  }
  for (Case& c : cases) {
    c.rank3 = true;
    SCOPED_TRACE(str_cat(c.b, " t ", c.t, " s ", c.s, " h ", c.h, " dv ", c.dv, " ", c.mask, " ",
                         Shape(c.mask_dims).debug_string()));
    check(c);
  }
}

// bfloat16 operands (mixed_bfloat16): every layout, masks, rank 3, rows
// longer and shorter than a vector, no keys; oneDNN's bf16 products with a
// float32 softmax in between.
TEST(FusedAttentionKernel, BFloat16) {
  std::vector<Case> cases = {
      Case{2, 4, 32, 32, 16, 16, kBTNH, kBTNH, kBTNH, kBTNH},
      Case{1, 2, 17, 23, 5, 7, kBNTH, kBNHT, kBNHT, kBTNH},
      Case{3, 2, 9, 40, 12, 6, kBTNH, kBNTH, kBTNH, kBNTH},
      Case{1, 1, 70, 300, 4, 3, kBNTH, kBTNH, kBNTH, kBNTH},
      Case{2, 3, 11, 13, 4, 5, kBTNH, kBTNH, kBTNH, kBTNH, 2, 1, 1.7f},
      Case{2, 2, 3, 0, 4, 5, kBNTH, kBNTH, kBNTH, kBNTH},
      Case{2, 2, 3, 4, 0, 5, kBNTH, kBNTH, kBNTH, kBNTH},
  };
  for (const auto& [mode, dims] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"add", {2, 3, 9, 11}}, {"keep", {2, 1, 9, 11}}, {"keep", {11}}}) {
    Case c{2, 3, 9, 11, 8, 5, kBTNH, kBTNH, kBTNH, kBTNH};
    c.mask = mode;
    c.mask_dims = dims;
    cases.push_back(c);
  }
  Case three{2, 1, 300, 20, 4, 4, kTNBH, kBNTH, kBNTH, kTNBH};
  three.rank3 = true;
  cases.push_back(three);
  for (Case& c : cases) {
    c.bf16 = true;
    SCOPED_TRACE(
        str_cat(c.b, "x", c.n, " t ", c.t, " s ", c.s, " h ", c.h, " dv ", c.dv, " ", c.mask));
    check(c);
  }
}

// A row holding inf or NaN gives what Softmax gives (the general row kernel),
// in bf16 too; the other rows are unaffected.
TEST(FusedAttentionKernel, NonFiniteScores) {
  for (const DType type : {DType::kFloat32, DType::kBFloat16}) {
    std::vector<float> qv(2 * 4, 0.5f), kv(3 * 4, 0.25f), vv(3 * 2, 1.f);
    qv[0] = std::numeric_limits<float>::quiet_NaN();  // row 0: NaN scores
    const auto make = [&](const std::vector<float>& x, Shape s) {
      const Tensor t = Tensor::from_vector(x, s);
      return type == DType::kFloat32 ? t : cast(t, type);
    };
    const std::vector<Tensor> in = {make(qv, {1, 1, 2, 4}), make(kv, {1, 1, 3, 4}),
                                    make(vv, {1, 1, 3, 2})};
    Perm perms;
    for (int i = 0; i < 4; ++i) perms.insert(perms.end(), kBNTH.begin(), kBNTH.end());
    const std::vector<float> out =
        cast(call_op1(OpId::FusedAttention, std::span<const Tensor>(in), Attrs{1.0, perms}),
             DType::kFloat32)
            .to_vector<float>();
    EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1])) << dtype_name(type);
    EXPECT_FLOAT_EQ(out[2], 1.f) << dtype_name(type);
    EXPECT_FLOAT_EQ(out[3], 1.f) << dtype_name(type);
  }
}

TEST(FusedAttentionKernel, EmptyDims) {
  // No keys: softmax over nothing, zero rows (as the products compute it).
  Case none{2, 2, 3, 0, 4, 5, kBNTH, kBNTH, kBNTH, kBNTH};
  check(none);
  for (const Case& c : {Case{0, 2, 3, 4, 4, 5, kBNTH, kBNTH, kBNTH, kBNTH},
                        Case{2, 2, 0, 4, 4, 5, kBNTH, kBNTH, kBNTH, kBNTH},
                        Case{2, 2, 3, 4, 0, 5, kBNTH, kBNTH, kBNTH, kBNTH},
                        Case{2, 2, 3, 4, 4, 0, kBTNH, kBTNH, kBTNH, kBTNH}})
    check(c);
}

TEST(FusedAttentionKernel, InferenceErrors) {
  const Tensor q = Tensor::from_vector(pattern(2 * 3 * 4 * 5, 0.3, 0), {2, 3, 4, 5});
  const Tensor k = Tensor::from_vector(pattern(2 * 3 * 6 * 5, 0.3, 0), {2, 3, 6, 5});
  const Tensor v = Tensor::from_vector(pattern(2 * 3 * 6 * 7, 0.3, 0), {2, 3, 6, 7});
  Perm ok = kBNTH;
  for (int i = 0; i < 3; ++i) ok.insert(ok.end(), kBNTH.begin(), kBNTH.end());
  auto run = [](std::vector<Tensor> in, Perm perms) {
    return call_op1(OpId::FusedAttention, std::span<const Tensor>(in), Attrs{1.0, perms});
  };
  EXPECT_EQ(run({q, k, v}, ok).shape(), Shape({2, 3, 4, 7}));
  auto fails = [&](std::vector<Tensor> in, Perm perms, const char* what) {
    try {
      run(std::move(in), std::move(perms));
      ADD_FAILURE() << "no error, want: " << what;
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails({q, k, v}, Perm(ok.begin(), ok.begin() + 12), "perms must hold 16 ints");
  Perm dup = ok;
  dup[5] = 0;
  fails({q, k, v}, dup, "perms[1] must be a permutation");
  Perm inner = ok;  // k stored with its batch dim innermost
  inner[4] = 3;
  inner[7] = 0;
  fails({q, k, v}, inner, "must store its rows or its columns innermost");
  Perm out = ok;
  out[14] = 3;
  out[15] = 2;
  fails({q, k, v}, out, "the output must store its columns innermost");
  fails({q, v, v}, ok, "q has 5 columns per row but k has 7");
  fails({q, k, reshape(v, {2, 3, 7, 6})}, ok, "k has 6 rows but v has 7");
  fails({q, reshape(k, {3, 2, 6, 5}), v}, ok, "do not broadcast");
  fails({reshape(q, {2, 3, 20}), k, v}, ok, "k must have q's rank 3");
  fails({reshape(q, {6, 20}), k, v}, ok, "q must have rank 3 or 4");
  const Tensor q3 = reshape(q, {6, 4, 5}), k3 = reshape(k, {6, 6, 5}), v3 = reshape(v, {6, 6, 7});
  EXPECT_EQ(run({q3, k3, v3}, ok).shape(), Shape({6, 4, 7}));
  Perm heads = ok;  // a rank-3 operand's heads come from its unit axis
  heads[0] = 1;
  heads[1] = 0;
  fails({q3, k3, v3}, heads, "with rank-3 operands, perms[0][1] must be 1");
  fails({cast(q, DType::kFloat64), k, v}, ok, "q must be float32 or bfloat16, got float64");
  fails({cast(q, DType::kBFloat16), k, v}, ok, "float32");
  // The mask: its mode, its input, its dtype and its shape.
  auto masked = [&](std::vector<Tensor> in, const char* mode, const char* what) {
    try {
      call_op1(OpId::FusedAttention, std::span<const Tensor>(in), Attrs{1.0, ok, mode, -1e9});
      ADD_FAILURE() << "no error, want: " << what;
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  const Tensor bias = Tensor::from_vector(pattern(4 * 6, 0.3, 0), {4, 6});
  Tensor keep = Tensor::empty(DType::kBool, {1, 6});
  std::memset(keep.mutable_raw_data(), 1, 6);
  masked({q, k, v}, "add", "takes 4 inputs with mask \"add\", got 3");
  masked({q, k, v, bias}, "", "takes 3 inputs");
  masked({q, k, v, bias}, "bias", "mask must be");
  masked({q, k, v, bias}, "keep", "bool");
  masked({q, k, v, keep}, "add", "float32");
  masked({q, k, v, reshape(bias, {6, 4})}, "add",
         "does not broadcast to the scores' dims [2,3,4,6]");
  masked({q, k, v, reshape(bias, {1, 1, 1, 1, 24})}, "add", "rank at most 4");
  try {  // rank-3 operands: the mask aligns to [B, T, S]
    const std::vector<Tensor> in = {q3, k3, v3, reshape(bias, {1, 1, 4, 6})};
    call_op1(OpId::FusedAttention, std::span<const Tensor>(in), Attrs{1.0, ok, "add", -1e9});
    ADD_FAILURE() << "no error for a rank-4 mask";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("rank at most 3"), std::string::npos) << e.what();
  }
  const std::vector<Tensor> in3 = {q3, k3, v3, reshape(bias, {1, 4, 6})};
  EXPECT_EQ(
      call_op1(OpId::FusedAttention, std::span<const Tensor>(in3), Attrs{1.0, ok, "add", -1e9})
          .shape(),
      Shape({6, 4, 7}));
}

}  // namespace
}  // namespace kiln
