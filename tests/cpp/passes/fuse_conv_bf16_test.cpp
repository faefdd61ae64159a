// bfloat16 convolutions in the pipeline: conv_float_filters (a bf16
// convolution reads its float32 filter, packed to bf16 once) and fuse_conv's
// bf16 chains (mixed precision's Casts around float32 batch norms run through,
// the steps computed on the float32 accumulator, the output rounded once), each
// checked for the rewritten graph and against the unfused ops run eagerly.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cpu/conv_util.h"
#include "kiln/config.h"
#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/passes.h"
#include "kiln/trace.h"
#include "pass_test_util.h"

namespace kiln {
namespace {
using testing::Body;
using testing::count_ops;
using testing::expect_error;
using testing::expect_tensor_near;
using testing::trace;
using testing::wave;

constexpr DType kBf = DType::kBFloat16, kF32 = DType::kFloat32;

Attrs fused_attrs(const std::string& ops, double lo = 0.0, double hi = 6.0) {
  return {std::vector<int64_t>{1, 1}, std::string("SAME"), std::vector<int64_t>{1, 1}, ops, lo, hi};
}

std::string fused_ops_of(const Graph& g, OpId id) {
  for (const auto& n : g.nodes())
    if (n->op().id == id) return std::get<std::string>(n->attrs()[3]);
  return "";
}

// Output i of `got` against `want` (bf16 values compared as float32):
// mixed precision's several roundings against the fused chain's one.
void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(str_cat("output ", i));
    EXPECT_EQ(got[i].dtype(), want[i].dtype());
    expect_tensor_near<float>(cast(got[i], kF32), want[i].shape(),
                              cast(want[i], kF32).to_vector<float>(), tol);
  }
}

// fold_constants, cse (merging the Casts bf16 ops trace), conv_float_filters,
// fuse_conv and prune
// on the traced body, then its outputs against the body run eagerly. Returns
// the graph and fuse_conv's report.
std::unique_ptr<Graph> fuse_bf16(const std::vector<Tensor>& in, const Body& body, PassResult* r,
                                 double tol = 1.6e-2) {
  auto g = trace(in, body);
  fold_constants(*g);
  cse(*g);
  conv_float_filters(*g);
  *r = fuse_conv(*g);
  prune(*g);
  g->verify();
  expect_close(Plan::compile(*g)->run(in), body(in), tol);
  return g;
}

// Keras's mixed_bfloat16 batch norm: computed in float32 between Casts.
Tensor batch_norm(const Tensor& y, const Tensor& scale, const Tensor& shift) {
  return cast(cast(y, kF32) * scale + shift, kBf);
}

// ---- fuse_conv on bfloat16 convolutions ----

// Conv (float32 filter) + batch norm + swish, depthwise + bias (a Cast of a
// float32 variable read) + batch norm + residual + relu6: two fused ops whose
// per-channel operands are float32; of the Casts only the bias's rounding to
// bf16 and back is left.
TEST(FuseConvBFloat16, MixedPrecisionBlocksFuseThroughTheirCasts) {
  const std::vector<Tensor> in = {
      cast(wave({1, 12, 10, 8}, 0.37), kBf),  // x
      wave({3, 3, 8, 16}, 0.91, 0.3, 0.4),    // filter
      wave({16}, 0.7, 1.0, 0.4) + 1.f,        // scale
      wave({16}, 2.1, 0.5, 0.3),              // shift
      wave({3, 3, 16, 1}, 0.5, 0.1, 0.5),     // depthwise filter
      wave({16}, 1.3, 0.1, 0.5),              // bias
  };
  const Tensor six = cast(Tensor(6.f), kBf);  // a bf16 constant, as Keras's relu6 has
  PassResult r;
  auto g = fuse_bf16(
      in,
      [&](const std::vector<Tensor>& a) {
        Tensor y = batch_norm(conv2d(a[0], cast(a[1], kBf), {1, 1}, "SAME"), a[2], a[3]);
        y = y * sigmoid(y);
        Tensor z = bias_add(depthwise_conv2d(y, cast(a[4], kBf), {1, 1}, "SAME"), cast(a[5], kBf));
        z = batch_norm(z, a[2], a[3]) + y;
        return std::vector<Tensor>{minimum(relu(z), six)};
      },
      &r);
  SCOPED_TRACE(r.summary(8));
  EXPECT_EQ(fused_ops_of(*g, OpId::FusedConv2D), "Mul,Add,Swish") << g->debug_listing();
  EXPECT_EQ(fused_ops_of(*g, OpId::FusedDepthwiseConv2D), "BiasAdd,Mul,Add,Add,Clip");
  EXPECT_EQ(count_ops(*g, OpId::Cast), 2) << g->debug_listing();
  const Node* out = g->outputs()[0].node;
  ASSERT_EQ(out->op().id, OpId::FusedDepthwiseConv2D);
  EXPECT_EQ(out->outputs()[0].dtype, kBf);
  for (size_t i = 2; i + 1 < out->inputs().size(); ++i)
    EXPECT_EQ(out->inputs()[i].node->outputs()[0].dtype, kF32) << "input " << i;
  EXPECT_EQ(out->inputs().back().node->op().id, OpId::FusedConv2D);  // the residual
}

// Keras's hard swish, x * (relu6(x + 3) / 6), each bf16 step between Casts.
TEST(FuseConvBFloat16, HardSwishFusesThroughItsCasts) {
  const std::vector<Tensor> in = {cast(wave({1, 9, 9, 4}, 0.37), kBf),
                                  wave({1, 1, 4, 8}, 0.91, 0.3, 0.8),
                                  wave({8}, 0.7, 1.0, 0.4) + 1.f, wave({8}, 2.1, 0.5, 0.3)};
  const Tensor three = cast(Tensor(3.f), kBf), six = cast(Tensor(6.f), kBf);
  PassResult r;
  auto g = fuse_bf16(
      in,
      [&](const std::vector<Tensor>& a) {
        const Tensor y = batch_norm(conv2d(a[0], cast(a[1], kBf), {1, 1}, "VALID"), a[2], a[3]);
        return std::vector<Tensor>{y * (minimum(relu(y + three), six) / six)};
      },
      &r);
  EXPECT_EQ(fused_ops_of(*g, OpId::FusedConv2D), "Mul,Add,HardSwish") << g->debug_listing();
  EXPECT_EQ(count_ops(*g, OpId::Cast), 0) << g->debug_listing();
}

// Without excess precision (Config::jit_excess_precision off) each op rounds
// its bf16 result: the chain through Casts is left alone.
TEST(FuseConvBFloat16, StrictRoundingKeepsTheCasts) {
  const std::vector<Tensor> in = {cast(wave({1, 9, 9, 4}, 0.37), kBf),
                                  wave({3, 3, 4, 8}, 0.91, 0.3, 0.5),
                                  wave({8}, 0.7, 1.0, 0.4) + 1.f, wave({8}, 2.1, 0.5, 0.3)};
  const Body body = [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{
        relu(batch_norm(conv2d(a[0], cast(a[1], kBf), {1, 1}, "SAME"), a[2], a[3]))};
  };
  PassResult r;
  {
    const bool saved = config().jit_excess_precision;
    config().jit_excess_precision = false;
    auto g = fuse_bf16(in, body, &r, 1e-6);  // the same roundings: equal results
    config().jit_excess_precision = saved;
    EXPECT_FALSE(r.changed()) << r.summary(8);
    EXPECT_EQ(fused_ops_of(*g, OpId::FusedConv2D), "");
  }
  auto g = fuse_bf16(in, body, &r);
  EXPECT_EQ(fused_ops_of(*g, OpId::FusedConv2D), "Mul,Add,Relu") << g->debug_listing();
}

// TensorFlow's export of Keras 3's relu6, where(y < 6, relu(y), 6), and the
// hard swish built on it, each bf16 step between Casts.
TEST(FuseConvBFloat16, SelectFormsOfRelu6FuseThroughTheirCasts) {
  const std::vector<Tensor> in = {cast(wave({1, 9, 9, 4}, 0.37), kBf),
                                  wave({1, 1, 4, 8}, 0.91, 0.3, 4.0),
                                  wave({8}, 0.7, 1.0, 0.4) + 1.f, wave({8}, 2.1, 0.5, 0.3)};
  const Tensor three = cast(Tensor(3.f), kBf), six = cast(Tensor(6.f), kBf);
  auto relu6 = [&](const Tensor& v) { return where(less(v, six), relu(v), six); };
  PassResult r;
  auto g = fuse_bf16(
      in,
      [&](const std::vector<Tensor>& a) {
        const Tensor y = batch_norm(conv2d(a[0], cast(a[1], kBf), {1, 1}, "VALID"), a[2], a[3]);
        return std::vector<Tensor>{relu6(y)};
      },
      &r);
  EXPECT_EQ(fused_ops_of(*g, OpId::FusedConv2D), "Mul,Add,Clip") << g->debug_listing();
  EXPECT_EQ(count_ops(*g, OpId::Cast), 0) << g->debug_listing();
  auto h = fuse_bf16(
      in,
      [&](const std::vector<Tensor>& a) {
        const Tensor y = batch_norm(conv2d(a[0], cast(a[1], kBf), {1, 1}, "VALID"), a[2], a[3]);
        return std::vector<Tensor>{y * (relu6(y + three) / six)};
      },
      &r);
  EXPECT_EQ(fused_ops_of(*h, OpId::FusedConv2D), "Mul,Add,HardSwish") << h->debug_listing();
  EXPECT_EQ(count_ops(*h, OpId::Cast), 0) << h->debug_listing();
}

// The fused op's output is the convolution's type: a chain running on in
// float32 ends at its last bfloat16 value.
TEST(FuseConvBFloat16, ChainsEndAtTheirLastBFloat16Value) {
  const std::vector<Tensor> in = {cast(wave({1, 9, 9, 4}, 0.37), kBf),
                                  cast(wave({3, 3, 4, 8}, 0.91, 0.3, 0.5), kBf),
                                  wave({8}, 0.7, 1.0, 0.4) + 1.f};
  PassResult r;
  auto g = fuse_bf16(
      in,
      [](const std::vector<Tensor>& a) {
        return std::vector<Tensor>{cast(relu(conv2d(a[0], a[1], {1, 1}, "SAME")), kF32) * a[2]};
      },
      &r);
  EXPECT_EQ(fused_ops_of(*g, OpId::FusedConv2D), "Relu") << g->debug_listing();
  EXPECT_EQ(count_ops(*g, OpId::Cast), 1);
  EXPECT_EQ(count_ops(*g, OpId::Mul), 1);
  // Only float32 after the convolution: nothing to fuse.
  auto h = fuse_bf16(
      in,
      [](const std::vector<Tensor>& a) {
        return std::vector<Tensor>{cast(conv2d(a[0], a[1], {1, 1}, "SAME"), kF32) * a[2] + a[2]};
      },
      &r);
  EXPECT_FALSE(r.changed()) << r.summary(8);
}

// A residual is added in the output's type: a bfloat16 one fuses (also read
// elsewhere), a float32 one (added after the Cast) ends the chain before it.
TEST(FuseConvBFloat16, ResidualsOfTheOutputsTypeFuse) {
  const std::vector<Tensor> in = {cast(wave({2, 8, 7, 6}, 0.37), kBf),
                                  wave({3, 3, 6, 6}, 0.91, 0.3, 0.4),
                                  wave({6}, 0.7, 1.0, 0.4) + 1.f, wave({2, 8, 7, 6}, 0.53)};
  PassResult r;
  auto g = fuse_bf16(
      in,
      [](const std::vector<Tensor>& a) {
        const Tensor y = conv2d(a[0], cast(a[1], kBf), {1, 1}, "SAME");
        return std::vector<Tensor>{relu(y + a[0]), a[0]};
      },
      &r);
  EXPECT_EQ(fused_ops_of(*g, OpId::FusedConv2D), "Add,Relu") << g->debug_listing();
  // Added in float32: read before its Cast from bfloat16 (exact), or not taken.
  auto h = fuse_bf16(
      in,
      [](const std::vector<Tensor>& a) {
        const Tensor y = cast(conv2d(a[0], cast(a[1], kBf), {1, 1}, "SAME"), kF32) * a[2];
        return std::vector<Tensor>{cast(relu(y + cast(a[0], kF32)), kBf)};
      },
      &r);
  EXPECT_EQ(fused_ops_of(*h, OpId::FusedConv2D), "Mul,Add,Relu") << h->debug_listing();
  // The residual's Cast joins the chain (removed by fuse_conv, not left to prune):
  // with the convolution's own Cast up, two.
  EXPECT_EQ(std::count_if(r.removed.begin(), r.removed.end(),
                          [](const NodeRef& n) { return n.second == "Cast"; }),
            2)
      << r.summary(16);
  EXPECT_EQ(count_ops(*h, OpId::Cast), 0) << h->debug_listing();
  auto k = fuse_bf16(
      in,
      [](const std::vector<Tensor>& a) {
        const Tensor y = cast(conv2d(a[0], cast(a[1], kBf), {1, 1}, "SAME"), kF32) * a[2];
        return std::vector<Tensor>{cast(relu(y + a[3]), kBf)};
      },
      &r);
  EXPECT_EQ(count_ops(*k, OpId::FusedConv2D), 1);  // conv_float_filters' alone
  EXPECT_EQ(fused_ops_of(*k, OpId::FusedConv2D), "");
  EXPECT_FALSE(r.changed()) << r.summary(8);
}

// ---- conv_float_filters ----

// mixed_bfloat16's convolutions: a bf16 input, the filter a Cast of float32.
TEST(ConvFloatFilters, ConvolutionsReadTheFloatFilterAndPackItOnce) {
  const Tensor x = cast(wave({1, 9, 9, 8}, 0.37), DType::kBFloat16);
  const Tensor w = wave({3, 3, 8, 16}, 0.91, 0.3, 0.5), d = wave({3, 3, 16, 1}, 0.5, 0.1, 0.5);
  const Body body = [](const std::vector<Tensor>& a) {
    const Tensor y = conv2d(a[0], cast(a[1], DType::kBFloat16), {1, 1}, "SAME");
    const Tensor z = depthwise_conv2d(y, cast(a[2], DType::kBFloat16), {1, 1}, "VALID");
    return std::vector<Tensor>{z, cast(a[1], DType::kBFloat16)};  // a Cast with another user
  };
  const std::vector<Tensor> in = {x, w, d};
  auto g = trace(in, body);
  const std::vector<Tensor> want = Plan::compile(*g)->run(in);
  PassResult r = conv_float_filters(*g);
  g->verify();
  EXPECT_EQ(r.rewritten.size(), 2u);
  EXPECT_EQ(count_ops(*g, OpId::FusedConv2D), 1);
  EXPECT_EQ(count_ops(*g, OpId::FusedDepthwiseConv2D), 1);
  const auto plan = Plan::compile(*g);
  // Rounded while packed as Cast rounds: the same values.
  for (int call = 0; call < 2; ++call) {
    const int64_t reorders = cpu::filter_reorders();
    const std::vector<Tensor> got = plan->run(in);
    if (call == 1 && cpu::conv_bf16_native()) {
      EXPECT_EQ(cpu::filter_reorders(), reorders);  // packed once (else rounded each call)
    }
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(cast(got[i], DType::kFloat32).to_vector<float>(),
                cast(want[i], DType::kFloat32).to_vector<float>());
  }
}

// The same in every split (4 threads): row blocks, channel blocks (filter slices
// of the float32 filter), a one-pixel convolution with a 2 MB filter, depthwise rows.
TEST(ConvFloatFilters, EverySplitMatchesTheCastFilter) {
  struct Case {
    Shape x, f;
    bool depthwise;
  };
  for (const Case& c :
       {Case{{1, 48, 40, 32}, {3, 3, 32, 32}, false}, Case{{1, 7, 7, 64}, {3, 3, 64, 200}, false},
        Case{{1, 1, 1, 1024}, {1, 1, 1024, 520}, false},
        Case{{1, 64, 64, 32}, {3, 3, 32, 1}, true}}) {
    SCOPED_TRACE(str_cat(c.x.debug_string(), " ", c.f.debug_string()));
    const std::vector<Tensor> in = {cast(wave(c.x, 0.37), DType::kBFloat16),
                                    wave(c.f, 0.91, 0.3, 0.5)};
    const Body body = [&](const std::vector<Tensor>& a) {
      const Tensor f = cast(a[1], DType::kBFloat16);
      return std::vector<Tensor>{c.depthwise ? depthwise_conv2d(a[0], f, {1, 1}, "SAME")
                                             : conv2d(a[0], f, {1, 1}, "SAME")};
    };
    auto g = trace(in, body);
    const std::vector<Tensor> want = Plan::compile(*g)->run(in);
    EXPECT_EQ(conv_float_filters(*g).rewritten.size(), 1u);
    const std::vector<Tensor> got = Plan::compile(*g)->run(in);
    EXPECT_EQ(cast(got[0], DType::kFloat32).to_vector<float>(),
              cast(want[0], DType::kFloat32).to_vector<float>());
  }
}

TEST(ConvFloatFilters, OtherFiltersAreLeftAlone) {
  const Tensor x = cast(wave({1, 6, 6, 4}, 0.3), DType::kBFloat16);
  const Tensor wb = cast(wave({3, 3, 4, 4}, 0.5), DType::kBFloat16);
  const Tensor w64 = cast(wave({3, 3, 4, 4}, 0.5), DType::kFloat64);
  auto g = trace({x, wb, w64}, [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{conv2d(a[0], a[1], {1, 1}, "SAME"),  // no Cast
                               conv2d(a[0], cast(a[2], DType::kBFloat16), {1, 1}, "SAME"),
                               conv2d(cast(a[0], DType::kFloat32), cast(a[1], DType::kFloat32),
                                      {1, 1}, "SAME")};  // float32
  });
  EXPECT_TRUE(conv_float_filters(*g).rewritten.empty());
}

TEST(ConvFloatFilters, FusedOpChecksItsDtypes) {
  const Tensor x = cast(wave({1, 4, 4, 2}, 0.3), DType::kBFloat16), f = wave({3, 3, 2, 3}, 0.5);
  // A residual has the output's type; per-channel operands are float32.
  expect_error(
      [&] {
        call_op(OpId::FusedConv2D, std::vector<Tensor>{x, f, wave({1, 4, 4, 3}, 0.2)},
                fused_attrs("Add"));
      },
      Code::kInvalidArgument, {"args[0]", "bfloat16, got float32"});
  expect_error(
      [&] {
        call_op(OpId::FusedConv2D,
                std::vector<Tensor>{x, f, cast(wave({3}, 0.2), DType::kBFloat16)},
                fused_attrs("BiasAdd"));
      },
      Code::kInvalidArgument, {"args[0]", "float32, got bfloat16"});
  expect_error(
      [&] {
        call_op(OpId::FusedConv2D, std::vector<Tensor>{x, cast(f, DType::kFloat64)},
                fused_attrs(""));
      },
      Code::kInvalidArgument, {"float64"});
}

}  // namespace
}  // namespace kiln
