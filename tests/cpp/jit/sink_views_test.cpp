// View sinking: a view of an elementwise value that nothing else reads moves
// onto the value's operands, so the cluster reads them in place and the
// value is never written out. The pass's rewrites (on traced graphs) and the
// compiled results (against graph mode and eager).
#include "jit/fusion/sink_views.h"

#include <algorithm>
#include <functional>

#include "jit_test_util.h"
#include "kiln/context.h"
#include "kiln/graph.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln::jit {
namespace {
using testing::check_all_modes;
using testing::make;
using testing::random_tensor;

using Body = std::function<Value(const std::vector<Value>&)>;

// The traced graph of `body` on `args` after sink_views, and the views moved.
std::unique_ptr<Graph> sunk(const Body& body, const std::vector<Value>& args, size_t& moved) {
  Function f = make(body, false);
  std::unique_ptr<Graph> g = f.get_concrete_function(args)->graph().clone();
  moved = sink_views(*g);
  g->verify();
  return g;
}

// The view nodes of `g` (op `view`) and the ops of their inputs.
std::vector<std::string> view_inputs(const Graph& g, OpId view) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes())
    if (n->op().id == view) ops.emplace_back(n->inputs()[0].node->op().type_name);
  return ops;
}

struct MovedCase {
  const char* name;
  Body body;
  std::vector<Value> args;
  OpId view;
  size_t moved;  // views moved over an op
};

Value v(const Tensor& t) {
  return Value(t);
}

std::vector<MovedCase> moved_cases() {
  const Tensor x = random_tensor(DType::kFloat32, Shape({37, 53}), 1);
  const Tensor x3 = random_tensor(DType::kFloat32, Shape({3, 5, 6}), 2);
  const Tensor y3 = random_tensor(DType::kFloat32, Shape({3, 6, 5}), 3);
  const Tensor s = random_tensor(DType::kFloat32, Shape({9, 16}), 4);
  const Tensor a = random_tensor(DType::kFloat32, Shape({8, 12}), 5);
  const Tensor b = random_tensor(DType::kFloat32, Shape({8, 12}), 6);
  const Tensor i = cast(random_tensor(DType::kFloat32, Shape({7, 9}), 7) * 100.f, DType::kInt32);
  const Tensor z = random_tensor(DType::kFloat32, Shape({5, 24}), 8);
  const Tensor h = random_tensor(DType::kFloat32, Shape({5, 24}), 9);
  const Tensor bias = random_tensor(DType::kFloat32, Shape({24}), 10);
  const Tensor col = random_tensor(DType::kFloat32, Shape({37, 1}), 11);
  const Tensor one = random_tensor(DType::kFloat32, Shape({1, 1, 1}), 12);
  return {
      {"transpose(tanh(x) * 2) + 1",
       [](const std::vector<Value>& a) {
         return Value(transpose(tanh(a[0].tensor()) * 2.f) + 1.f);
       },
       {v(x)},
       OpId::Transpose,
       2},
      {"tanh(x * 3)[:, ::2] * 2",
       [](const std::vector<Value>& a) {
         return Value(index(tanh(a[0].tensor() * 3.f), {Slice(), Slice().step(2)}) * 2.f);
       },
       {v(x)},
       OpId::StridedSlice,
       2},
      {"transpose(exp(tanh(x)), [0, 2, 1]) * y",
       [](const std::vector<Value>& a) {
         return Value(transpose(exp(tanh(a[0].tensor())), {0, 2, 1}) * a[1].tensor());
       },
       {v(x3), v(y3)},
       OpId::Transpose,
       2},
      {"split(x * 2 + 1, 4, axis=1) as gates",
       [](const std::vector<Value>& a) {
         const std::vector<Tensor> p = split(a[0].tensor() * 2.f + 1.f, 4, 1);
         return Value(sigmoid(p[0]) * p[1] + tanh(p[2]) - p[3]);
       },
       {v(s)},
       OpId::Split,
       2},
      {"cast(transpose(a > b)) (bool from float)",
       [](const std::vector<Value>& a) {
         return Value(cast(transpose(a[0].tensor() > a[1].tensor()), DType::kFloat32) + 1.f);
       },
       {v(a), v(b)},
       OpId::Transpose,
       1},
      {"LSTM gates: split(z + h + bias, 4) (a broadcast operand)",
       [](const std::vector<Value>& a) {
         const std::vector<Tensor> g = split(a[0].tensor() + a[1].tensor() + a[2].tensor(), 4, 1);
         return Value(sigmoid(g[0]) * tanh(g[2]) + sigmoid(g[1]) * sigmoid(g[3]));
       },
       {v(z), v(h), v(bias)},
       OpId::Split,
       2},
      {"transpose(tanh(x + bias_column)) (a broadcast column)",
       [](const std::vector<Value>& a) {
         return Value(transpose(tanh(a[0].tensor() + a[1].tensor())) * 2.f);
       },
       {v(x), v(col)},
       OpId::Transpose,
       2},
      {"unstack(tanh(x) * 2, axis 1): each part its own copy of the ops",
       [](const std::vector<Value>& a) {
         const std::vector<Tensor> p = unstack(tanh(a[0].tensor()) * 2.f, 1);
         return Value(p[0] * p[1] - p[2] + p[4]);
       },
       {v(x3)},
       OpId::Unstack,
       2},
      {"a single value of higher rank than the view: read through a JitView",
       [](const std::vector<Value>& a) {
         return Value(index(a[0].tensor() * a[1].tensor(), {kEllipsis, 0}) + 1.f);
       },
       {v(x3), v(one)},
       OpId::StridedSlice,
       1},
      {"transpose((i + i) * 3) int32",
       [](const std::vector<Value>& a) {
         const Tensor t = a[0].tensor();
         return Value(transpose((t + t) * 3) - 1);
       },
       {v(i)},
       OpId::Transpose,
       2},
  };
}

TEST(SinkViews, ViewsOfComputedValuesMoveOntoTheirOperands) {
  for (const MovedCase& c : moved_cases()) {
    SCOPED_TRACE(c.name);
    size_t moved = 0;
    std::unique_ptr<Graph> g = sunk(c.body, c.args, moved);
    EXPECT_EQ(moved, c.moved);
    // Every view left reads a graph input.
    const std::vector<std::string> reads = view_inputs(*g, c.view);
    EXPECT_FALSE(reads.empty());
    for (const std::string& op : reads) EXPECT_EQ(op, "Placeholder");
    for (const std::string& op : view_inputs(*g, OpId::JitView)) EXPECT_EQ(op, "Placeholder");
    // Compiled: one kernel, reading the inputs in place (no view node left).
    check_all_modes(c.body, c.args, 1);
    Function j = make(c.body, true);
    EXPECT_EQ(j.get_concrete_function(c.args)->jit_kernels(), 1u);
    EXPECT_EQ(testing::nodes_of(j, c.args, c.view), 0u);
    EXPECT_EQ(testing::nodes_of(j, c.args, OpId::JitView), 0u);
  }
}

TEST(SinkViews, ViewsStayWhenMovingWouldNotHelp) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({6, 10}), 11);
  const Tensor bias = random_tensor(DType::kFloat32, Shape({10}), 12);
  const Tensor square = random_tensor(DType::kFloat32, Shape({10, 10}), 15);
  const Tensor x3 = random_tensor(DType::kFloat32, Shape({4, 5, 6}), 13);
  struct Case {
    const char* name;
    Body body;
    std::vector<Value> args;
    size_t moved = 0;
  };
  const std::vector<Case> cases = {
      {"the value is read elsewhere too",
       [](const std::vector<Value>& a) {
         const Tensor t = tanh(a[0].tensor());
         return Value(transpose(t) * 2.f + reduce_sum(t));
       },
       {v(x)}},
      {"a product: the view moves over the add, not the MatMul",
       [](const std::vector<Value>& a) {
         return Value(transpose(matmul(a[0].tensor(), a[1].tensor()) + a[2].tensor()) * 2.f);
       },
       {v(x), v(square), v(bias)},
       1},
      {"a perm that moves the last dim two places",
       [](const std::vector<Value>& a) {
         return Value(transpose(tanh(a[0].tensor()) * 2.f, {2, 1, 0}) + 1.f);
       },
       {v(x3)}},
      {"a reduction, not an elementwise op",
       [](const std::vector<Value>& a) {
         return Value(transpose(reduce_sum(a[0].tensor(), {2})) * 2.f + 1.f);
       },
       {v(x3)}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    size_t moved = 0;
    sunk(c.body, c.args, moved);
    EXPECT_EQ(moved, c.moved);
    check_all_modes(c.body, c.args, 1);
  }
}

// Random views (perms, strided slices, splits) of values computed from an
// input and an operand broadcast along random dims: compiled, with the
// views moved, the results match eager.
TEST(SinkViews, RandomViewsOfBroadcastValuesMatchEager) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  size_t moved_total = 0;
  for (int round = 0; round < 16; ++round) {
    const std::vector<int64_t> dims = {1 + pick(5), 1 + pick(6), 2 + pick(7)};
    std::vector<int64_t> bdims;  // the operand: each dim kept or 1, maybe fewer dims
    const int brank = 1 + pick(3);
    for (int d = 3 - brank; d < 3; ++d) bdims.push_back(pick(2) ? dims[static_cast<size_t>(d)] : 1);
    const int kind = pick(3);
    std::vector<int64_t> perm = {0, 1, 2};
    std::shuffle(perm.begin(), perm.end(), rng);
    const int axis = pick(3);
    const int64_t step = 1 + pick(2);
    SCOPED_TRACE(str_cat("round ", round, " x ", Shape(dims), " b ", Shape(bdims), " kind ", kind,
                         " perm ", Shape(perm), " axis ", axis, " step ", step));
    const Body body = [=](const std::vector<Value>& a) {
      const Tensor t = tanh(a[0].tensor() * 2.f - a[1].tensor()) + a[1].tensor();
      if (kind == 0) return Value(transpose(t, perm) * 3.f + 1.f);
      if (kind == 1) {
        std::vector<IndexItem> items(3, Slice());
        items[static_cast<size_t>(axis)] = Slice().step(step);
        return Value(sigmoid(index(t, items)) - 0.5f);
      }
      const std::vector<Tensor> p = split(t, {1, dims[static_cast<size_t>(axis)] - 1}, axis);
      return Value(sigmoid(p[1]) * 2.f + reduce_sum(p[0] * p[0]));
    };
    const std::vector<Value> args = {
        v(random_tensor(DType::kFloat32, Shape(dims), static_cast<uint32_t>(100 + round))),
        v(random_tensor(DType::kFloat32, Shape(bdims), static_cast<uint32_t>(200 + round)))};
    if (kind == 2 && dims[static_cast<size_t>(axis)] < 2) continue;
    size_t moved = 0;
    sunk(body, args, moved);
    moved_total += moved;
    Function j = make(body, true);
    testing::expect_same(j(args).tensor(), body(args).tensor());
  }
  EXPECT_GT(moved_total, 12u);  // most rounds move their view over both ops
}

// A gated unit after a dense layer, split(bias_add(x @ w, b), 2): the split
// moves over the BiasAdd (its copies are Adds, the bias read through
// JitViews) and stops at the MatMul, whose halves the kernel reads in place.
TEST(SinkViews, SplitsMoveOverABiasAdd) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({12, 16}), 51);
  const Tensor w = random_tensor(DType::kFloat32, Shape({16, 20}), 52);
  const Tensor b = random_tensor(DType::kFloat32, Shape({20}), 53);
  const std::vector<Value> args = {v(x), v(w), v(b)};
  const Body body = [](const std::vector<Value>& a) {
    const std::vector<Tensor> h =
        split(bias_add(matmul(a[0].tensor(), a[1].tensor()), a[2].tensor()), 2, 1);
    return Value(h[0] * sigmoid(h[1]));
  };
  size_t moved = 0;
  std::unique_ptr<Graph> g = sunk(body, args, moved);
  EXPECT_EQ(moved, 1u);
  EXPECT_EQ(view_inputs(*g, OpId::Split), std::vector<std::string>{"BatchMatMulV2"});
  for (const auto& n : g->nodes()) EXPECT_NE(n->op().id, OpId::BiasAdd);
  check_all_modes(body, args, 1);
  Function j = make(body, true);
  EXPECT_EQ(j.get_concrete_function(args)->jit_kernels(), 1u);
  EXPECT_EQ(testing::nodes_of(j, args, OpId::Split), 0u);
  EXPECT_EQ(testing::nodes_of(j, args, OpId::JitView), 0u);
}

// Dims of unknown size may broadcast at run time: a view that reads them
// whole moves, one that slices them stays.
TEST(SinkViews, UnknownDimsMoveOnlyWhenReadWhole) {
  const std::vector<ArgSpec> sig = {{DType::kFloat32, Shape({-1, 8}), "x"},
                                    {DType::kFloat32, Shape({-1, 8}), "y"}};
  const Body whole = [](const std::vector<Value>& a) {
    return Value(transpose(tanh(a[0].tensor() * a[1].tensor())) + 1.f);
  };
  const Body part = [](const std::vector<Value>& a) {
    return Value(index(tanh(a[0].tensor() * a[1].tensor()), {Slice(1, 3)}) + 1.f);
  };
  for (const Shape& xs : {Shape({5, 8}), Shape({1, 8})}) {
    SCOPED_TRACE(str_cat("x ", xs));
    const std::vector<Value> args = {v(random_tensor(DType::kFloat32, xs, 21)),
                                     v(random_tensor(DType::kFloat32, Shape({5, 8}), 22))};
    for (const auto& [body, moves] : {std::pair{whole, true}, std::pair{part, false}}) {
      Function f = make(body, false, sig);
      std::unique_ptr<Graph> g = f.get_concrete_function(args)->graph().clone();
      EXPECT_EQ(sink_views(*g), moves ? 2u : 0u);
      const Tensor eager = body(args).tensor();
      Function j = make(body, true, sig);
      testing::expect_same(j(args).tensor(), eager);
    }
  }
}

// A lone op reading a view that graph mode copies out compiles (the read in
// place counts as an op); one that graph mode serves without a copy (a run
// of rows) stays a kernel call.
TEST(SinkViews, ALoneOpOverACopiedViewCompiles) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({64, 48}), 31);
  const std::vector<Value> args = {v(x)};
  const Body swapped = [](const std::vector<Value>& a) {
    return Value(tanh(transpose(a[0].tensor())));
  };
  const Body rows = [](const std::vector<Value>& a) {
    return Value(tanh(index(a[0].tensor(), {Slice(2, 9)})));
  };
  check_all_modes(swapped, args, 1);
  Function j = make(swapped, true), r = make(rows, true);
  EXPECT_EQ(j.get_concrete_function(args)->jit_kernels(), 1u);
  EXPECT_EQ(r.get_concrete_function(args)->jit_kernels(), 0u);
  testing::expect_same(r(args).tensor(), rows(args).tensor());
}

// The JitView op as a kernel call (when no cluster reads it): its value
// through its view, new dims included; malformed views and sources that do
// not fit them are errors.
TEST(JitView, ReadsThroughItsViewAndRefusesOnesThatDoNotFit) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({3, 4}), 41);
  auto attrs = [](const View& w) { return Attrs{AttrObjectRef(std::make_shared<ViewAttr>(w))}; };
  auto run = [&](const View& w, const Tensor& in) {
    std::vector<Tensor> out;
    run_kernel(op_def(OpId::JitView), std::span<const Tensor>(&in, 1), attrs(w), out);
    return out.at(0);
  };
  // Row 1 as a column, then every other column of rows 0 and 2 reversed.
  testing::expect_same(run(View{{1, 0}, {{1, 1, -1}, {-1, 1, 1}}}, x),
                       transpose(index(x, {Slice(1, 2)})));
  testing::expect_same(run(View{{2, 0}, {{0, -2, 2}, {1, 2, 2}}}, x),
                       index(x, {Slice().step(-2), Slice().step(2)}));
  auto fails = [&](const View& w, const Tensor& in, const char* why) {
    std::vector<Tensor> out;
    kiln::testing::expect_error(
        [&] { run_kernel(op_def(OpId::JitView), std::span<const Tensor>(&in, 1), attrs(w), out); },
        Code::kInvalidArgument, {why});
  };
  fails(View{{0, 0}, {{5, 1, -1}}}, x, "its view: a dim out of range");  // dim 5 of 2
  fails(View{{3, 0}, {{0, 1, 2}}}, x, "does not fit its view");          // starts at row 3 of 3
  fails(View{{0, 0}, {{1, 1, 9}}}, x, "does not fit its view");          // 9 of 4 columns
  fails(View{{0, 0, 0}, {{0, 1, -1}}}, x, "does not fit its view");      // a rank-3 source
  // An attribute holding another object than a view.
  std::vector<Tensor> out;
  kiln::testing::expect_error(
      [&] {
        run_kernel(op_def(OpId::JitView), std::span<const Tensor>(&x, 1),
                   testing::program_attrs(testing::one_input_program({3, 4})), out);
      },
      Code::kInvalidArgument, {"attribute 'view' does not hold the object this op reads"});
}

}  // namespace
}  // namespace kiln::jit
