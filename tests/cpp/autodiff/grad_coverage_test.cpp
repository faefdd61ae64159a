// Gradient coverage of the op table: every op is either marked kNoGradient,
// has a gradient rule, or is on one of the explicit lists below with the
// reason. A new op without any of these fails here, so gaps are decided on
// purpose rather than found by a user's GradientTape error.
#include <map>
#include <set>
#include <string>

#include "kiln/context.h"
#include "test_util.h"

namespace kiln {
namespace {

// Ops that are not differentiable by design but carry no kNoGradient mark,
// with the reason. (Integer/bool-only ops, shape ops, random and stateful
// ops are marked kNoGradient in the table itself.)
const std::map<std::string, std::string>& not_differentiable_by_design() {
  static const std::map<std::string, std::string> m = {
      // No inputs: nothing to differentiate (the tape never needs its rule).
      {"Const", "no inputs"},
      // Made by the optimizer passes only (fusion in function mode); tapes
      // record the traced, unfused ops, so no gradient path goes through them.
      // Should one ever reach a tape, GradientTape.gradient names it (see
      // FusedOpsOnATapeNameTheOp below).
      {"FusedElementwise", "optimized graphs only"},
      {"_FusedConv2D", "optimized graphs only"},
      {"_FusedDepthwiseConv2dNative", "optimized graphs only"},
      {"_FusedMatMul", "optimized graphs only"},
  };
  return m;
}

// Differentiable ops whose rules are still to come (empty: While and the
// TensorList ops got theirs). Remove an entry when its rule lands: the test
// fails while a listed op has a rule, so this list cannot go stale.
const std::set<std::string>& lead_pending() {
  static const std::set<std::string> s = {};
  return s;
}

TEST(GradCoverage, EveryOpIsDecided) {
  std::vector<std::string> undecided;
  for (const OpDef& d : op_table()) {
    const std::string name = d.type_name;
    SCOPED_TRACE(name);
    const bool no_grad = d.has(kNoGradient), rule = d.grad != nullptr;
    const bool by_design = not_differentiable_by_design().count(name) > 0;
    const bool pending = lead_pending().count(name) > 0;
    EXPECT_FALSE(no_grad && rule) << "marked kNoGradient but has a gradient rule";
    EXPECT_FALSE(by_design && (no_grad || rule))
        << "on the not-differentiable list but also marked or given a rule: remove it";
    EXPECT_FALSE(pending && (no_grad || rule))
        << "on lead_pending but now marked or given a rule: remove it from the list";
    if (!no_grad && !rule && !by_design && !pending) undecided.push_back(name);
  }
  std::string list;
  for (const std::string& n : undecided) list += " " + n;
  EXPECT_TRUE(undecided.empty())
      << "ops with neither a gradient rule, kNoGradient nor a listed reason:" << list;
}

TEST(GradCoverage, ListsNameRealOps) {
  for (const auto& [name, why] : not_differentiable_by_design())
    EXPECT_NE(find_op(name), nullptr) << name << " (" << why << ") is not an op";
  for (const std::string& name : lead_pending())
    EXPECT_NE(find_op(name), nullptr) << name << " is not an op";
}

// The backward ops this table gained carry rules themselves (second order).
TEST(GradCoverage, BackwardOpsHaveRules) {
  for (OpId id :
       {OpId::Conv2D, OpId::DepthwiseConv2D, OpId::MaxPool, OpId::AvgPool, OpId::ReduceProd,
        OpId::Gather, OpId::Conv2DBackpropInput, OpId::Conv2DBackpropFilter,
        OpId::DepthwiseConv2DBackpropInput, OpId::DepthwiseConv2DBackpropFilter, OpId::MaxPoolGrad,
        OpId::MaxPoolGradGrad, OpId::AvgPoolGrad, OpId::UnsortedSegmentSum, OpId::StridedSlice,
        OpId::StridedSliceGrad})
    EXPECT_NE(op_def(id).grad, nullptr) << op_def(id).type_name;
}

// A fused op reaching a tape (it cannot through the public API: fusion runs
// on optimized graphs) is a clear error naming the op, not a crash.
TEST(GradCoverage, FusedOpsOnATapeNameTheOp) {
  Tensor x = reshape(range(0.f, 18.f), {1, 3, 3, 2});
  Tensor f = reshape(range(0.f, 8.f), {1, 1, 2, 4});
  Tensor bias({1.f, 2.f, 3.f, 4.f});
  for (OpId id : {OpId::FusedConv2D, OpId::FusedDepthwiseConv2D}) {
    const char* name = op_def(id).type_name;
    SCOPED_TRACE(name);
    GradientTape tape;
    tape.watch(x);
    Tensor fb = id == OpId::FusedDepthwiseConv2D ? reshape(range(0.f, 4.f), {1, 1, 2, 2}) : f;
    Tensor y = call_op1(id, {x, fb, bias},
                        {std::vector<int64_t>{1, 1}, std::string("VALID"),
                         std::vector<int64_t>{1, 1}, std::string("BiasAdd,Relu")});
    testing::expect_error([&] { tape.gradient(y, x); }, Code::kUnimplemented,
                          {"no gradient is defined for op", name});
  }
}

}  // namespace
}  // namespace kiln
