// MatMul epilogues: a matrix product (OpDef::jit_product) that only a
// kernel reads, whole, is computed by that kernel (the JitKernel node's
// `product`), by blocks of rows that its instructions then run over; results
// match graph mode and eager, and a hostile `product` attribute is refused.
#include <functional>

#include "jit/runtime/runtime.h"
#include "jit_test_util.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_util.h"
#include "kiln/context.h"
#include "kiln/gradient_tape.h"
#include "kiln/graph.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln::jit {
namespace {
using kiln::testing::expect_error;
using testing::expect_same;
using testing::make;
using testing::nodes_of;
using testing::product_rel;
using testing::random_tensor;

using Body = std::function<Value(const std::vector<Value>&)>;

// How many of the compiled kernels' inputs are products computed in place.
size_t products_in(Function& f, const std::vector<Value>& args) {
  return testing::ir_count(f, args, "computed here by blocks of rows");
}

struct ProductCase {
  const char* name;
  Shape x, w;  // the operands as stored
  bool ta, tb;
  DType dt;
  bool fused;  // whether the kernel computes the product
  int epilogue;
};

// The epilogues: dense + relu, one op alone, swish (the product read twice),
// softmax rows, a layer norm's rows, the product also returned (not fused),
// and a product broadcast against a bigger operand (not fused).
Tensor epilogue(int kind, const Tensor& p, const Tensor& b) {
  switch (kind) {
    case 0: return relu(bias_add(p, b));
    case 1: return tanh(p);
    case 2: return p * sigmoid(p);
    case 3: return softmax(p + b);
    case 4: {
      const Tensor mean = reduce_mean(p, -1, true);
      const Tensor c = p - mean;
      return c * rsqrt(reduce_mean(c * c, -1, true) + 1e-3) * b;
    }
    default: return p * 2 + 1;
  }
}

TEST(JitProducts, DenseEpiloguesComputeTheProductInTheirKernel) {
  const auto f32 = DType::kFloat32, f64 = DType::kFloat64;
  const std::vector<ProductCase> cases = {
      {"relu(x @ w + b)", Shape({37, 20}), Shape({20, 24}), false, false, f32, true, 0},
      {"tanh(x @ w)", Shape({37, 20}), Shape({20, 24}), false, false, f32, true, 1},
      {"x^T @ w", Shape({20, 37}), Shape({20, 24}), true, false, f32, true, 0},
      {"x @ w^T", Shape({37, 20}), Shape({24, 20}), false, true, f32, true, 2},
      {"x^T @ w^T", Shape({20, 37}), Shape({24, 20}), true, true, f64, true, 0},
      {"float64 swish", Shape({37, 20}), Shape({20, 24}), false, false, f64, true, 2},
      {"rank 3 @ rank 2", Shape({3, 13, 20}), Shape({20, 24}), false, false, f32, true, 0},
      {"softmax rows", Shape({37, 20}), Shape({20, 24}), false, false, f32, true, 3},
      {"layer norm rows", Shape({37, 20}), Shape({20, 24}), false, false, f64, true, 4},
      // Large enough that MatMul splits rows on the pool: blocks of rows are
      // computed and run through the kernel one after the other.
      {"row blocks", Shape({1030, 96}), Shape({96, 200}), false, false, f32, true, 0},
      {"row blocks, softmax", Shape({1030, 96}), Shape({96, 200}), false, false, f32, true, 3},
      {"row blocks, x^T", Shape({96, 1030}), Shape({96, 200}), true, false, f64, true, 2},
      // Few rows, many columns: MatMul splits columns, so the whole product
      // comes first.
      {"column split", Shape({70, 96}), Shape({96, 3000}), false, false, f32, true, 0},
      {"k = 0", Shape({5, 0}), Shape({0, 7}), false, false, f32, true, 0},
      {"m = 0", Shape({0, 4}), Shape({4, 7}), false, false, f32, true, 0},
      {"one row", Shape({1, 4}), Shape({4, 7}), false, false, f32, true, 0},
      // One product per batch (attention's q @ k^T), blocks crossing batches.
      {"batched", Shape({2, 9, 8}), Shape({2, 8, 6}), false, false, f32, true, 0},
      {"batched x^T @ w^T", Shape({2, 3, 8, 9}), Shape({2, 3, 6, 8}), true, true, f64, true, 3},
      {"batched row blocks", Shape({3, 300, 32}), Shape({3, 32, 90}), false, false, f32, true, 3},
      {"batched, k = 0", Shape({2, 4, 0}), Shape({2, 0, 5}), false, false, f32, true, 0},
  };
  uint32_t seed = 1;
  for (const ProductCase& pc : cases) {
    SCOPED_TRACE(pc.name);
    const int kind = pc.epilogue;
    const bool ta = pc.ta, tb = pc.tb;
    Body body = [kind, ta, tb](const std::vector<Value>& a) {
      return Value(epilogue(kind, matmul(a[0].tensor(), a[1].tensor(), ta, tb), a[2].tensor()));
    };
    const int64_t n = pc.w.dim(pc.w.rank() - (tb ? 2 : 1));
    const std::vector<Value> args = {Value(random_tensor(pc.dt, pc.x, seed++)),
                                     Value(random_tensor(pc.dt, pc.w, seed++)),
                                     Value(random_tensor(pc.dt, Shape({n}), seed++))};
    const Tensor eager = body(args).tensor();
    Function g = make(body, false), j = make(body, true);
    const double rel = product_rel(pc.w.dim(pc.w.rank() - (tb ? 1 : 2)));
    expect_same(g(args).tensor(), eager, rel);
    expect_same(j(args).tensor(), eager, rel);
    EXPECT_EQ(products_in(j, args), pc.fused ? 1u : 0u);
    EXPECT_EQ(nodes_of(j, args, OpId::MatMul), pc.fused ? 0u : 1u);
    EXPECT_EQ(nodes_of(j, args, OpId::JitKernel), 1u);
  }
}

// A product read through views of column runs of its rows (an LSTM step's
// gates: `z = p + h @ u`, split in four along the columns) is computed by the
// kernel too; where MatMul would split its columns, by blocks of rows each
// thread runs the kernel over. Views of rows, or of a transpose, keep it a
// MatMul node.
TEST(JitProducts, ColumnViewsOfAProductComputeItInTheKernel) {
  struct Case {
    const char* name;
    int64_t rows, k, units;
    int form;  // 0: LSTM cell, 1: slices of columns, 2: split by rows, 3: transposed halves,
               // 4: z * z[:, :1] (read as it is and through a view), 5: softmax of a view
    bool fused;
  };
  const std::vector<Case> cases = {
      {"as it is and a column", 48, 32, 16, 4, true},
      {"softmax of columns", 48, 32, 16, 5, true},
      {"LSTM step, row blocks", 32, 64, 64, 0, true},
      // MatMul would not split [32, 64] x [64, 192]; with the cell's work, rows.
      {"192 gates, row blocks for the kernel's work", 32, 64, 48, 0, true},
      {"LSTM step, one block", 5, 8, 3, 0, true},
      {"LSTM step, odd rows", 37, 64, 64, 0, true},
      {"columns 1..7 and 9..", 40, 32, 16, 1, true},
      {"split by rows", 32, 64, 64, 2, false},
      {"halves of the transpose", 32, 64, 64, 3, false},
  };
  uint32_t seed = 40;
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    const int form = cs.form;
    Body body = [form](const std::vector<Value>& a) {
      const Tensor z = a[0].tensor() + matmul(a[1].tensor(), a[2].tensor());
      if (form == 1) {
        const int64_t n = z.shape().dim(1);
        return Value(tanh(slice(z, {0, 1}, {-1, 6})) * sigmoid(slice(z, {0, 9}, {-1, 6})) +
                     slice(z, {0, n - 6}, {-1, 6}));
      }
      if (form == 4) return Value(z * slice(z, {0, 0}, {-1, 1}));
      if (form == 5) return Value(softmax(slice(z, {0, 8}, {-1, 24})) * 2.0f);
      if (form == 3) {
        const std::vector<Tensor> g = split(transpose(z, {1, 0}), 2, 0);
        return Value(tanh(g[0]) * g[1]);
      }
      const std::vector<Tensor> g = split(z, 4, form == 2 ? 0 : 1);
      if (form == 2) return Value(tanh(g[0]) * sigmoid(g[1]) + g[2] * g[3]);
      const Tensor c = sigmoid(g[1]) * a[3].tensor() + sigmoid(g[0]) * tanh(g[2]);
      return Value::tuple({Value(sigmoid(g[3]) * tanh(c)), Value(c)});
    };
    const auto f32 = DType::kFloat32;
    const int64_t gates = 4 * cs.units;
    const std::vector<Value> args = {Value(random_tensor(f32, Shape({cs.rows, gates}), seed++)),
                                     Value(random_tensor(f32, Shape({cs.rows, cs.k}), seed++)),
                                     Value(random_tensor(f32, Shape({cs.k, gates}), seed++)),
                                     Value(random_tensor(f32, Shape({cs.rows, cs.units}), seed++))};
    const Value eager = body(args);
    Function g = make(body, false), j = make(body, true);
    const Value graph = g(args), jitted = j(args);
    const double rel = product_rel(cs.k);
    if (form == 0) {
      for (size_t i = 0; i < 2; ++i) {
        expect_same(graph.items()[i].tensor(), eager.items()[i].tensor(), rel);
        expect_same(jitted.items()[i].tensor(), eager.items()[i].tensor(), rel);
      }
    } else {
      expect_same(graph.tensor(), eager.tensor(), rel);
      expect_same(jitted.tensor(), eager.tensor(), rel);
    }
    EXPECT_EQ(products_in(j, args) > 0, cs.fused);
    EXPECT_EQ(nodes_of(j, args, OpId::MatMul), cs.fused ? 0u : 1u);
  }
}

// bfloat16 products (oneDNN's bf16 kernels, float32 accumulation, rounded
// once) are computed by their kernel too, with the blocks MatMul uses or by
// rows where it would split columns; strict (no excess precision), the
// results are graph mode's and eager's bit for bit. Where oneDNN has no bf16
// kernels they stay MatMul nodes.
TEST(JitProducts, BFloat16ProductsComputeInTheirKernel) {
  const testing::ScopedExcessPrecision strict(false);
  struct Case {
    const char* name;
    Shape x, w;
    int form;  // 0: relu(x @ w + b), 1: softmax rows, 2: LSTM gates of z = b + x @ w
  };
  const std::vector<Case> cases = {
      {"dense", Shape({37, 20}), Shape({20, 24}), 0},
      {"row blocks", Shape({1030, 96}), Shape({96, 200}), 0},
      {"softmax rows", Shape({64, 32}), Shape({32, 128}), 1},
      {"LSTM gates, row blocks", Shape({32, 64}), Shape({64, 256}), 2},
  };
  const bool native = cpu::bf16_gemm_native();
  uint32_t seed = 70;
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    const int form = cs.form;
    Body body = [form](const std::vector<Value>& a) {
      const Tensor p = matmul(a[0].tensor(), a[1].tensor());
      if (form == 0) return Value(relu(bias_add(p, a[2].tensor())));
      if (form == 1) return Value(softmax(p + a[2].tensor()));
      const std::vector<Tensor> g = split(p + a[2].tensor(), 4, 1);
      return Value(sigmoid(g[0]) * tanh(g[1]) + sigmoid(g[2]) * g[3]);
    };
    const auto bf = DType::kBFloat16;
    const int64_t n = cs.w.dim(1);
    const std::vector<Value> args = {
        Value(cast(random_tensor(DType::kFloat32, cs.x, seed++), bf)),
        Value(cast(random_tensor(DType::kFloat32, cs.w, seed++), bf)),
        Value(cast(random_tensor(DType::kFloat32, Shape({n}), seed++), bf))};
    const Tensor eager = body(args).tensor();
    Function g = make(body, false), j = make(body, true);
    expect_same(g(args).tensor(), eager);
    expect_same(j(args).tensor(), eager);
    EXPECT_EQ(products_in(j, args) > 0, native);
    EXPECT_EQ(nodes_of(j, args, OpId::MatMul), native ? 0u : 1u);
  }
}

// Row kernels over a product stream their rows (non-temporal stores) when the
// outputs are large; forced here on a small one, by blocks of rows and not.
TEST(JitProducts, StreamedRowsOfAProduct) {
  cpu::set_stream_bytes_for_tests(1);
  Body body = [](const std::vector<Value>& a) {
    return Value(softmax(matmul(a[0].tensor(), a[1].tensor()) * 0.5f));
  };
  for (const Shape& x : {Shape({1030, 96}), Shape({30, 96})}) {
    SCOPED_TRACE(str_cat(x));
    const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, x, 1)),
                                     Value(random_tensor(DType::kFloat32, Shape({96, 256}), 2))};
    Function j = make(body, true);
    expect_same(j(args).tensor(), body(args).tensor(), product_rel(96));
    EXPECT_EQ(products_in(j, args), 1u);
  }
  cpu::set_stream_bytes_for_tests(0);
}

TEST(JitProducts, ProductsOthersReadStayKernelCalls) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({9, 6}), 1);
  const Tensor w = random_tensor(DType::kFloat32, Shape({6, 5}), 2);
  const Tensor row = random_tensor(DType::kFloat32, Shape({1, 6}), 3);
  const Tensor b = random_tensor(DType::kFloat32, Shape({9, 5}), 4);
  const std::vector<Body> bodies = {
      // Returned as well: the product stays a MatMul node.
      [](const std::vector<Value>& a) {
        const Tensor p = matmul(a[0].tensor(), a[1].tensor());
        return Value::list({Value(tanh(p) * 2.f), Value(p)});
      },
      // A [1, 5] product broadcast over [9, 5]: not the kernel's rows.
      [row](const std::vector<Value>& a) {
        return Value(tanh(matmul(row, a[1].tensor()) + a[2].tensor()) * 2.f);
      },
      // Batch dims that broadcast ([2, 9, 6] x [1, 6, 5]): MatMul's.
      [](const std::vector<Value>& a) {
        const Tensor x3 = reshape(a[0].tensor(), Shape({1, 9, 6}));
        const Tensor p = matmul(concat({x3, x3}, 0), reshape(a[1].tensor(), Shape({1, 6, 5})));
        return Value(tanh(p) * 2.f);
      },
      // Reshaped before its epilogue: the kernel reads it relabelled.
      [](const std::vector<Value>& a) {
        const Tensor p = reshape(matmul(a[0].tensor(), a[1].tensor()), Shape({5, 9}));
        return Value(tanh(p) * 2.f);
      },
  };
  const std::vector<Value> args = {Value(x), Value(w), Value(b)};
  for (size_t i = 0; i < bodies.size(); ++i) {
    SCOPED_TRACE(i);
    Function g = make(bodies[i], false), j = make(bodies[i], true);
    const Value want = g(args), got = j(args);
    const auto parts = [](const Value& v) {
      return v.kind() == Value::Kind::kList ? v.items() : std::vector<Value>{v};
    };
    const std::vector<Value> ws = parts(want), gs = parts(got);
    ASSERT_EQ(ws.size(), gs.size());
    for (size_t o = 0; o < ws.size(); ++o) expect_same(gs[o].tensor(), ws[o].tensor());
    EXPECT_EQ(products_in(j, args), 0u);
    EXPECT_EQ(nodes_of(j, args, OpId::MatMul), 1u);
  }
}

// A None batch dim: the product is computed in the kernel for every batch
// size, with no retrace; gradients through the jit function match graph mode.
TEST(JitProducts, NoneBatchDimsAndGradients) {
  const ArgSpec xs{DType::kFloat32, Shape({-1, 16}), "x"};
  const ArgSpec ws{DType::kFloat32, Shape({16, 8}), "w"};
  const ArgSpec bs{DType::kFloat32, Shape({8}), "b"};
  Body body = [](const std::vector<Value>& a) {
    return Value(relu(bias_add(matmul(a[0].tensor(), a[1].tensor()), a[2].tensor())));
  };
  Function j = make(body, true, std::vector<ArgSpec>{xs, ws, bs});
  Function g = make(body, false, std::vector<ArgSpec>{xs, ws, bs});
  const Tensor w = random_tensor(DType::kFloat32, Shape({16, 8}), 7);
  const Tensor b = random_tensor(DType::kFloat32, Shape({8}), 8);
  for (int64_t m : {1, 3, 700, 0}) {
    SCOPED_TRACE(m);
    const Tensor x = random_tensor(DType::kFloat32, Shape({m, 16}), 9);
    const std::vector<Value> args = {Value(x), Value(w), Value(b)};
    expect_same(j(args).tensor(), g(args).tensor());
    EXPECT_EQ(products_in(j, args), 1u);
  }
  EXPECT_EQ(j.tracing_count(), 1);
  const Tensor x = random_tensor(DType::kFloat32, Shape({40, 16}), 10);
  auto grads = [&](Function& f) {
    GradientTape tape;
    tape.watch(w);
    tape.watch(b);
    const Tensor y = f({Value(x), Value(w), Value(b)}).tensor();
    return tape.gradient(reduce_sum(y * y), std::vector<GradSource>{w, b});
  };
  const std::vector<Tensor> gg = grads(g);
  const std::vector<Tensor> gj = grads(j);
  ASSERT_EQ(gj.size(), 2u);
  for (size_t i = 0; i < gj.size(); ++i) expect_same(gj[i], gg[i]);
}

// Each kernel says how many instructions compute per point (its `work`,
// which shrinks the pool's grain for costly points): loads and constants
// are not counted.
TEST(JitProducts, KernelsCountTheirWorkPerPoint) {
  Body body = [](const std::vector<Value>& a) {
    const Tensor& x = a[0].tensor();
    return Value(tanh(x * 2.f + 1.f) * x);
  };
  const std::vector<Value> args = {Value(random_tensor(DType::kFloat32, Shape({3, 5}), 1))};
  Function j = make(body, true);
  j(args);
  size_t kernels = 0;
  for (const auto& node : j.get_concrete_function(args)->optimized_graph().nodes()) {
    if (node->op().id != OpId::JitKernel) continue;
    ++kernels;
    // *, +, tanh, *: tanh at its cost in compiled code (fn::cost_of).
    EXPECT_EQ(testing::program_of(*node).work, 3 + op_def(OpId::Tanh).jit_cost(DType::kFloat32));
  }
  EXPECT_EQ(kernels, 1u);
}

// The node checks its program's product and its operands before the kernel
// runs: what a wrong program or wrong operands would do is a clear error.
TEST(JitProducts, MalformedProductsAreRefused) {
  // One output of the product's shape that depends on input 0 (the product).
  auto program = [](int32_t slot, bool ta, bool tb) {
    Program p = testing::one_input_program({3, 5});
    p.kernel.input_dims = {{-1, -1}};
    p.product = ProductInput{slot, Product{ta, tb}, {}};
    return p;
  };
  const Tensor a = random_tensor(DType::kFloat32, Shape({3, 4}), 1);
  const Tensor b = random_tensor(DType::kFloat32, Shape({4, 5}), 2);
  std::vector<Tensor> out;
  auto fails = [&](std::vector<Tensor> in, const Program& p, const char* why) {
    SCOPED_TRACE(why);
    expect_error([&] { run_kernel(op_def(OpId::JitKernel), in, testing::program_attrs(p), out); },
                 Code::kInvalidArgument, {why});
  };
  fails({a, b}, program(1, false, false), "its product's input");    // slot is the second operand
  fails({a, b}, program(-1, false, false), "its product's input");   // negative slot
  fails({a}, program(0, false, false), "it reads 2 inputs, not 1");  // no second operand
  fails({a, b}, program(0, false, true), "do not match");            // [3, 4] x [5, 4]^T
  fails({a, cast(b, DType::kFloat64)}, program(0, false, false), "float32, float64 or bfloat16");
  fails({cast(a, DType::kInt32), cast(b, DType::kInt32)}, program(0, false, false),
        "float32, float64 or bfloat16");
  fails({random_tensor(DType::kFloat32, Shape({2, 3, 4}), 3), b}, program(0, true, false),
        "not computed");
  fails({random_tensor(DType::kFloat32, Shape({4}), 3), b}, program(0, false, false),
        "not computed");
  // The product read through a view of some of its rows (x[1:3] of it): its
  // rows are not the kernel's.
  Program viewed = program(0, false, false);
  viewed.views = {View{{1, 0}, {{0, 1, 2}, {1, 1, -1}}}};
  fails({a, b}, viewed, "its product's view");
  // Through a transpose.
  viewed.views = {View{{0, 0}, {{1, 1, -1}, {0, 1, -1}}}};
  fails({a, b}, viewed, "its product's view");
  // Other inputs reading the product: out of range, or the slot twice.
  Program twice = program(0, false, false);
  twice.product->also = {1};
  fails({a, b}, twice, "its product's inputs");
  twice.product->also = {0};
  fails({a, b}, twice, "its product's inputs");
  // Rows 0..2 of it pass (a count from 0 may be all rows: the runtime computes
  // the product whole first when it is not).
  viewed.views = {View{{0, 0}, {{0, 1, 2}, {1, 1, -1}}}};
  fails({a, b}, viewed, "is not loaded");
  // Columns 1.. of whole rows (x[:, 1:]) are a view the kernel computes by rows.
  viewed.views = {View{{0, 1}, {{0, 1, -1}, {1, 1, 4}}}};
  fails({a, b}, viewed, "is not loaded");
  // A valid product reaches the kernel.
  fails({a, b}, program(0, false, false), "is not loaded");
}

}  // namespace
}  // namespace kiln::jit
