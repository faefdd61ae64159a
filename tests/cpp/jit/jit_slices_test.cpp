// Slices as index maps: StridedSlice, Slice, Split and Unstack outputs of a
// value the cluster does not compute join it as strided reads (the JitKernel
// node's `maps`) when they keep the source's last dim whole-stepped; results
// match graph mode and eager, and hostile maps are refused.
#include <array>
#include <functional>

#include "jit_test_util.h"
#include "kiln/context.h"
#include "kiln/graph.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln::jit {
namespace {
using kiln::testing::expect_error;
using testing::check_all_modes;
using testing::make;
using testing::random_tensor;

// How many inputs of the function's compiled kernels `op` reads in place.
size_t reads_through(Function& f, const std::vector<Value>& args, const std::string& op) {
  const std::string hlo = f.get_concrete_function(args)->compiler_ir("hlo");
  const std::string key = "read through " + op + " '";
  size_t n = 0;
  for (size_t at = hlo.find(key); at != std::string::npos; at = hlo.find(key, at + 1)) ++n;
  return n;
}

struct IndexCase {
  const char* name;
  Shape shape;
  std::vector<IndexItem> items;
  bool in_place;      // false: a kernel call
  const char* shown;  // how the IR describes the view
};

TEST(JitSlices, StridedSlicesAreReadInPlace) {
  const std::vector<IndexCase> cases = {
      {"x[1:4]", Shape({6, 10}), {Slice(1, 4)}, true, "[1:4, :]"},
      {"x[:, 2:7]", Shape({6, 10}), {Slice(), Slice(2, 7)}, true, "[:, 2:7]"},
      {"x[::2, 3:]", Shape({6, 10}), {Slice().step(2), Slice(3, None)}, true, "[0:6:2, 3:10]"},
      {"x[::-1]", Shape({6, 10}), {Slice().step(-1)}, true, "[5::-1, :]"},
      {"x[-3:]", Shape({6, 10}), {Slice(-3, None)}, true, "[3:6, :]"},
      {"x[2]", Shape({4, 5, 12}), {2}, true, "[2, :, :]"},
      {"x[:, -1]", Shape({4, 5, 12}), {Slice(), -1}, true, "[:, 4, :]"},
      {"x[1, :, None, 4:9]",
       Shape({4, 5, 12}),
       {1, Slice(), kNewAxis, Slice(4, 9)},
       true,
       "[1, :, 4:9]"},
      {"x[..., 2:5]", Shape({4, 5, 12}), {kEllipsis, Slice(2, 5)}, true, "[:, :, 2:5]"},
      {"x[1:3, ::-2, :, None]",
       Shape({4, 5, 12}),
       {Slice(1, 3), Slice().step(-2), Slice(), kNewAxis},
       true,
       "[1:3, 4::-2, :]"},
      {"x[:0]", Shape({6, 10}), {Slice(None, 0)}, true, "[0:0, :]"},
      {"x[:, 1:] of one row", Shape({1, 10}), {Slice(), Slice(1, None)}, true, "[:, 1:10]"},
      {"x[1:2, :, 3:4]",
       Shape({4, 1, 12}),
       {Slice(1, 2), Slice(), Slice(3, 4)},
       true,
       "[1:2, :, 3:4]"},
      // Rows that are not one run of values but move forward through x:
      // strided reads (a kernel call before).
      {"x[..., 0]", Shape({4, 5, 12}), {kEllipsis, 0}, true, "[:, :, 0]"},
      {"x[:, ::2]", Shape({6, 10}), {Slice(), Slice().step(2)}, true, "[:, 0:10:2]"},
      {"x[::-1, ::-3]",
       Shape({6, 10}),
       {Slice().step(-1), Slice().step(-3)},
       true,
       "[5::-1, 9::-3]"},
      {"x[:, 1]", Shape({70, 3}), {Slice(), 1}, true, "[:, 1]"},
  };
  uint32_t seed = 1;
  for (const IndexCase& ic : cases) {
    const DType dt =
        std::array{DType::kFloat32, DType::kInt32, DType::kUInt8, DType::kFloat16}[seed / 2 % 4];
    SCOPED_TRACE(str_cat(ic.name, " of ", ic.shape, " ", dtype_name(dt)));
    const std::vector<IndexItem> items = ic.items;
    auto body = [items, dt](const std::vector<Value>& a) {
      const Tensor t = index(a[0].tensor(), items) * a[1].tensor();
      return Value(dt == DType::kFloat32 ? tanh(t) + 1.f : t + a[1].tensor());
    };
    const Tensor x = random_tensor(DType::kFloat32, ic.shape, seed++) * 10.f;
    const Tensor y = random_tensor(DType::kFloat32, Shape({}), seed++);
    const std::vector<Value> args = {Value(cast(x, dt)), Value(cast(y, dt))};
    const bool any = index(x, items).num_elements() > 0;
    check_all_modes(body, args, any ? 1 : 0);
    Function j = make(body, true);
    if (any) {
      EXPECT_EQ(reads_through(j, args, "StridedSlice"), ic.in_place ? 1u : 0u);
    }
    if (any && ic.in_place) {
      EXPECT_NE(j.get_concrete_function(args)->compiler_ir("hlo").find(str_cat("as ", ic.shown)),
                std::string::npos);
    }
  }
}

// Strided reads of rows that are not one run (a step through the inner dim,
// an index into it, reversed steps): sizes of 0 and 1, and large enough to
// split over threads. (Parts of None dims: PartsOfUnknownDimsAreReadInPlace.)
TEST(JitSlices, StridedRowsOfEverySize) {
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor s = index(x, {Slice(), Slice().step(2)});
    const Tensor r = index(x, {Slice().step(-1), Slice(None, None, -2)});
    return Value(tanh(s) * 2.f + r + index(x, {Slice(), Slice(None, 1)}));
  };
  uint32_t seed = 30;
  for (const Shape& s : {Shape({300, 2570}), Shape({5, 9}), Shape({1, 7}), Shape({6, 1}),
                         Shape({0, 4}), Shape({4, 0})}) {
    SCOPED_TRACE(s);
    const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, s, seed++))};
    const bool any = s.num_elements() > 0;
    check_all_modes(body, args, any ? 1 : 0);
    Function j = make(body, true);
    if (any) {
      EXPECT_EQ(reads_through(j, args, "StridedSlice"), 3u);
    }
  }
}

// Parts of dims of unknown size that start at a fixed index and run to the
// dim's end, or to a point counted from its end (x[:, 1:], x[:, :-1], a
// language model's shifted logits), and indices counted from the front:
// read in place for every size, including sizes that leave nothing (the
// rest of a dim past its end is empty, as Python slicing has it) and an
// index out of range (an error, as in graph mode). Parts whose size or start
// depends on the dim otherwise (x[:, :5], x[:, -2:]) stay kernel calls.
TEST(JitSlices, PartsOfUnknownDimsAreReadInPlace) {
  const std::vector<ArgSpec> sig = {ArgSpec{DType::kFloat32, Shape({-1, -1, 8}), "x"}};
  auto body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    const Tensor tail = index(x, {Slice(), Slice(1, None)});
    return Value::list({
        Value(softmax(index(x, {Slice(), Slice(None, -1)}) * 2.f)),
        Value(tanh(tail) + 1.f),
        Value(index(x, {Slice(), Slice(2, -1), 3}) * 3.f + 1.f),
        Value(index(x, {Slice(1, None), 0}) * 2.f - 1.f),
        Value(exp(index(index(x, {Slice(), Slice(2, None)}), {Slice(), Slice(None, -1)})) *
              0.5f),  // a rest of a rest
        Value(index(transpose(x, {1, 0, 2}), {Slice(1, None)}) * 4.f + 1.f),
    });
  };
  auto stays = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value::list(
        {Value(index(x, {Slice(), Slice(None, 5)}) * 2.f + 1.f),
         Value(index(x, {Slice(), Slice(-2, None)}) * 2.f + 1.f),
         Value(index(index(x, {Slice(), Slice(None, -1)}), {Slice(), 2}) * 2.f + 1.f)});
  };
  Function g = make(body, false, sig), j = make(body, true, sig);
  Function gs = make(stays, false, sig), js = make(stays, true, sig);
  uint32_t seed = 50;
  for (const Shape& s : {Shape({4, 9, 8}), Shape({2, 1, 8}), Shape({3, 2, 8}), Shape({1, 3, 8}),
                         Shape({0, 5, 8}), Shape({3, 4, 8})}) {
    SCOPED_TRACE(s);
    const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, s, seed++))};
    const Value want = g(args), got = j(args);
    for (size_t i = 0; i < want.items().size(); ++i) {
      SCOPED_TRACE(str_cat("result ", i));
      testing::expect_same(got.items()[i].tensor(), want.items()[i].tensor());
    }
    if (s.dim(1) < 4) continue;  // (stays reads index 2 of x[:, :-1])
    const Value want_s = gs(args), got_s = js(args);
    for (size_t i = 0; i < want_s.items().size(); ++i)
      testing::expect_same(got_s.items()[i].tensor(), want_s.items()[i].tensor());
  }
  const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, Shape({3, 6, 8}), 1))};
  EXPECT_EQ(j.tracing_count(), 1);
  EXPECT_EQ(reads_through(j, args, "StridedSlice"), 6u);
  EXPECT_EQ(testing::nodes_of(j, args, OpId::StridedSlice), 0u);
  EXPECT_EQ(testing::nodes_of(js, args, OpId::StridedSlice), 3u);
  EXPECT_EQ(testing::ir_count(j, args, "as [:, 0:-1, :]"), 1u);
  // An index past a dim of unknown size fails as graph mode does.
  const std::vector<Value> none = {Value(random_tensor(DType::kFloat32, Shape({3, 0, 8}), 2))};
  expect_error([&] { g(none); }, Code::kInvalidArgument, {"out of bounds"});
  expect_error([&] { j(none); }, Code::kInvalidArgument, {"reads index 0 of dim 1"});
  // x[:, :-1][:, 2] of 3 values: index 2 of 2. The two views stay apart (one
  // view of x could not check the index against the trimmed dim): an error.
  const std::vector<Value> three = {Value(random_tensor(DType::kFloat32, Shape({2, 3, 8}), 3))};
  expect_error([&] { gs(three); }, Code::kInvalidArgument, {"out of bounds"});
  expect_error([&] { js(three); }, Code::kInvalidArgument, {"reads index 2 of dim 1"});
}

TEST(JitSlices, SliceOpsAndUnknownBatchDims) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({5, 9}), 3);
  auto body = [](const std::vector<Value>& a) {
    const Tensor& v = a[0].tensor();
    return Value(exp(slice(v, {1, 2}, {3, -1})) - slice(v, {0, 0}, {3, 7}) * 0.5f);
  };
  check_all_modes(body, {Value(x)});
  Function j = make(body, true);
  EXPECT_EQ(reads_through(j, {Value(x)}, "Slice"), 2u);
  // The slices' begin and size constants leave the graph with them; 0.5 stays.
  size_t consts = 0;
  for (const auto& n : j.get_concrete_function({Value(x)})->optimized_graph().nodes())
    consts += n->op().id == OpId::Const;
  EXPECT_EQ(consts, 1u);

  // A None batch dim read whole: one trace and one kernel for every size.
  const std::vector<ArgSpec> sig = {ArgSpec{DType::kFloat32, Shape({-1, 12}), ""}};
  auto cols = [](const std::vector<Value>& a) {
    const Tensor& v = a[0].tensor();
    return Value(relu(index(v, {Slice(), Slice(4, 8)}) - index(v, {Slice(), Slice(None, 4)})));
  };
  Function g = make(cols, false, sig), jj = make(cols, true, sig);
  uint32_t seed = 9;
  for (int64_t n : {3, 1, 7, 0}) {
    SCOPED_TRACE(n);
    const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, Shape({n, 12}), seed++))};
    testing::expect_same(jj(args).tensor(), g(args).tensor());
  }
  EXPECT_EQ(jj.tracing_count(), 1);
  EXPECT_EQ(
      reads_through(jj, {Value(random_tensor(DType::kFloat32, Shape({2, 12}), 1))}, "StridedSlice"),
      2u);
}

// Short rows of a view (16 of each 400): the kernel is specialized for them
// even when the row count is unknown, as it is for contiguous short rows.
TEST(JitSlices, ShortRowsOfAViewGetTheShortRowLoop) {
  const std::vector<ArgSpec> sig = {ArgSpec{DType::kFloat32, Shape({-1, 400}), ""}};
  auto body = [](const std::vector<Value>& a) {
    return Value(tanh(index(a[0].tensor(), {Slice(), Slice(100, 116)})) * 2.f + 1.f);
  };
  Function g = make(body, false, sig), j = make(body, true, sig);
  uint32_t seed = 50;
  for (int64_t n : {37, 1, 0, 5}) {
    SCOPED_TRACE(n);
    const std::vector<Value> args = {
        Value(random_tensor(DType::kFloat32, Shape({n, 400}), seed++))};
    testing::expect_same(j(args).tensor(), g(args).tensor());
  }
  const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, Shape({3, 400}), 1))};
  EXPECT_NE(j.get_concrete_function(args)->compiler_ir("source").find("sh[R - 1] == 16"),
            std::string::npos);
}

// An LSTM cell's gates: the pre-activations split in four, each part read in
// place by one kernel computing the new state and output.
TEST(JitSlices, SplitGatesOfAnLstmCellFuseIntoOneKernel) {
  const int64_t units = 16;
  const std::vector<ArgSpec> sig = {ArgSpec{DType::kFloat32, Shape({-1, 4 * units}), ""},
                                    ArgSpec{DType::kFloat32, Shape({-1, units}), ""}};
  auto cell = [](const std::vector<Value>& a) {
    const std::vector<Tensor> g = split(a[0].tensor(), 4, 1);
    const Tensor c = sigmoid(g[1]) * a[1].tensor() + sigmoid(g[0]) * tanh(g[2]);
    return Value::list({Value(sigmoid(g[3]) * tanh(c)), Value(c)});
  };
  Function gr = make(cell, false, sig), j = make(cell, true, sig);
  uint32_t seed = 20;
  for (int64_t b : {5, 1, 8}) {
    SCOPED_TRACE(b);
    const std::vector<Value> args = {
        Value(random_tensor(DType::kFloat32, Shape({b, 4 * units}), seed++)),
        Value(random_tensor(DType::kFloat32, Shape({b, units}), seed++))};
    const Value want = cell(args), got = j(args), graph = gr(args);
    for (size_t i = 0; i < 2; ++i) {
      testing::expect_same(got.items()[i].tensor(), want.items()[i].tensor());
      testing::expect_same(graph.items()[i].tensor(), want.items()[i].tensor());
    }
    EXPECT_EQ(j.get_concrete_function(args)->jit_kernels(), 1u);
    EXPECT_EQ(reads_through(j, args, "SplitV"), 4u);
  }
  EXPECT_EQ(j.tracing_count(), 1);
}

TEST(JitSlices, UnevenSplitsAndUnstackedParts) {
  const Tensor x = random_tensor(DType::kInt32, Shape({3, 4, 10}), 5) * 7;
  auto uneven = [](const std::vector<Value>& a) {
    const std::vector<Tensor> p = split(a[0].tensor(), {1, -1, 1}, 0);
    return Value((p[0] + p[2]) * p[0] - p[2]);  // the middle part unread
  };
  check_all_modes(uneven, {Value(x)});
  Function j = make(uneven, true);
  EXPECT_EQ(reads_through(j, {Value(x)}, "SplitV"), 2u);
  auto parts = [](const std::vector<Value>& a) {
    const std::vector<Tensor> p = unstack(a[0].tensor(), 1);
    return Value(p[0] * p[1] + p[3] - p[2] * 3);
  };
  check_all_modes(parts, {Value(x)});
  Function u = make(parts, true);
  EXPECT_EQ(reads_through(u, {Value(x)}, "Unpack"), 4u);
}

TEST(JitSlices, PartsReadElsewhereOrComputedInTheClusterStayKernelCalls) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({4, 8}), 11);
  // A part also returned: the split stays a kernel call.
  auto returned = [](const std::vector<Value>& a) {
    const std::vector<Tensor> p = split(a[0].tensor(), 2, 1);
    return Value::list({Value(tanh(p[0]) * p[1] + 1.f), Value(p[1])});
  };
  const Value got = make(returned, true)({Value(x)}), want = returned({Value(x)});
  for (size_t i = 0; i < 2; ++i)
    testing::expect_same(got.items()[i].tensor(), want.items()[i].tensor());
  Function r = make(returned, true);
  EXPECT_EQ(reads_through(r, {Value(x)}, "SplitV"), 0u);
  // A slice of a value a member computes: that member stays outside.
  auto inner = [](const std::vector<Value>& a) {
    const Tensor m = a[0].tensor() * 3.f + 1.f;
    return Value(exp(index(m, {Slice(1, 3)})) - 2.f);
  };
  check_all_modes(inner, {Value(x)});
}

// Row kernels (softmax, reductions) read views whose reduced dims are one
// run of values: x[:, 2:] for a last-dim reduction, x[1:3] for two dims.
TEST(JitSlices, RowKernelsReadWholeRowsInPlace) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({6, 40}), 31);
  auto soft = [](const std::vector<Value>& a) {
    return Value(softmax(index(a[0].tensor(), {Slice(), Slice(2, None)}) * 2.f + 1.f));
  };
  check_all_modes(soft, {Value(x)});
  Function s = make(soft, true);
  EXPECT_EQ(reads_through(s, {Value(x)}, "StridedSlice"), 1u);
  auto halves = [](const std::vector<Value>& a) {
    const std::vector<Tensor> p = split(a[0].tensor(), 2, 1);
    return Value((p[0] - reduce_mean(p[0], -1, true)) * p[1]);
  };
  check_all_modes(halves, {Value(x)});
  Function h = make(halves, true);
  EXPECT_EQ(reads_through(h, {Value(x)}, "SplitV"), 2u);

  const Tensor y = random_tensor(DType::kFloat32, Shape({4, 5, 12}), 32);
  auto sum_of = [](std::vector<IndexItem> items) {
    return [items](const std::vector<Value>& a) {
      return Value(reduce_sum(tanh(index(a[0].tensor(), items)), {1, 2}));
    };
  };
  // x[1:3] reads whole [5, 12] blocks; x[:, :, 1:] reads 11 of each 12.
  const auto blocks = sum_of({Slice(1, 3)}), parts = sum_of({Slice(), Slice(), Slice(1, None)});
  check_all_modes(blocks, {Value(y)});
  check_all_modes(parts, {Value(y)});
  Function b = make(blocks, true), p = make(parts, true);
  EXPECT_EQ(reads_through(b, {Value(y)}, "StridedSlice"), 1u);
  EXPECT_EQ(reads_through(p, {Value(y)}, "StridedSlice"), 0u);
}

// A view row read only by another (a slice of a transpose) is read through:
// one view of the first one's source.
TEST(JitSlices, ViewsOfViewsComposeIntoOneRead) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({4, 5, 6}), 41);
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> view;
    const char* op;     // the outermost view row
    const char* shown;  // the composed view
  };
  const std::vector<Case> cases = {
      {"transpose(x)[1:3]",
       [](const Tensor& v) {
         return index(transpose(v, {1, 0, 2}), {Slice(1, 3)});
       },
       "StridedSlice", "[:, 1:3, :] (1, 0, 2)"},
      {"transpose(x[:, 1:4])",
       [](const Tensor& v) {
         return transpose(index(v, {Slice(), Slice(1, 4)}), {1, 0, 2});
       },
       "Transpose", "[:, 1:4, :] (1, 0, 2)"},
      {"x[::-1][1:3, 2]",
       [](const Tensor& v) {
         return index(index(v, {Slice().step(-1)}), {Slice(1, 3), 2});
       },
       "StridedSlice", "[2:0:-1, 2, :]"},
      {"split(transpose(x))[1]",
       [](const Tensor& v) {
         return split(transpose(v, {1, 0, 2}), {2, 3}, 0)[1];
       },
       "SplitV", "[:, 2:5, :] (1, 0, 2)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto view = c.view;
    auto body = [view](const std::vector<Value>& a) {
      return Value(tanh(view(a[0].tensor())) * 2.f + 1.f);
    };
    check_all_modes(body, {Value(x)});
    Function j = make(body, true);
    EXPECT_EQ(reads_through(j, {Value(x)}, c.op), 1u);
    const std::string hlo = j.get_concrete_function({Value(x)})->compiler_ir("hlo");
    EXPECT_NE(hlo.find(str_cat("as ", c.shown)), std::string::npos) << hlo;
  }
  // The inner view also read directly: it stays a kernel call, the slice of
  // it is read in place.
  auto shared = [](const std::vector<Value>& a) {
    const Tensor t = transpose(a[0].tensor(), {1, 0, 2});
    return Value(index(t, {Slice(1, 3)}) * 2.f + reduce_sum(t, {0}, true));
  };
  check_all_modes(shared, {Value(x)});
}

// The view rules refuse (never throw on) what inference or the kernel would
// reject, and parts whose place depends on an unknown dim.
TEST(JitSlices, ViewRulesRefuseWhatTheyCannotPlace) {
  auto ask = [](OpId id, std::vector<TensorSpec> ins, std::vector<const Tensor*> values,
                std::vector<TensorSpec> outs, Attrs attrs) {
    const OpDef& op = op_def(id);
    View v;
    const ViewQuery q{op, attrs, ins, outs, values, 0};
    return op.jit_view(q, v);
  };
  const TensorSpec x{DType::kFloat32, Shape({4, 6})}, unknown{DType::kFloat32, Shape({-1, 6})};
  const Tensor zero = Tensor::from_vector(std::vector<int64_t>{0, 0}, Shape({2}));
  const Tensor one = Tensor::from_vector(std::vector<int64_t>{1, 1}, Shape({2}));
  const Tensor neg = Tensor::from_vector(std::vector<int64_t>{-1, 0}, Shape({2}));
  const Tensor all = Tensor::from_vector(std::vector<int64_t>{-1, -1}, Shape({2}));
  const TensorSpec spec2{DType::kInt64, Shape({2})};
  const Attrs masks{int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}};
  // StridedSlice with a zero stride: canonicalization throws; the rule says no.
  EXPECT_FALSE(
      ask(OpId::StridedSlice, {x, spec2, spec2, spec2}, {nullptr, &one, &one, &zero}, {x}, masks));
  // Slice with a negative begin, and x[1:] of an unknown dim (its size unknown).
  EXPECT_FALSE(ask(OpId::Slice, {x, spec2, spec2}, {nullptr, &neg, &all}, {x}, Attrs{}));
  EXPECT_FALSE(
      ask(OpId::Slice, {unknown, spec2, spec2}, {nullptr, &one, &all}, {unknown}, Attrs{}));
  EXPECT_TRUE(
      ask(OpId::Slice, {unknown, spec2, spec2}, {nullptr, &zero, &all}, {unknown}, Attrs{}));
  // Begin and size not constant.
  EXPECT_FALSE(ask(OpId::Slice, {x, spec2, spec2}, {nullptr, nullptr, &all}, {x}, Attrs{}));
  // A split along an unknown dim.
  EXPECT_FALSE(ask(OpId::Split, {unknown}, {nullptr}, {TensorSpec{DType::kFloat32, Shape({-1, 6})}},
                   Attrs{std::vector<int64_t>{}, int64_t{0}, int64_t{2}}));
}

// The runtime keeps a program's layout and input offsets while its shapes
// repeat (Program::last_call). A view's start lives in the program, not in
// the kernel's source: programs sharing one kernel with other starts read
// their own rows, on the first call and on the calls the cache serves.
TEST(JitSlices, AViewsStartIsReadFromItsProgram) {
  auto body = [](const std::vector<Value>& a) {
    return Value(tanh(index(a[0].tensor(), {Slice(1, 3)})) * 2.f + 1.f);
  };
  const Tensor x = random_tensor(DType::kFloat32, Shape({5, 8}), 21);
  Function j = make(body, true);
  const auto cf = j.get_concrete_function({Value(x)});
  const Node* kernel = nullptr;
  for (const auto& n : cf->optimized_graph().nodes())
    if (n->op().id == OpId::JitKernel) kernel = n.get();
  ASSERT_NE(kernel, nullptr);
  const Program& compiled = testing::program_of(*kernel);
  // One input read as x[1:3]: starts {1, 0}.
  ASSERT_TRUE(compiled.viewed(0));
  ASSERT_EQ(compiled.views[0].start, (std::vector<int64_t>{1, 0}));
  std::vector<Tensor> in;
  for (const Edge& e : kernel->inputs())
    in.push_back(e.node->op().id == OpId::Const ? std::get<Tensor>(e.node->attr("value")) : x);
  for (int64_t start : {1, 2, 1, 3}) {
    SCOPED_TRACE(start);
    Program p = compiled;  // the same kernel, another start
    p.views[0].start[0] = start;
    const Attrs attrs = testing::program_attrs(p);
    for (int call = 0; call < 2; ++call) {
      std::vector<Tensor> out(1);
      run_kernel(op_def(OpId::JitKernel), in, attrs, out);
      testing::expect_same(out[0], tanh(index(x, {Slice(start, start + 2)})) * 2.f + 1.f);
    }
  }
}

TEST(JitSlices, MalformedViewsAreRefused) {
  // Input 1 of {0, 0, 2, 3, 1, 0, 0, 1, 3, -1, 1, 1, 1, 1, -1} as the
  // runtime once encoded it: x[1:4, None, :] of a rank-2 source.
  EXPECT_EQ(view_problem(View{{1, 0}, {{0, 1, 3}, {-1, 1, 1}, {1, 1, -1}}}), "");
  const int64_t big = int64_t{1} << 40;
  for (const auto& [v, why] : std::vector<std::pair<View, std::string>>{
           {View{{0, 0}, {{2, 1, 3}}}, "a dim out of range"},                    // dim 2 of 2
           {View{{0, 0}, {{0, 1, 3}, {0, 1, 3}}}, "a source dim walked twice"},  //
           {View{{0, 0}, {{0, 0, 3}}}, "a dim out of range"},                    // step 0
           {View{{1, 0}, {{0, 1, -1}}}, "a whole dim not read from 0 by 1"},     //
           {View{{0, 0}, {{0, 2, -1}}}, "a whole dim not read from 0 by 1"},     //
           {View{{-4, 0}, {{0, 1, 3}}}, "a start out of range"},                 //
           {View{{0}, {{-1, 1, 2}}}, "a new dim of size other than 1"},          //
           {View{{0}, {{0, 2, -2}}}, "the rest of a dim not read by 1"},         //
           {View{{0}, {{0, 1, -2 * big}}}, "a dim out of range"},                // a trim past 2^40
           {View{{0}, {{0, big * 1024, 1}}}, "a dim out of range"},              // a step past 2^40
           {View{std::vector<int64_t>(17, 0), {}}, "over 16 dims"}}) {
    SCOPED_TRACE(why);
    EXPECT_EQ(view_problem(v), why);
  }
  // A reversed slice of an empty dim starts at -1: it reads nothing.
  EXPECT_EQ(view_problem(View{{-1}, {{0, -1, 0}}}), "");
  // A view past its source's dims fails the node with a clear message
  // (inference and the kernel share the check).
  const View past{{3}, {{0, 1, 4}}};  // x[3:7] of a [5]
  int64_t dims[1];
  EXPECT_NE(view_dims(past, Shape({5}), dims).find("reads index 6 of dim 0"), std::string::npos);
  EXPECT_EQ(view_dims(past, Shape({7}), dims), "");
  EXPECT_EQ(dims[0], 4);
  EXPECT_NE(view_dims(past, Shape({7, 1}), dims).find("reads 1 dims"), std::string::npos);
  // The rest of a dim: x[2:-1] counts n - 3 values, none past the end.
  const View rest{{2}, {{0, 1, rest_of_dim(1)}}};
  for (const auto& [n, count] : std::vector<std::pair<int64_t, int64_t>>{{7, 4}, {3, 0}, {1, 0}}) {
    EXPECT_EQ(view_dims(rest, Shape({n}), dims), "");
    EXPECT_EQ(dims[0], count);
  }
  EXPECT_EQ(view_dims(rest, Shape({-1}), dims), "");
  EXPECT_EQ(dims[0], -1);
  const View backwards{{2}, {{0, -1, 4}}};  // x[2::-1] reads 4
  EXPECT_NE(view_dims(backwards, Shape({5}), dims).find("reads index -1"), std::string::npos);
  const View at{{1, 5}, {}};  // x[1, 5] of a [2, 5]
  EXPECT_NE(view_dims(at, Shape({2, 5}), dims).find("index 5 of dim 1"), std::string::npos);
  // Steps and sizes at the 2^40 limit: the last index is computed without
  // overflowing.
  const View huge{{0}, {{0, big, big}}};
  EXPECT_EQ(view_problem(huge), "");
  EXPECT_NE(view_dims(huge, Shape({5}), dims).find("reads index past 2^63"), std::string::npos);
  int64_t strides[1];
  EXPECT_EQ(view_strides(past, Shape({7}), strides), 3);
  EXPECT_EQ(strides[0], 1);

  std::vector<Tensor> out;
  Program one = testing::one_input_program({4});
  one.views = {past};
  const std::vector<Tensor> x = {random_tensor(DType::kFloat32, Shape({5}), 3)};
  expect_error([&] { run_kernel(op_def(OpId::JitKernel), x, testing::program_attrs(one), out); },
               Code::kInvalidArgument, {"input 0", "reads index 6"});
  // A row kernel over [2, 3, 4] reducing two dims, reading x[:, :, 1:5] of
  // a [2, 3, 6]: its rows are not one run of values.
  Program rows = testing::one_input_program({2, 3, 4}, DType::kFloat32, 2);
  rows.views = {View{{0, 0, 1}, {{0, 1, -1}, {1, 1, -1}, {2, 1, 4}}}};
  const std::vector<Tensor> z = {random_tensor(DType::kFloat32, Shape({2, 3, 6}), 4)};
  expect_error([&] { run_kernel(op_def(OpId::JitKernel), z, testing::program_attrs(rows), out); },
               Code::kInvalidArgument, {"does not read whole rows"});
}

}  // namespace
}  // namespace kiln::jit
