// matmul_float_weights: a bfloat16 product of float32 weights (a mixed_bfloat16
// Dense or EinsumDense kernel, cast on every call) reads the float32 value as a
// _FusedMatMul that packs it to bf16 once per version; results equal the cast
// path's in every way the product splits, fallbacks included.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/conv_util.h"
#include "kernels/cpu/gemm.h"
#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/ops.h"
#include "pass_test_util.h"

namespace kiln {
namespace {
using testing::count_ops;
using testing::trace;
using testing::wave;

// A budget of 4 threads (before the pool starts): the large cases run as blocks.
const bool kFourThreads = (config().num_threads = 4, true);

std::vector<float> as_floats(const Tensor& t) {
  return cast(t, DType::kFloat32).to_vector<float>();
}

struct Case {
  Shape x, w;
  bool packed;  // packed by oneDNN (else the weights rounded on each call)
  bool adj_x = false, adj_y = false;
};

// One product, small (one block); row blocks with a short last one; few rows
// and wide weights, which MatMul would split by columns (packed blocks of rows,
// one per thread); fewer rows and large weights (one packed block, a classifier
// head); weights transposed; rank-3 x folded into rows; x transposed (rank 2:
// the weights rounded, then MatMul's product).
TEST(MatMulFloatWeights, EverySplitMatchesTheCastWeights) {
  for (const Case& c :
       {Case{{5, 7}, {7, 3}, true}, Case{{515, 96}, {96, 160}, true},
        Case{{40, 256}, {256, 1024}, true}, Case{{2, 512}, {512, 1024}, true},
        Case{{300, 64}, {200, 64}, true, false, true}, Case{{4, 70, 32}, {32, 48}, true},
        Case{{64, 40}, {64, 24}, false, true, false}}) {
    SCOPED_TRACE(str_cat(c.x.debug_string(), " x ", c.w.debug_string(), " adj ", c.adj_x, c.adj_y));
    const std::vector<Tensor> in = {cast(wave(c.x, 0.37), DType::kBFloat16),
                                    wave(c.w, 0.91, 0.3, 0.5)};
    const testing::Body body = [&](const std::vector<Tensor>& a) {
      return std::vector<Tensor>{matmul(a[0], cast(a[1], DType::kBFloat16), c.adj_x, c.adj_y)};
    };
    auto g = trace(in, body);
    const std::vector<Tensor> want = Plan::compile(*g)->run(in);
    const PassResult r = matmul_float_weights(*g);
    g->verify();
    ASSERT_EQ(r.rewritten.size(), 1u);
    EXPECT_EQ(count_ops(*g, OpId::FusedMatMul), 1);
    const auto plan = Plan::compile(*g);
    for (int call = 0; call < 2; ++call) {
      const int64_t reorders = cpu::filter_reorders();
      const std::vector<Tensor> got = plan->run(in);
      ASSERT_EQ(got[0].dtype(), DType::kBFloat16);
      EXPECT_EQ(as_floats(got[0]), as_floats(want[0]));  // rounded as Cast rounds
      // Packed once, on the first call (inputs of new buffers: new versions);
      // never where oneDNN has no bf16 products (rounded on each call).
      const bool packed = c.packed && cpu::bf16_gemm_native();
      EXPECT_EQ(cpu::filter_reorders() - reorders, call == 0 && packed ? 1 : 0);
    }
  }
}

// EinsumDense's kernels are reshaped after the cast: the reshape moves before it
// (a view of the float32 buffer). A new version of the weights is packed again.
TEST(MatMulFloatWeights, ReshapedWeightsAndNewVersions) {
  const Tensor x = cast(wave({128, 64}, 0.37), DType::kBFloat16);
  Tensor w = wave({64, 4, 16}, 0.91, 0.3, 0.5);
  const testing::Body body = [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{matmul(a[0], reshape(cast(a[1], DType::kBFloat16), {64, 64}))};
  };
  auto g = trace({x, w}, body);
  const auto cast_plan = Plan::compile(*g);
  ASSERT_EQ(matmul_float_weights(*g).rewritten.size(), 1u);
  g->verify();
  EXPECT_EQ(count_ops(*g, OpId::FusedMatMul), 1);
  const auto plan = Plan::compile(*g);
  for (int version = 0; version < 2; ++version) {
    if (version == 1) w = wave({64, 4, 16}, 0.4, 0.1, 0.5);  // new weights
    const std::vector<Tensor> in = {x, w};
    const int64_t reorders = cpu::filter_reorders();
    const int64_t packs = cpu::bf16_gemm_native() ? 1 : 0;  // else rounded each call
    EXPECT_EQ(as_floats(plan->run(in)[0]), as_floats(cast_plan->run(in)[0]));
    EXPECT_EQ(cpu::filter_reorders(), reorders + packs);  // this version packed once
    EXPECT_EQ(as_floats(plan->run(in)[0]), as_floats(cast_plan->run(in)[0]));
    EXPECT_EQ(cpu::filter_reorders(), reorders + packs);
  }
}

TEST(MatMulFloatWeights, OtherProductsAreLeftAlone) {
  const Tensor xb = cast(wave({8, 6}, 0.3), DType::kBFloat16), w = wave({6, 4}, 0.5);
  const Tensor x3 = cast(wave({2, 6, 8}, 0.3), DType::kBFloat16), w3 = wave({2, 6, 4}, 0.5);
  const Tensor wb3 = wave({2, 8, 4}, 0.5);
  auto g = trace({xb, w, x3, w3, wb3}, [](const std::vector<Tensor>& a) {
    const Tensor wb = cast(a[1], DType::kBFloat16);
    return std::vector<Tensor>{
        matmul(a[0], wb),                                  // rewritten
        matmul(cast(a[0], DType::kFloat32), a[1]),         // float32
        matmul(a[2], cast(a[3], DType::kBFloat16), true),  // rank-3 x transposed
        matmul(a[2], cast(a[4], DType::kBFloat16)),        // batched weights (rank 3)
        matmul(a[0], reshape(wb, {6, 4})),                 // rewritten: the Cast has other users
        wb};                                               // the Cast is an output too
  });
  const std::vector<Tensor> in = {xb, w, x3, w3, wb3};
  const std::vector<Tensor> want = Plan::compile(*g)->run(in);
  EXPECT_EQ(matmul_float_weights(*g).rewritten.size(), 2u);
  g->verify();
  const std::vector<Tensor> got = Plan::compile(*g)->run(in);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(as_floats(got[i]), as_floats(want[i])) << i;
}

// The epilogue stays out where its values are read elsewhere or the bias is
// not a [n] vector: a bias of rank 2; the sum before the rounding also
// returned; the relu's input also returned (the bias still joins).
TEST(MatMulFloatWeights, EpiloguesLeftAlone) {
  const Tensor x = cast(wave({6, 8}, 0.3), DType::kBFloat16), w = wave({8, 4}, 0.5);
  const Tensor b = wave({4}, 0.7), b2 = wave({1, 4}, 0.7);
  const auto f32 = [](const Tensor& t) { return cast(t, DType::kFloat32); };
  const auto bf16 = [](const Tensor& t) { return cast(t, DType::kBFloat16); };
  const testing::Body body = [&](const std::vector<Tensor>& a) {
    const Tensor s1 = f32(matmul(a[0], bf16(a[1])));
    const Tensor s2 = f32(matmul(a[0], bf16(a[1] * Scalar(2.f))));
    const Tensor sum2 = bias_add(s2, a[2]);
    const Tensor y3 = bf16(bias_add(f32(matmul(a[0], bf16(a[1] * Scalar(3.f)))), a[2]));
    return std::vector<Tensor>{bf16(s1 + a[3]), bf16(sum2), sum2, bf16(relu(f32(y3))), y3};
  };
  const std::vector<Tensor> in = {x, w, b, b2};
  auto g = trace(in, body);
  const std::vector<Tensor> want = Plan::compile(*g)->run(in);
  const PassResult r = matmul_float_weights(*g);
  g->verify();
  int epilogues = 0;
  for (const auto& rw : r.rewritten) epilogues += rw.second.starts_with("bias");
  EXPECT_EQ(epilogues, 1);  // y3's bias, without the relu
  prune(*g);
  EXPECT_EQ(count_ops(*g, OpId::FusedMatMul), 3);
  EXPECT_EQ(count_ops(*g, OpId::BiasAdd), 1);
  EXPECT_EQ(count_ops(*g, OpId::Relu), 1);
  const std::vector<Tensor> got = Plan::compile(*g)->run(in);
  for (size_t i = 0; i < want.size(); ++i) {
    const std::vector<float> a = as_floats(got[i]), e = as_floats(want[i]);
    ASSERT_EQ(a.size(), e.size());
    for (size_t j = 0; j < a.size(); ++j)
      EXPECT_NEAR(a[j], e[j], std::abs(e[j]) / 128 + 4e-3) << i << ", " << j;  // 2 roundings
  }
}

// A head-split bias added in float32 but never rounded back to bf16 is no
// epilogue: the pass adds no flattened bias for it (nothing left dangling).
TEST(MatMulFloatWeights, HeadBiasWithoutItsCastAddsNothing) {
  const Tensor x = cast(wave({2, 4, 8}, 0.3), DType::kBFloat16), w = wave({8, 6}, 0.5);
  const Tensor b = wave({2, 3}, 0.7);
  auto g = trace({x, w, b}, [](const std::vector<Tensor>& a) {
    const Tensor p = matmul(reshape(a[0], {8, 8}), cast(a[1], DType::kBFloat16));
    return std::vector<Tensor>{cast(reshape(p, {2, 4, 2, 3}), DType::kFloat32) + a[2]};
  });
  const size_t before = g->num_nodes();
  const PassResult r = matmul_float_weights(*g);
  g->verify();
  EXPECT_EQ(r.rewritten.size(), 1u);  // the product only
  EXPECT_EQ(g->num_nodes(), before);
}

TEST(MatMulFloatWeights, FusedOpChecksItsInputs) {
  const Tensor xb = cast(wave({4, 6}, 0.3), DType::kBFloat16), w = wave({6, 3}, 0.5);
  testing::expect_error(
      [&] {
        call_op(OpId::FusedMatMul, std::vector<Tensor>{xb, cast(w, DType::kBFloat16)});
      },
      Code::kInvalidArgument, {"_FusedMatMul", "float32"});
  testing::expect_error(
      [&] {
        call_op(OpId::FusedMatMul, std::vector<Tensor>{xb, wave({1, 6, 3}, 0.5)});
      },
      Code::kInvalidArgument, {"y must have rank 2"});
  testing::expect_error(
      [&] {
        call_op(OpId::FusedMatMul, std::vector<Tensor>{xb, w, wave({4}, 0.5)});
      },
      Code::kInvalidArgument, {"bias must have shape [3]"});
  testing::expect_error(
      [&] {
        call_op(OpId::FusedMatMul,
                std::vector<Tensor>{xb, w, cast(wave({3}, 0.5), DType::kBFloat16)});
      },
      Code::kInvalidArgument, {"float32"});
  testing::expect_error(
      [&] {
        call_op(OpId::FusedMatMul, std::vector<Tensor>{xb, w},
                Attrs{false, false, std::string("gelu")});
      },
      Code::kInvalidArgument, {"activation must be"});
}

}  // namespace
}  // namespace kiln
