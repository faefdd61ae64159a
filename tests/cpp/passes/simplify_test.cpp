// simplify: algebraic identities.
#include <string_view>

#include "kiln/executor.h"
#include "pass_test_util.h"

namespace kiln {
namespace {
using testing::add_output;
using testing::edge_of;

// Traces `body(x)` for an input x of `dtype`/`shape`, returns identity(result).
template <typename F>
void trace(Graph& g, DType dtype, const Shape& shape, F body) {
  TracingContext tc(g);
  ContextScope scope(tc);
  Tensor x = tc.add_input("x", dtype, shape);
  add_output(g, identity(body(x)));
}

struct NeutralCase {
  const char* what;
  DType dtype;
  Shape x_shape;
  Tensor (*body)(const Tensor&);
  bool simplifies;
};

TEST(Simplify, NeutralElementsRemoveArithmeticOnlyWhenShapesStay) {
  const NeutralCase cases[] = {
      {"x*1", DType::kFloat32, Shape({2, 3}), [](const Tensor& x) { return x * 1.f; }, true},
      {"1*x", DType::kFloat32, Shape({2, 3}), [](const Tensor& x) { return 1.f * x; }, true},
      {"x+0", DType::kInt32, Shape({2, 3}), [](const Tensor& x) { return x + 0; }, true},
      {"0+x", DType::kInt64, Shape({2, 3}), [](const Tensor& x) { return 0 + x; }, true},
      {"x-0", DType::kFloat64, Shape({2, 3}), [](const Tensor& x) { return x - 0; }, true},
      {"x/1", DType::kFloat32, Shape({2, 3}), [](const Tensor& x) { return divide(x, 1.f); }, true},
      {"0-x", DType::kFloat32, Shape({2, 3}), [](const Tensor& x) { return 0.f - x; }, false},
      {"1/x", DType::kFloat32, Shape({2, 3}), [](const Tensor& x) { return divide(1.f, x); },
       false},
      {"x*2", DType::kFloat32, Shape({2, 3}), [](const Tensor& x) { return x * 2.f; }, false},
      {"x*ones[3]", DType::kUInt8, Shape({2, 3}),
       [](const Tensor& x) {
         return x * Tensor::from_vector<uint8_t>({1, 1, 1}, Shape({3}));
       },
       true},
      {"x*[1,1,2]", DType::kFloat32, Shape({2, 3}),
       [](const Tensor& x) {
         return x * Tensor({1.f, 1.f, 2.f});
       },
       false},
      {"x[3]*ones[2,3] broadcasts", DType::kFloat32, Shape({3}),
       [](const Tensor& x) {
         return x * Tensor({{1.f, 1.f, 1.f}, {1.f, 1.f, 1.f}});
       },
       false},
      {"x[?]+zeros[1]", DType::kInt8, Shape({-1}),
       [](const Tensor& x) { return x + Tensor::from_vector<int8_t>({0}, Shape({1})); }, true},
      {"x[?]+zeros[4] may broadcast", DType::kFloat32, Shape({-1}),
       [](const Tensor& x) {
         return x + Tensor({0.f, 0.f, 0.f, 0.f});
       },
       false},
      {"x[*]+zeros[1] may add a dim", DType::kFloat32, Shape::unknown_rank(),
       [](const Tensor& x) { return x + Tensor({0.f}); }, false},
      {"x[*]+0", DType::kFloat32, Shape::unknown_rank(), [](const Tensor& x) { return x + 0.f; },
       true},
  };
  for (const NeutralCase& c : cases) {
    SCOPED_TRACE(c.what);
    Graph g("f");
    trace(g, c.dtype, c.x_shape, c.body);
    const std::string before = g.listing();
    PassResult r = simplify(g);
    EXPECT_NO_THROW(g.verify());
    if (c.simplifies) {
      ASSERT_EQ(r.removed.size(), 1u) << before;
      EXPECT_EQ(g.outputs()[0].node->inputs()[0].node->name(), "x");
    } else {
      EXPECT_FALSE(r.changed());
      EXPECT_EQ(g.listing(), before);
    }
  }
}

TEST(Simplify, BypassesIdentityButKeepsTheOutputIdentity) {
  Graph g("f");
  trace(g, DType::kFloat32, Shape({2}), [](const Tensor& x) { return identity(x * 2.f) + 1.f; });
  ASSERT_EQ(g.listing(),
            "[] -> x\n[] -> Const\n['x', 'Const'] -> mul\n['mul'] -> Identity\n[] -> Const_1\n"
            "['Identity', 'Const_1'] -> add\n['add'] -> Identity_1\n");
  PassResult r = simplify(g);
  EXPECT_EQ(r.removed, (std::vector<NodeRef>{{"Identity", "Identity"}}));
  EXPECT_EQ(g.listing(),
            "[] -> x\n[] -> Const\n['x', 'Const'] -> mul\n[] -> Const_1\n"
            "['mul', 'Const_1'] -> add\n['add'] -> Identity_1\n");
  EXPECT_NO_THROW(g.verify());
}

TEST(Simplify, CastToTheSameDtypeIsRemoved) {
  Graph g("f");
  trace(g, DType::kInt32, Shape({2}), [](const Tensor& x) {
    // cast() itself skips the op; record one as a converted program might.
    Tensor same = call_op1(OpId::Cast, {x}, {DType::kInt32});
    return call_op1(OpId::Cast, {same}, {DType::kInt64});
  });
  PassResult r = simplify(g);
  EXPECT_EQ(r.removed, (std::vector<NodeRef>{{"Cast", "Cast"}}));
  EXPECT_EQ(g.listing(), "[] -> x\n['x'] -> Cast_1\n['Cast_1'] -> Identity\n");
  EXPECT_NO_THROW(g.verify());
}

// A half value widened and narrowed back is itself; a float32 narrowed and
// widened back is not (the narrowing rounds), nor is a widening to a float
// that cannot hold the value (bfloat16 through float16).
TEST(Simplify, WideningRoundTripsGo) {
  struct Case {
    DType from, via;
    bool goes;
  };
  for (const Case c :
       {Case{DType::kBFloat16, DType::kFloat32, true}, Case{DType::kFloat16, DType::kFloat64, true},
        Case{DType::kFloat32, DType::kFloat64, true},
        Case{DType::kFloat32, DType::kBFloat16, false},
        Case{DType::kBFloat16, DType::kFloat16, false}}) {
    SCOPED_TRACE(str_cat(dtype_name(c.from), " via ", dtype_name(c.via)));
    Graph g("f");
    trace(g, c.from, Shape({3}), [&](const Tensor& x) { return cast(cast(x, c.via), c.from); });
    PassResult r = simplify(g);
    EXPECT_EQ(r.changed(), c.goes) << r.summary(4);
    if (c.goes) {  // the widening Cast, read by nothing now, is prune's
      EXPECT_EQ(g.listing(), "[] -> x\n['x'] -> Cast\n['x'] -> Identity\n");
    }
    EXPECT_NO_THROW(g.verify());
  }
}

TEST(Simplify, DoubleTransposeCancelsOrMerges) {
  Graph g("f");
  trace(g, DType::kFloat32, Shape({2, 3}),
        [](const Tensor& x) { return transpose(transpose(x)) + 1.f; });
  PassResult r = simplify(g);
  EXPECT_EQ(r.removed, (std::vector<NodeRef>{{"transpose_1", "Transpose"}}));
  prune(g);
  EXPECT_EQ(g.listing(), "[] -> x\n[] -> Const\n['x', 'Const'] -> add\n['add'] -> Identity\n");

  // Permutations that do not cancel compose into one transpose.
  const std::vector<int64_t> p1{1, 2, 0}, p2{0, 2, 1};
  Graph g2("f");
  trace(g2, DType::kInt32, Shape({2, 3, 4}),
        [&](const Tensor& x) { return transpose(transpose(x, p1), p2); });
  r = simplify(g2);
  EXPECT_EQ(r.rewritten,
            (std::vector<NodeRef>{{"transpose_1", "Transpose(Transpose(x)) -> Transpose(x)"}}));
  prune(g2);
  EXPECT_EQ(g2.listing(), "[] -> x\n['x'] -> transpose_1\n['transpose_1'] -> Identity\n");
  EXPECT_NO_THROW(g2.verify());
  const auto& perm = std::get<std::vector<int64_t>>(g2.find("transpose_1")->attrs()[0]);
  std::vector<int32_t> values(24);
  for (int i = 0; i < 24; ++i) values[static_cast<size_t>(i)] = i;
  Tensor v = Tensor::from_vector(values, Shape({2, 3, 4}));
  Tensor want = transpose(transpose(v, p1), p2);
  Tensor got = transpose(v, perm);
  EXPECT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.to_vector<int32_t>(), want.to_vector<int32_t>());
}

TEST(Simplify, ReshapeChainsMergeAndNoOpReshapesGo) {
  Graph g("f");
  trace(g, DType::kFloat32, Shape({2, 6}), [](const Tensor& x) {
    return reshape(reshape(x, {3, 4}), {4, 3});
  });
  ASSERT_EQ(g.listing(),
            "[] -> x\n[] -> Const\n['x', 'Const'] -> Reshape\n[] -> Const_1\n"
            "['Reshape', 'Const_1'] -> Reshape_1\n['Reshape_1'] -> Identity\n");
  PassResult r = simplify(g);
  EXPECT_EQ(r.rewritten,
            (std::vector<NodeRef>{{"Reshape_1", "Reshape(Reshape(x)) -> Reshape(x)"}}));
  prune(g);
  EXPECT_EQ(g.listing(),
            "[] -> x\n[] -> Const_1\n['x', 'Const_1'] -> Reshape_1\n"
            "['Reshape_1'] -> Identity\n");
  EXPECT_EQ(g.find("Reshape_1")->outputs()[0].shape, Shape({4, 3}));
  EXPECT_NO_THROW(g.verify());

  Graph g2("f");
  trace(g2, DType::kFloat32, Shape({2, 6}), [](const Tensor& x) {
    return reshape(reshape(x, {12}), {2, 6});
  });
  r = simplify(g2);
  EXPECT_EQ(r.removed, (std::vector<NodeRef>{{"Reshape_1", "Reshape"}}));
  prune(g2);
  EXPECT_EQ(g2.listing(), "[] -> x\n['x'] -> Identity\n");

  // An unknown dim could change: the reshape stays.
  Graph g3("f");
  trace(g3, DType::kFloat32, Shape({-1, 6}), [](const Tensor& x) { return reshape(x, {-1, 6}); });
  EXPECT_FALSE(simplify(g3).changed());
}

TEST(Simplify, IdentityTransposeGoes) {
  Graph g("f");
  trace(g, DType::kFloat32, Shape({2, 3, 4}), [](const Tensor& x) {
    return transpose(x, {0, 1, 2}) + 1.f;
  });
  PassResult r = simplify(g);
  EXPECT_EQ(r.removed, (std::vector<NodeRef>{{"transpose", "Transpose"}}));
  // The default permutation reverses the dims: it stays.
  Graph g2("f");
  trace(g2, DType::kFloat32, Shape({2, 2}), [](const Tensor& x) { return transpose(x) + 1.f; });
  EXPECT_FALSE(simplify(g2).changed());
}

// reshape(matmul(reshape(a, [B, m, k]), reshape(b, [B, k, n])), [b..., m, n]),
// as TensorFlow's einsum writes a batched product.
Tensor folded_product(const Tensor& a, const Tensor& b, const std::vector<int64_t>& out, bool adj_y,
                      const std::vector<int64_t>& a3, const std::vector<int64_t>& b3) {
  return reshape(matmul(reshape(a, a3), reshape(b, b3), false, adj_y), out);
}

TEST(Simplify, BatchedProductsFoldedThroughReshapesUnfold) {
  struct Case {
    const char* what;
    Shape a, b;
    std::vector<int64_t> a3, b3, out;
    bool adj_y, unfolds;
  };
  const Case cases[] = {
      {"heads",
       Shape({2, 3, 4, 5}),
       Shape({2, 3, 5, 6}),
       {6, 4, 5},
       {6, 5, 6},
       {2, 3, 4, 6},
       false,
       true},
      {"adj_y",
       Shape({2, 3, 4, 5}),
       Shape({2, 3, 6, 5}),
       {6, 4, 5},
       {6, 6, 5},
       {2, 3, 4, 6},
       true,
       true},
      {"rank 5",
       Shape({2, 1, 3, 4, 5}),
       Shape({2, 1, 3, 5, 2}),
       {6, 4, 5},
       {6, 5, 2},
       {2, 1, 3, 4, 2},
       false,
       true},
      {"other batch split",
       Shape({2, 3, 4, 5}),
       Shape({2, 3, 5, 6}),
       {6, 4, 5},
       {6, 5, 6},
       {3, 2, 4, 6},
       false,
       false},
      {"rows regrouped",
       Shape({2, 3, 4, 5}),
       Shape({3, 2, 5, 6}),
       {6, 4, 5},
       {6, 5, 6},
       {2, 3, 4, 6},
       false,
       false},
      {"rows moved",
       Shape({2, 3, 2, 10}),
       Shape({2, 3, 5, 6}),
       {6, 4, 5},
       {6, 5, 6},
       {2, 3, 4, 6},
       false,
       false},
      {"product read twice",
       Shape({2, 3, 4, 5}),
       Shape({2, 3, 5, 6}),
       {6, 4, 5},
       {6, 5, 6},
       {2, 3, 4, 6},
       false,
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Tensor a = testing::wave(c.a, 0.37), b = testing::wave(c.b, 0.21, 0.5);
    const bool twice = std::string_view(c.what) == "product read twice";
    auto g = testing::trace({a, b}, [&](const std::vector<Tensor>& in) {
      const Tensor p = matmul(reshape(in[0], c.a3), reshape(in[1], c.b3), false, c.adj_y);
      std::vector<Tensor> out{reshape(p, c.out)};
      if (twice) out.push_back(p);  // the rank-3 product returned as well
      return out;
    });
    const PassResult r = simplify(*g);
    prune(*g);
    EXPECT_EQ(testing::count_ops(*g, OpId::Reshape), c.unfolds ? 0 : 3) << g->listing();
    EXPECT_NO_THROW(g->verify());
    const Tensor want = folded_product(a, b, c.out, c.adj_y, c.a3, c.b3);
    const std::vector<Tensor> ins{a, b};
    const std::vector<Tensor> outs = Plan::compile(*g)->run(ins);
    const Tensor& got = outs[0];
    EXPECT_EQ(testing::count_ops(*g, OpId::MatMul), 1);  // never computed twice
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
    if (c.unfolds) {
      EXPECT_EQ(r.rewritten, (std::vector<NodeRef>{{"Reshape_2",
                                                    "Reshape(MatMul(Reshape(a), "
                                                    "Reshape(b))) -> MatMul(a, b)"}}));
    }
  }
}

// The product read through an Identity by the outer Reshape and by another
// node: simplify bypasses the Identity, so both read the product; it stays
// one MatMul, never computed twice.
TEST(Simplify, BatchedProductReadElsewhereThroughIdentityStays) {
  const Tensor a = testing::wave({2, 3, 4, 5}, 0.37), b = testing::wave({2, 3, 5, 6}, 0.21, 0.5);
  auto g = testing::trace({a, b}, [&](const std::vector<Tensor>& in) {
    const Tensor p = identity(matmul(reshape(in[0], {6, 4, 5}), reshape(in[1], {6, 5, 6})));
    return std::vector<Tensor>{reshape(p, {2, 3, 4, 6}), p * 2.f};
  });
  simplify(*g);
  prune(*g);
  EXPECT_EQ(testing::count_ops(*g, OpId::MatMul), 1) << g->listing();
  EXPECT_EQ(testing::count_ops(*g, OpId::Identity), 0) << g->listing();
}

TEST(Simplify, ControlInputsBlockBypass) {
  Graph g("f");
  Tensor y;
  trace(g, DType::kFloat32, Shape({2}), [&](const Tensor& x) {
    y = x * 1.f;
    return y;
  });
  edge_of(y).node->add_control_input(g.find("x"));
  EXPECT_FALSE(simplify(g).changed());
}

}  // namespace
}  // namespace kiln
