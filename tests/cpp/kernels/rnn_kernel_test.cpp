// The _FusedLSTM, _FusedGRU and _FusedSimpleRNN kernels (src/kernels/cpu/rnn.cpp)
// called directly against float64 references of the Keras LSTM, GRU
// (reset_after) and SimpleRNN (tanh) steps: one thread's rows, several blocks of rows, too few rows
// for a block per thread (each product on the pool), fewer steps than x holds, no step, one row,
// the GRU with and without its recurrent bias; and the errors.
#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

namespace kiln {
namespace {

std::vector<float> pattern(int64_t n, double freq, double phase, double scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        static_cast<float>(scale * std::sin(freq * static_cast<double>(i) + phase));
  return v;
}

double sigmoid(double z) {
  return 1 / (1 + std::exp(-z));
}

struct Case {
  int64_t t, batch, units, steps;
};

struct Inputs {
  std::vector<float> x, h, c, k;
  std::vector<Tensor> tensors;
};

Inputs make(const Case& cs) {
  const int64_t u = cs.units;
  Inputs in{pattern(cs.t * cs.batch * 4 * u, 0.37, 0.1, 2.0),
            pattern(cs.batch * u, 0.71, 0.3, 0.8),
            pattern(cs.batch * u, 0.53, 0.9, 1.5),
            pattern(u * 4 * u, 0.29, 0.5, 1.0 / std::sqrt(u)),
            {}};
  in.tensors = {Tensor::from_vector(in.x, {cs.t, cs.batch, 4 * u}),
                Tensor::from_vector(in.h, {cs.batch, u}), Tensor::from_vector(in.c, {cs.batch, u}),
                Tensor::from_vector(in.k, {u, 4 * u}),
                Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(cs.steps)}, Shape{})};
  return in;
}

// The steps in float64: sequence, then last h and c.
std::vector<std::vector<double>> reference(const Case& cs, const Inputs& in) {
  const int64_t b = cs.batch, u = cs.units;
  std::vector<double> h(in.h.begin(), in.h.end()), c(in.c.begin(), in.c.end()), seq;
  for (int64_t t = 0; t < cs.steps; ++t) {
    std::vector<double> hn(h.size());
    for (int64_t r = 0; r < b; ++r)
      for (int64_t j = 0; j < u; ++j) {
        double z[4];
        for (int gate = 0; gate < 4; ++gate) {
          const int64_t col = gate * u + j;
          double s = in.x[static_cast<size_t>((t * b + r) * 4 * u + col)];
          for (int64_t q = 0; q < u; ++q)
            s += h[static_cast<size_t>(r * u + q)] * in.k[static_cast<size_t>(q * 4 * u + col)];
          z[gate] = s;
        }
        double& cc = c[static_cast<size_t>(r * u + j)];
        cc = sigmoid(z[1]) * cc + sigmoid(z[0]) * std::tanh(z[2]);
        hn[static_cast<size_t>(r * u + j)] = sigmoid(z[3]) * std::tanh(cc);
      }
    h = hn;
    seq.insert(seq.end(), h.begin(), h.end());
  }
  return {seq, h, c};
}

void check(const Case& cs) {
  const std::string where =
      str_cat("T ", cs.t, " B ", cs.batch, " U ", cs.units, " steps ", cs.steps);
  const Inputs in = make(cs);
  const std::vector<Tensor> out = call_op(OpId::FusedLSTM, std::span<const Tensor>(in.tensors));
  ASSERT_EQ(out.size(), 3u) << where;
  EXPECT_EQ(out[0].shape(), Shape({cs.steps, cs.batch, cs.units})) << where;
  EXPECT_EQ(out[1].shape(), Shape({cs.batch, cs.units})) << where;
  EXPECT_EQ(out[2].shape(), Shape({cs.batch, cs.units})) << where;
  const auto want = reference(cs, in);
  for (size_t o = 0; o < 3; ++o) {
    const std::vector<float> got = out[o].to_vector<float>();
    ASSERT_EQ(got.size(), want[o].size()) << where;
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[o][i], 2e-5 * (1 + std::abs(want[o][i])))
          << where << ", output " << o << " element " << i;
  }
}

// Calls `op` on `in`, expecting an InvalidArgumentError that mentions `what`.
void expect_error(OpId op, std::vector<Tensor> in, const char* what) {
  try {
    call_op(op, std::span<const Tensor>(in));
    ADD_FAILURE() << "no error, want: " << what;
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

// The valid inputs `ok` with input i replaced by `t`.
std::vector<Tensor> with(const std::vector<Tensor>& ok, size_t i, Tensor t) {
  std::vector<Tensor> v = ok;
  v[i] = std::move(t);
  return v;
}

TEST(FusedLstmKernel, AgainstAReference) {
  for (const Case& cs : {Case{5, 3, 4, 5},    // one thread's rows
                         Case{7, 33, 24, 7},  // blocks of rows on the pool
                         Case{6, 20, 32, 4},  // fewer steps than x holds
                         Case{3, 4, 128, 3},  // too few rows for blocks: shared products
                         Case{2, 9, 96, 2},   // likewise, rows not a multiple of 8
                         Case{3, 1, 64, 3},   // one row
                         Case{4, 16, 8, 0},   // no step: the initial states
                         Case{0, 2, 3, 0}})   // no time steps at all
    check(cs);
}

TEST(FusedLstmKernel, Errors) {
  const std::vector<Tensor> ok = make({4, 2, 3, 4}).tensors;
  auto fails = [&](size_t i, Tensor t, const char* what) {
    expect_error(OpId::FusedLSTM, with(ok, i, std::move(t)), what);
  };
  const auto steps = [](int32_t n) {
    return Tensor::from_vector(std::vector<int32_t>{n}, Shape{});
  };
  fails(4, steps(5), "steps (5) must be in [0, 4]");
  fails(4, steps(-1), "steps (-1) must be in [0, 4]");
  fails(3, Tensor::from_vector(pattern(3 * 8, 1, 0, 1), {3, 8}),
        "do not fit [T, B, 4U], [B, U], [B, U], [U, 4U]");
  fails(1, Tensor::from_vector(pattern(3 * 3, 1, 0, 1), {3, 3}),
        "do not fit [T, B, 4U], [B, U], [B, U], [U, 4U]");
  fails(0, Tensor::from_vector(pattern(8 * 12, 1, 0, 1), {8, 12}), "x must have rank 3");
  fails(4, Tensor::from_vector(std::vector<float>{1.f}, Shape{}), "steps must be int32");
}

// ---- _FusedGRU ----

struct GruInputs {
  std::vector<float> x, h, k, b;
  std::vector<Tensor> tensors;
};

// The GRU's inputs (gates 3) or SimpleRNN's (1).
GruInputs make_gru(const Case& cs, bool bias, int64_t gates = 3) {
  const int64_t u = cs.units, g = gates;
  GruInputs in{pattern(cs.t * cs.batch * g * u, 0.41, 0.2, 2.0),
               pattern(cs.batch * u, 0.67, 0.4, 0.8),
               pattern(u * g * u, 0.31, 0.7, 1.2 / std::sqrt(u)),
               bias ? pattern(g * u, 0.9, 0.1, 0.5) : std::vector<float>{},
               {}};
  in.tensors = {Tensor::from_vector(in.x, {cs.t, cs.batch, g * u}),
                Tensor::from_vector(in.h, {cs.batch, u}), Tensor::from_vector(in.k, {u, g * u}),
                Tensor::from_vector(in.b, {static_cast<int64_t>(in.b.size())}),
                Tensor::from_vector(std::vector<int64_t>{cs.steps}, Shape{})};
  return in;
}

// The steps in float64 of a cell computing a unit's h from its gates' inputs
// x[g] and products p[g] (with the bias) and its previous h: sequence, last h.
template <typename Cell>
std::vector<std::vector<double>> h_reference(const Case& cs, const GruInputs& in, int gates,
                                             Cell cell) {
  const int64_t b = cs.batch, u = cs.units, gu = gates * u;
  std::vector<double> h(in.h.begin(), in.h.end()), seq;
  for (int64_t t = 0; t < cs.steps; ++t) {
    std::vector<double> hn(h.size());
    for (int64_t r = 0; r < b; ++r)
      for (int64_t j = 0; j < u; ++j) {
        double x[3], p[3];
        for (int gate = 0; gate < gates; ++gate) {
          const int64_t col = gate * u + j;
          x[gate] = in.x[static_cast<size_t>((t * b + r) * gu + col)];
          p[gate] = in.b.empty() ? 0.0 : in.b[static_cast<size_t>(col)];
          for (int64_t q = 0; q < u; ++q)
            p[gate] += h[static_cast<size_t>(r * u + q)] * in.k[static_cast<size_t>(q * gu + col)];
        }
        hn[static_cast<size_t>(r * u + j)] = cell(x, p, h[static_cast<size_t>(r * u + j)]);
      }
    h = hn;
    seq.insert(seq.end(), h.begin(), h.end());
  }
  return {seq, h};
}

std::vector<std::vector<double>> gru_reference(const Case& cs, const GruInputs& in) {
  return h_reference(cs, in, 3, [](const double* x, const double* p, double hp) {
    const double z = sigmoid(x[0] + p[0]), r = sigmoid(x[1] + p[1]);
    return z * hp + (1 - z) * std::tanh(x[2] + r * p[2]);
  });
}

std::vector<std::vector<double>> simple_reference(const Case& cs, const GruInputs& in) {
  return h_reference(
      cs, in, 1, [](const double* x, const double* p, double) { return std::tanh(x[0] + p[0]); });
}

// _FusedGRU, or _FusedSimpleRNN when `simple`.
void check_gru(const Case& cs, bool bias, bool simple = false) {
  const std::string where = str_cat(simple ? "SimpleRNN" : "GRU", " T ", cs.t, " B ", cs.batch,
                                    " U ", cs.units, " steps ", cs.steps, bias ? " bias" : "");
  const GruInputs in = make_gru(cs, bias, simple ? 1 : 3);
  const std::vector<Tensor> out =
      call_op(simple ? OpId::FusedSimpleRNN : OpId::FusedGRU, std::span<const Tensor>(in.tensors));
  ASSERT_EQ(out.size(), 2u) << where;
  EXPECT_EQ(out[0].shape(), Shape({cs.steps, cs.batch, cs.units})) << where;
  EXPECT_EQ(out[1].shape(), Shape({cs.batch, cs.units})) << where;
  const auto want = simple ? simple_reference(cs, in) : gru_reference(cs, in);
  for (size_t o = 0; o < 2; ++o) {
    const std::vector<float> got = out[o].to_vector<float>();
    ASSERT_EQ(got.size(), want[o].size()) << where;
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[o][i], 2e-5 * (1 + std::abs(want[o][i])))
          << where << ", output " << o << " element " << i;
  }
}

TEST(FusedGruKernel, AgainstAReference) {
  for (bool bias : {true, false})
    for (const Case& cs :
         {Case{5, 3, 4, 5}, Case{7, 33, 24, 7}, Case{6, 20, 32, 4}, Case{3, 4, 128, 3},
          Case{2, 9, 96, 2}, Case{3, 1, 64, 3}, Case{4, 16, 8, 0}, Case{0, 2, 3, 0}})
      check_gru(cs, bias);
}

TEST(FusedSimpleRnnKernel, AgainstAReference) {
  for (bool bias : {true, false})
    for (const Case& cs : {Case{5, 3, 4, 5}, Case{7, 33, 24, 7}, Case{6, 20, 32, 4},
                           Case{3, 4, 256, 3}, Case{3, 1, 64, 3}, Case{4, 16, 8, 0}})
      check_gru(cs, bias, true);
}

TEST(FusedSimpleRnnKernel, Errors) {
  const std::vector<Tensor> ok = make_gru({4, 2, 3, 4}, true, 1).tensors;
  expect_error(OpId::FusedSimpleRNN,
               with(ok, 2, Tensor::from_vector(pattern(3 * 9, 1, 0, 1), {3, 9})),
               "do not fit [T, B, U]");
  expect_error(OpId::FusedSimpleRNN, with(ok, 3, Tensor::from_vector(pattern(4, 1, 0, 1), {4})),
               "do not fit [T, B, U]");
  expect_error(OpId::FusedSimpleRNN,
               with(ok, 4, Tensor::from_vector(std::vector<int64_t>{5}, Shape{})),
               "steps (5) must be in [0, 4]");
}

TEST(FusedGruKernel, Errors) {
  const std::vector<Tensor> ok = make_gru({4, 2, 3, 4}, true).tensors;
  auto fails = [&](size_t i, Tensor t, const char* what) {
    expect_error(OpId::FusedGRU, with(ok, i, std::move(t)), what);
  };
  fails(4, Tensor::from_vector(std::vector<int64_t>{7}, Shape{}), "steps (7) must be in [0, 4]");
  fails(3, Tensor::from_vector(pattern(4, 1, 0, 1), {4}), "do not fit [T, B, 3U]");
  fails(2, Tensor::from_vector(pattern(3 * 12, 1, 0, 1), {3, 12}), "do not fit [T, B, 3U]");
  fails(1, Tensor::from_vector(pattern(2 * 4, 1, 0, 1), {2, 4}), "do not fit [T, B, 3U]");
  fails(3, Tensor::from_vector(pattern(9, 1, 0, 1), {1, 9}), "bias must have rank 1");
  fails(4, Tensor::from_vector(std::vector<float>{1.f}, Shape{}), "steps must be int32");
}

}  // namespace
}  // namespace kiln
