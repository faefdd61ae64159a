// The fused convolutions' leading affine steps (a batch norm's scale and
// shift) folded into the filter as it is packed, and into the primitive's
// bias: results equal the steps applied after the convolution in every split,
// the folded packing is kept while filter and factors stay, and follows them
// when either changes.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "conv_kernel_test_util.h"
#include "kernels/cpu/conv_util.h"
#include "kiln/config.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln {
namespace {
// A budget of 4 threads (before the pool starts), so the large geometries run
// as row and channel blocks on any machine.
const bool kFourThreads = (config().num_threads = 4, true);
using testing::expect_tensor_near;
using testing::fused_conv_attrs;
using testing::wave;

struct Geo {
  Shape x, f;
  bool depthwise;
};

// Small dense and depthwise (multiplier 2), row blocks, channel blocks (the last
// narrower), one pixel with a 2.4 MB filter, depthwise row blocks.
const std::vector<Geo> kGeos = {
    {{1, 9, 11, 5}, {3, 3, 5, 7}, false},        {{2, 10, 9, 4}, {3, 3, 4, 2}, true},
    {{1, 48, 40, 32}, {3, 3, 32, 32}, false},    {{1, 7, 7, 64}, {3, 3, 64, 200}, false},
    {{2, 1, 1, 1024}, {1, 1, 1024, 600}, false}, {{1, 64, 64, 32}, {3, 3, 32, 1}, true},
};

int64_t out_channels(const Geo& g) {
  return g.depthwise ? g.f.dim(2) * g.f.dim(3) : g.f.dim(3);
}

Tensor conv(const Geo& g, const Tensor& x, const Tensor& f) {
  return g.depthwise ? depthwise_conv2d(x, f, {1, 1}, "SAME") : conv2d(x, f, {1, 1}, "SAME");
}

// The steps of `ops` applied in float64 after the float64 convolution; args are
// [C] or one element.
std::vector<float> reference(const Geo& g, const Tensor& x, const Tensor& f,
                             const std::vector<std::string>& ops, const std::vector<Tensor>& args) {
  const std::vector<double> y =
      conv(g, cast(x, DType::kFloat64), cast(f, DType::kFloat64)).to_vector<double>();
  const int64_t oc = out_channels(g);
  std::vector<std::vector<float>> a;
  for (const Tensor& t : args) a.push_back(t.to_vector<float>());
  std::vector<float> want(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    double v = y[i];
    size_t k = 0;
    for (const std::string& op : ops) {
      const std::vector<float>* arg = op == "Relu" || op == "Swish" ? nullptr : &a[k++];
      const double p = arg ? (*arg)[arg->size() == 1 ? 0 : i % static_cast<size_t>(oc)] : 0.0;
      if (op == "Mul") v *= p;
      if (op == "Add" || op == "BiasAdd") v += p;
      if (op == "Sub") v -= p;
      if (op == "Relu") v = std::max(v, 0.0);
      if (op == "Swish") v = v / (1.0 + std::exp(-v));
    }
    want[i] = static_cast<float>(v);
  }
  return want;
}

std::string joined(const std::vector<std::string>& ops) {
  std::string s;
  for (const std::string& op : ops) s += (s.empty() ? "" : ",") + op;
  return s;
}

Tensor fused(const Geo& g, const Tensor& x, const Tensor& f, const std::vector<std::string>& ops,
             const std::vector<Tensor>& args) {
  std::vector<Tensor> in = {x, f};
  in.insert(in.end(), args.begin(), args.end());
  return call_op(g.depthwise ? OpId::FusedDepthwiseConv2D : OpId::FusedConv2D, in,
                 fused_conv_attrs(joined(ops)))[0];
}

TEST(ConvFold, EveryAffineRunMatchesItsStepsInEverySplit) {
  struct Epilogue {
    std::vector<std::string> ops;
    std::vector<int> scalar;  // per arg: 1 = one element
  };
  const std::vector<Epilogue> kEpilogues = {
      {{"Mul"}, {0}},
      {{"Mul", "Add"}, {0, 0}},
      {{"BiasAdd", "Mul", "Add", "Swish"}, {0, 0, 0}},
      {{"Add", "Mul", "Relu"}, {0, 0}},                       // the shift scaled too
      {{"Sub", "Mul", "Sub"}, {1, 0, 0}},                     // one-element operands
      {{"Mul", "Add", "Mul", "Add", "Swish"}, {0, 0, 1, 0}},  // two batch norms
      {{"BiasAdd", "Add", "Relu"}, {0, 0}},                   // no factor: the adds as one bias
      {{"Mul", "Relu", "Add"}, {0, 0}},                       // the run stops at the activation
  };
  for (const Geo& g : kGeos) {
    const Tensor x = wave(g.x, 0.37), f = wave(g.f, 0.91, 0.3);
    const int64_t oc = out_channels(g);
    for (const Epilogue& e : kEpilogues) {
      SCOPED_TRACE(str_cat(g.x.debug_string(), " ", g.f.debug_string(), " ", joined(e.ops)));
      std::vector<Tensor> args;
      for (size_t k = 0; k < e.scalar.size(); ++k) {
        const Tensor a = e.scalar[k] ? Tensor(0.75f) : wave({oc}, 0.7 + 0.3 * k, 0.1 * k);
        args.push_back(e.ops[k] == "Mul" && !e.scalar[k] ? a + 1.f : a);
      }
      const std::vector<float> want = reference(g, x, f, e.ops, args);
      for (int call = 0; call < 2; ++call)  // packed, then kept
        expect_tensor_near<float>(fused(g, x, f, e.ops, args), conv(g, x, f).shape(), want, 1e-4);
    }
  }
}

// Filters reordered by one call.
int64_t reorders(const std::function<void()>& fn) {
  const int64_t before = cpu::filter_reorders();
  fn();
  return cpu::filter_reorders() - before;
}

TEST(ConvFold, TheFoldedPackingFollowsTheFactorsAndTheFilter) {
  // Direct convolutions: a filter's first settled call under Winograd packs
  // once more (conv_winograd_test covers that).
  testing::ScopedTf32 direct(false);
  for (const Geo& g : {kGeos[0], kGeos[3], kGeos[5]}) {
    SCOPED_TRACE(str_cat(g.x.debug_string(), " ", g.f.debug_string()));
    const Tensor x = wave(g.x, 0.41);
    Tensor f = wave(g.f, 0.83, 0.1);
    const int64_t oc = out_channels(g);
    const std::vector<std::string> ops = {"Mul", "Add"};
    const std::vector<Tensor> a = {wave({oc}, 0.5) + 1.f, wave({oc}, 1.1)};
    const std::vector<Tensor> b = {wave({oc}, 0.9, 1.0) + 1.5f, wave({oc}, 1.1)};
    const Shape out = conv(g, x, f).shape();
    auto check = [&](const std::vector<Tensor>& args) {
      expect_tensor_near<float>(fused(g, x, f, ops, args), out, reference(g, x, f, ops, args),
                                1e-4);
    };
    EXPECT_GT(reorders([&] { check(a); }), 0);
    EXPECT_EQ(reorders([&] { check(a); }), 0);  // kept: same filter, same factors
    // A batch norm's new statistics (equal values in a new tensor hit; new values pack).
    EXPECT_EQ(reorders([&] { check({a[0] + 0.f, a[1]}); }), 0);
    EXPECT_GT(reorders([&] { check(b); }), 0);
    EXPECT_EQ(reorders([&] { check(b); }), 0);
    check(a);
    // The filter rewritten in place (a new version): packed again.
    float* p = f.mutable_data<float>();
    for (int64_t i = 0; i < f.num_elements(); ++i) p[i] = -0.5f * p[i];
    EXPECT_GT(reorders([&] { check(a); }), 0);
    EXPECT_EQ(reorders([&] { check(a); }), 0);
  }
}

// One filter read by two fused convolutions whose folded forms share a primitive
// (a bias step), one with factors and one without: each keeps its packing.
TEST(ConvFold, OneFilterWithAndWithoutFactorsKeepsBothPackings) {
  // Direct convolutions: a filter's first settled call under Winograd packs
  // once more (conv_winograd_test covers that).
  testing::ScopedTf32 direct(false);
  const Geo& g = kGeos[2];
  const Tensor x = wave(g.x, 0.29), f = wave(g.f, 0.61);
  const Tensor bias = wave({32}, 1.3);
  const std::vector<Tensor> args = {wave({32}, 0.5) + 1.f, bias};
  const std::vector<std::string> ops = {"Mul", "Add"};
  const std::vector<float> want_bias = reference(g, x, f, {"BiasAdd"}, {bias});
  const std::vector<float> want_folded = reference(g, x, f, ops, args);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(str_cat("round ", round));
    const int64_t n = reorders([&] {
      expect_tensor_near<float>(fused(g, x, f, {"BiasAdd"}, {bias}), g.x, want_bias, 1e-4);
      expect_tensor_near<float>(fused(g, x, f, ops, args), g.x, want_folded, 1e-4);
    });
    if (round > 0) {
      EXPECT_EQ(n, 0);
    }
  }
}

}  // namespace
}  // namespace kiln
