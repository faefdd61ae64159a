// jit_compile end to end: clusters become compiled kernels whose results match
// graph mode; the compiler IR stages; the unsupported-op error; no compiler.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "function/subgraph.h"
#include "jit/build/toolchain.h"
#include "jit/fusion/cluster.h"
#include "jit_test_util.h"
#include "kiln/context.h"
#include "kiln/control_flow.h"
#include "kiln/function.h"
#include "kiln/gradient_tape.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln::jit {
namespace {
using kiln::testing::expect_error;
using testing::check_all_modes;
using testing::expect_same;
using testing::make;
using testing::random_tensor;
using testing::ScopedEnv;
using testing::TempDir;

TEST(Jit, FloatChainMatchesGraphModeAndShowsItsStages) {
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value(tanh(x) * 0.5f + exp(x - 1.f) / (x * x + 1.f));
  };
  const Tensor x = random_tensor(DType::kFloat32, Shape({37, 129}), 1);
  check_all_modes(body, {Value(x)});
  Function j = make(body, true);
  auto cf = j.get_concrete_function({Value(x)});
  EXPECT_EQ(cf->jit_kernels(), 1u);
  EXPECT_NE(cf->compiler_ir("hlo").find("Tanh"), std::string::npos) << cf->compiler_ir("hlo");
  EXPECT_NE(cf->compiler_ir("optimized_hlo").find("kernel kiln_jit_k0"), std::string::npos);
  EXPECT_NE(cf->compiler_ir("source").find("kiln::fn::Tanh{}"), std::string::npos);
  EXPECT_EQ(cf->compiler_ir("source").find("#include <cmath>"), std::string::npos);
  expect_error([&] { cf->compiler_ir("llvm"); }, Code::kInvalidArgument,
               {"unknown stage 'llvm'", "'hlo', 'optimized_hlo', 'source'"});
  auto plain = make(body, false).get_concrete_function({Value(x)});
  expect_error([&] { plain->compiler_ir("hlo"); }, Code::kInvalidArgument, {"jit_compile=True"});
}

TEST(Jit, CharUnpackIntegerChainIsOneKernel) {
  // seed 000: expand_dims, right_shift, bitwise_and, reshape, cast.
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor shifts = Tensor({7, 6, 5, 4, 3, 2, 1, 0});
    const Tensor bits =
        bitwise_and(right_shift(expand_dims(cast(x, DType::kInt32), -1), shifts), 1);
    return Value(cast(reshape(bits, {-1, 3200}), DType::kFloat32));
  };
  const Tensor x = cast(random_tensor(DType::kFloat32, Shape({64, 400}), 2) * 40.f, DType::kUInt8);
  check_all_modes(body, {Value(x)});
}

// Reshapes between ops relabel the cluster into their input's shape; a
// full-size operand read before a reshape (in the reshape's output shape)
// is read through a Reshape to the kernel's space: the same flat index. A
// broadcast operand there ends the cluster (its points would move).
TEST(Jit, ReshapesWithFullSizeOperandsAreOneKernel) {
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor t = reshape(exp(x) * 2.f, Shape({6, 4})) + a[1].tensor();
    return Value(reshape(t * a[1].tensor() - 1.f, Shape({24})) + a[2].tensor());
  };
  const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, Shape({2, 3, 4}), 1)),
                                   Value(random_tensor(DType::kFloat32, Shape({6, 4}), 2)),
                                   Value(random_tensor(DType::kFloat32, Shape({24}), 3))};
  check_all_modes(body, args);
  Function j = make(body, true);
  const auto cf = j.get_concrete_function(args);
  EXPECT_EQ(cf->jit_kernels(), 1u) << cf->compiler_ir("hlo");
  const std::string hlo = cf->compiler_ir("hlo");
  EXPECT_NE(hlo.find("kernel kiln_jit_k0 over [2,3,4]"), std::string::npos) << hlo;
  EXPECT_NE(hlo.find("jit_reshape"), std::string::npos) << hlo;
  // An operand of higher rank than the relabelled space (a gradient's
  // expanded dims): reshaped down to it.
  auto higher = [](const std::vector<Value>& a) {
    return Value(expand_dims(exp(a[0].tensor()) * 2.f, -1) + a[1].tensor());
  };
  const std::vector<Value> deep = {Value(random_tensor(DType::kFloat32, Shape({6, 4}), 5)),
                                   Value(random_tensor(DType::kFloat32, Shape({6, 4, 1}), 6))};
  check_all_modes(higher, deep);
  EXPECT_EQ(make(higher, true).get_concrete_function(deep)->jit_kernels(), 1u);
  // A row broadcast along the reshaped dims: no relabelling (the add is a
  // kernel call after the [2, 3, 4] kernel), still right.
  auto broadcast = [](const std::vector<Value>& a) {
    return Value(reshape(exp(a[0].tensor()) * 2.f, Shape({6, 4})) + a[1].tensor());
  };
  const std::vector<Value> row = {args[0], Value(random_tensor(DType::kFloat32, Shape({4}), 4))};
  check_all_modes(broadcast, row);
  const std::string other = make(broadcast, true).get_concrete_function(row)->compiler_ir("hlo");
  EXPECT_EQ(other.find("AddV2"), std::string::npos) << other;
  EXPECT_EQ(other.find("jit_reshape"), std::string::npos) << other;
}

TEST(Jit, BroadcastingEveryWay) {
  auto body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &y = a[1].tensor();
    return Value(maximum(x * y, 0.25f) - x);
  };
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {Shape({5, 1}), Shape({1, 7})},      {Shape({5, 7}), Shape({7})},
      {Shape({3, 1, 4}), Shape({2, 1})},   {Shape({}), Shape({6})},
      {Shape({0, 3}), Shape({3})},         {Shape({1}), Shape({1})},
      {Shape({4, 1, 1}), Shape({1, 1, 1})}};
  uint32_t seed = 10;
  for (const auto& [sx, sy] : shapes) {
    SCOPED_TRACE(str_cat(sx, " x ", sy));
    check_all_modes(body, {Value(random_tensor(DType::kFloat32, sx, seed++)),
                           Value(random_tensor(DType::kFloat32, sy, seed++))});
  }
}

TEST(Jit, ShortRowsRunAsBlocksOfRows) {
  // Rows of at most 16 points run a block of rows per loop when every
  // input's row stride is the one static dims predict: per-row values,
  // repeated rows, full rows, values of the whole block, and several slabs;
  // rows split over threads mid-slab; unknown dims whose run-time strides
  // differ take the row-by-row loop.
  auto body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &y = a[1].tensor(), &z = a[2].tensor();
    return Value(cast(bitwise_and(right_shift(x, y), 3), DType::kFloat32) * z + 0.5f);
  };
  struct Case {
    Shape x, y, z;
  };
  const std::vector<Case> cases = {
      {Shape({300, 1}), Shape({8}), Shape({1})},               // CharUnpack's layout
      {Shape({7, 1}), Shape({1, 3}), Shape({7, 3})},           // a full-size third input
      {Shape({4, 50, 1}), Shape({50, 16}), Shape({4, 1, 1})},  // slabs; y's rows advance
      {Shape({100003, 1}), Shape({5}), Shape({1})},            // split over threads
      {Shape({9, 1}), Shape({1}), Shape({9, 1})},              // one point per row
      {Shape({0, 1}), Shape({8}), Shape({1})}};
  uint32_t seed = 70;
  for (const Case& c : cases) {
    SCOPED_TRACE(str_cat(c.x, " ", c.y, " ", c.z));
    const Tensor x = cast(random_tensor(DType::kFloat32, c.x, seed++) * 100.f, DType::kInt32);
    const Tensor y = cast(abs(random_tensor(DType::kFloat32, c.y, seed++)) * 9.f, DType::kInt32);
    check_all_modes(body, {Value(x), Value(y), Value(random_tensor(DType::kFloat32, c.z, seed++))});
  }
  const std::vector<Value> args = {
      Value(cast(random_tensor(DType::kFloat32, Shape({64, 1}), 1) * 50.f, DType::kInt32)),
      Value(Tensor({7, 6, 5, 4, 3, 2, 1, 0})), Value(Tensor(2.f))};
  const std::string src = make(body, true).get_concrete_function(args)->compiler_ir("source");
  EXPECT_NE(src.find("#pragma GCC unroll 8"), std::string::npos) << src;
  // Unknown rows: x [?, 1] and y [?, 8] at trace time, y with one row at run
  // time (its row stride is then 0, not the predicted 8).
  const std::vector<ArgSpec> sig = {{DType::kInt32, Shape({-1, 1}), "x"},
                                    {DType::kInt32, Shape({-1, 8}), "y"},
                                    {DType::kFloat32, Shape({}), "z"}};
  Function j = make(body, true, sig);
  for (int64_t ry : {1, 6}) {
    const std::vector<Value> a = {
        Value(cast(random_tensor(DType::kFloat32, Shape({6, 1}), 3) * 50.f, DType::kInt32)),
        Value(cast(abs(random_tensor(DType::kFloat32, Shape({ry, 8}), 4)) * 9.f, DType::kInt32)),
        Value(Tensor(1.5f))};
    expect_same(j(a).tensor(), body(a).tensor());
  }
  EXPECT_EQ(j.tracing_count(), 1);
}

TEST(Jit, UnknownDimsNeverRecompileAndHandleSizeOneAtRunTime) {
  auto body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &y = a[1].tensor();
    return Value(sigmoid(x + y) * 2.f);
  };
  const std::vector<ArgSpec> sig = {{DType::kFloat32, Shape({-1, 8}), "x"},
                                    {DType::kFloat32, Shape({-1, 8}), "y"}};
  Function j = make(body, true, sig);
  uint32_t seed = 40;
  for (auto [n, m] : std::vector<std::pair<int64_t, int64_t>>{{3, 3}, {100, 100}, {1, 9}, {5, 1}}) {
    const Tensor x = random_tensor(DType::kFloat32, Shape({n, 8}), seed++);
    const Tensor y = random_tensor(DType::kFloat32, Shape({m, 8}), seed++);
    expect_same(j({Value(x), Value(y)}).tensor(), body({Value(x), Value(y)}).tensor());
  }
  EXPECT_EQ(j.tracing_count(), 1);
}

// A node keeps the layout of its last call while its input shapes repeat
// (the runtime's per-thread cache); every new shape, a shape seen before,
// an output smaller than the space and a view's start are rebuilt from the
// shapes of the call at hand.
TEST(Jit, RepeatedShapesReuseTheLayoutAndNewShapesRebuildIt) {
  auto body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &y = a[1].tensor();
    const Tensor e = exp(x) * 0.5f;
    return Value::list({Value(e * y + 1.f), Value(e), Value(slice(y, {1, 0}, {-1, -1}) * 3.f)});
  };
  const std::vector<ArgSpec> sig = {{DType::kFloat32, Shape({-1, -1}), "x"},
                                    {DType::kFloat32, Shape({-1, -1}), "y"}};
  Function j = make(body, true, sig);
  using Dims = std::vector<int64_t>;
  uint32_t seed = 90;
  for (auto [xd, yd] : std::vector<std::pair<Dims, Dims>>{{{4, 5}, {4, 5}},
                                                          {{4, 5}, {4, 5}},
                                                          {{1, 5}, {4, 5}},
                                                          {{1, 5}, {4, 5}},
                                                          {{4, 1}, {4, 5}},
                                                          {{4, 5}, {4, 5}},
                                                          {{7, 3}, {7, 3}},
                                                          {{7, 3}, {7, 3}},
                                                          {{0, 3}, {1, 3}},
                                                          {{4, 5}, {4, 5}}}) {
    SCOPED_TRACE(Shape(xd));
    SCOPED_TRACE(Shape(yd));
    const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, Shape(xd), seed++)),
                                     Value(random_tensor(DType::kFloat32, Shape(yd), seed++))};
    const Value got = j(args), want = body(args);
    for (size_t i = 0; i < 3; ++i) expect_same(got.items()[i].tensor(), want.items()[i].tensor());
  }
  EXPECT_EQ(j.tracing_count(), 1);
}

TEST(Jit, KernelsOfOneCodeAreCompiledOnceAndAliased) {
  // A model's repeated blocks: two identical chains around a convolution (which
  // stops the JIT) are two kernels of one code; the second is an alias of the
  // first in the source, and each still runs on its own operands. (Each chain
  // reads its input twice: no oneDNN post-op takes it into the convolution.)
  const Tensor w = random_tensor(DType::kFloat32, Shape({3, 3, 4, 4}), 2);
  auto body = [&](const std::vector<Value>& a) {
    const Tensor y = tanh(a[0].tensor()) * 0.5f + a[0].tensor();
    const Tensor z = conv2d(y, w, {1, 1}, "SAME");
    return Value(tanh(z) * 0.5f + z);
  };
  const Tensor x = random_tensor(DType::kFloat32, Shape({1, 8, 8, 4}), 1);
  check_all_modes(body, {Value(x)}, 2);
  auto cf = make(body, true).get_concrete_function({Value(x)});
  const std::string src = cf->compiler_ir("source");
  ASSERT_EQ(cf->jit_kernels(), 2u) << src;
  EXPECT_NE(src.find("alias(\"kiln_jit_k0\")"), std::string::npos) << src;
  EXPECT_EQ(src.find("KILN_JIT_EXPORT void kiln_jit_k1("), std::string::npos) << src;
  // A chain of another code keeps its own body.
  auto other = [&](const std::vector<Value>& a) {
    const Tensor z = conv2d(tanh(a[0].tensor()) * 0.5f + 1.f, w, {1, 1}, "SAME");
    return Value(exp(z) - 1.f);
  };
  check_all_modes(other, {Value(x)}, 2);
  const std::string src2 =
      make(other, true).get_concrete_function({Value(x)})->compiler_ir("source");
  EXPECT_EQ(src2.find("alias("), std::string::npos) << src2;
}

TEST(Jit, SeveralOutputsAndAnOutputSmallerThanTheKernel) {
  // exp(x) is used inside the cluster and returned; with x [?] and y [?],
  // x of size 1 makes exp(x) smaller than the kernel's iteration space.
  auto body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &y = a[1].tensor();
    const Tensor e = exp(x);
    return Value::list({Value(e * y + e), Value(e)});
  };
  const std::vector<ArgSpec> sig = {{DType::kFloat32, Shape({-1}), "x"},
                                    {DType::kFloat32, Shape({-1}), "y"}};
  Function j = make(body, true, sig);
  for (int64_t nx : {1, 6}) {
    const Tensor x = random_tensor(DType::kFloat32, Shape({nx}), 7);
    const Tensor y = random_tensor(DType::kFloat32, Shape({6}), 8);
    const Value got = j({Value(x), Value(y)}), want = body({Value(x), Value(y)});
    expect_same(got.items()[0].tensor(), want.items()[0].tensor());
    expect_same(got.items()[1].tensor(), want.items()[1].tensor());
  }
}

TEST(Jit, UnsupportedOpsAreNamedAtTheFirstCall) {
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    print({x});
    return Value(as_string(x));
  };
  Function j = make(body, true);
  expect_error(
      [&] {
        j({Value(Tensor({1.f, 2.f}))});
      },
      Code::kInvalidArgument,
      {"Detected unsupported operations", "jit_compile=True", "PrintV2", "AsString"});
}

TEST(Jit, WhileAndCondBodiesCompileAndTheirUnsupportedOpsAreNamed) {
  // seed 001's loop: the body's tanh * 1.5 + 0.1 is one compiled kernel.
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const std::vector<Tensor> r =
        while_loop([](const std::vector<Tensor>& v) { return less(v[0], 3); },
                   [](const std::vector<Tensor>& v) {
                     return std::vector<Tensor>{v[0] + 1, tanh(v[1]) * 1.5f + 0.1f};
                   },
                   {Tensor(0), x});
    return Value(cond(
        greater(reduce_sum(r[1]), 0.f), [&] { return std::vector<Tensor>{r[1] * 2.f - 1.f}; },
        [&] { return std::vector<Tensor>{-r[1]}; })[0]);
  };
  const Tensor x = random_tensor(DType::kFloat32, Shape({12}), 50);
  Function j = make(body, true), g = make(body, false);
  expect_same(j({Value(x)}).tensor(), g({Value(x)}).tensor());
  expect_same(j({Value(-x)}).tensor(), g({Value(-x)}).tensor());
  // The loop body and the true branch each hold a kernel; the compiler IR
  // shows their modules after the function's own.
  const auto cf = j.get_concrete_function({Value(x)});
  EXPECT_GE(cf->jit_kernels(), 2u);
  const std::string src = cf->compiler_ir("source");
  EXPECT_NE(src.find("// ---- body '"), std::string::npos) << src;
  EXPECT_NE(src.find("kiln::fn::Tanh{}"), std::string::npos);
  EXPECT_EQ(g.get_concrete_function({Value(x)})->jit_kernels(), 0u);

  auto printing = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value(cond(
        greater(reduce_sum(x), 0.f),
        [&] {
          print({x});
          return std::vector<Tensor>{x * 2.f};
        },
        [&] { return std::vector<Tensor>{x}; })[0]);
  };
  Function p = make(printing, true);
  expect_error([&] { p({Value(x)}); }, Code::kInvalidArgument,
               {"Detected unsupported operations", "PrintV2"});
}

// The gradient of a jit function compiles as the function does: called eagerly
// under a tape, the forward that keeps residuals and the backward that reads
// them are compiled kernels (they ran in graph mode before); inside a trace,
// the recomputing backward too. Gradients match graph mode's.
TEST(Jit, GradientsOfAJitFunctionAreCompiledToo) {
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value(exp(tanh(x) * x) * 0.5f + x * x);
  };
  const Tensor x = random_tensor(DType::kFloat32, Shape({9, 33}), 60);
  Function j = make(body, true), g = make(body, false);
  auto grad_of = [&](Function& f) {
    GradientTape tape;
    tape.watch(x);
    const Tensor y = f({Value(x)}).tensor();
    return tape.gradient(reduce_sum(y), x);
  };
  expect_same(grad_of(j), grad_of(g));
  auto kernels = [](const Ref<Subgraph>& s) {
    const auto* gs = dynamic_cast<const detail::GraphSubgraph*>(s.get());
    return gs ? gs->jit_kernels() : size_t{0};
  };
  for (bool jit : {true, false}) {
    Function& f = jit ? j : g;
    const auto fs = Ref<detail::FunctionSubgraph>::adopt(
        new detail::FunctionSubgraph(f.get_concrete_function({Value(x)})));
    const detail::Residuals* r = fs->residuals();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->forward->jit_kernels() > 0, jit);
    EXPECT_EQ(kernels(r->backward.graph) > 0, jit);
    EXPECT_EQ(kernels(fs->backward().graph) > 0, jit);
  }
  // A traced step differentiating the jit call: same values as graph mode.
  auto step = [&](Function& f) {
    return make(
        [&f](const std::vector<Value>& a) {
          GradientTape tape;
          tape.watch(a[0].tensor());
          const Tensor y = f({a[0]}).tensor();
          return Value(tape.gradient(reduce_sum(y), a[0].tensor()));
        },
        false);
  };
  Function sj = step(j), sg = step(g);
  expect_same(sj({Value(x)}).tensor(), sg({Value(x)}).tensor());
}

TEST(Jit, NoCompilerWarnsAndStillRunsCorrectly) {
  ScopedEnv cxx("KILN_CXX", std::string("/nonexistent/c++"));
  reset_toolchain_for_tests();
  std::vector<std::string> warnings;
  set_warning_handler([&](const std::string& cat, const std::string& msg) {
    if (cat == "JitWarning") warnings.push_back(msg);
  });
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value(x * 3.f + 1.f);
  };
  Function j = make(body, true);
  const Tensor x = random_tensor(DType::kFloat32, Shape({2, 3}), 5);
  expect_same(j({Value(x)}).tensor(), body({Value(x)}).tensor());
  EXPECT_EQ(j.get_concrete_function({Value(x)})->jit_kernels(), 0u);
  set_warning_handler(nullptr);
  reset_toolchain_for_tests();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("no C++ compiler"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("KILN_CXX"), std::string::npos);
}

// compile_jit's stages: each one's graph written to KILN_JIT_DUMP_DIR in
// order (the kernels after form_clusters, then the source); an optional
// stage switched off by KILN_JIT_DISABLE changes the kernels, not the
// results; a name that is not an optional stage is an error naming them.
TEST(Jit, StagesAreDumpedInOrderAndSwitchable) {
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value(transpose(tanh(x) * 2.f, {1, 0}) + 1.f);
  };
  const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, Shape({8, 16}), 3))};
  TempDir dump;
  {
    ScopedEnv d("KILN_JIT_DUMP_DIR", dump.path().string());
    check_all_modes(body, args);
  }
  std::vector<std::string> steps;
  for (const auto& e : std::filesystem::directory_iterator(dump.path())) {
    const std::string n = e.path().filename().string();
    steps.push_back(n.substr(n.find('.') + 1));
  }
  std::sort(steps.begin(), steps.end());
  EXPECT_EQ(steps, (std::vector<std::string>{"00-input.txt", "01-split_reductions.txt",
                                             "02-sink_views.txt", "03-form_clusters.txt",
                                             "04-fold_reductions.txt", "05-rejoin_parts.txt",
                                             "06-prune.txt", "source.txt"}));
  for (const auto& e : std::filesystem::directory_iterator(dump.path())) {
    const std::string text = kiln::testing::read_bytes(e.path());
    if (e.path().string().ends_with("03-form_clusters.txt"))
      EXPECT_NE(text.find("kernel kiln_jit_k0"), std::string::npos) << text;
    if (e.path().string().ends_with("00-input.txt"))
      EXPECT_NE(text.find("Transpose"), std::string::npos) << text;
  }
  size_t with_sinking = 0;
  {
    Function j = make(body, true);
    with_sinking = j.get_concrete_function(args)->jit_kernels();
  }
  {
    ScopedEnv off("KILN_JIT_DISABLE", "sink_views,fold_reductions");
    Function g = make(body, false), j = make(body, true);
    expect_same(j(args).tensor(), g(args).tensor());
    EXPECT_GT(j.get_concrete_function(args)->jit_kernels(), with_sinking);
  }
  for (const char* bad : {"sink_view", "form_clusters"}) {
    ScopedEnv off("KILN_JIT_DISABLE", bad);
    Function j = make(body, true);
    expect_error([&] { j(args); }, Code::kInvalidArgument,
                 {"KILN_JIT_DISABLE names", bad, "split_reductions, sink_views, fold_reductions"});
  }
}

TEST(Jit, OptimizeKernelMergesAndDropsInstructions) {
  Kernel k = testing::one_input_kernel("t", DType::kFloat32, 4);
  const Instr e = testing::instr(Instr::kApply, DType::kFloat32, 0, OpId::Exp);
  k.body = {testing::instr(Instr::kLoad, DType::kFloat32, 0), e, e,
            testing::instr(Instr::kApply, DType::kFloat32, 1, OpId::Add, 2),
            testing::instr(Instr::kApply, DType::kFloat32, 0, OpId::Log)};
  k.outputs = {3};
  const Kernel o = optimize_kernel(k);
  ASSERT_EQ(o.body.size(), 3u) << o.to_string();
  EXPECT_EQ(o.body[2].a, 1);
  EXPECT_EQ(o.body[2].b, 1);
  EXPECT_EQ(o.problem(), "");
  Kernel bad = o;
  bad.input_dims.push_back({4});  // an input count that does not match
  EXPECT_EQ(bad.problem(), "dims");
  bad = o;
  bad.body[1].a = 2;  // reads a value made after it
  EXPECT_EQ(bad.problem(), "instruction 1 refers forward");
}

// The table test: every row with a lowering, for every dtype it accepts, jit
// vs eager on broadcasting, size-0 and size-1 shapes. One function per dtype
// holds every op (one compile per dtype).
Tensor values(DType dt, const Shape& s, uint32_t seed, bool positive) {
  if (dt == DType::kBool) return random_tensor(DType::kFloat32, s, seed) > 0.f;
  if (is_complex(dt)) {  // a real part >= 1 when positive (a divisor)
    const DType part = dt == DType::kComplex64 ? DType::kFloat32 : DType::kFloat64;
    return complex(values(part, s, seed, positive), values(part, s, seed + 7, false));
  }
  Tensor f = random_tensor(DType::kFloat32, s, seed);
  if (!is_floating(dt)) f = round(f);
  if (positive) f = abs(f) + 1.f;  // integer divisors and exponents stay valid
  return cast(f, dt);
}

std::vector<Tensor> apply_ops_once(const std::vector<const OpDef*>& ops, const Tensor& x,
                                   const Tensor& y, const Tensor& c);

std::vector<Tensor> apply_ops(const std::vector<const OpDef*>& ops, const Tensor& x,
                              const Tensor& y, const Tensor& c) {
  // Each result then goes through where(c, r, r) (== r): two ops, one kernel.
  std::vector<Tensor> out = apply_ops_once(ops, x, y, c);
  for (Tensor& t : out) t = where(c, t, t);
  return out;
}

std::vector<Tensor> apply_ops_once(const std::vector<const OpDef*>& ops, const Tensor& x,
                                   const Tensor& y, const Tensor& c) {
  std::vector<Tensor> out;
  for (const OpDef* op : ops) {
    if (op->id == OpId::Cast) {
      for (DType to : {DType::kBool, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat32,
                       DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kComplex64,
                       DType::kComplex128})
        out.push_back(cast(x, to));
    } else if (op->id == OpId::Select) {
      out.push_back(where(c, x, y));
    } else if (op->inputs.size() == 3) {
      out.push_back(call_op1(op->id, {x, cast(Tensor(-1), x.dtype()), cast(Tensor(2), x.dtype())}));
    } else {
      out.push_back(op->inputs.size() == 1 ? call_op1(op->id, {x}) : call_op1(op->id, {x, y}));
    }
  }
  return out;
}

TEST(Jit, EveryLoweredOpOnEveryDtypeMatchesEager) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{Shape({5, 3}), Shape({5, 3})},
                                                       {Shape({4, 1}), Shape({1, 3})},
                                                       {Shape({0, 3}), Shape({1, 3})},
                                                       {Shape({1, 1}), Shape({1, 1})}};
  for (DType dt : {DType::kBool, DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64,
                   DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                   DType::kComplex64, DType::kComplex128}) {
    SCOPED_TRACE(dtype_name(dt));
    // The rows that accept this dtype (their eager call succeeds).
    std::vector<const OpDef*> ops;
    const Tensor px = values(dt, Shape({2}), 1, false), py = values(dt, Shape({2}), 2, true);
    const Tensor pc = values(DType::kBool, Shape({2}), 3, false);
    for (const OpDef& op : op_table()) {
      // Reductions and softmax have their own table test (jit_rows_test.cpp).
      if (!op.jit_lower || op.has(kGraphOnly) || op.id == OpId::BiasAdd ||
          !(op.has(kElementwise) || op.jit_lower == lower_identity))
        continue;
      try {
        apply_ops({&op}, px, py, pc);
        ops.push_back(&op);
      } catch (const InvalidArgumentError&) {
      }
    }
    ASSERT_FALSE(ops.empty());
    auto body = [&](const std::vector<Value>& a) {
      std::vector<Value> out;
      for (const Tensor& t : apply_ops(ops, a[0].tensor(), a[1].tensor(), a[2].tensor()))
        out.push_back(Value(t));
      return Value::list(std::move(out));
    };
    const std::vector<ArgSpec> sig = {{dt, Shape({-1, -1}), "x"},
                                      {dt, Shape({-1, -1}), "y"},
                                      {DType::kBool, Shape({-1, -1}), "c"}};
    Function j = make(body, true, sig);
    uint32_t seed = 100;
    for (const auto& [sx, sy] : shapes) {
      SCOPED_TRACE(str_cat(sx, " x ", sy));
      const std::vector<Value> args = {Value(values(dt, sx, seed, false)),
                                       Value(values(dt, sy, seed + 1, true)),
                                       Value(values(DType::kBool, sy, seed + 2, false))};
      seed += 3;
      const Value got = j(args), want = body(args);
      // Every op runs inside a kernel (siblings reading x and y share one).
      EXPECT_GE(j.get_concrete_function(args)->jit_kernels(), 1u);
      for (const OpDef* op : ops) {
        if (op->jit_lower != lower_identity) {
          EXPECT_EQ(testing::nodes_of(j, args, op->id), 0u) << op->type_name;
        }
      }
      ASSERT_EQ(got.items().size(), want.items().size());
      for (size_t i = 0; i < got.items().size(); ++i) {
        SCOPED_TRACE(str_cat("result ", i));
        expect_same(got.items()[i].tensor(), want.items()[i].tensor());
      }
    }
    EXPECT_EQ(j.tracing_count(), 1);
  }
}

// float16/bfloat16: their rows compute in float32, so traced graphs hold a
// cast on each side of every op; a kernel loads the 16-bit bits, converts,
// computes and rounds once per op as the graph does, and stores the bits.
size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Without excess precision, kernels round after every op, as graph mode does.
TEST(Jit, HalfChainsRoundOncePerOpLikeGraphMode) {
  const testing::ScopedExcessPrecision strict(false);
  const float inf = std::numeric_limits<float>::infinity();
  // Subnormal halves, ties, the largest half, inf, NaN, -0.
  const std::vector<float> edge = {
      0.f, -0.f, 5.96e-8f,      6.1e-5f,        2049.f,   2051.f, 65504.f, -65520.f,
      inf, -inf, std::nanf(""), 1.00048828125f, 0.33333f, -7.5f,  1e-3f,   100.25f};
  const Tensor e32 = Tensor::from_vector(edge, Shape({4, 4}));
  const Tensor big =
      cast(random_tensor(DType::kFloat32, Shape({33, 130}), 61) * 300.f, DType::kFloat64);
  for (DType h : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(h));
    auto body = [h](const std::vector<Value>& a) {
      const Tensor x = cast(a[0].tensor(), h), w = cast(a[1].tensor(), h);
      const Tensor y = tanh(x * w + cast(Tensor(0.5f), h)) * x;  // every op rounds to h
      return Value::list({Value(relu(y - w)), Value(cast(y, DType::kInt32)),
                          Value(cast(y, DType::kUInt8)), Value(cast(x, DType::kBool)),
                          Value(cast(x, h == DType::kFloat16 ? DType::kBFloat16 : DType::kFloat16)),
                          Value(cast(y, DType::kFloat64) * 3.0),
                          Value(a[2].tensor() * w)});  // a half input, loaded as it is
    };
    for (const Tensor& x : {e32, cast(big, DType::kFloat32)}) {
      const std::vector<Value> args = {Value(cast(x, DType::kFloat64)), Value(x * 0.75f + 1.f),
                                       Value(cast(x, h))};
      Function j = make(body, true), g = make(body, false);
      const Value got = j(args), want = g(args);
      for (size_t i = 0; i < 7; ++i) {
        SCOPED_TRACE(i);
        expect_same(got.items()[i].tensor(), want.items()[i].tensor());  // bits for halves
      }
      const auto cf = j.get_concrete_function(args);
      EXPECT_LE(cf->jit_kernels(), 3u) << cf->compiler_ir("optimized_hlo");
      const std::string src = cf->compiler_ir("source");
      EXPECT_NE(src.find(h == DType::kFloat16 ? "f32_to_f16(" : "f32_to_bf16("), std::string::npos);
      EXPECT_NE(cf->compiler_ir("hlo").find(str_cat(dtype_name(h), " load")), std::string::npos);
    }
  }
}

// Excess precision (the default, XLA's): inside a kernel a half chain keeps
// float32 between its ops (the input's own cast to half included) and rounds
// once where a value leaves the kernel: closer to float64 than graph mode, with
// fewer conversions.
TEST(Jit, HalfChainsKeepExcessPrecisionInsideAKernel) {
  const Tensor x32 = random_tensor(DType::kFloat32, Shape({33, 130}), 71) * 3.f;
  for (DType h : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(h));
    auto body = [h](const std::vector<Value>& a) {
      const Tensor x = cast(a[0].tensor(), h);
      return Value(tanh(x * x + cast(Tensor(0.5f), h)) * x);
    };
    const std::vector<Value> args = {Value(x32)};
    Function j = make(body, true), g = make(body, false);
    const std::vector<float> got = cast(j(args).tensor(), DType::kFloat32).to_vector<float>();
    const std::vector<float> graph = cast(g(args).tensor(), DType::kFloat32).to_vector<float>();
    // The cast of the input is a round trip inside the kernel too (as in XLA).
    const Tensor x64 = cast(x32, DType::kFloat64);
    const std::vector<double> ref = (tanh(x64 * x64 + 0.5) * x64).to_vector<double>();
    const double ulp = h == DType::kBFloat16 ? 0x1p-7 : 0x1p-10;
    double err_jit = 0, err_graph = 0;
    size_t differ = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      // Rounded once: within one ulp of float64 (the float32 chain's error is far smaller).
      EXPECT_NEAR(got[i], ref[i], ulp * std::fabs(ref[i]) + 1e-30) << i;
      err_jit += std::fabs(got[i] - ref[i]);
      err_graph += std::fabs(graph[i] - ref[i]);
      differ += got[i] != graph[i];
    }
    EXPECT_LT(err_jit, err_graph);
    EXPECT_GT(differ, 0u);
    const std::string fast = j.get_concrete_function(args)->compiler_ir("source");
    std::string strict;
    {
      const testing::ScopedExcessPrecision off(false);
      strict = make(body, true).get_concrete_function(args)->compiler_ir("source");
    }
    const std::string to_half = h == DType::kBFloat16 ? "f32_to_bf16(" : "f32_to_f16(";
    EXPECT_LT(count_of(fast, to_half), count_of(strict, to_half));
  }
}

TEST(Jit, ArithmeticOnHalfValuesIsMalformedIr) {
  // A kernel may only load, cast and store 16-bit floats.
  Kernel k = testing::one_input_kernel("h", DType::kFloat16, 4);
  k.body = {testing::instr(Instr::kLoad, DType::kFloat16, 0),
            testing::instr(Instr::kCast, DType::kFloat32, 0)};
  k.outputs = {1};
  EXPECT_EQ(k.problem(), "");
  k.body.push_back(testing::instr(Instr::kApply, DType::kFloat16, 0, OpId::Neg));
  k.outputs = {2};
  EXPECT_EQ(k.problem(), "arithmetic on a 16-bit float");
  k.body[2] = testing::instr(Instr::kApply, DType::kFloat32, 0, OpId::Neg);  // reads a half
  EXPECT_EQ(k.problem(), "arithmetic on a 16-bit float");
}

// Complex values are GCC's __complex__ float/double in generated code: a
// chain of arithmetic, parts, casts and a broadcast is one kernel, with inf
// and NaN parts (the multiply's and divide's slow paths), and complex inputs
// read transposed in tiles (8- and 16-byte values copied out per tile).
TEST(Jit, ComplexChainsAreOneKernel) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  Tensor re = random_tensor(DType::kFloat32, Shape({33, 70}), 91) * 4.f;
  Tensor im = random_tensor(DType::kFloat32, Shape({33, 70}), 92);
  re.mutable_data<float>()[3] = inf;
  im.mutable_data<float>()[4] = nan;
  re.mutable_data<float>()[5] = -inf;
  im.mutable_data<float>()[5] = inf;
  for (DType dt : {DType::kComplex64, DType::kComplex128}) {
    SCOPED_TRACE(dtype_name(dt));
    const DType part = dt == DType::kComplex64 ? DType::kFloat32 : DType::kFloat64;
    auto body = [dt, part](const std::vector<Value>& a) {
      const Tensor &x = a[0].tensor(), &y = a[1].tensor();
      const Tensor z = x * y - x / (y + cast(Tensor(1.5f), dt)) + cast(a[2].tensor(), dt);
      const Tensor w = complex(real(z) * cast(Tensor(2.f), part), imag(z));
      // One root (sibling readers of w would be clusters of their own).
      return Value(complex_abs(conj(w) * -w) + cast(w, part) +
                   cast(cast(w, DType::kInt32), part) * cast(cast(w, DType::kFloat16), part));
    };
    const std::vector<Value> args = {Value(complex(cast(re, part), cast(im, part))),
                                     Value(values(dt, Shape({70}), 93, true)),
                                     Value(random_tensor(DType::kFloat32, Shape({33, 70}), 94))};
    Function j = make(body, true), g = make(body, false);
    expect_same(j(args).tensor(), g(args).tensor());
    const auto cf = j.get_concrete_function(args);
    EXPECT_EQ(cf->jit_kernels(), 1u) << cf->compiler_ir("optimized_hlo");
    EXPECT_NE(cf->compiler_ir("source").find(dt == DType::kComplex64 ? "__complex__ float"
                                                                     : "__complex__ double"),
              std::string::npos);
    // Transposed reads of complex values, across several tiles.
    auto swap = [](const std::vector<Value>& a) {
      return Value(conj(transpose(a[0].tensor(), {1, 0})) * a[1].tensor());
    };
    const std::vector<Value> big = {Value(values(dt, Shape({300, 130}), 95, false)),
                                    Value(values(dt, Shape({300}), 96, false))};
    check_all_modes(swap, big);
    EXPECT_NE(make(swap, true)
                  .get_concrete_function(big)
                  ->compiler_ir("hlo")
                  .find("read through Transpose"),
              std::string::npos);
  }
}

TEST(Jit, ComplexConstantsAndReductionsAreMalformedIr) {
  // 64 bits hold no complex128 starting value: complex values are computed
  // point by point only.
  Kernel k = testing::one_input_kernel("z", DType::kComplex64, 4);
  k.body = {testing::instr(Instr::kLoad, DType::kComplex64, 0),
            testing::instr(Instr::kApply, DType::kComplex64, 0, OpId::Neg)};
  k.outputs = {1};
  EXPECT_EQ(k.problem(), "");
  k.body[1] = testing::instr(Instr::kConst, DType::kComplex64, -1);
  EXPECT_EQ(k.problem(), "a complex constant or reduction");
}

// Every elementwise row brings its own lowering.
TEST(Jit, EveryElementwiseRowHasALowering) {
  for (const OpDef& op : op_table()) {
    if (!op.has(kElementwise) || op.has(kGraphOnly)) continue;
    EXPECT_TRUE(op.jit_lower != nullptr) << op.type_name << " has no JIT lowering";
  }
}

}  // namespace
}  // namespace kiln::jit
