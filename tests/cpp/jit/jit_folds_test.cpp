// Reductions over leading dims folded into the kernel that computes their
// input (a batch norm's statistics over N, H, W): the JitKernel node's
// `fold`. Results match eager and graph mode; a hostile `fold` is refused.
#include <cmath>
#include <functional>
#include <limits>

#include "jit_test_util.h"
#include "kiln/context.h"
#include "kiln/graph.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln::jit {
namespace {
using kiln::testing::expect_error;
using testing::expect_same;
using testing::make;
using testing::nodes_of;
using testing::random_tensor;

using Body = std::function<Value(const std::vector<Value>&)>;

size_t folds_in(Function& f, const std::vector<Value>& args) {
  return testing::ir_count(f, args, " folded by ");
}

struct FoldCase {
  const char* name;
  Body body;
  std::vector<Value> args;
  size_t folds;  // reductions folded into kernels
};

// Graph mode and jit match eager, with the expected number of folds.
void check_case(const FoldCase& fc) {
  SCOPED_TRACE(fc.name);
  Function g = make(fc.body, false), j = make(fc.body, true);
  testing::expect_modes_agree(fc.body, fc.args, g, j);
  EXPECT_EQ(folds_in(j, fc.args), fc.folds);
}

TEST(JitFolds, ReductionsOverLeadingDimsFoldIntoTheirKernel) {
  const Tensor x4 = random_tensor(DType::kFloat32, Shape({4, 5, 6, 8}), 1);
  const Tensor m8 = random_tensor(DType::kFloat32, Shape({8}), 2);
  const Tensor big = random_tensor(DType::kFloat32, Shape({300, 64, 3}), 3);
  const Tensor i32 = cast(random_tensor(DType::kFloat32, Shape({37, 11}), 4) * 1e4f, DType::kInt32);
  const Tensor i64 = cast(random_tensor(DType::kFloat32, Shape({9, 7}), 5) * 1e6f, DType::kInt64);
  const Tensor f64 = random_tensor(DType::kFloat64, Shape({12, 5}), 6);
  const Tensor empty = random_tensor(DType::kFloat32, Shape({0, 5}), 7);
  const std::vector<FoldCase> cases = {
      {"batch norm variance: mean over N, H, W of (x - m)^2",
       [](const std::vector<Value>& a) {
         const Tensor d = a[0].tensor() - a[1].tensor();
         return Value(reduce_mean(d * d, {0, 1, 2}));
       },
       {Value(x4), Value(m8)},
       1},
      {"sum over the first dim, keepdims",
       [](const std::vector<Value>& a) {
         return Value(reduce_sum(a[0].tensor() * 2.f + 1.f, {0}, true));
       },
       {Value(x4)},
       1},
      {"max and min of tanh over two dims",
       [](const std::vector<Value>& a) {
         const Tensor t = tanh(a[0].tensor()) * 3.f;
         return Value::list({Value(reduce_max(t, {0, 1})), Value(reduce_min(t + 1.f, {0, 1}))});
       },
       {Value(x4)},
       2},
      {"many blocks and chunks",
       [](const std::vector<Value>& a) { return Value(reduce_sum(exp(a[0].tensor()) - 1.f, {0})); },
       {Value(big)},
       1},
      {"int32 sums wrap, int32 mean truncates",
       [](const std::vector<Value>& a) {
         const Tensor p = a[0].tensor() * a[0].tensor();
         return Value::list({Value(reduce_sum(p, {0})), Value(reduce_mean(p - 7, {0}))});
       },
       {Value(i32)},
       2},
      {"int64 max and product",
       [](const std::vector<Value>& a) {
         const Tensor t = a[0].tensor() - 3;
         return Value::list({Value(reduce_max(t * 2, {0})), Value(reduce_prod(t + 1, {0}))});
       },
       {Value(i64)},
       2},
      {"float64 product",
       [](const std::vector<Value>& a) {
         return Value(reduce_prod(a[0].tensor() * 0.5 + 1.0, {0}));
       },
       {Value(f64)},
       1},
      {"no rows: starting values (sum 0, max -inf, mean NaN)",
       [](const std::vector<Value>& a) {
         const Tensor t = a[0].tensor() * 2.f + 1.f;
         return Value::list({Value(reduce_sum(t, {0})), Value(reduce_max(t - 1.f, {0})),
                             Value(reduce_mean(t * t, {0}))});
       },
       {Value(empty)},
       3},  // t is read by the sum and by sub: the sum folds a copy of it
      {"the value is returned too: a copy of it folds",
       [](const std::vector<Value>& a) {
         const Tensor t = a[0].tensor() * 2.f + 1.f;
         return Value::list({Value(t), Value(reduce_sum(t, {0}))});
       },
       {Value(x4)},
       1},
      {"trailing dims: a row kernel, not a fold",
       [](const std::vector<Value>& a) {
         return Value(reduce_sum(a[0].tensor() * 2.f + 1.f, {-1}));
       },
       {Value(x4)},
       0},
      {"leading and trailing dims: not folded",
       [](const std::vector<Value>& a) {
         return Value(reduce_sum(a[0].tensor() * 2.f + 1.f, {0, 3}));
       },
       {Value(x4)},
       0},
  };
  for (const FoldCase& fc : cases) check_case(fc);
}

// Reductions over middle dims (a global average pool's H, W; a mean over a
// sequence's steps): the rows of each leading value fold apart, into
// per-column accumulators of their own.
TEST(JitFolds, ReductionsOverMiddleDimsFoldIntoTheirKernel) {
  const Tensor x4 = random_tensor(DType::kFloat32, Shape({4, 5, 6, 8}), 21);
  const Tensor one = random_tensor(DType::kFloat32, Shape({1, 7, 7, 16}), 22);
  const Tensor seq = random_tensor(DType::kFloat32, Shape({3, 50, 16}), 23);
  const Tensor few = random_tensor(DType::kFloat32, Shape({2, 3000, 64}), 24);
  const Tensor many = random_tensor(DType::kFloat32, Shape({300, 4, 8}), 25);
  const Tensor i32 =
      cast(random_tensor(DType::kFloat32, Shape({5, 9, 3}), 26) * 1e4f, DType::kInt32);
  const Tensor no_outer = random_tensor(DType::kFloat32, Shape({0, 3, 4}), 27);
  const Tensor no_rows = random_tensor(DType::kFloat32, Shape({2, 0, 4}), 28);
  auto swish = [](const Tensor& t) { return t * sigmoid(t); };
  const std::vector<FoldCase> cases = {
      {"global average pool of swish, N = 4",
       [swish](const std::vector<Value>& a) {
         return Value(reduce_mean(swish(a[0].tensor()), {1, 2}));
       },
       {Value(x4)},
       1},
      {"global average pool of swish, N = 1, keepdims",
       [swish](const std::vector<Value>& a) {
         return Value(reduce_mean(swish(a[0].tensor()), {1, 2}, true));
       },
       {Value(one)},
       1},
      {"mean and max over a sequence's steps",
       [](const std::vector<Value>& a) {
         const Tensor t = tanh(a[0].tensor()) * 2.f;
         return Value::list({Value(reduce_mean(t, {1})), Value(reduce_max(t + 1.f, {-2}))});
       },
       {Value(seq)},
       2},
      {"two leading values of many blocks each",
       [](const std::vector<Value>& a) { return Value(reduce_sum(exp(a[0].tensor()) - 1.f, {1})); },
       {Value(few)},
       1},
      {"more leading values than threads",
       [](const std::vector<Value>& a) {
         return Value(reduce_min(a[0].tensor() * 3.f - 1.f, {1}, true));
       },
       {Value(many)},
       1},
      {"int32 sums wrap",
       [](const std::vector<Value>& a) {
         const Tensor p = a[0].tensor() * a[0].tensor();
         return Value(reduce_sum(p + 1, {1}));
       },
       {Value(i32)},
       1},
      {"no leading values",
       [](const std::vector<Value>& a) {
         return Value(reduce_mean(a[0].tensor() * 2.f + 1.f, {1}));
       },
       {Value(no_outer)},
       1},
      {"no rows: starting values (sum 0, mean NaN)",
       [](const std::vector<Value>& a) {
         const Tensor t = a[0].tensor() * 2.f + 1.f;
         return Value::list({Value(reduce_sum(t * t, {1})), Value(reduce_mean(t - 1.f, {1}))});
       },
       {Value(no_rows)},
       2},
  };
  for (const FoldCase& fc : cases) check_case(fc);
}

// A reduction of a value that other ops read too (a bias gradient's sum of
// the value the products read; a squeeze-and-excitation block's pool of the
// value it scales): the kernel writes the value and folds a copy of it.
TEST(JitFolds, ReductionsOfValuesReadElsewhereFoldACopy) {
  const Tensor z = random_tensor(DType::kFloat32, Shape({64, 32}), 31);
  const Tensor dy = random_tensor(DType::kFloat32, Shape({64, 32}), 32);
  const Tensor w = random_tensor(DType::kFloat32, Shape({16, 32}), 33);
  const Tensor x = random_tensor(DType::kFloat32, Shape({2, 6, 6, 8}), 34);
  const std::vector<FoldCase> cases = {
      {"a dense layer's backward: db = sum(dz), dx = dz @ w",
       [](const std::vector<Value>& a) {
         // (No a * b + c here: its FMA would move dx's near-zero sums past
         // expect_same's bound.)
         const Tensor dz = a[1].tensor() * sigmoid(a[0].tensor());
         return Value::list(
             {Value(matmul(dz, a[2].tensor(), false, true)), Value(reduce_sum(dz, {0}))});
       },
       {Value(z), Value(dy), Value(w)},
       1},
      {"squeeze and excitation: swish(x) scaled by its own pool",
       [](const std::vector<Value>& a) {
         const Tensor y = a[0].tensor() * sigmoid(a[0].tensor());
         return Value(y * sigmoid(reduce_mean(y, {1, 2}, true)));
       },
       {Value(x)},
       1},
      {"sum and max of a returned value",
       [](const std::vector<Value>& a) {
         const Tensor t = exp(a[0].tensor()) - 1.f;
         return Value::list({Value(t), Value(reduce_sum(t, {0})), Value(reduce_max(t, {0}, true))});
       },
       {Value(z)},
       2},
      {"a second output of the kernel, returned and summed",
       [](const std::vector<Value>& a) {
         const Tensor t = a[0].tensor() * 3.f;
         const Tensor u = tanh(t);
         return Value::list({Value(t), Value(u * 2.f), Value(reduce_sum(u, {0}))});
       },
       {Value(z)},
       1},
  };
  for (const FoldCase& fc : cases) {
    check_case(fc);
    Function j = make(fc.body, true);
    EXPECT_EQ(nodes_of(j, fc.args, OpId::ReduceSum) + nodes_of(j, fc.args, OpId::ReduceMean) +
                  nodes_of(j, fc.args, OpId::ReduceMax),
              0u)
        << fc.name;
  }
}

// A reduction over dims that are not one run (a channels-first batch norm's
// N, H, W) splits: its last run is reduced in the kernel that computes the
// input (a row kernel over trailing dims, a fold over middle ones), the rest
// is a reduction of that small value. A part no kernel takes in joins its
// rest again; an integer mean is never split (it would round twice).
TEST(JitFolds, ReductionsOverSeveralRunsSplit) {
  const Tensor nchw = random_tensor(DType::kFloat32, Shape({4, 5, 6, 8}), 41);
  const Tensor m = random_tensor(DType::kFloat32, Shape({1, 5, 1, 1}), 42);
  const Tensor x3 = random_tensor(DType::kFloat32, Shape({6, 7, 9}), 43);
  const Tensor i32 =
      cast(random_tensor(DType::kFloat32, Shape({5, 4, 6}), 44) * 1e4f, DType::kInt32);
  const Tensor f64 = random_tensor(DType::kFloat64, Shape({3, 4, 5, 6}), 45);
  struct SplitCase {
    FoldCase fc;
    size_t parts;    // reductions taken into kernels as parts
    size_t reduces;  // reduction nodes left in the compiled graph
  };
  const std::vector<SplitCase> cases = {
      {{"NCHW batch norm variance: mean over N, H, W of (x - m)^2",
        [](const std::vector<Value>& a) {
          const Tensor d = a[0].tensor() - a[1].tensor();
          return Value(reduce_mean(d * d, {0, 2, 3}));
        },
        {Value(nchw), Value(m)},
        0},
       1,
       1},
      {{"sum over the outer and inner dims, keepdims",
        [](const std::vector<Value>& a) {
          return Value(reduce_sum(exp(a[0].tensor()) + 1.f, {0, 2}, true));
        },
        {Value(x3)},
        0},
       1,
       1},
      {{"max over N and C of NHWC-like dims, negative axes",
        [](const std::vector<Value>& a) {
          return Value(reduce_max(tanh(a[0].tensor()) * 2.f, {-1, 0}));
        },
        {Value(nchw)},
        0},
       1,
       1},
      {{"float64 min over dims 0 and 2: the part folds as a middle run",
        [](const std::vector<Value>& a) {
          return Value(reduce_min(a[0].tensor() * a[0].tensor() - 1.0, {0, 2}));
        },
        {Value(f64)},
        1},
       1,
       1},
      {{"int32 sums split (wrapping sums are exact)",
        [](const std::vector<Value>& a) {
          const Tensor p = a[0].tensor() * a[0].tensor();
          return Value(reduce_sum(p + 1, {0, 2}));
        },
        {Value(i32)},
        0},
       1,
       1},
      {{"an int32 mean stays whole",
        [](const std::vector<Value>& a) {
          return Value(reduce_mean(a[0].tensor() * 3, {0, 2}));
        },
        {Value(i32)},
        0},
       0,
       1},
      {{"a part of a value another kernel computes joins its rest",
        [](const std::vector<Value>& a) {
          const Tensor t = tanh(a[0].tensor());
          return Value::list({Value(reduce_sum(t, {0, 2})), Value(t * 3.f)});
        },
        {Value(x3)},
        0},
       0,
       1},
  };
  for (const SplitCase& c : cases) {
    check_case(c.fc);
    Function j = make(c.fc.body, true);
    const std::vector<Value>& args = c.fc.args;
    EXPECT_EQ(testing::ir_count(j, args, "/jit_part'") > 0, c.parts > 0) << c.fc.name;
    size_t reduces = 0;
    for (OpId op : {OpId::ReduceSum, OpId::ReduceMean, OpId::ReduceMax, OpId::ReduceMin})
      reduces += nodes_of(j, args, op);
    EXPECT_EQ(reduces, c.reduces) << c.fc.name;
  }
}

// Reductions over every dim (a loss's mean): the kernel's points in blocks,
// folded into 16 lanes per chunk. No axes and all axes alike; blocks that
// start and end inside layout rows (a broadcast operand keeps rows apart).
TEST(JitFolds, ReductionsOverEveryDimFoldIntoTheirKernel) {
  const Tensor y = random_tensor(DType::kFloat32, Shape({333, 1001}), 11);
  const Tensor t = random_tensor(DType::kFloat32, Shape({333, 1001}), 12);
  const Tensor row = random_tensor(DType::kFloat32, Shape({1001}), 13);
  const Tensor v = random_tensor(DType::kFloat32, Shape({100003}), 14);
  const Tensor x4 = random_tensor(DType::kFloat32, Shape({4, 5, 6, 8}), 15);
  const Tensor i32 =
      cast(random_tensor(DType::kFloat32, Shape({37, 11}), 16) * 1e4f, DType::kInt32);
  const Tensor i64 = cast(random_tensor(DType::kFloat32, Shape({9, 7}), 17) * 3.f, DType::kInt64);
  const Tensor f64 = random_tensor(DType::kFloat64, Shape({120, 50}), 18);
  const Tensor empty = random_tensor(DType::kFloat32, Shape({0, 5}), 19);
  const std::vector<FoldCase> cases = {
      {"mean squared error (no axes), many blocks and chunks",
       [](const std::vector<Value>& a) {
         const Tensor d = a[0].tensor() - a[1].tensor();
         return Value(reduce_mean(d * d));
       },
       {Value(y), Value(t)},
       1},
      {"sum over all axes, keepdims, of a broadcast product",
       [](const std::vector<Value>& a) {
         return Value(reduce_sum(a[0].tensor() * a[1].tensor() + 1.f, {0, 1}, true));
       },
       {Value(y), Value(row)},
       1},
      {"max and min of tanh over a vector",
       [](const std::vector<Value>& a) {
         const Tensor th = tanh(a[0].tensor()) * 3.f;
         return Value::list({Value(reduce_max(th)), Value(reduce_min(th + 1.f, {0}, true))});
       },
       {Value(v)},
       2},
      {"a small space (a tail of lanes)",
       [](const std::vector<Value>& a) { return Value(reduce_sum(exp(a[0].tensor()) - 1.f)); },
       {Value(x4)},
       1},
      {"int32 sums wrap, int32 mean truncates",
       [](const std::vector<Value>& a) {
         const Tensor p = a[0].tensor() * a[0].tensor();
         return Value::list({Value(reduce_sum(p)), Value(reduce_mean(p - 7))});
       },
       {Value(i32)},
       2},
      {"int64 max and product",
       [](const std::vector<Value>& a) {
         const Tensor q = a[0].tensor() - 1;
         return Value::list({Value(reduce_max(q * 2)), Value(reduce_prod(q + 1))});
       },
       {Value(i64)},
       2},
      {"float64 sum",
       [](const std::vector<Value>& a) { return Value(reduce_sum(a[0].tensor() * 0.5 + 1.0)); },
       {Value(f64)},
       1},
      {"no points: starting values (max -inf, mean NaN)",
       [](const std::vector<Value>& a) {
         const Tensor e = a[0].tensor() * 2.f + 1.f;
         return Value::list({Value(reduce_max(e - 1.f)), Value(reduce_mean(e * e))});
       },
       {Value(empty)},
       2},
  };
  for (const FoldCase& fc : cases) check_case(fc);
}

// A loss over a None batch: each call folds the points it has.
TEST(JitFolds, FullFoldsOverNoneBatchesFoldAtRunTime) {
  const ArgSpec ys{DType::kFloat32, Shape({-1, 10}), "y"};
  Body body = [](const std::vector<Value>& a) {
    const Tensor d = a[0].tensor() - a[1].tensor();
    return Value(reduce_mean(d * d));
  };
  Function j = make(body, true, std::vector<ArgSpec>{ys, ys});
  for (int64_t n : {3, 1, 20000, 0}) {
    SCOPED_TRACE(n);
    const std::vector<Value> args = {
        Value(random_tensor(DType::kFloat32, Shape({n, 10}), static_cast<uint32_t>(n))),
        Value(random_tensor(DType::kFloat32, Shape({n, 10}), static_cast<uint32_t>(n + 1)))};
    expect_same(j(args).tensor(), body(args).tensor());
    EXPECT_EQ(folds_in(j, args), 1u);
  }
  EXPECT_EQ(j.tracing_count(), 1);
}

// A None batch dim: each call folds over the rows it has, no retrace.
TEST(JitFolds, NoneLeadingDimsFoldAtRunTime) {
  const ArgSpec xs{DType::kFloat32, Shape({-1, 6, 4}), "x"};
  Body body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value::list({Value(reduce_mean(x * x, {0, 1})), Value(reduce_max(x + 1.f, {0, 1}))});
  };
  Function j = make(body, true, std::vector<ArgSpec>{xs});
  for (int64_t n : {3, 1, 200, 0}) {
    SCOPED_TRACE(n);
    const std::vector<Value> args = {
        Value(random_tensor(DType::kFloat32, Shape({n, 6, 4}), static_cast<uint32_t>(n)))};
    const std::vector<Tensor> got = testing::tensors_of(j(args)),
                              want = testing::tensors_of(body(args));
    for (size_t i = 0; i < want.size(); ++i) expect_same(got[i], want[i]);
    EXPECT_EQ(folds_in(j, args), 2u);
    EXPECT_EQ(nodes_of(j, args, OpId::ReduceMean), 0u);
  }
  EXPECT_EQ(j.tracing_count(), 1);
}

// The program's folds are checked before anything runs.
TEST(JitFolds, MalformedFoldsAreRefused) {
  const std::vector<Tensor> x = {random_tensor(DType::kFloat32, Shape({3, 4}), 1)};
  std::vector<Tensor> out;
  auto run = [&](std::vector<Fold> folds) {
    Program p = testing::one_input_program({3, 4});
    p.folds = std::move(folds);
    run_kernel(op_def(OpId::JitKernel), x, testing::program_attrs(p), out);
  };
  auto fails = [&](std::vector<Fold> folds, const char* why) {
    SCOPED_TRACE(why);
    expect_error([&] { run(std::move(folds)); }, Code::kInvalidArgument, {why});
  };
  // output, combine, dims, mean, keepdims, init, outer
  const Fold sum{0, OpId::Add, 1, false, false, 0, 0};
  auto with = [&](auto change) {
    Fold f = sum;
    change(f);
    return std::vector<Fold>{f};
  };
  const char* bad = "its program is inconsistent: a fold";
  fails(with([](Fold& f) { f.output = 1; }), bad);           // no output 1
  fails(with([](Fold& f) { f.combine = OpId::Sub; }), bad);  // not a fold
  fails(with([](Fold& f) { f.dims = 3; }), bad);             // past the rank
  fails(with([](Fold& f) { f.dims = 0; }), bad);             // no dim
  fails(with([](Fold& f) { f.outer = -1; }), bad);           // outer dims < 0
  fails(with([](Fold& f) { f.outer = 2; }), bad);            // past the rank
  fails(with([](Fold& f) { f.outer = 1; }), bad);            // trailing dims: rows
  fails({sum, sum}, bad);                                    // folded twice
  fails({sum}, "is not loaded");                             // valid: reaches the kernel
  // A folded output of a dtype the runtime does not fold (uint8).
  Program bytes = testing::one_input_program({3, 4}, DType::kUInt8);
  bytes.folds = {sum};
  const std::vector<Tensor> xb = {cast(x[0], DType::kUInt8)};
  expect_error([&] { run_kernel(op_def(OpId::JitKernel), xb, testing::program_attrs(bytes), out); },
               Code::kInvalidArgument,
               {"a folded output must be float32, float64, int32 or int64, not uint8"});
}

}  // namespace
}  // namespace kiln::jit
