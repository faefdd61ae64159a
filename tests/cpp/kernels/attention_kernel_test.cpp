// The _FusedAttention kernel (src/kernels/cpu/attention.cpp) called directly:
// every stored layout its perms allow, broadcast batch and heads, blocks of
// query rows (long keys, few heads), empty dims, against a float64 reference;
// and the inference's errors.
#include <cmath>
#include <cstring>
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
  std::string mask;                // "", "add" or "keep"
  std::vector<int64_t> mask_dims;  // right-aligned against [B, N, T, S]
};

// Mask element (b, n, t, s) of a mask of `dims` (right-aligned, dims of 1
// broadcast).
int64_t mask_index(const std::vector<int64_t>& dims, int64_t b, int64_t n, int64_t t, int64_t s) {
  const int64_t idx[4] = {b, n, t, s};
  int64_t off = 0;
  for (size_t a = 0; a < dims.size(); ++a) {
    const int64_t i = idx[4 - dims.size() + a];
    off = off * dims[a] + (dims[a] == 1 ? 0 : i);
  }
  return off;
}

void check(const Case& c) {
  const int64_t kb = c.kb < 0 ? c.b : c.kb, kn = c.kn < 0 ? c.n : c.kn;
  const Shape sq = stored({c.b, c.n, c.t, c.h}, c.pq), sk = stored({kb, kn, c.s, c.h}, c.pk);
  const Shape sv = stored({kb, kn, c.s, c.dv}, c.pv);
  const auto q = pattern(sq.num_elements(), 0.37, 0.1), k = pattern(sk.num_elements(), 0.71, 0.4);
  const auto v = pattern(sv.num_elements(), 0.53, 0.9);
  Perm perms = c.pq;
  for (const Perm* p : {&c.pk, &c.pv, &c.po}) perms.insert(perms.end(), p->begin(), p->end());
  std::vector<Tensor> in = {Tensor::from_vector(q, sq), Tensor::from_vector(k, sk),
                            Tensor::from_vector(v, sv)};
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
  ASSERT_EQ(got.shape(), so);
  const std::vector<float> out = got.to_vector<float>();
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t t = 0; t < c.t; ++t) {
        std::vector<double> w(static_cast<size_t>(c.s));
        double hi = -INFINITY, sum = 0;
        for (int64_t s = 0; s < c.s; ++s) {
          double d = 0;
          for (int64_t h = 0; h < c.h; ++h)
            d += at(q, sq, c.pq, b, n, t, h) * at(k, sk, c.pk, b, n, s, h);
          const int64_t mi = c.mask.empty() ? 0 : mask_index(c.mask_dims, b, n, t, s);
          double x = c.scale * d;
          if (c.mask == "add") x += add[static_cast<size_t>(mi)];
          if (c.mask == "keep" && !keep[static_cast<size_t>(mi)]) x = -1e9;
          w[static_cast<size_t>(s)] = x;
          hi = std::max(hi, x);
        }
        for (double& x : w) sum += x = std::exp(x - hi);
        if (c.mask == "keep")
          for (int64_t s = 0; s < c.s; ++s)
            if (!keep[static_cast<size_t>(mask_index(c.mask_dims, b, n, t, s))])
              w[static_cast<size_t>(s)] = 0;
        for (int64_t e = 0; e < c.dv; ++e) {
          double want = 0;
          for (int64_t s = 0; s < c.s; ++s)
            want += w[static_cast<size_t>(s)] / sum * at(v, sv, c.pv, b, n, s, e);
          ASSERT_NEAR(at(out, so, c.po, b, n, t, e), want, 2e-5)
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
  fails({reshape(q, {2, 3, 20}), k, v}, ok, "must have rank 4");
  fails({cast(q, DType::kFloat64), k, v}, ok, "float32");
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
  masked({q, k, v, reshape(bias, {6, 4})}, "add", "does not broadcast to the scores' [2, 3, 4, 6]");
  masked({q, k, v, reshape(bias, {1, 1, 1, 1, 24})}, "add", "rank at most 4");
}

}  // namespace
}  // namespace kiln
