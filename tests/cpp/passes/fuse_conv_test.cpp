// fuse_conv: convolution epilogues (bias, batch-norm scale/shift, activations)
// fused into _FusedConv2D / _FusedDepthwiseConv2dNative. Each pattern is
// checked for the rewritten graph and for results equal to the unfused ops
// run eagerly; the fused ops are also checked directly (errors, a hand-written
// epilogue reference, the zero-channel path).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cpu/conv_util.h"
#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/passes.h"
#include "kiln/trace.h"
#include "pass_test_util.h"

namespace kiln {
namespace {
// A budget of 4 threads (before the pool starts), so the large geometries run
// as row blocks on any machine.
const bool kFourThreads = (config().num_threads = 4, true);
using testing::count_ops;
using testing::expect_error;
using testing::expect_tensor_near;

using testing::Body;
using testing::trace;
using testing::wave;

const Node* find_op(const Graph& g, OpId id) {
  for (const auto& n : g.nodes())
    if (n->op().id == id) return n.get();
  return nullptr;
}

std::string fused_ops_of(const Graph& g) {
  for (OpId id : {OpId::FusedConv2D, OpId::FusedDepthwiseConv2D})
    if (const Node* n = find_op(g, id)) return std::get<std::string>(n->attrs()[3]);
  return "";
}

// Runs fuse_conv on the traced body and checks every output against the
// same body run eagerly (the unfused kernels). Returns the fused graph.
std::unique_ptr<Graph> fuse_and_compare(const std::vector<Tensor>& inputs, const Body& body,
                                        double tol = 1e-5) {
  auto g = trace(inputs, body);
  PassResult r = fuse_conv(*g);
  g->verify();
  std::vector<Tensor> want = body(inputs);
  std::vector<Tensor> got = Plan::compile(*g)->run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    SCOPED_TRACE(str_cat("output ", i, "; pass: ", r.summary(8)));
    expect_tensor_near<float>(got[i], want[i].shape(), want[i].to_vector<float>(), tol);
  }
  return g;
}

// ---- conv geometry variants ----

struct Geo {
  int64_t n, h, w, c, k, out;  // out = filters, or the multiplier for depthwise
  std::vector<int64_t> strides, dilations;
  std::string padding;
  bool depthwise;
};

std::string geo_name(const Geo& p) {
  return str_cat(p.depthwise ? "depthwise" : "conv", " ", p.n, "x", p.h, "x", p.w, "x", p.c, " k",
                 p.k, " out", p.out, " s", p.strides[0], " d", p.dilations[0], " ", p.padding);
}

int64_t out_channels(const Geo& p) {
  return p.depthwise ? p.c * p.out : p.out;
}

Tensor run_conv(const Geo& p, const Tensor& x, const Tensor& f) {
  return p.depthwise ? depthwise_conv2d(x, f, p.strides, p.padding, p.dilations)
                     : conv2d(x, f, p.strides, p.padding, p.dilations);
}

std::vector<Tensor> conv_inputs(const Geo& p) {
  const int64_t oc = out_channels(p);
  return {wave({p.n, p.h, p.w, p.c}, 0.37), wave({p.k, p.k, p.c, p.out}, 0.91, 0.3, 0.5),
          wave({oc}, 1.3, 0.1, 0.5),        // bias
          wave({oc}, 0.7, 1.0, 0.4) + 1.f,  // scale (BN's inv * gamma)
          wave({oc}, 2.1, 0.5, 0.3)};       // shift
}

const std::vector<Geo> kGeos = {
    {1, 9, 11, 5, 3, 7, {1, 1}, {1, 1}, "SAME", false},
    {2, 10, 8, 4, 3, 6, {2, 2}, {1, 1}, "VALID", false},
    {1, 12, 12, 3, 3, 4, {1, 2}, {2, 2}, "SAME", false},
    {1, 7, 7, 8, 1, 16, {1, 1}, {1, 1}, "VALID", false},  // 1x1 (squeeze-excite style)
    {1, 9, 11, 6, 3, 1, {1, 1}, {1, 1}, "SAME", true},
    {2, 10, 9, 4, 3, 2, {2, 2}, {1, 1}, "SAME", true},    // multiplier 2, strided
    {1, 13, 13, 5, 5, 1, {1, 1}, {2, 2}, "VALID", true},  // dilated
    // Large enough to run as row blocks on the pool, the epilogue in every block.
    {1, 48, 40, 32, 3, 32, {1, 1}, {1, 1}, "SAME", false},
    {1, 64, 64, 32, 3, 2, {2, 2}, {1, 1}, "SAME", true},
    // Too few pixels for row blocks: blocks of output channels, each reading its part
    // of the per-channel operands (the last block narrower; a batch).
    {1, 7, 7, 64, 3, 200, {1, 1}, {1, 1}, "SAME", false},
    {2, 7, 7, 256, 1, 144, {1, 1}, {1, 1}, "VALID", false},
    {1, 14, 14, 64, 3, 208, {1, 1}, {1, 1}, "SAME", false},   // 2 row blocks, 4 threads
    {2, 1, 1, 1024, 1, 600, {1, 1}, {1, 1}, "VALID", false},  // one pixel, 2.4 MB filter
    {1, 14, 14, 96, 3, 1, {1, 1}, {1, 1}, "SAME", true},      // depthwise row blocks
};

// Conv + BiasAdd + BN (Mul, AddV2) + swish: the EfficientNet block epilogue.
TEST(FuseConv, BiasBatchNormSwishFusesForEveryGeometry) {
  for (const Geo& p : kGeos) {
    SCOPED_TRACE(geo_name(p));
    auto g = fuse_and_compare(conv_inputs(p), [&](const std::vector<Tensor>& a) {
      Tensor y = bias_add(run_conv(p, a[0], a[1]), a[2]);
      y = y * a[3] + a[4];
      return std::vector<Tensor>{y * sigmoid(y)};
    });
    const OpId fused = p.depthwise ? OpId::FusedDepthwiseConv2D : OpId::FusedConv2D;
    EXPECT_EQ(count_ops(*g, fused), 1);
    EXPECT_EQ(count_ops(*g, OpId::Conv2D) + count_ops(*g, OpId::DepthwiseConv2D), 0);
    EXPECT_EQ(count_ops(*g, OpId::Mul) + count_ops(*g, OpId::Add) + count_ops(*g, OpId::Sigmoid) +
                  count_ops(*g, OpId::BiasAdd),
              0);
    EXPECT_EQ(g->num_nodes(), 6u);  // five placeholders and the fused node
    EXPECT_EQ(fused_ops_of(*g), "BiasAdd,Mul,Add,Swish");
  }
}

// Conv + BN + Add(residual) + Relu: ResNet's bottleneck ending, the residual
// (of the output's shape) added where each value is written, on either side of
// the Add, in every split (row blocks, channel blocks, one pixel, Winograd's
// blocks from the second call) and on the unsplit path; a residual computed in
// the function (no other reader) is the buffer the output takes over.
TEST(FuseConv, ResidualAddFusesForEveryGeometry) {
  for (const Geo& p : kGeos) {
    for (const int form : {0, 1, 2}) {
      SCOPED_TRACE(str_cat(geo_name(p), form == 0   ? ", y + residual"
                                        : form == 1 ? ", residual + y"
                                                    : ", y + computed residual"));
      std::vector<Tensor> in = conv_inputs(p);
      const Shape out = run_conv(p, in[0], in[1]).shape();
      in.push_back(wave(out, 0.53, 0.2, 0.7));
      const Body body = [&](const std::vector<Tensor>& a) {
        Tensor y = run_conv(p, a[0], a[1]) * a[3] + a[4];
        return std::vector<Tensor>{relu(form == 0   ? y + a[5]
                                        : form == 1 ? a[5] + y
                                                    : y + tanh(a[5]))};
      };
      auto g = fuse_and_compare(in, body, 1e-4);  // the scale folded into the filter
      EXPECT_EQ(fused_ops_of(*g), "Mul,Add,Add,Relu");
      EXPECT_EQ(g->num_nodes(), form == 2 ? 8u : 7u);  // six placeholders, the fused node
      // Again with the filter settled (Winograd where it pays).
      auto plan = Plan::compile(*g);
      plan->run(in);
      expect_tensor_near<float>(plan->run(in)[0], out, body(in)[0].to_vector<float>(), 1e-4);
    }
  }
}

// A projection shortcut: two convolutions' chains meet in the Add; one chain
// takes it with the other's result as its residual, then the ReLU.
TEST(FuseConv, TwoChainsMeetingInAResidualAddFuseOnce) {
  const Tensor x = wave({1, 14, 14, 16}, 0.3);
  const Tensor f0 = wave({1, 1, 16, 32}, 0.5, 0.1, 0.3), f1 = wave({3, 3, 16, 32}, 0.7, 0.1, 0.2);
  const Tensor s = wave({32}, 0.9, 0.3) + 1.f, b = wave({32}, 1.1);
  auto g = fuse_and_compare({x, f0, f1, s, b}, [](const std::vector<Tensor>& a) {
    const Tensor shortcut = conv2d(a[0], a[1], {1, 1}, "VALID") * a[3] + a[4];
    const Tensor main = conv2d(a[0], a[2], {1, 1}, "SAME") * a[3] + a[4];
    return std::vector<Tensor>{relu(shortcut + main)};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedConv2D), 2);
  EXPECT_EQ(count_ops(*g, OpId::Add) + count_ops(*g, OpId::Relu), 0);
  int with_residual = 0;
  for (const auto& n : g->nodes())
    if (n->op().id == OpId::FusedConv2D)
      with_residual += std::get<std::string>(n->attrs()[3]) == "Mul,Add,Add,Relu";
  EXPECT_EQ(with_residual, 1);
}

TEST(FuseConv, ReportNamesTheFusedOps) {
  const Geo& p = kGeos[0];
  auto g = trace(conv_inputs(p), [&](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{relu(bias_add(run_conv(p, a[0], a[1]), a[2]))};
  });
  PassResult r = fuse_conv(*g);
  EXPECT_EQ(r.pass, "fuse_conv");
  ASSERT_EQ(r.rewritten.size(), 1u);
  EXPECT_EQ(r.rewritten[0].second, "Conv2D, BiasAdd, Relu -> _FusedConv2D (BiasAdd,Relu)");
  ASSERT_EQ(r.removed.size(), 2u);
  EXPECT_EQ(r.removed[0].second, "Conv2D");
  EXPECT_EQ(r.removed[1].second, "BiasAdd");
  // The fused node keeps the root's name, so consumers and outputs still work.
  EXPECT_EQ(g->outputs()[0].node->name(), "Relu");
  EXPECT_EQ(g->outputs()[0].node->op().id, OpId::FusedConv2D);
}

struct Pattern {
  const char* name;
  const char* fused_ops;  // expected attr
  std::function<Tensor(const Tensor& y, const std::vector<Tensor>& a)> epilogue;
};

// Each epilogue shape Keras layers and kiln.nn emit, on a conv and a
// depthwise conv. y is the convolution's output; a[2..4] bias/scale/shift.
const std::vector<Pattern> kPatterns = {
    {"bias", "BiasAdd", [](const Tensor& y, auto& a) { return bias_add(y, a[2]); }},
    {"bias relu", "BiasAdd,Relu", [](const Tensor& y, auto& a) { return relu(bias_add(y, a[2])); }},
    {"bn swapped operands", "Mul,Add",
     [](const Tensor& y, auto& a) { return add(a[4], multiply(a[3], y)); }},
    {"bn relu6", "Mul,Add,Clip",
     [](const Tensor& y, auto& a) { return minimum(relu(y * a[3] + a[4]), 6.f); }},
    // Keras 3's ReLU(max_value=6) as TensorFlow exports it: where(y < 6, relu(y), 6).
    {"relu6 select form", "Mul,Add,Clip",
     [](const Tensor& y, auto& a) {
       Tensor z = y * a[3] + a[4];
       return where(less(z, Tensor(6.f)), relu(z), Tensor(6.f));
     }},
    {"hard swish, relu6 select form", "BiasAdd,HardSwish",
     [](const Tensor& y, auto& a) {
       Tensor z = bias_add(y, a[2]), w = z + 3.f;
       return z * (where(less(w, Tensor(6.f)), relu(w), Tensor(6.f)) / 6.f);
     }},
    {"relu6 constant first", "BiasAdd,Clip",
     [](const Tensor& y, auto& a) { return minimum(6.f, relu(bias_add(y, a[2]))); }},
    {"clip_by_value", "Add,Clip",
     [](const Tensor& y, auto& a) { return clip_by_value(y + a[4], -0.5f, 0.75f); }},
    {"sigmoid", "BiasAdd,Sigmoid",
     [](const Tensor& y, auto& a) { return sigmoid(bias_add(y, a[2])); }},
    {"tanh", "Mul,Tanh", [](const Tensor& y, auto& a) { return tanh(y * a[3]); }},
    {"swish swapped", "BiasAdd,Swish",
     [](const Tensor& y, auto& a) {
       Tensor z = bias_add(y, a[2]);
       return sigmoid(z) * z;
     }},
    {"sub", "Sub,Relu", [](const Tensor& y, auto& a) { return relu(y - a[4]); }},
    {"scalar operand", "Mul,Add",
     [](const Tensor& y, auto&) { return multiply(y, Tensor(0.5f)) + Tensor(0.25f); }},
    {"[1,1,1,C] operand", "BiasAdd,Mul",
     [](const Tensor& y, auto& a) {
       const int64_t c = a[3].shape().dim(0);
       return bias_add(y, a[2]) * reshape(a[3], {1, 1, 1, c});
     }},
    {"bias via AddV2 then BiasAdd later", "Add,Mul,Add",
     [](const Tensor& y, auto& a) { return bias_add((y + a[2]) * a[3], a[4]); }},
    {"activation chain", "Relu,Tanh,Sigmoid",
     [](const Tensor& y, auto&) { return sigmoid(tanh(relu(y))); }},
    // Keras's hard_swish: x * (relu6(x + 3) / 6); MobileNetV3's blocks.
    {"bn hard swish", "Mul,Add,HardSwish",
     [](const Tensor& y, auto& a) {
       Tensor z = y * a[3] + a[4];
       return z * (minimum(relu(z + 3.f), 6.f) / 6.f);
     }},
    {"hard swish swapped, times a sixth", "BiasAdd,HardSwish",
     [](const Tensor& y, auto& a) {
       Tensor z = bias_add(y, a[2]);
       return (minimum(relu(3.f + z), 6.f) * static_cast<float>(1.0 / 6.0)) * z;
     }},
};

TEST(FuseConv, EachPatternFusesAndMatchesTheUnfusedOps) {
  for (const Geo& p : {kGeos[1], kGeos[5]})
    for (const Pattern& pat : kPatterns) {
      SCOPED_TRACE(str_cat(geo_name(p), ": ", pat.name));
      auto g = fuse_and_compare(conv_inputs(p), [&](const std::vector<Tensor>& a) {
        return std::vector<Tensor>{pat.epilogue(run_conv(p, a[0], a[1]), a)};
      });
      EXPECT_EQ(count_ops(*g, p.depthwise ? OpId::FusedDepthwiseConv2D : OpId::FusedConv2D), 1);
      EXPECT_EQ(fused_ops_of(*g), pat.fused_ops);
      for (OpId id :
           {OpId::Conv2D, OpId::DepthwiseConv2D, OpId::BiasAdd, OpId::Mul, OpId::Add, OpId::Sub,
            OpId::Relu, OpId::Minimum, OpId::ClipByValue, OpId::Sigmoid, OpId::Tanh})
        EXPECT_EQ(count_ops(*g, id), 0) << op_def(id).type_name;
    }
}

// ---- what must not fuse ----

const Geo kSmall = {1, 6, 6, 3, 3, 4, {1, 1}, {1, 1}, "SAME", false};

TEST(FuseConv, ConvWithAnotherUserIsLeftAlone) {
  auto g = fuse_and_compare(conv_inputs(kSmall), [](const std::vector<Tensor>& a) {
    Tensor y = run_conv(kSmall, a[0], a[1]);
    return std::vector<Tensor>{relu(y), y * 2.f};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedConv2D), 0);
  EXPECT_EQ(count_ops(*g, OpId::Conv2D), 1);
}

TEST(FuseConv, ConvThatIsAnOutputIsLeftAlone) {
  auto g = fuse_and_compare(conv_inputs(kSmall), [](const std::vector<Tensor>& a) {
    Tensor y = run_conv(kSmall, a[0], a[1]);
    return std::vector<Tensor>{y, relu(y)};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedConv2D), 0);
}

TEST(FuseConv, FusionStopsAtAnIntermediateWithOtherUsers) {
  // The BiasAdd result is also returned: it is the fused node's output, and
  // the Mul/Relu after it stay separate.
  auto g = fuse_and_compare(conv_inputs(kSmall), [](const std::vector<Tensor>& a) {
    Tensor b = bias_add(run_conv(kSmall, a[0], a[1]), a[2]);
    return std::vector<Tensor>{relu(b * a[3]), b};
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedConv2D), 1);
  EXPECT_EQ(fused_ops_of(*g), "BiasAdd");
  EXPECT_EQ(count_ops(*g, OpId::Mul), 1);
  EXPECT_EQ(count_ops(*g, OpId::Relu), 1);

  // Relu's result is used twice: conv+Relu fuse, the uses stay.
  auto g2 = fuse_and_compare(conv_inputs(kSmall), [](const std::vector<Tensor>& a) {
    Tensor r = relu(run_conv(kSmall, a[0], a[1]));
    return std::vector<Tensor>{r * a[3] + r};
  });
  EXPECT_EQ(fused_ops_of(*g2), "Relu");
  EXPECT_EQ(count_ops(*g2, OpId::Mul), 1);
}

TEST(FuseConv, SwishWithSharedSigmoidIsNotFused) {
  auto g = fuse_and_compare(conv_inputs(kSmall), [](const std::vector<Tensor>& a) {
    Tensor y = bias_add(run_conv(kSmall, a[0], a[1]), a[2]);
    Tensor s = sigmoid(y);
    return std::vector<Tensor>{y * s, s};
  });
  // The BiasAdd result feeds both Sigmoid and Mul, and the Sigmoid is an
  // output: only the convolution and its bias fuse.
  EXPECT_EQ(fused_ops_of(*g), "BiasAdd");
  EXPECT_EQ(count_ops(*g, OpId::Sigmoid), 1);
  EXPECT_EQ(count_ops(*g, OpId::Mul), 1);
}

TEST(FuseConv, NonChannelOperandsAndReversedSubStayOut) {
  const Tensor x = wave({1, 6, 6, 3}, 0.3), f = wave({3, 3, 3, 4}, 0.7);
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor& y, const std::vector<Tensor>& a)> epilogue;
  };
  const std::vector<Case> cases = {
      {"residual multiplied (full shape)", [](const Tensor& y, auto& a) { return y * a[2]; }},
      {"residual subtracted (full shape)", [](const Tensor& y, auto& a) { return y - a[2]; }},
      {"operand along height", [](const Tensor& y, auto& a) { return y * a[3]; }},
      {"shift minus y", [](const Tensor& y, auto& a) { return a[4] - y; }},
      {"y times y", [](const Tensor& y, auto&) { return y * y; }},
      {"minimum without relu", [](const Tensor& y, auto&) { return minimum(y, 6.f); }},
      {"hard swish adding 2",
       [](const Tensor& y, auto&) { return y * (minimum(relu(y + 2.f), 6.f) / 6.f); }},
      {"hard swish dividing by 5",
       [](const Tensor& y, auto&) { return y * (minimum(relu(y + 3.f), 6.f) / 5.f); }},
      {"hard swish of another value",
       [](const Tensor& y, auto& a) { return y * (minimum(relu(a[2] + 3.f), 6.f) / 6.f); }},
      {"clip with lo > hi", [](const Tensor& y, auto&) { return clip_by_value(y, 1.f, -1.f); }},
      {"runtime clip bounds",
       [](const Tensor& y, auto& a) { return clip_by_value(y, a[5], a[5] + 1.f); }},
  };
  const std::vector<Tensor> inputs = {
      x, f, wave({1, 6, 6, 4}, 0.2), wave({1, 6, 1, 1}, 0.9), wave({4}, 0.4), Tensor(-0.25f)};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto g = fuse_and_compare(inputs, [&](const std::vector<Tensor>& a) {
      return std::vector<Tensor>{c.epilogue(conv2d(a[0], a[1], {1, 1}, "SAME"), a)};
    });
    EXPECT_EQ(count_ops(*g, OpId::FusedConv2D), 0);
  }
  // Minimum(Relu(y), c) with c < 0 is not Relu6-like: only the Relu fuses.
  auto g = fuse_and_compare(inputs, [&](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{minimum(relu(conv2d(a[0], a[1], {1, 1}, "SAME")), -1.f)};
  });
  EXPECT_EQ(fused_ops_of(*g), "Relu");
  EXPECT_EQ(count_ops(*g, OpId::Minimum), 1);
}

TEST(FuseConv, Float64AndUnknownChannelsAreLeftAlone) {
  auto g = trace({cast(wave({1, 5, 5, 2}, 0.3), DType::kFloat64),
                  cast(wave({3, 3, 2, 3}, 0.5), DType::kFloat64)},
                 [](const std::vector<Tensor>& a) {
                   return std::vector<Tensor>{relu(conv2d(a[0], a[1], {1, 1}, "SAME"))};
                 });
  EXPECT_FALSE(fuse_conv(*g).changed());

  auto gu = std::make_unique<Graph>("f");
  {
    TracingContext tc(*gu);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({1, 5, 5, 2}));
    Tensor f = tc.add_input("f", DType::kFloat32, Shape({3, 3, 2, -1}));
    gu->outputs().push_back(tc.edge_for(relu(conv2d(x, f, {1, 1}, "SAME"))));
  }
  EXPECT_FALSE(fuse_conv(*gu).changed());
}

TEST(FuseConv, UnknownBatchAndSpatialDimsStillFuse) {
  auto g = std::make_unique<Graph>("f");
  {
    TracingContext tc(*g);
    ContextScope scope(tc);
    Tensor x = tc.add_input("x", DType::kFloat32, Shape({-1, -1, -1, 3}));
    Tensor f = tc.add_input("f", DType::kFloat32, Shape({3, 3, 3, 4}));
    Tensor b = tc.add_input("b", DType::kFloat32, Shape({4}));
    Tensor y = bias_add(conv2d(x, f, {2, 2}, "SAME"), b);
    g->outputs().push_back(tc.edge_for(y * sigmoid(y)));
  }
  fuse_conv(*g);
  g->verify();
  ASSERT_EQ(fused_ops_of(*g), "BiasAdd,Swish");
  auto plan = Plan::compile(*g);
  const Tensor f = wave({3, 3, 3, 4}, 0.4), b = wave({4}, 0.8);
  for (int64_t n : {1, 3}) {
    const Tensor x = wave({n, 7, 5, 3}, 0.3);
    Tensor y = bias_add(conv2d(x, f, {2, 2}, "SAME"), b);
    const Tensor want = y * sigmoid(y);
    const Tensor got = plan->run(std::vector<Tensor>{x, f, b})[0];
    expect_tensor_near<float>(got, want.shape(), want.to_vector<float>());
  }
}

TEST(FuseConv, ControlEdgesBlockOrMove) {
  // A node that is a control input of another stays materialized.
  auto g = trace(conv_inputs(kSmall), [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{relu(bias_add(run_conv(kSmall, a[0], a[1]), a[2]))};
  });
  Node* bias = g->find("BiasAdd");
  ASSERT_NE(bias, nullptr);
  g->outputs()[0].node->add_control_input(bias);
  fuse_conv(*g);
  g->verify();
  EXPECT_EQ(fused_ops_of(*g), "BiasAdd");
  EXPECT_EQ(count_ops(*g, OpId::Relu), 1);

  // Control inputs of swallowed nodes move to the fused node.
  auto g2 = trace(conv_inputs(kSmall), [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{relu(bias_add(run_conv(kSmall, a[0], a[1]), a[2]))};
  });
  Node* conv = g2->find("Conv2D");
  ASSERT_NE(conv, nullptr);
  Node* x = g2->inputs()[4];
  conv->add_control_input(x);
  fuse_conv(*g2);
  g2->verify();
  const Node* fused = find_op(*g2, OpId::FusedConv2D);
  ASSERT_NE(fused, nullptr);
  ASSERT_EQ(fused->control_inputs().size(), 1u);
  EXPECT_EQ(fused->control_inputs()[0], x);
}

TEST(FuseConv, TwoConvolutionsInSequenceBothFuse) {
  const Tensor x = wave({1, 8, 8, 4}, 0.3);
  const Tensor f1 = wave({3, 3, 4, 1}, 0.5, 0.2, 0.4), f2 = wave({1, 1, 4, 6}, 0.7, 0.1, 0.4);
  const Tensor s = wave({4}, 0.9, 0.3) + 1.f, b = wave({6}, 1.1);
  auto g = fuse_and_compare({x, f1, f2, s, b}, [](const std::vector<Tensor>& a) {
    Tensor y = depthwise_conv2d(a[0], a[1], {1, 1}, "SAME");
    y = y * a[3];
    y = y * sigmoid(y);
    Tensor z = bias_add(conv2d(y, a[2], {1, 1}, "VALID"), a[4]);
    return std::vector<Tensor>{z * z};  // z read twice: the second chain ends at the BiasAdd
  });
  EXPECT_EQ(count_ops(*g, OpId::FusedDepthwiseConv2D), 1);
  EXPECT_EQ(count_ops(*g, OpId::FusedConv2D), 1);
  EXPECT_EQ(count_ops(*g, OpId::Mul), 1);
}

// One-pixel outputs ([1, 1, 1, C]) look like per-channel operands to each
// other: the Adds joining three convolutions belong to the first chain only
// (each chain claiming them made a graph with edges to removed nodes).
TEST(FuseConv, SummedOnePixelConvolutionsFuseOnce) {
  const Tensor x = wave({1, 1, 1, 6}, 0.3);
  const Tensor f0 = wave({1, 1, 6, 5}, 0.5), f1 = wave({1, 1, 6, 5}, 0.7),
               f2 = wave({1, 1, 6, 5}, 0.9);
  for (const bool left : {true, false}) {
    SCOPED_TRACE(left ? "(c0 + c1) + c2" : "c0 + (c1 + c2)");
    auto g = fuse_and_compare({x, f0, f1, f2}, [&](const std::vector<Tensor>& a) {
      const Tensor c0 = conv2d(a[0], a[1], {1, 1}, "VALID"),
                   c1 = conv2d(a[0], a[2], {1, 1}, "VALID"),
                   c2 = conv2d(a[0], a[3], {1, 1}, "VALID");
      return std::vector<Tensor>{left ? (c0 + c1) + c2 : c0 + (c1 + c2)};
    });
    EXPECT_EQ(count_ops(*g, OpId::Conv2D) + count_ops(*g, OpId::FusedConv2D), 3);
  }
}

// ---- the pipeline ----

TEST(FuseConv, RunsBeforeElementwiseFusionInOptimize) {
  const Geo& p = kGeos[0];
  auto g = trace(conv_inputs(p), [&](const std::vector<Tensor>& a) {
    Tensor y = bias_add(run_conv(p, a[0], a[1]), a[2]) * a[3] + a[4];
    return std::vector<Tensor>{identity(y * sigmoid(y))};
  });
  OptimizeReport rep = optimize(*g);
  EXPECT_NE(rep.to_string().find("fuse_conv: removed 5"), std::string::npos) << rep.to_string();
  EXPECT_EQ(count_ops(*g, OpId::FusedConv2D), 1);
  EXPECT_EQ(count_ops(*g, OpId::FusedElementwise), 0);

  // Disabling "fuse" turns off all fusion (check_numerics relies on it).
  auto g2 = trace(conv_inputs(p), [&](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{identity(relu(run_conv(p, a[0], a[1])))};
  });
  OptimizeOptions opts;
  opts.disabled = {"fuse"};
  optimize(*g2, opts);
  EXPECT_EQ(count_ops(*g2, OpId::FusedConv2D), 0);
  opts.disabled = {"fuse_conv"};
  optimize(*g2, opts);
  EXPECT_EQ(count_ops(*g2, OpId::FusedConv2D), 0);
}

TEST(FuseConv, FunctionsFuseUnlessCheckNumericsIsOn) {
  const Geo& p = kGeos[4];
  const std::vector<Tensor> in = conv_inputs(p);
  auto body = [&](const std::vector<Value>& v) {
    Tensor y = bias_add(run_conv(p, v[0].tensor(), v[1].tensor()), v[2].tensor());
    y = y * v[3].tensor() + v[4].tensor();
    return Value(y * sigmoid(y));
  };
  std::vector<Value> args(in.begin(), in.end());
  Tensor want = body(args).tensor();
  {
    Function f(body);
    auto cf = f.get_concrete_function(args);
    EXPECT_EQ(count_ops(cf->optimized_graph(), OpId::FusedDepthwiseConv2D), 1);
    Tensor got = f(args).tensor();
    expect_tensor_near<float>(got, want.shape(), want.to_vector<float>());
  }
  const bool saved = config().check_numerics;
  config().check_numerics = true;
  {
    Function f(body);
    auto cf = f.get_concrete_function(args);
    EXPECT_EQ(count_ops(cf->optimized_graph(), OpId::FusedDepthwiseConv2D), 0);
    EXPECT_EQ(count_ops(cf->optimized_graph(), OpId::DepthwiseConv2D), 1);
  }
  config().check_numerics = saved;
}

// The ops kiln.nn.batch_normalization, kiln.nn.silu and kiln.nn.relu6 emit,
// with the weights in variables (read inside the function).
TEST(FuseConv, KerasStyleBlocksWithVariablesFuseThroughTheFunctionPipeline) {
  const int64_t c = 6;
  Variable filter(wave({3, 3, 4, c}, 0.5, 0.1, 0.4)), dw_filter(wave({3, 3, c, 1}, 0.8));
  Variable gamma(wave({c}, 0.6) + 1.5f), beta(wave({c}, 1.7, 0.4, 0.2));
  Variable mean(wave({c}, 0.9, 0.2, 0.1)), var(wave({c}, 1.1) + 1.2f);
  auto batch_norm = [&](const Tensor& x) {
    Tensor inv = rsqrt(var.read_value() + 1e-3f) * gamma.read_value();
    Tensor shift = beta.read_value() - mean.read_value() * inv;
    return x * inv + shift;
  };
  auto body = [&](const std::vector<Value>& v) {
    Tensor y = batch_norm(conv2d(v[0].tensor(), filter, {2, 2}, "SAME"));
    y = y * sigmoid(y);  // silu
    Tensor z = batch_norm(depthwise_conv2d(y, dw_filter, {1, 1}, "SAME"));
    return Value(minimum(relu(z), 6.f));  // relu6
  };
  const Tensor x = wave({2, 9, 9, 4}, 0.27, 0.0, 2.0);
  const std::vector<Value> args = {Value(x)};
  const Tensor want = body(args).tensor();
  Function f(body);
  auto cf = f.get_concrete_function(args);
  const Graph& g = cf->optimized_graph();
  EXPECT_EQ(count_ops(g, OpId::FusedConv2D), 1) << g.debug_listing();
  EXPECT_EQ(count_ops(g, OpId::FusedDepthwiseConv2D), 1) << g.debug_listing();
  for (const auto& n : g.nodes()) {
    if (n->op().id == OpId::FusedConv2D) {
      EXPECT_EQ(std::get<std::string>(n->attrs()[3]), "Mul,Add,Swish");
    } else if (n->op().id == OpId::FusedDepthwiseConv2D) {
      EXPECT_EQ(std::get<std::string>(n->attrs()[3]), "Mul,Add,Clip");
    }
  }
  expect_tensor_near<float>(f(args).tensor(), want.shape(), want.to_vector<float>());
  // New weights are seen on the next call (operands are runtime inputs).
  gamma.assign(wave({c}, 0.3) + 0.5f);
  const Tensor want2 = body(args).tensor();
  expect_tensor_near<float>(f(args).tensor(), want2.shape(), want2.to_vector<float>());
  EXPECT_EQ(f.tracing_count(), 1);
}

// ---- the fused ops themselves ----

Attrs fused_attrs(const std::string& ops, double lo = 0.0, double hi = 6.0) {
  return {std::vector<int64_t>{1, 1}, std::string("SAME"), std::vector<int64_t>{1, 1}, ops, lo, hi};
}

TEST(FusedConvOp, MatchesAHandWrittenEpilogue) {
  const Tensor x = wave({2, 5, 4, 3}, 0.41), f = wave({3, 3, 3, 5}, 0.77, 0.2, 0.6);
  const Tensor bias = wave({5}, 1.3), scale = wave({1, 1, 1, 5}, 0.6, 0.4) + 1.f;
  const Tensor shift = Tensor(0.125f);
  const std::vector<float> y = conv2d(x, f, {1, 1}, "SAME").to_vector<float>();
  const std::vector<float> b = bias.to_vector<float>(), s = scale.to_vector<float>();
  std::vector<float> want(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t c = i % 5;
    double v = (static_cast<double>(y[i]) + b[c]) * s[c] - 0.125;
    v = std::min(std::max(v, -0.5), 1.5);
    want[i] = static_cast<float>(v / (1.0 + std::exp(-v)));
  }
  const std::vector<Tensor> in = {x, f, bias, scale, shift};
  Tensor got =
      call_op(OpId::FusedConv2D, in, fused_attrs("BiasAdd,Mul,Sub,Clip,Swish", -0.5, 1.5))[0];
  expect_tensor_near<float>(got, {2, 5, 4, 5}, want);
}

TEST(FusedConvOp, ZeroInputChannelsStillApplyTheEpilogue) {
  const Tensor x = Tensor::from_vector(std::vector<float>{}, {1, 2, 2, 0});
  const Tensor f = Tensor::from_vector(std::vector<float>{}, {1, 1, 0, 3});
  const Tensor bias({1.f, -2.f, 3.f});
  const std::vector<Tensor> in = {x, f, bias};
  Tensor got = call_op(OpId::FusedConv2D, in, fused_attrs("BiasAdd,Relu"))[0];
  testing::expect_tensor<float>(got, {1, 2, 2, 3}, {1, 0, 3, 1, 0, 3, 1, 0, 3, 1, 0, 3});
  // Every step on that path (the fallback's epilogue loop).
  auto swish = [](double v) { return v / (1.0 + std::exp(-v)); };
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const Tensor scale({2.f, 0.5f, -1.f}), shift(0.25f);
  const std::vector<Tensor> in2 = {x, f, bias, scale, shift};
  got = call_op(OpId::FusedConv2D, in2, fused_attrs("BiasAdd,Mul,Sub,Clip,Swish", -2.0, 1.0))[0];
  std::vector<float> want;
  for (int i = 0; i < 4; ++i)
    for (double v : {swish(1.0), swish(-1.25), swish(-2.0)}) want.push_back(static_cast<float>(v));
  expect_tensor_near<float>(got, {1, 2, 2, 3}, want);
  const std::vector<Tensor> in3 = {x, f, scale, bias};
  got = call_op(OpId::FusedConv2D, in3, fused_attrs("Add,Mul,Relu,Tanh,Sigmoid"))[0];
  want.clear();
  for (int i = 0; i < 4; ++i)
    for (double v : {2.0, 0.0, 0.0}) want.push_back(static_cast<float>(sig(std::tanh(v))));
  expect_tensor_near<float>(got, {1, 2, 2, 3}, want);
}

TEST(FusedConvOp, PrimitivesAreCachedPerEpilogue) {
  // Same geometry, different epilogues and operand kinds, called alternately:
  // each must get its own primitive.
  const Tensor x = wave({1, 6, 6, 4}, 0.3), f = wave({3, 3, 4, 1}, 0.6);
  const Tensor per_channel = wave({4}, 0.8) + 2.f, one = Tensor(3.f);
  const std::vector<float> y = depthwise_conv2d(x, f, {1, 1}, "SAME").to_vector<float>();
  for (int round = 0; round < 2; ++round) {
    const std::vector<Tensor> a = {x, f, per_channel}, b = {x, f, one};
    Tensor ga = call_op(OpId::FusedDepthwiseConv2D, a, fused_attrs("Mul"))[0];
    Tensor gb = call_op(OpId::FusedDepthwiseConv2D, b, fused_attrs("Mul"))[0];
    Tensor gc = call_op(OpId::FusedDepthwiseConv2D, a, fused_attrs("Add,Clip", 0.0, 1.0))[0];
    Tensor gd = call_op(OpId::FusedDepthwiseConv2D, a, fused_attrs("Add,Clip", -1.0, 0.5))[0];
    const std::vector<float> s = per_channel.to_vector<float>();
    std::vector<float> wa(y.size()), wb(y.size()), wc(y.size()), wd(y.size());
    for (size_t i = 0; i < y.size(); ++i) {
      wa[i] = y[i] * s[i % 4];
      wb[i] = y[i] * 3.f;
      wc[i] = std::min(std::max(y[i] + s[i % 4], 0.f), 1.f);
      wd[i] = std::min(std::max(y[i] + s[i % 4], -1.f), 0.5f);
    }
    expect_tensor_near<float>(ga, {1, 6, 6, 4}, wa);
    expect_tensor_near<float>(gb, {1, 6, 6, 4}, wb);
    expect_tensor_near<float>(gc, {1, 6, 6, 4}, wc);
    expect_tensor_near<float>(gd, {1, 6, 6, 4}, wd);
  }
}

TEST(FusedConvOp, LayersSharingAGeometryKeepTheirOwnFilters) {
  // Ten filters of one geometry used in turn (more than a primitive keeps
  // packed), one of them rewritten in place: every call must see its filter.
  const Tensor x = wave({1, 7, 7, 16}, 0.3);
  const Tensor x64 = cast(x, DType::kFloat64);
  std::vector<Tensor> filters;
  for (int i = 0; i < 10; ++i) filters.push_back(wave({3, 3, 16, 16}, 0.2 + 0.1 * i, i, 0.3));
  const Tensor bias = wave({16}, 0.9);
  for (int round = 0; round < 3; ++round) {
    if (round == 2) {
      float* p = filters[3].mutable_data<float>();
      for (int64_t i = 0; i < filters[3].num_elements(); ++i) p[i] = -p[i];
    }
    for (size_t i = 0; i < filters.size(); ++i) {
      SCOPED_TRACE(str_cat("round ", round, " filter ", i));
      const Tensor want = conv2d(x64, cast(filters[i], DType::kFloat64), {1, 1}, "SAME");
      const Tensor got = conv2d(x, filters[i], {1, 1}, "SAME");
      expect_tensor_near<float>(got, {1, 7, 7, 16}, cast(want, DType::kFloat32).to_vector<float>(),
                                1e-4);
      const std::vector<Tensor> in = {x, filters[i], bias};
      const Tensor fused = call_op(OpId::FusedConv2D, in, fused_attrs("BiasAdd"))[0];
      const Tensor want_b = cast(bias_add(want, cast(bias, DType::kFloat64)), DType::kFloat32);
      expect_tensor_near<float>(fused, {1, 7, 7, 16}, want_b.to_vector<float>(), 1e-4);
    }
  }
}

TEST(FusedConvOp, Errors) {
  const Tensor x = wave({1, 4, 4, 2}, 0.3), f = wave({3, 3, 2, 3}, 0.5);
  const Tensor c3 = wave({3}, 0.2);
  auto run = [&](std::vector<Tensor> in, Attrs attrs, OpId id = OpId::FusedConv2D) {
    return call_op(id, in, std::move(attrs));
  };
  expect_error(
      [&] {
        run({x, f}, fused_attrs("Relu,Gelu"));
      },
      Code::kInvalidArgument, {"_FusedConv2D", "unknown step 'Gelu'"});
  expect_error(
      [&] {
        run({x, f, c3}, fused_attrs("Relu,"));
      },
      Code::kInvalidArgument, {"unknown step ''"});
  expect_error(
      [&] {
        run({x, f, c3, c3}, fused_attrs("Mul,BiasAdd"));
      },
      Code::kInvalidArgument, {"BiasAdd must be the first step"});
  expect_error(
      [&] {
        run({x, f}, fused_attrs("Clip,Clip"));
      },
      Code::kInvalidArgument, {"at most one Clip"});
  expect_error(
      [&] {
        run({x, f}, fused_attrs("Mul"));
      },
      Code::kInvalidArgument, {"take 1 extra inputs, got 0"});
  expect_error(
      [&] {
        run({x, f, c3, c3}, fused_attrs("Mul"));
      },
      Code::kInvalidArgument, {"take 1 extra inputs, got 2"});
  expect_error(
      [&] {
        run({x, f}, fused_attrs("Clip", 2.0, 1.0));
      },
      Code::kInvalidArgument, {"clip_min 2 must not exceed clip_max 1"});
  expect_error(
      [&] {
        run({x, f, wave({4}, 0.1)}, fused_attrs("Mul"));
      },
      Code::kInvalidArgument, {"args[0] (for Mul)", "expected 1 or 3"});
  expect_error(
      [&] {
        run({x, f, wave({2, 3}, 0.1)}, fused_attrs("Add"));
      },
      Code::kInvalidArgument, {"broadcast along the output channels only"});
  expect_error(
      [&] {
        run({x, f, wave({1, 4, 3, 3}, 0.1)}, fused_attrs("Add"));
      },
      Code::kInvalidArgument, {"args[0] (for Add)", "must have the output's shape [1,4,4,3]"});
  expect_error(
      [&] {
        run({x, f, wave({1, 4, 4, 3}, 0.1)}, fused_attrs("Mul"));
      },
      Code::kInvalidArgument, {"broadcast along the output channels only"});
  expect_error(
      [&] {
        run({x, f, wave({1, 1, 1, 1, 3}, 0.1)}, fused_attrs("Add"));
      },
      Code::kInvalidArgument, {"rank <= 4"});
  expect_error(
      [&] {
        run({x, f, wave({1, 3}, 0.1)}, fused_attrs("BiasAdd"));
      },
      Code::kInvalidArgument, {"must be 1-D"});
  expect_error(
      [&] {
        run({x, f, Tensor(1.f)}, fused_attrs("BiasAdd"));
      },
      Code::kInvalidArgument, {"must be 1-D"});
  expect_error(
      [&] {
        run({x, f, Tensor({1, 2, 3})}, fused_attrs("Mul"));
      },
      Code::kInvalidArgument, {"args[0]", "float32"});
  expect_error(
      [&] {
        run({cast(x, DType::kFloat64), cast(f, DType::kFloat64)}, fused_attrs("Relu"));
      },
      Code::kInvalidArgument, {"float32"});
  expect_error(
      [&] {
        run({x, wave({3, 3, 5, 3}, 0.1)}, fused_attrs("Relu"));
      },
      Code::kInvalidArgument, {"input channels 2 do not match"});
  expect_error(
      [&] {
        run({x, wave({3, 3, 5, 1}, 0.1)}, fused_attrs("Relu"), OpId::FusedDepthwiseConv2D);
      },
      Code::kInvalidArgument, {"_FusedDepthwiseConv2dNative", "do not match filter channels 5"});
  expect_error([&] { run({x}, fused_attrs("Relu")); }, Code::kInvalidArgument,
               {"at least 2 inputs"});
}

}  // namespace
}  // namespace kiln
