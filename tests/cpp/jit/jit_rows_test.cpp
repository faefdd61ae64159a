// jit_compile with reductions as fusion roots: row kernels (a reduction over
// the last dims with its producers and consumers) against eager and graph
// mode, for every reduction row, softmax, layer norm and the layouts a row
// kernel must refuse.
#include <cmath>
#include <limits>

#include "jit/fusion/cluster.h"
#include "jit/runtime/runtime.h"
#include "jit_test_util.h"
#include "kernels/cpu/kernel_util.h"
#include "kiln/context.h"
#include "test_util.h"

namespace kiln::jit {
namespace {
using testing::check_all_modes;
using testing::expect_same;
using testing::make;
using testing::random_tensor;

// Floats rounded to halves: sums of them are exact, so integer-valued and
// float reductions compare bit for bit whatever the summation order.
Tensor halves(DType dt, const Shape& s, uint32_t seed) {
  Tensor f = round(random_tensor(DType::kFloat32, s, seed) * 2.f) * 0.5f;
  if (dt == DType::kBool) return f > 0.f;
  if (dt != DType::kFloat32 && dt != DType::kFloat64) f = round(f);
  return cast(f, dt);
}

std::shared_ptr<const ConcreteFunction> concrete(Function& f, const std::vector<Value>& args) {
  return f.get_concrete_function(args);
}

// The reduction rows: those with a `keepdims` attribute and a lowering.
std::vector<const OpDef*> reduction_rows() {
  std::vector<const OpDef*> rows;
  for (const OpDef& op : op_table()) {
    if (!op.jit_lower) continue;
    for (const AttrDef& a : op.attrs)
      if (std::string_view(a.name) == "keepdims") rows.push_back(&op);
  }
  return rows;
}

// Counts of `what` in `text`.
size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(JitRows, EveryReductionRowOnEveryDtypeAndLayoutMatchesEager) {
  const std::vector<const OpDef*> rows = reduction_rows();
  ASSERT_GE(rows.size(), 7u);
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
  };
  const std::vector<Case> cases = {{Shape({5, 37}), {-1}}, {Shape({3, 4, 20}), {1, 2}},
                                   {Shape({6, 0}), {1}},   {Shape({4, 1}), {-1}},
                                   {Shape({1, 130}), {1}}, {Shape({2, 3, 17}), {-1, -2}},
                                   {Shape({40}), {0}}};
  // One function per dtype holds every row, case and keepdims (one compile);
  // each reduction reads its own arguments, so no two share a producer.
  for (DType dt : {DType::kBool, DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64,
                   DType::kFloat32, DType::kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    const bool logical = dt == DType::kBool;
    struct One {
      const OpDef* op;
      size_t c;
      bool keep;
    };
    std::vector<One> all;
    std::vector<Value> args;
    uint32_t seed = 20;
    for (const OpDef* op : rows) {
      if (logical != (op->id == OpId::ReduceAny || op->id == OpId::ReduceAll)) continue;
      for (size_t c = 0; c < cases.size(); ++c)
        for (bool keep : {true, false}) {
          all.push_back({op, c, keep});
          args.push_back(Value(halves(dt, cases[c].shape, seed++)));
          args.push_back(Value(halves(dt, cases[c].shape, seed++)));
        }
    }
    auto body = [&](const std::vector<Value>& a) {
      std::vector<Value> out;
      for (size_t i = 0; i < all.size(); ++i) {
        // A producer before the reduction and, with keepdims, a consumer
        // after it (x - r broadcasts r over the reduced dims).
        const Tensor &x = a[2 * i].tensor(), &y = a[2 * i + 1].tensor();
        const Tensor in = logical ? logical_xor(x, y) : x * y + x;
        const Tensor r = call_op1(all[i].op->id, {in}, {cases[all[i].c].axes, all[i].keep});
        out.push_back(!all[i].keep ? Value(r)
                      : logical    ? Value(logical_and(r, x))
                                   : Value(maximum(x - r, r)));
      }
      return Value::list(std::move(out));
    };
    const Value want = body(args);
    Function j = make(body, true);
    const Value got = j(args);
    ASSERT_EQ(got.items().size(), want.items().size());
    for (size_t i = 0; i < got.items().size(); ++i) {
      SCOPED_TRACE(
          str_cat(all[i].op->type_name, " ", cases[all[i].c].shape, " keepdims ", all[i].keep));
      expect_same(got.items()[i].tensor(), want.items()[i].tensor());
    }
    // Every reduction becomes part of a kernel.
    const std::string hlo = concrete(j, args)->compiler_ir("hlo");
    size_t folds = 0;
    for (size_t at = hlo.find("reduce "); at != std::string::npos; at = hlo.find("reduce ", at + 1))
      ++folds;
    EXPECT_EQ(folds, got.items().size()) << hlo;
  }
}

TEST(JitRows, SoftmaxAndLogSoftmaxAreOneKernelWithTheirNeighbours) {
  for (DType dt : {DType::kFloat32, DType::kFloat64})
    for (const Shape& s : {Shape({33, 1000}), Shape({4, 3, 7}), Shape({2, 1}), Shape({0, 5})}) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " ", s));
      auto body = [](const std::vector<Value>& a) {
        const Tensor &x = a[0].tensor(), &b = a[1].tensor();
        const Tensor y = softmax(x * 2.f + b);
        return Value::list({Value(y * 3.f), Value(log_softmax(x) - 1.f)});
      };
      const Tensor x = cast(random_tensor(DType::kFloat32, s, 3) * 10.f, dt);
      const Tensor b = cast(random_tensor(DType::kFloat32, Shape({s.dim(s.rank() - 1)}), 4), dt);
      const std::vector<Value> args = {Value(x), Value(b)};
      const Value want = [&] {
        Function g = make(body, false);
        return g(args);
      }();
      Function j = make(body, true);
      const Value got = j(args);
      for (size_t i = 0; i < 2; ++i) expect_same(got.items()[i].tensor(), want.items()[i].tensor());
      if (s.num_elements() > 0) {
        EXPECT_EQ(concrete(j, args)->jit_kernels(), 2u);
      }
    }
}

// A row kernel's loops run along a row: over rows of fewer points than a
// vector holds they have no vector code, where graph mode's ops vectorize
// across rows (20 tanh and a softmax over [1000, 3]: 5x slower as one row
// kernel). Such a kernel takes in a softmax and a few cheap ops, not a chain
// of transcendentals: those become a kernel of their own.
TEST(JitRows, RowsShorterThanAVectorTakeInLittleWork) {
  auto body = [](const std::vector<Value>& a) {
    Tensor v = a[0].tensor();
    for (int i = 0; i < 4; ++i) v = tanh(v * 0.75f + 0.25f);
    return Value(softmax(v) * 2.f + 1.f);
  };
  for (int64_t n : {3, 15, 16}) {
    SCOPED_TRACE(n);
    const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, Shape({100, n}), 70))};
    Function j = make(body, true), g = make(body, false);
    expect_same(j(args).tensor(), g(args).tensor());
    EXPECT_EQ(testing::nodes_of(j, args, OpId::Softmax), 0u);
    EXPECT_EQ(concrete(j, args)->jit_kernels(), n < 16 ? 2u : 1u);
  }
}

TEST(JitRows, ALoneSoftmaxCompilesAndALoneSumStaysAKernelCall) {
  // Softmax and log-softmax alone run in several passes: compiled, they beat
  // their hand kernels, so they count as two ops. A lone reduction does not.
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    auto body = [which](const std::vector<Value>& a) {
      const Tensor& x = a[0].tensor();
      return Value(which == 0 ? softmax(x) : which == 1 ? log_softmax(x) : reduce_sum(x, {-1}));
    };
    const Tensor x = random_tensor(DType::kFloat32, Shape({65, 300}), 60) * 4.f;
    Function j = make(body, true), g = make(body, false);
    expect_same(j({Value(x)}).tensor(), g({Value(x)}).tensor());
    EXPECT_EQ(concrete(j, {Value(x)})->jit_kernels(), which < 2 ? 1u : 0u);
  }
}

// Sum, max, min, prod, mean, any and all over trailing dims of unknown size:
// one row kernel each, N (and a mean's count, summed in the same pass) read
// at run time, no retrace; rows of 0, 1 and many points, two reduced dims,
// keepdims. A reduction of every dim of unknown size is no row kernel (one
// long row would run on one thread): it folds or stays a kernel call.
TEST(JitRows, ReductionsOverDimsOfUnknownSizeTakeNAtRunTime) {
  using Reduce = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);
  struct Case {
    const char* name;
    Reduce reduce;
    DType dtype;
    std::optional<float> above;  // any/all: reduce x > above
  };
  const std::vector<Case> cases = {
      {"sum", reduce_sum, DType::kFloat32, {}},   {"max", reduce_max, DType::kFloat32, {}},
      {"min", reduce_min, DType::kInt32, {}},     {"prod", reduce_prod, DType::kFloat64, {}},
      {"mean", reduce_mean, DType::kFloat32, {}}, {"mean int", reduce_mean, DType::kInt32, {}},
      {"any", reduce_any, DType::kFloat32, 0.5f}, {"all", reduce_all, DType::kFloat32, -2.5f},
  };
  uint32_t seed = 120;
  for (const Case& c : cases) {
    for (int reduced : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << c.name << " over the last " << reduced);
      const Reduce r = c.reduce;
      const DType dt = c.dtype;
      const std::optional<float> above = c.above;
      auto body = [r, dt, above, reduced](const std::vector<Value>& a) {
        Tensor y = a[0].tensor() * cast(Tensor(2.f), dt) + cast(Tensor(1.f), dt);
        if (above) y = y > cast(Tensor(*above), dt);
        const std::vector<int64_t> axes =
            reduced == 1 ? std::vector<int64_t>{-1} : std::vector<int64_t>{-2, -1};
        return Value::list({Value(r(y, axes, false)), Value(r(y, axes, true))});
      };
      const std::vector<ArgSpec> sig = {{dt, Shape({-1, -1, -1}), "x"}};
      Function j = make(body, true, sig), g = make(body, false, sig);
      for (const Shape& s : {Shape({2, 3, 5}), Shape({3, 4, 0}), Shape({2, 0, 3}), Shape({5, 1, 1}),
                             Shape({2, 7, 300}), Shape({1, 1, 37})}) {
        SCOPED_TRACE(s);
        const std::vector<Value> args = {Value(random_tensor(dt, s, seed++))};
        const Value got = j(args), want = g(args);
        for (size_t i = 0; i < 2; ++i)
          expect_same(got.items()[i].tensor(), want.items()[i].tensor());
      }
      EXPECT_EQ(j.tracing_count(), 1);
      const std::string hlo =
          concrete(j, {Value(random_tensor(dt, Shape({2, 3, 4}), 1))})->compiler_ir("hlo");
      EXPECT_NE(hlo.find(str_cat("over [?,?,?] reducing the last ", reduced)), std::string::npos)
          << hlo;
    }
  }
  // Every dim of unknown size reduced: no row kernel over one long row.
  auto all = [](const std::vector<Value>& a) {
    return Value(reduce_sum(a[0].tensor() * 2.f + 1.f, {-2, -1}));
  };
  Function j = make(all, true, {{{DType::kFloat32, Shape({-1, -1}), "x"}}});
  const Tensor x = random_tensor(DType::kFloat32, Shape({40, 50}), 3);
  expect_same(j({Value(x)}).tensor(), all({Value(x)}).tensor());
  EXPECT_EQ(concrete(j, {Value(x)})->compiler_ir("hlo").find("reducing the last"),
            std::string::npos);
}

TEST(JitRows, SoftmaxOverADimOfUnknownSizeTakesNAtRunTime) {
  // A softmax (attention's scores over a None sequence) and a log-softmax
  // over a dim of unknown size: one row kernel each, N read at run time, no
  // retrace. A mask that broadcasts along the rows at run time ([r, 1]) is
  // copied to full rows; N of 1 and 0, rows not multiples of 16, a mask
  // broadcast over the rows.
  auto body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &m = a[1].tensor();
    return Value::list({Value(softmax(x * 0.125f + m)), Value(log_softmax(x - 1.f))});
  };
  const std::vector<ArgSpec> sig = {{DType::kFloat32, Shape({-1, -1}), "x"},
                                    {DType::kFloat32, Shape({-1, -1}), "m"}};
  Function j = make(body, true, sig), g = make(body, false, sig);
  struct Case {
    Shape x, m;
  };
  const std::vector<Case> cases = {
      {Shape({33, 1000}), Shape({33, 1000})}, {Shape({4, 37}), Shape({1, 37})},
      {Shape({5, 17}), Shape({5, 1})},        {Shape({3, 1}), Shape({3, 1})},
      {Shape({6, 0}), Shape({6, 0})},         {Shape({0, 4}), Shape({0, 4})},
      {Shape({2, 5000}), Shape({2, 5000})}};
  uint32_t seed = 70;
  for (const Case& c : cases) {
    SCOPED_TRACE(str_cat(c.x, " + ", c.m));
    const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, c.x, seed++) * 8.f),
                                     Value(random_tensor(DType::kFloat32, c.m, seed++))};
    const Value got = j(args), want = g(args);
    for (size_t i = 0; i < 2; ++i) expect_same(got.items()[i].tensor(), want.items()[i].tensor());
  }
  EXPECT_EQ(j.tracing_count(), 1);
  const auto cf = concrete(j, {Value(random_tensor(DType::kFloat32, Shape({2, 3}), 1)),
                               Value(random_tensor(DType::kFloat32, Shape({2, 3}), 2))});
  EXPECT_EQ(cf->jit_kernels(), 2u);
  EXPECT_EQ(count_of(cf->compiler_ir("source"), "rows of N (known at run time) points"), 2u);
  // The program's points per row: -1 for unknown, nothing below it.
  const std::vector<Tensor> x = {random_tensor(DType::kFloat32, Shape({3, 4}), 1)};
  std::vector<Tensor> out;
  Program p = testing::one_input_program({3, 4}, DType::kFloat32, 1);
  p.row_points = -2;
  kiln::testing::expect_error(
      [&] { run_kernel(op_def(OpId::JitKernel), x, testing::program_attrs(p), out); },
      Code::kInvalidArgument, {"its program is inconsistent", "the values per row"});
  p.row_points = 5;  // checked against the shapes at run time
  kiln::testing::expect_error(
      [&] { run_kernel(op_def(OpId::JitKernel), x, testing::program_attrs(p), out); },
      Code::kInvalidArgument, {"reduced dims hold 4 values, not 5"});
}

TEST(JitRows, LayerNormIsOneKernelInThreePassesWithUnknownRows) {
  // moments + batch_normalization over the last dim, as Keras computes it.
  auto body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &gamma = a[1].tensor(), &beta = a[2].tensor();
    const Tensor mean = reduce_mean(x, {-1}, true);
    const Tensor var = reduce_mean(squared_difference(x, mean), {-1}, true);
    const Tensor inv = rsqrt(var + 1e-3f) * gamma;
    return Value(x * inv + (beta - mean * inv));
  };
  const std::vector<ArgSpec> sig = {{DType::kFloat32, Shape({-1, 256}), "x"},
                                    {DType::kFloat32, Shape({256}), "gamma"},
                                    {DType::kFloat32, Shape({256}), "beta"}};
  Function j = make(body, true, sig), g = make(body, false, sig);
  for (int64_t rows : {1, 7, 300}) {
    const std::vector<Value> args = {
        Value(random_tensor(DType::kFloat32, Shape({rows, 256}), 5) * 4.f),
        Value(random_tensor(DType::kFloat32, Shape({256}), 6)),
        Value(random_tensor(DType::kFloat32, Shape({256}), 7))};
    expect_same(j(args).tensor(), g(args).tensor());
  }
  EXPECT_EQ(j.tracing_count(), 1);
  const auto cf = concrete(j, {Value(random_tensor(DType::kFloat32, Shape({2, 256}), 8)),
                               Value(random_tensor(DType::kFloat32, Shape({256}), 9)),
                               Value(random_tensor(DType::kFloat32, Shape({256}), 10))});
  EXPECT_EQ(cf->jit_kernels(), 1u) << cf->compiler_ir("optimized_hlo");
  const std::string src = cf->compiler_ir("source");
  EXPECT_NE(src.find("in 3 passes"), std::string::npos) << src;
  EXPECT_NE(cf->compiler_ir("hlo").find("reduce Add"), std::string::npos);
}

TEST(JitRows, RowsPipelineTheNextRowsFirstPassAcrossBlocks) {
  // Pass 0 of row r + 1 runs inside pass 1 of row r. A small grain makes
  // many blocks of rows (each block's first row runs pass 0 on its own, its
  // last reads nothing past it); per-row values differ row to row (b), one
  // input is broadcast over rows (w), rows are not multiples of the 16 lanes.
  const int64_t saved = config().parallel_grain;
  config().parallel_grain = 512;
  auto body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &b = a[1].tensor(), &w = a[2].tensor();
    const Tensor y = x + w;
    const Tensor mean = reduce_mean(y, {-1}, true);
    const Tensor var = reduce_mean(squared_difference(y, mean), {-1}, true);
    return Value::list({Value(softmax(x * 2.f + b)), Value(log_softmax(x - b)),
                        Value((y - mean) * rsqrt(var + 1e-3f))});
  };
  for (const Shape& s : {Shape({300, 40}), Shape({7, 9, 24}), Shape({1, 33}), Shape({2, 16})}) {
    SCOPED_TRACE(str_cat(s));
    std::vector<int64_t> row_dims(s.dims().begin(), s.dims().end());
    row_dims.back() = 1;
    const Shape bs(row_dims);
    const std::vector<Value> args = {
        Value(random_tensor(DType::kFloat32, s, 50) * 2.f),
        Value(random_tensor(DType::kFloat32, bs, 51)),
        Value(random_tensor(DType::kFloat32, Shape({s.dim(s.rank() - 1)}), 52))};
    Function j = make(body, true), g = make(body, false);
    const Value got = j(args), want = g(args);
    for (size_t i = 0; i < 3; ++i) {
      SCOPED_TRACE(i);
      expect_same(got.items()[i].tensor(), want.items()[i].tensor());
    }
    const auto cf = concrete(j, args);
    EXPECT_EQ(cf->jit_kernels(), 3u) << cf->compiler_ir("optimized_hlo");
    EXPECT_EQ(count_of(cf->compiler_ir("source"), "passes, pipelined"), 3u)
        << cf->compiler_ir("source");
  }
  config().parallel_grain = saved;
}

TEST(JitRows, KeptValuesLiveInTheOutputRowThatOverwritesThem) {
  // Kept values live in the row of the output that the one later pass
  // reading them writes (softmax's exps, scaled in place; f, read by pass 2
  // which writes q). h's output has another dtype, so h keeps a buffer of its
  // own, and so does (x + 1) * 0.5 in the kernel whose pass 0 writes z: such
  // a kernel does not pipeline, and keeps what its pass 0 computes.
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor e = exp(x - reduce_max(x, {-1}, true));
    const Tensor p = e / reduce_sum(e, {-1}, true);  // pass 2 reads e and writes p
    const Tensor z = x + 1.f;
    const Tensor f = exp(z * 0.5f - reduce_max(z, {-1}, true));
    const Tensor q = f * reduce_max(f * 2.f, {-1}, true);
    const Tensor h = exp(x * 0.25f - reduce_max(x * 0.25f, {-1}, true));
    return Value::list({Value(p), Value(q),
                        Value(cast(h / reduce_sum(h, {-1}, true), DType::kFloat64)), Value(z)});
  };
  const Tensor x = random_tensor(DType::kFloat32, Shape({37, 100}), 53) * 5.f;
  Function j = make(body, true), g = make(body, false);
  const Value got = j({Value(x)}), want = g({Value(x)});
  for (size_t i = 0; i < 4; ++i) expect_same(got.items()[i].tensor(), want.items()[i].tensor());
  const auto cf = concrete(j, {Value(x)});
  const std::string src = cf->compiler_ir("source");
  EXPECT_EQ(count_of(src, "alignas(64) float s"), 2u) << cf->compiler_ir("optimized_hlo");
  EXPECT_EQ(count_of(src, "d0[j];"), 3u) << src;  // e (both copies of its last pass), f
  EXPECT_EQ(count_of(src, "passes, pipelined"), 2u) << src;
  EXPECT_EQ(cf->jit_kernels(), 3u);
}

TEST(JitRows, LargeOutputsAreStreamedAndStillExact) {
  // Outputs of 8 MB or more (here; by default also at least half the L3)
  // are written with non-temporal stores: rows of 1 KB (aligned) and of 257
  // floats (unaligned rows: plain copies).
  EXPECT_GE(cpu::stream_bytes(), size_t{8} << 20);
  cpu::set_stream_bytes_for_tests(size_t{8} << 20);
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor centered = x - reduce_mean(x, {-1}, true);
    return Value::list({Value(centered * 2.f), Value(reduce_max(centered, {-1}))});
  };
  for (const Shape& s : {Shape({8192, 256}), Shape({8200, 257})}) {
    SCOPED_TRACE(str_cat(s));
    const Tensor x = halves(DType::kFloat32, s, 40);
    Function j = make(body, true);
    const Value got = j({Value(x)}), want = body({Value(x)});
    for (size_t i = 0; i < 2; ++i) expect_same(got.items()[i].tensor(), want.items()[i].tensor());
    EXPECT_EQ(concrete(j, {Value(x)})->jit_kernels(), 1u);
  }
  cpu::set_stream_bytes_for_tests(0);
}

TEST(JitRows, PerRowValuesUsedOutsideBecomeOutputs) {
  // The mean is returned too (keepdims and not), and a reduction is the root.
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor mean = reduce_mean(x, {-1}, true);
    const Tensor centered = x - mean;
    return Value::list({Value(centered), Value(mean), Value(reduce_sum(centered * centered, {-1})),
                        Value(reduce_max(exp(x), {-1}, true) + 1.f)});
  };
  const Tensor x = halves(DType::kFloat32, Shape({9, 24}), 11);
  const Value want = body({Value(x)});
  Function j = make(body, true);
  const Value got = j({Value(x)});
  for (size_t i = 0; i < 4; ++i) expect_same(got.items()[i].tensor(), want.items()[i].tensor());
  EXPECT_GE(concrete(j, {Value(x)})->jit_kernels(), 1u);
}

TEST(JitRows, OutputsFollowTheirInputsWhenUnknownDimsBroadcast) {
  // y has one row at run time while x has five: the reductions of y stay one
  // row each, whatever the kernel's space.
  auto body = [](const std::vector<Value>& a) {
    const Tensor &x = a[0].tensor(), &y = a[1].tensor();
    const Tensor r = reduce_sum(y * 2.f, {-1}, true);
    const Tensor e = exp(y);
    return Value::list({Value(x - r), Value(r), Value(reduce_max(y * 3.f + x, {-1})), Value(e),
                        Value(reduce_sum(e * x, {-1}))});
  };
  const std::vector<ArgSpec> sig = {{DType::kFloat32, Shape({-1, 8}), "x"},
                                    {DType::kFloat32, Shape({-1, 8}), "y"}};
  Function j = make(body, true, sig);
  for (auto [nx, ny] : std::vector<std::pair<int64_t, int64_t>>{{5, 1}, {1, 4}, {3, 3}}) {
    SCOPED_TRACE(str_cat(nx, " x ", ny));
    const std::vector<Value> args = {Value(halves(DType::kFloat32, Shape({nx, 8}), 30)),
                                     Value(halves(DType::kFloat32, Shape({ny, 8}), 31))};
    const Value got = j(args), want = body(args);
    for (size_t i = 0; i < 5; ++i) expect_same(got.items()[i].tensor(), want.items()[i].tensor());
    const std::string hlo = concrete(j, args)->compiler_ir("hlo");
    EXPECT_NE(hlo.find("reduce Maximum"), std::string::npos) << hlo;
    EXPECT_NE(hlo.find("reduce AddV2"), std::string::npos) << hlo;
  }
  EXPECT_EQ(j.tracing_count(), 1);
}

TEST(JitRows, ReductionsARowKernelCannotWalkStayKernelCalls) {
  // Over a leading axis and over everything of a long vector (one row: the
  // block-parallel reduce kernel is better): still correct, not compiled as
  // a row kernel. (A max over the unknown last dim beside it is one.)
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value::list(
        {Value(reduce_sum(exp(x), {0}, true) * 2.f), Value(reduce_max(x * 2.f, {-1}, true) + 1.f)});
  };
  const std::vector<ArgSpec> sig = {{DType::kFloat32, Shape({5, -1}), "x"}};
  Function j = make(body, true, sig);
  const Tensor x = random_tensor(DType::kFloat32, Shape({5, 6}), 12);
  const Value got = j({Value(x)}), want = body({Value(x)});
  for (size_t i = 0; i < 2; ++i) expect_same(got.items()[i].tensor(), want.items()[i].tensor());
  const std::string hlo = concrete(j, {Value(x)})->compiler_ir("hlo");
  EXPECT_EQ(hlo.find("reduce AddV2"), std::string::npos) << hlo;
  EXPECT_NE(hlo.find("reduce Maximum"), std::string::npos) << hlo;

  auto whole = [](const std::vector<Value>& a) {
    return Value(reduce_sum(a[0].tensor() * 2.f, {0}) + 1.f);
  };
  Function w = make(whole, true);
  const Tensor v = halves(DType::kFloat32, Shape({1 << 17}), 13);
  expect_same(w({Value(v)}).tensor(), whole({Value(v)}).tensor());
  EXPECT_EQ(concrete(w, {Value(v)})->compiler_ir("hlo").find("reduce "), std::string::npos);
}

TEST(JitRows, SoftmaxRowsTakeTheShortExpOnlyWhenEveryResultIsNormal) {
  // Rows whose exp(x - max) are all normal floats take the kernel's second
  // copy of its later passes (exp_f32_normal, the same bits); masked rows,
  // rows with subnormal results, NaN and inf rows take the general exp. One
  // tensor mixes them, so both copies run in one call.
  constexpr int64_t kN = 40;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v;
  auto row = [&](auto at) {
    for (int64_t j = 0; j < kN; ++j) v.push_back(at(j));
  };
  row([](int64_t j) { return 0.37f * static_cast<float>(j % 11) - 2.f; });  // normal
  row([&](int64_t j) { return j % 3 ? 0.1f * static_cast<float>(j) : -inf; });
  row([](int64_t j) { return j % 5 ? 0.5f : -1e9f; });
  row([](int64_t j) { return j == 7 ? std::nanf("") : 1.f; });
  row([&](int64_t j) { return j == 9 ? inf : 0.f; });
  row([](int64_t j) { return j % 2 ? 0.f : -100.f; });  // e^-100: subnormal results
  row([](int64_t j) { return j % 2 ? 0.f : -86.f; });   // e^-86: the normal range's edge
  row([&](int64_t) { return -inf; });                   // all masked: NaN
  row([](int64_t j) { return j % 2 ? 1e30f : -1e30f; });
  const Tensor x = Tensor::from_vector(v, Shape({9, kN}));
  auto body = [](const std::vector<Value>& a) {
    const Tensor& t = a[0].tensor();
    // Each with a producer of its own, so that it joins a kernel.
    const Tensor shifted = t + 0.75f;
    const Tensor by_hand = exp(shifted - reduce_max(shifted, {-1}, true));
    return Value::list({Value(softmax(t + 0.25f)), Value(log_softmax(t + 0.5f)),
                        Value(by_hand / reduce_sum(by_hand, {-1}, true))});
  };
  Function j = make(body, true), g = make(body, false);
  // Denormals kept, then flushed (the default): jit and graph mode agree.
  for (bool flush : {false, true}) {
    SCOPED_TRACE(flush ? "flushed" : "kept");
    kiln::testing::ScopedFlushDenormals mode(flush);
    const Value got = j({Value(x)}), want = g({Value(x)});
    for (size_t o = 0; o < 3; ++o) {
      SCOPED_TRACE(o);
      const Tensor &a = got.items()[o].tensor(), &b = want.items()[o].tensor();
      expect_same(a, b);
      for (int64_t i = 0; i < a.num_elements(); ++i) {  // zeros and subnormals stay what they are
        const float p = a.data<float>()[i], q = b.data<float>()[i];
        EXPECT_EQ(std::fpclassify(p), std::fpclassify(q)) << "element " << i;
      }
    }
    const Tensor sm = got.items()[0].tensor();
    EXPECT_EQ(sm.data<float>()[5 * kN] > 0.f, !flush);  // e^-100 / 20, kept or flushed
  }
  const auto cf = concrete(j, {Value(x)});
  const std::string src = cf->compiler_ir("source");
  size_t short_exps = 0;  // three exps, each in a lane loop and a tail loop
  for (size_t at = src.find(", normal range"); at != std::string::npos;
       at = src.find(", normal range", at + 1))
    ++short_exps;
  EXPECT_EQ(short_exps, 6u) << cf->compiler_ir("optimized_hlo");
  EXPECT_NE(src.find("every exp(x - max) a normal float"), std::string::npos) << src;
}

TEST(JitRows, MalformedRowKernelIrIsRejected) {
  Kernel k;
  k.name = "t";
  k.rank = 2;
  k.reduced = 1;
  k.dims = {3, 4};
  k.inputs = {DType::kFloat32};
  k.input_dims = {{3, 4}};
  k.body = {testing::instr(Instr::kLoad, DType::kFloat32, 0),
            testing::instr(Instr::kReduce, DType::kFloat32, 0, OpId::Add)};
  k.outputs = {1};
  EXPECT_EQ(k.problem(), "");
  auto broken = [&](auto change, const char* why) {
    Kernel b = k;
    change(b);
    EXPECT_EQ(b.problem(), why);
  };
  broken([](Kernel& b) { b.body[1].op = OpId::Sub; }, "instruction 1 arguments");  // not a fold
  broken([](Kernel& b) { b.dims = {3, -2}; }, "the space's dims");
  broken([](Kernel& b) { b.input_dims = {{3, -2}}; }, "an input's dims");  // a negative dim
  broken([](Kernel& b) { b.input_dims = {{3, 2}}; }, "an input has part of the reduced dims");
  broken([](Kernel& b) { b.reduced = 0; },
         "instruction 1 arguments");  // a point kernel's reduction
}

}  // namespace
}  // namespace kiln::jit
