// fuse_attention: softmax(scale * q k^T) v written as ops becomes one
// _FusedAttention node, its transposes read and written through. Each pattern
// is checked for the optimized graph (what remains) and for results equal to
// the unfused ops run eagerly; patterns it must leave alone stay as they are.
#include <vector>

#include "kiln/executor.h"
#include "kiln/ops.h"
#include "kiln/passes.h"
#include "pass_test_util.h"

namespace kiln {
namespace {
using testing::Body;
using testing::count_ops;
using testing::expect_tensor_near;
using testing::trace;
using testing::wave;

// The optimized graph of `body`, after checking its outputs against the body
// run eagerly.
std::unique_ptr<Graph> optimize_and_compare(const std::vector<Tensor>& in, const Body& body) {
  auto g = trace(in, body);
  OptimizeOptions o;
  o.verify = true;
  const OptimizeReport report = optimize(*g, o);
  const std::vector<Tensor> want = body(in);
  const std::vector<Tensor> got = Plan::compile(*g)->run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    SCOPED_TRACE(str_cat("output ", i, "\n", report.to_string()));
    expect_tensor_near<float>(got[i], want[i].shape(), want[i].to_vector<float>(), 2e-6);
  }
  return g;
}

const std::vector<int64_t> kHeads = {0, 2, 1, 3};  // [B, T, N, H] <-> [B, N, T, H]

// Keras' MultiHeadAttention: projections split into heads by Transposes, q
// scaled, the result's heads merged by a Transpose.
Tensor keras_mha(const Tensor& q, const Tensor& k, const Tensor& v) {
  const Tensor qs = transpose(q, kHeads) * Scalar(0.125f);
  const Tensor p = softmax(matmul(qs, transpose(k, kHeads), false, true));
  return transpose(matmul(p, transpose(v, kHeads)), kHeads);
}

std::vector<Tensor> inputs(std::vector<Shape> shapes) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < shapes.size(); ++i)
    in.push_back(
        wave(shapes[i], 0.37 + 0.11 * static_cast<double>(i), 0.2 * static_cast<double>(i)));
  return in;
}

TEST(FuseAttention, KerasMultiHeadAttention) {
  const auto in = inputs({{2, 24, 4, 16}, {2, 30, 4, 16}, {2, 30, 4, 8}});
  auto g = optimize_and_compare(in, [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{keras_mha(a[0], a[1], a[2])};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 1);
  for (OpId id : {OpId::Transpose, OpId::Softmax, OpId::MatMul, OpId::Mul})
    EXPECT_EQ(count_ops(*g, id), 0) << op_def(id).type_name;
}

// The scale before the heads' split (Transpose(q * c)) is peeled too.
TEST(FuseAttention, ScaleBeforeTheSplit) {
  const auto in = inputs({{2, 12, 2, 8}, {2, 12, 2, 8}, {2, 12, 2, 8}});
  auto g = optimize_and_compare(in, [](const std::vector<Tensor>& a) {
    const Tensor q = transpose(a[0] * Scalar(0.35f), kHeads);
    const Tensor p = softmax(matmul(q, transpose(a[1], kHeads), false, true));
    return std::vector<Tensor>{transpose(matmul(p, transpose(a[2], kHeads)), kHeads)};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 1);
  EXPECT_EQ(count_ops(*g, OpId::Mul), 0);
  EXPECT_EQ(count_ops(*g, OpId::Transpose), 0);
}

// The TensorFlow transformer tutorial: heads already split, the scores
// divided by sqrt(d_k); k given as K^T and v as V^T (adj_y false / true).
TEST(FuseAttention, TutorialAndTransposedOperands) {
  const auto in = inputs({{2, 3, 10, 8}, {2, 3, 12, 8}, {2, 3, 12, 5}});
  auto g = optimize_and_compare(in, [](const std::vector<Tensor>& a) {
    const Tensor s = divide(matmul(a[0], a[1], false, true), Scalar(2.828f));
    const Tensor kt = transpose(a[1], {0, 1, 3, 2}), vt = transpose(a[2], {0, 1, 3, 2});
    const Tensor s2 = matmul(a[0], kt) * Scalar(0.5f);
    return std::vector<Tensor>{matmul(softmax(s), a[2]), matmul(softmax(s2), vt, false, true)};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 2);
  EXPECT_EQ(count_ops(*g, OpId::Softmax), 0);
  EXPECT_EQ(count_ops(*g, OpId::Transpose), 0);  // K^T and V^T read through
}

// Batch and heads broadcast as BatchMatMulV2's batch dims (k and v shared).
TEST(FuseAttention, BroadcastBatchAndHeads) {
  const auto in = inputs({{3, 2, 7, 4}, {1, 2, 9, 4}, {3, 1, 9, 6}});
  auto g = optimize_and_compare(in, [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{matmul(softmax(matmul(a[0], a[1], false, true)), a[2])};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 1);
}

// An output Transpose that moves the last axis stays (the product is fused);
// one of the heads' split that other ops also read stays for them.
TEST(FuseAttention, TransposesItCannotTake) {
  const auto in = inputs({{2, 6, 3, 4}, {2, 6, 3, 4}, {2, 6, 3, 4}});
  auto g = optimize_and_compare(in, [](const std::vector<Tensor>& a) {
    const Tensor v = transpose(a[2], kHeads);
    const Tensor o =
        matmul(softmax(matmul(transpose(a[0], kHeads), transpose(a[1], kHeads), false, true)), v);
    return std::vector<Tensor>{transpose(o, {0, 1, 3, 2}), v * Scalar(2.f)};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 1);
  EXPECT_EQ(count_ops(*g, OpId::Transpose), 2);
}

// Masks: the tutorial's `logits += mask * -1e9` (added) and Keras' masked
// softmax (where(mask, scores, -1e9), then the weights times the mask), with
// masks that broadcast over heads or batch.
TEST(FuseAttention, Masks) {
  const auto in = inputs({{2, 3, 7, 8}, {2, 3, 9, 8}, {2, 3, 9, 5}, {2, 1, 1, 9}, {2, 1, 7, 9}});
  auto g = optimize_and_compare(in, [](const std::vector<Tensor>& a) {
    const Tensor pad = cast(a[3] > Scalar(0.5f), DType::kFloat32);
    const Tensor logits = divide(matmul(a[0], a[1], false, true), Scalar(2.828f));
    const Tensor added = matmul(softmax(logits + pad * Scalar(-1e9f)), a[2]);
    const Tensor keep = a[4] > Scalar(-0.3f);
    const Tensor s = matmul(a[0] * Scalar(0.35f), a[1], false, true);
    const Tensor w = softmax(where(keep, s, Scalar(-1e9f))) * cast(keep, DType::kFloat32);
    return std::vector<Tensor>{added, matmul(w, a[2])};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 2);
  for (OpId id : {OpId::Softmax, OpId::Select, OpId::Add, OpId::Div, OpId::MatMul})
    EXPECT_EQ(count_ops(*g, id), 0) << op_def(id).type_name;
}

// A causal mask known when tracing: both the select's mask and the zeroing
// factors fold to constants. Factors that are not the mask's stay unfused.
TEST(FuseAttention, ConstantCausalMask) {
  const auto in = inputs({{1, 2, 6, 4}, {1, 2, 6, 4}, {1, 2, 6, 4}});
  std::vector<float> lower(36);
  for (size_t i = 0; i < 36; ++i) lower[i] = i % 6 <= i / 6 ? 1.f : 0.f;
  const Tensor causal = Tensor::from_vector(lower, {6, 6}) > Scalar(0.5f);
  for (const float other : {1.f, 0.5f}) {
    SCOPED_TRACE(other);
    auto g = optimize_and_compare(in, [&](const std::vector<Tensor>& a) {
      const Tensor s = matmul(a[0], a[1], false, true);
      const Tensor zero = cast(causal, DType::kFloat32) * Scalar(other);
      const Tensor w = softmax(where(causal, s, Scalar(-1e9f))) * zero;
      return std::vector<Tensor>{matmul(w, a[2])};
    });
    EXPECT_EQ(count_ops(*g, OpId::FusedAttention), other == 1.f ? 1 : 0);
  }
}

// One head of rank 3 (Keras' Attention layer: matmul(q, k, transpose_b),
// its masked softmax with a value mask [B, 1, S]); a time-major q [T, B, H]
// and result read and written through their Transposes, k given as K^T.
TEST(FuseAttention, RankThree) {
  const auto in = inputs({{3, 7, 8}, {3, 9, 8}, {3, 9, 5}, {3, 1, 9}, {7, 3, 8}});
  auto g = optimize_and_compare(in, [](const std::vector<Tensor>& a) {
    const Tensor keep = a[3] > Scalar(-0.5f);
    const Tensor s = matmul(a[0], a[1], false, true);
    const Tensor w = softmax(where(keep, s, Scalar(-1e9f))) * cast(keep, DType::kFloat32);
    const Tensor q = transpose(a[4], {1, 0, 2}), kt = transpose(a[1], {0, 2, 1});
    const Tensor o = matmul(softmax(matmul(q, kt) * Scalar(0.3f)), a[2]);
    return std::vector<Tensor>{matmul(w, a[2]), transpose(o, {1, 0, 2})};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 2);
  for (OpId id : {OpId::Softmax, OpId::Select, OpId::Transpose, OpId::Mul, OpId::MatMul})
    EXPECT_EQ(count_ops(*g, id), 0) << op_def(id).type_name;
}

// mixed_bfloat16 (kiln's Keras): bf16 operands, the scale and the softmax in
// float32 between Casts; and a scale applied in bf16 directly. The fused node
// is bf16 too; its scores stay float32, so it is closer to the exact values
// than the unfused ops (which round the scores to bf16).
TEST(FuseAttention, MixedBFloat16) {
  std::vector<Tensor> in;
  for (const Tensor& t : inputs({{2, 24, 4, 16}, {2, 30, 4, 16}, {2, 30, 4, 8}, {2, 24, 4, 16}}))
    in.push_back(cast(t, DType::kBFloat16));
  const auto f32 = [](const Tensor& t) { return cast(t, DType::kFloat32); };
  const auto bf16 = [](const Tensor& t) { return cast(t, DType::kBFloat16); };
  const Body body = [&](const std::vector<Tensor>& a) {
    const Tensor q = bf16(f32(transpose(a[0], kHeads)) * Scalar(0.125f));
    const Tensor k = transpose(a[1], kHeads), v = transpose(a[2], kHeads);
    const Tensor p = bf16(softmax(f32(matmul(q, k, false, true))));
    const Tensor q2 = transpose(a[3], kHeads) * Scalar(0.25f);  // Mul of bf16
    const Tensor p2 = bf16(softmax(f32(matmul(q2, k, false, true))));
    return std::vector<Tensor>{transpose(matmul(p, v), kHeads), matmul(p2, v)};
  };
  auto g = trace(in, body);
  OptimizeOptions o;
  o.verify = true;
  optimize(*g, o);
  EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 2);
  for (OpId id : {OpId::Softmax, OpId::Cast, OpId::Mul, OpId::MatMul})
    EXPECT_EQ(count_ops(*g, id), 0) << op_def(id).type_name;
  EXPECT_EQ(count_ops(*g, OpId::Transpose), 0);
  const std::vector<Tensor> want = body(in), got = Plan::compile(*g)->run(in);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i].dtype(), DType::kBFloat16);
    expect_tensor_near<float>(f32(got[i]), want[i].shape(), f32(want[i]).to_vector<float>(), 2e-2);
  }
  // A select without Keras' zeroing stays unfused in bf16 too.
  auto masked = trace(in, [&](const std::vector<Tensor>& a) {
    const Tensor s = f32(matmul(a[0], a[3], false, true));
    const Tensor p = bf16(softmax(where(s > Scalar(0.f), s, Scalar(-1e9f))));
    return std::vector<Tensor>{matmul(p, a[0])};
  });
  EXPECT_FALSE(fuse_attention(*masked).changed());
}

// Keras' masked softmax under mixed_bfloat16: the select, softmax and zeroing
// in float32, each step rounded to bf16 and back (Casts read through); an
// added float32 mask as well.
TEST(FuseAttention, MixedBFloat16Masks) {
  const auto f32 = [](const Tensor& t) { return cast(t, DType::kFloat32); };
  const auto bf16 = [](const Tensor& t) { return cast(t, DType::kBFloat16); };
  std::vector<Tensor> in;
  for (const Tensor& t : inputs({{2, 3, 10, 8}, {2, 3, 12, 8}, {2, 3, 12, 5}}))
    in.push_back(bf16(t));
  in.push_back(wave({2, 1, 10, 12}, 0.9) > Scalar(-0.3f));  // keep
  in.push_back(wave({2, 1, 1, 12}, 0.4, 0.0, 3.0));         // added, float32
  const Body body = [&](const std::vector<Tensor>& a) {
    const Tensor s = matmul(a[0], a[1], false, true);
    const Tensor sel = bf16(where(a[3], f32(s), Scalar(-1e9f)));
    const Tensor p = bf16(softmax(f32(sel)));
    const Tensor w = bf16(f32(p) * f32(cast(a[3], DType::kBFloat16)));
    const Tensor s2 = matmul(a[0], transpose(a[1], {0, 1, 3, 2}));  // its own scores
    const Tensor p2 = bf16(softmax(f32(s2) + a[4]));
    return std::vector<Tensor>{matmul(w, a[2]), matmul(p2, a[2])};
  };
  auto g = trace(in, body);
  OptimizeOptions o;
  o.verify = true;
  optimize(*g, o);
  EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 2);
  for (OpId id : {OpId::Softmax, OpId::Select, OpId::Mul, OpId::MatMul, OpId::Add, OpId::Transpose})
    EXPECT_EQ(count_ops(*g, id), 0) << op_def(id).type_name;
  const std::vector<Tensor> want = body(in), got = Plan::compile(*g)->run(in);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    expect_tensor_near<float>(f32(got[i]), want[i].shape(), f32(want[i]).to_vector<float>(), 2e-2);
}

// Left alone: the weights are also a result (return_attention_scores); a
// mask without Keras' zeroing, or zeroing by another mask; a bias that
// enlarges the scores; the scores' other use; rank 3 with v of rank 2;
// float64; a
// softmax that is not the product's left operand.
TEST(FuseAttention, PatternsLeftAlone) {
  const auto in = inputs({{2, 3, 5, 4}, {2, 3, 6, 4}, {2, 3, 6, 4}, {2, 3, 5, 6}});
  const std::vector<Body> bodies = {
      [](const std::vector<Tensor>& a) {
        const Tensor p = softmax(matmul(a[0], a[1], false, true));
        return std::vector<Tensor>{matmul(p, a[2]), p};
      },
      [](const std::vector<Tensor>& a) {  // a mask without the zeroing (not Keras')
        const Tensor s = matmul(a[0], a[1], false, true);
        return std::vector<Tensor>{
            matmul(softmax(where(a[3] > Scalar(0.f), s, Scalar(-1e9f))), a[2])};
      },
      [](const std::vector<Tensor>& a) {  // select and zeroing by different masks
        const Tensor s = matmul(a[0], a[1], false, true);
        const Tensor p = softmax(where(a[3] > Scalar(0.f), s, Scalar(-1e9f)));
        return std::vector<Tensor>{matmul(p * cast(a[3] > Scalar(0.1f), DType::kFloat32), a[2])};
      },
      [](const std::vector<Tensor>& a) {  // a bias that enlarges the scores
        const Tensor s =
            matmul(reshape(a[0], {6, 1, 5, 4}), reshape(a[1], {6, 1, 6, 4}), false, true);
        const Tensor p = softmax(s + reshape(a[3], {1, 6, 5, 6}));
        return std::vector<Tensor>{matmul(p, reshape(a[2], {6, 1, 6, 4}))};
      },
      [](const std::vector<Tensor>& a) {
        const Tensor s = matmul(a[0], a[1], false, true);
        return std::vector<Tensor>{matmul(softmax(s), a[2]), s * Scalar(3.f)};
      },
      [](const std::vector<Tensor>& a) {  // rank 3 against v of rank 2 (broadcast)
        const Tensor q = reshape(a[0], {6, 5, 4}), k = reshape(a[1], {6, 6, 4});
        return std::vector<Tensor>{
            matmul(softmax(matmul(q, k, false, true)), reshape(a[2], {6, 24}))};
      },
      [](const std::vector<Tensor>& a) {
        const Tensor s = matmul(a[3], a[2]);  // softmax on the right
        return std::vector<Tensor>{matmul(a[0], softmax(transpose(s, {0, 1, 3, 2})))};
      },
  };
  for (size_t i = 0; i < bodies.size(); ++i) {
    SCOPED_TRACE(i);
    auto g = optimize_and_compare(in, bodies[i]);
    EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 0);
    EXPECT_EQ(count_ops(*g, OpId::Softmax), 1);
  }
  std::vector<Tensor> wide;
  for (const Tensor& t : in) wide.push_back(cast(t, DType::kFloat64));
  auto g = trace(wide, [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{matmul(softmax(matmul(a[0], a[1], false, true)), a[2])};
  });
  EXPECT_FALSE(fuse_attention(*g).changed());
}

// check_numerics and a disabled "fuse" (or "fuse_attention") keep the ops.
TEST(FuseAttention, DisabledByName) {
  for (const char* name : {"fuse", "fuse_attention"}) {
    const auto in = inputs({{1, 4, 2, 4}, {1, 4, 2, 4}, {1, 4, 2, 4}});
    auto g = trace(in, [](const std::vector<Tensor>& a) {
      return std::vector<Tensor>{keras_mha(a[0], a[1], a[2])};
    });
    OptimizeOptions o;
    o.disabled.insert(name);
    optimize(*g, o);
    EXPECT_EQ(count_ops(*g, OpId::FusedAttention), 0) << name;
  }
}

}  // namespace
}  // namespace kiln
