// Trace keys and argument structures (src/function/signature.cpp, value.cpp):
// which calls share a trace, dict order, placeholder names, and the lock a
// binding releases while a plan runs.
#include <atomic>

#include "kiln/function.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_tensor;

Function make_identity(int& traces) {
  FunctionOptions o;
  o.name = "f";
  o.arg_names = {"x"};
  return Function(
      [&traces](const std::vector<Value>& a) {
        ++traces;
        return a[0];
      },
      o);
}

TEST(Signature, EqualPythonNumbersShareATrace) {
  // TensorFlow's Literal types compare with ==: 1, 1.0 and True are one key.
  int traces = 0;
  Function f = make_identity(traces);
  f({Value(int64_t{1})});
  f({Value(1.0)});
  f({Value(true)});
  EXPECT_EQ(f.tracing_count(), 1);
  f({Value(2)});
  f({Value(2.0)});
  EXPECT_EQ(f.tracing_count(), 2);
  f({Value(1.5)});
  f({Value(false)});
  f({Value(-0.0)});  // == 0 == False
  EXPECT_EQ(f.tracing_count(), 4);
  f({Value(1e300)});  // beyond int64: keyed as a float
  f({Value(std::string("1"))});
  EXPECT_EQ(f.tracing_count(), 6);
  EXPECT_EQ(traces, 6);
}

TEST(Signature, DictsKeepTheirOrderAndKeyAsMappings) {
  Value d = Value::dict({{"b", Value(1)}, {"a", Value(2)}, {"c", Value(3)}});
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"a", "b", "c"}));  // sorted for keys
  EXPECT_EQ(d.insertion_order(), (std::vector<size_t>{1, 0, 2}));
  EXPECT_EQ(d.repr(), "{'b': 1, 'a': 2, 'c': 3}");
  Value same = d.with_items({Value(20), Value(10), Value(30)});
  EXPECT_EQ(same.repr(), "{'b': 10, 'a': 20, 'c': 30}");
  EXPECT_EQ(Value::list({Value(1)}).with_items({Value(2)}).repr(), "[2]");
  EXPECT_THROW(d.with_items({Value(1)}), InvalidArgumentError);
  EXPECT_THROW(Value(1).with_items({}), InvalidArgumentError);
  EXPECT_THROW(Value::dict({{"a", Value(1)}, {"a", Value(2)}}), InvalidArgumentError);

  // Two orders of the same mapping share a trace; each call's structure keeps its order.
  int traces = 0;
  FunctionOptions o;
  o.arg_names = {"d"};
  Function f(
      [&traces](const std::vector<Value>& a) {
        ++traces;
        return a[0];
      },
      o);
  Value r = f({Value::dict({{"b", Value(Tensor(1))}, {"a", Value(Tensor(2))}})});
  EXPECT_EQ(r.keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.insertion_order(), (std::vector<size_t>{1, 0}));
  f({Value::dict({{"a", Value(Tensor(2))}, {"b", Value(Tensor(1))}})});
  EXPECT_EQ(traces, 1);
  auto cf =
      f.get_concrete_function({Value::dict({{"b", Value(Tensor(1))}, {"a", Value(Tensor(2))}})});
  EXPECT_EQ(cf->structured_input_signature()[0].insertion_order(), (std::vector<size_t>{1, 0}));
}

TEST(Signature, PlaceholdersAreNamedAfterTheirArgument) {
  // TensorFlow: placeholders "x", "x_1"; specs after their path, "x_0", "x_1".
  int traces = 0;
  Function f = make_identity(traces);
  auto cf = f.get_concrete_function({Value::list({Value(Tensor(1)), Value(Tensor(2))})});
  std::vector<std::string> names;
  for (const Node* n : cf->graph().inputs()) names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"x", "x_1"}));
  const Value& sig = cf->structured_input_signature()[0];
  EXPECT_EQ(sig.items()[0].spec().name, "x_0");
  EXPECT_EQ(sig.items()[1].spec().name, "x_1");
}

std::atomic<int> g_released{0}, g_reacquired{0};

TEST(Signature, TheBindingsLockIsReleasedWhileAPlanRuns) {
  set_blocking_hooks({[]() -> void* {
                        ++g_released;
                        return &g_released;
                      },
                      [](void* token) {
                        EXPECT_EQ(token, &g_released);
                        ++g_reacquired;
                      }});
  int traces = 0;
  Function f = make_identity(traces);
  Function g([](const std::vector<Value>& a) { return Value(a[0].tensor() * 2.f); });
  g({Tensor(1.f)});  // traced, then run
  const int before = g_released.load();
  expect_tensor<float>(g({Tensor(2.f)}).tensor(), {}, {4.f});  // a cached call
  expect_tensor<float>(g.get_concrete_function({Tensor(2.f)})->call_flat({{Tensor(3.f)}})[0], {},
                       {6.f});
  EXPECT_EQ(g_released.load(), before + 2);
  EXPECT_EQ(g_reacquired.load(), g_released.load());
  set_blocking_hooks({});
}

}  // namespace
}  // namespace kiln
