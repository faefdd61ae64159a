// Sibling fusion: kernels (and lone ops) in one elementwise space that read
// one full-size value become one kernel with all their outputs, unless a
// path leads from one to the other, their folds differ, or they share no
// value of the space's shape. Results against eager and graph mode.
#include "jit/fusion/siblings.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "jit_test_util.h"
#include "kiln/context.h"
#include "kiln/graph.h"
#include "kiln/ops.h"
#include "test_util.h"

namespace kiln::jit {
namespace {
using testing::expect_same;
using testing::make;
using testing::random_tensor;

using Body = std::function<Value(const std::vector<Value>&)>;

struct SiblingCase {
  const char* name;
  Body body;
  std::vector<Value> args;
  size_t kernels;  // compiled kernels
  size_t folds;    // reductions folded into them
  std::optional<std::vector<ArgSpec>> sig = std::nullopt;
};

void check_case(const SiblingCase& c) {
  SCOPED_TRACE(c.name);
  Function g = make(c.body, false, c.sig), j = make(c.body, true, c.sig);
  testing::expect_modes_agree(c.body, c.args, g, j);
  EXPECT_EQ(j.get_concrete_function(c.args)->jit_kernels(), c.kernels);
  EXPECT_EQ(testing::ir_count(j, c.args, " folded by "), c.folds);
}

TEST(JitSiblings, ReadersOfOneValueShareAKernel) {
  const Tensor w = random_tensor(DType::kFloat32, Shape({37, 41}), 1);
  const Tensor x3 = random_tensor(DType::kFloat32, Shape({4, 8, 16}), 2);
  const Tensor col = random_tensor(DType::kFloat32, Shape({4, 1}), 3);
  const Tensor row = random_tensor(DType::kFloat32, Shape({1, 3}), 4);
  const Tensor x2 = random_tensor(DType::kFloat32, Shape({8, 16}), 6);
  const std::vector<SiblingCase> cases = {
      {"lone ops and a kernel reading w: one kernel",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list({Value(abs(t)), Value(cast(t, DType::kFloat64)),
                             Value(cast(t, DType::kInt32)), Value(tanh(t) * 2.f + 1.f)});
       },
       {Value(w)},
       1,
       0},
      {"two lone ops: one kernel of two",
       [](const std::vector<Value>& a) {
         return Value::list({Value(abs(a[0].tensor())), Value(-a[0].tensor())});
       },
       {Value(w)},
       1,
       0},
      {"20 lone readers: kernels of at most 16 outputs",
       [](const std::vector<Value>& a) {
         std::vector<Value> out;
         for (int i = 0; i < 20; ++i)
           out.push_back(Value(a[0].tensor() * static_cast<float>(i + 2)));
         return Value::list(std::move(out));
       },
       {Value(w)},
       2,
       0},
      {"16 readers of x and two inputs of their own each: at most 40 operands a kernel",
       [](const std::vector<Value>& a) {
         std::vector<Value> out;
         for (size_t i = 1; i + 1 < a.size(); i += 2)
           out.push_back(Value(a[0].tensor() + a[i].tensor() * a[i + 1].tensor()));
         return Value::list(std::move(out));
       },
       std::vector<Value>(33, Value(w)), 2, 0},
      {"a path between them (through a cumsum): two kernels",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         const Tensor p = cumsum(exp(t) + 1.f, 0);
         return Value::list({Value(t * p + 2.f)});
       },
       {Value(w)},
       2,
       0},
      {"the same fold (over N): one kernel, two folds",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list(
             {Value(reduce_sum(tanh(t) * 2.f, {0})), Value(reduce_max(exp(t) - 1.f, {0}))});
       },
       {Value(x3)},
       1,
       2},
      {"different folds (N; the middle dim): two kernels",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list(
             {Value(reduce_sum(tanh(t) * 2.f, {0})), Value(reduce_mean(exp(t) - 1.f, {1}))});
       },
       {Value(x3)},
       2,
       2},
      {"only a scalar shared: two kernels",
       [](const std::vector<Value>& a) {
         return Value::list({Value(tanh(a[0].tensor()) * 2.f), Value(exp(a[1].tensor()) * 2.f)});
       },
       {Value(w), Value(w + 1.f)},
       2,
       0},
      {"another space: two kernels",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list({Value(tanh(t) * 2.f), Value(exp(t + a[1].tensor()) * 3.f)});
       },
       {Value(x2), Value(x3)},
       2,
       0},
      {"unknown dims that broadcast at run time: outputs of their own shapes",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list({Value(tanh(t) * 2.f), Value((t + a[1].tensor()) * 3.f)});
       },
       {Value(col), Value(row)},
       1,
       0,
       std::vector<ArgSpec>{{DType::kFloat32, Shape({-1, -1}), "x"},
                            {DType::kFloat32, Shape({-1, -1}), "y"}}},
  };
  for (const SiblingCase& c : cases) check_case(c);
}

// Row kernels over the same rows merge too: lone reductions of one value
// (each a reduce call alone) become one row kernel, and a softmax takes in
// its input's row max. Two row kernels that both write values at every point
// stay apart (a first pass that writes points would stop the rows
// pipelining), and a row kernel never merges with an elementwise one.
TEST(JitSiblings, RowKernelsOverTheSameRowsMerge) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({37, 300}), 7);
  const Tensor i32 = cast(x * 100.f, DType::kInt32);
  const std::vector<SiblingCase> cases = {
      {"max, sum and min of each row: one kernel",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list({Value(reduce_max(t, {-1})), Value(reduce_sum(t, {-1})),
                             Value(reduce_min(t, {-1}, true))});
       },
       {Value(x)},
       1,
       0},
      {"int32 sums and maxes: one kernel",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list({Value(reduce_max(t, {-1})), Value(reduce_sum(t, {-1}))});
       },
       {Value(i32)},
       1,
       0},
      {"softmax and the row max: one kernel",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list({Value(softmax(t)), Value(reduce_max(t, {-1}))});
       },
       {Value(x)},
       1,
       0},
      {"softmax and log-softmax both write points: two kernels",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list({Value(softmax(t)), Value(log_softmax(t))});
       },
       {Value(x)},
       2,
       0},
      {"a row kernel and an elementwise one: two kernels",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list({Value(softmax(t * 2.f)), Value(tanh(t) * 3.f)});
       },
       {Value(x)},
       2,
       0},
  };
  for (const SiblingCase& c : cases) check_case(c);
}

// A consumer of a value a kernel computes (outside its cluster, which grew
// from its own root) joins that kernel: the value is read where it is
// computed. Not when a path through another node leads from the kernel to
// the consumer, nor when the consumer reads the value through a view.
TEST(JitSiblings, ConsumersJoinTheKernelOfTheirValue) {
  const Tensor x = random_tensor(DType::kFloat32, Shape({37, 64}), 8);
  const Tensor square = random_tensor(DType::kFloat32, Shape({48, 48}), 9);
  const std::vector<SiblingCase> cases = {
      {"two chains reading y = tanh(x) * 2: one kernel",
       [](const std::vector<Value>& a) {
         const Tensor y = tanh(a[0].tensor()) * 2.f;
         return Value::list({Value((y + 1.f) * 3.f), Value(sigmoid(y) - 0.5f)});
       },
       {Value(x)},
       1,
       0},
      {"softmax(2x) and the row max of 2x: one kernel",
       [](const std::vector<Value>& a) {
         const Tensor& t = a[0].tensor();
         return Value::list({Value(softmax(t * 2.f)), Value(reduce_max(t * 2.f, {-1}))});
       },
       {Value(x)},
       1,
       0},
      {"a consumer also reading a cumsum of the value: two kernels",
       [](const std::vector<Value>& a) {
         const Tensor y = tanh(a[0].tensor()) * 2.f;
         return Value::list({Value(y * 3.f), Value(y * cumsum(y, 0) + 1.f)});
       },
       {Value(x)},
       2,
       0},
      {"a consumer reading the value as it is and transposed: two kernels",
       [](const std::vector<Value>& a) {
         const Tensor y = tanh(a[0].tensor()) * 2.f;
         return Value::list({Value(y * 3.f), Value(exp(transpose(y)) + y)});
       },
       {Value(square)},
       2,
       0},
  };
  for (const SiblingCase& c : cases) check_case(c);
}

// The pass on its own: groups closed to merging stay apart, and every group
// is in exactly one list, the lowest index first.
TEST(JitSiblings, ClosedGroupsStayApart) {
  const Tensor w = random_tensor(DType::kFloat32, Shape({6, 5}), 5);
  Function f = make(
      [](const std::vector<Value>& a) {
        const Tensor& t = a[0].tensor();
        return Value::list({Value(abs(t)), Value(-t), Value(tanh(t))});
      },
      false);
  const Graph& g = f.get_concrete_function({Value(w)})->graph();
  std::vector<Node*> nodes;
  std::vector<Sibling> groups;
  for (const auto& n : g.nodes()) {
    nodes.push_back(n.get());
    const OpId id = n->op().id;
    if (id == OpId::Abs || id == OpId::Neg || id == OpId::Tanh)
      groups.push_back(Sibling{{n.get()}, n->outputs()[0].shape, id != OpId::Neg, 0});
  }
  ASSERT_EQ(groups.size(), 3u);
  const auto parts = merge_siblings(nodes, groups);
  ASSERT_EQ(parts.size(), 2u);
  size_t seen = 0;
  for (const auto& p : parts) {
    seen += p.size();
    EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
    for (size_t i : p) {
      if (groups[i].members[0]->op().id == OpId::Neg) {
        EXPECT_EQ(p.size(), 1u);
      }
    }
  }
  EXPECT_EQ(seen, 3u);
  groups[0].fold = groups[2].fold = -1;  // both fold in several ways: no merge
  EXPECT_EQ(merge_siblings(nodes, groups).size(), 3u);
}

}  // namespace
}  // namespace kiln::jit
