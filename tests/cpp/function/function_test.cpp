// The seed guide's tf.function examples that do not need Python, in C++.
#include "kiln/function.h"

#include <atomic>
#include <thread>

#include "kiln/trace.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;

Function make_double() {
  FunctionOptions o;
  o.name = "double";
  o.arg_names = {"a"};
  return Function([](const std::vector<Value>& a) { return Value(a[0].tensor() + a[0].tensor()); },
                  o);
}

TEST(Function, TracesOncePerDtypeAndReusesTheCache) {
  Function f = make_double();
  expect_tensor<int32_t>(f({Tensor(1)}).tensor(), {}, {2});
  expect_tensor<float>(f({Tensor(1.1f)}).tensor(), {}, {2.2f});
  expect_tensor<std::string>(f({Tensor("a")}).tensor(), {}, {"aa"});
  EXPECT_EQ(f.tracing_count(), 3);
  expect_tensor<std::string>(f({Tensor("b")}).tensor(), {}, {"bb"});
  EXPECT_EQ(f.tracing_count(), 3);
  // A new shape is a new trace.
  f({Tensor({1, 2})});
  EXPECT_EQ(f.tracing_count(), 4);
}

TEST(Function, ConcreteFunctionSignatureAndGraphListingAsInTheGuide) {
  Function f = make_double();
  auto cf = f.get_concrete_function({ArgSpec{DType::kString, Shape(), ""}});
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_EQ(cf->pretty_signature(),
            "ConcreteFunction double(a)\n  Args:\n    a: string Tensor, shape=()\n"
            "  Returns:\n    string Tensor, shape=()\n");
  EXPECT_EQ(cf->graph().listing(), "[] -> a\n['a', 'a'] -> add\n['add'] -> Identity\n");
  expect_tensor<std::string>((*cf)({Tensor("c")}).tensor(), {}, {"cc"});
  // A call matching the concrete function reuses it.
  f({Tensor("d")});
  EXPECT_EQ(f.tracing_count(), 1);
  expect_error([&] { (*cf)({Tensor(1)}); }, Code::kInvalidArgument,
               {"argument 'a' expects a string Tensor, shape=()", "int32"});
}

TEST(Function, InputSignatureWithUnknownDims) {
  FunctionOptions o;
  o.name = "next_collatz";
  o.arg_names = {"x"};
  o.input_signature = std::vector<ArgSpec>{{DType::kInt32, Shape({-1}), ""}};
  Function f(
      [](const std::vector<Value>& a) {
        const Tensor& x = a[0].tensor();
        return Value(where(floormod(x, 2) == 0, floordiv(x, 2), 3 * x + 1));
      },
      o);
  expect_tensor<int32_t>(f({Tensor({3, 2})}).tensor(), {2}, {10, 1});
  expect_tensor<int32_t>(f({Tensor({1, 2, 3, 4, 5})}).tensor(), {5}, {4, 1, 10, 2, 16});
  EXPECT_EQ(f.tracing_count(), 1);
  expect_error(
      [&] {
        f({Tensor({{1, 2}, {3, 4}})});
      },
      Code::kInvalidArgument,
      {"incompatible with input_signature", "TensorSpec(shape=(None,), dtype=tf.int32",
       "shape=(2, 2)"});
  expect_error(
      [&] {
        f({Tensor({1.f, 2.f})});
      },
      Code::kInvalidArgument, {"argument 'x'", "dtype=tf.float32"});
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(Function, PythonValuesAreBoundAtTraceTimeAndRetraceWithReasons) {
  FunctionOptions o;
  o.name = "train";
  o.arg_names = {"num_steps"};
  int python_side_effects = 0;
  Function f(
      [&](const std::vector<Value>& a) {
        ++python_side_effects;  // runs at trace time only
        Tensor acc(0);
        for (int64_t i = 0; i < a[0].as_int(); ++i) acc = acc + 1;
        return Value(acc);
      },
      o);
  EXPECT_EQ(f({Value(10)}).tensor().item<int32_t>(), 10);
  EXPECT_EQ(f({Value(20)}).tensor().item<int32_t>(), 20);
  EXPECT_EQ(f({Value(10)}).tensor().item<int32_t>(), 10);
  EXPECT_EQ(f.tracing_count(), 2);
  EXPECT_EQ(python_side_effects, 2);
  auto reasons = f.retrace_reasons();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].to_string(), "num_steps: 10 -> 20");
}

TEST(Function, ShapeRetraceReasonAndBoundValueMismatchOnAConcreteFunction) {
  FunctionOptions o;
  o.name = "pow";
  o.arg_names = {"a", "b"};
  Function f(
      [](const std::vector<Value>& a) {
        Tensor r = a[0].tensor();
        for (int64_t i = 1; i < a[1].as_int(); ++i) r = r * a[0].tensor();
        return Value(r);
      },
      o);
  f({Tensor({1.f}), Value(2)});
  f({Tensor({1.f, 2.f}), Value(2)});
  ASSERT_EQ(f.retrace_reasons().size(), 1u);
  EXPECT_EQ(f.retrace_reasons()[0].to_string(), "a: float32[1] -> float32[2]");
  auto square =
      f.get_concrete_function({ArgSpec{DType::kFloat32, Shape::unknown_rank(), ""}, Value(2)});
  EXPECT_EQ(square->pretty_signature(),
            "ConcreteFunction pow(a, b=2)\n  Args:\n    a: float32 Tensor, shape=<unknown>\n"
            "  Returns:\n    float32 Tensor, shape=<unknown>\n");
  expect_tensor<float>((*square)({Tensor(10.f), Value(2)}).tensor(), {}, {100.f});
  expect_error(
      [&] {
        (*square)({Tensor(10.f), Value(3)});
      },
      Code::kInvalidArgument,
      {"ConcreteFunction pow(a, b) was constructed with int value 2 in b, but was "
       "called with int value 3."});
}

TEST(Function, ReduceRetracingGeneralizesToUnknownDims) {
  FunctionOptions o;
  o.name = "f";
  o.reduce_retracing = true;
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() * 2); }, o);
  f({Tensor({1, 2, 3})});
  f({Tensor({1, 2, 3, 4})});
  EXPECT_EQ(f.tracing_count(), 2);
  expect_tensor<int32_t>(f({Tensor({1, 2, 3, 4, 5})}).tensor(), {5}, {2, 4, 6, 8, 10});
  f({Tensor({7})});
  EXPECT_EQ(f.tracing_count(), 2);
}

TEST(Function, VariablesAreReadAtRunTimeAndAssignAddCounts) {
  Variable v(Tensor(0));
  FunctionOptions o;
  o.name = "f";
  Function f(
      [](const std::vector<Value>& a) {
        Variable var = a[0].variable();
        var.assign_add(Tensor(1));
        return Value(var.read_value());
      },
      o);
  EXPECT_EQ(f({v}).tensor().item<int32_t>(), 1);
  EXPECT_EQ(f({v}).tensor().item<int32_t>(), 2);
  EXPECT_EQ(f({v}).tensor().item<int32_t>(), 3);
  EXPECT_EQ(f.tracing_count(), 1);
  // Another variable is another trace (variables are keyed by identity).
  Variable w(Tensor(100));
  EXPECT_EQ(f({w}).tensor().item<int32_t>(), 101);
  EXPECT_EQ(f.tracing_count(), 2);
}

TEST(Function, FunctionsCallFunctionsInline) {
  FunctionOptions oa;
  oa.name = "add";
  Function add_f([](const std::vector<Value>& a) { return Value(a[0].tensor() + a[1].tensor()); },
                 oa);
  FunctionOptions od;
  od.name = "dense_layer";
  Function dense(
      [&](const std::vector<Value>& a) {
        return add_f({Value(matmul(a[0].tensor(), a[1].tensor())), a[2]});
      },
      od);
  Value r = dense({Tensor({{1.f, 1.f}, {1.f, 1.f}, {1.f, 1.f}}), Tensor({{1.f, 1.f}, {1.f, 1.f}}),
                   Tensor({1.f, 1.f})});
  expect_tensor<float>(r.tensor(), {3, 2}, std::vector<float>(6, 3.f));
  EXPECT_EQ(add_f.tracing_count(), 1);
  EXPECT_EQ(dense.tracing_count(), 1);
}

TEST(Function, StructuredArgumentsAndOutputs) {
  FunctionOptions o;
  o.name = "f";
  o.arg_names = {"cfg"};
  Function f(
      [](const std::vector<Value>& a) {
        const Value& cfg = a[0];  // dict {"scale": int, "x": tensor}
        Tensor y = cfg.items()[1].tensor() * static_cast<int32_t>(cfg.items()[0].as_int());
        return Value::tuple({Value(y), Value("done"), Value::list({Value(y + 1)})});
      },
      o);
  Value r = f({Value::dict({{"x", Value(Tensor({1, 2}))}, {"scale", Value(3)}})});
  ASSERT_EQ(r.kind(), Value::Kind::kTuple);
  expect_tensor<int32_t>(r.items()[0].tensor(), {2}, {3, 6});
  EXPECT_EQ(r.items()[1].as_string(), "done");
  expect_tensor<int32_t>(r.items()[2].items()[0].tensor(), {2}, {4, 7});
}

TEST(Function, RecursionOnTensorsIsAClearError) {
  FunctionOptions o;
  o.name = "recursive";
  Function* self = nullptr;
  Function f([&](const std::vector<Value>& a) { return (*self)({Value(a[0].tensor() - 1)}); }, o);
  self = &f;
  expect_error([&] { f({Tensor({3.f})}); }, Code::kFailedPrecondition,
               {"'recursive' called itself while being traced"});
}

TEST(Function, RecursionOnPythonValuesTracesEachLevel) {
  // The seed guide's recursive_fn(n) on Python ints: each level is another
  // trace key, so it unrolls (one trace per value) instead of erroring.
  FunctionOptions o;
  o.name = "recursive_fn";
  o.arg_names = {"n"};
  Function* self = nullptr;
  Function f(
      [&](const std::vector<Value>& a) -> Value {
        const int64_t n = a[0].as_int();
        if (n <= 0) return Value(Tensor(int32_t{1}));
        return Value((*self)({Value(n - 1)}).tensor() + 1);
      },
      o);
  self = &f;
  Value r = f({Value(3)});
  EXPECT_EQ(r.tensor().item<int32_t>(), 4);
  EXPECT_EQ(f.tracing_count(), 4);
  // Signatures print in the order traces finished (the innermost level
  // first here), without the ConcreteFunction prefix.
  const std::string sigs = f.pretty_printed_concrete_signatures();
  ASSERT_NE(sigs.find("recursive_fn(n=3)"), std::string::npos) << sigs;
  EXPECT_EQ(sigs.rfind("recursive_fn(n=0)", 0), 0u) << sigs;
  EXPECT_LT(sigs.find("recursive_fn(n=2)"), sigs.find("recursive_fn(n=3)")) << sigs;
  EXPECT_EQ(sigs.find("ConcreteFunction"), std::string::npos) << sigs;
}

TEST(Function, RetracesAreLoggedWhenALogLevelIsSet) {
  std::vector<std::string> logs;
  set_warning_handler(
      [&](const std::string& cat, const std::string& msg) { logs.push_back(cat + ": " + msg); });
  config().log_level = 2;
  FunctionOptions o;
  o.name = "train";
  o.arg_names = {"num_steps"};
  Function f(
      [](const std::vector<Value>& a) {
        return Value(Tensor(static_cast<int32_t>(a[0].as_int())) * 2);
      },
      o);
  f({Value(10)});
  f({Value(20)});
  config().log_level = 0;
  f({Value(30)});  // not logged
  set_warning_handler(nullptr);
  std::vector<std::string> retraces;
  int optimize_logs = 0;
  for (const auto& l : logs) {
    if (l.rfind("RetraceLog: ", 0) == 0) retraces.push_back(l);
    if (l.rfind("OptimizeLog: optimize 'train'", 0) == 0) ++optimize_logs;
  }
  EXPECT_EQ(
      retraces,
      (std::vector<std::string>{"RetraceLog: function 'train' retraced: num_steps: 10 -> 20"}));
  EXPECT_EQ(optimize_logs, 2);
}

TEST(Function, FrequentRetracingWarnsWithReasons) {
  std::vector<std::string> warnings;
  set_warning_handler([&](const std::string& cat, const std::string& msg) {
    warnings.push_back(cat + ": " + msg);
  });
  FunctionOptions o;
  o.name = "noisy";
  o.arg_names = {"n"};
  Function f(
      [](const std::vector<Value>& a) {
        return Value(Tensor(static_cast<int32_t>(a[0].as_int())));
      },
      o);
  for (int i = 0; i < 10; ++i) f({Value(i)});
  set_warning_handler(nullptr);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("RetracingWarning: function 'noisy' was traced 5 times in its last "
                             "5 calls"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("n: 3 -> 4"), std::string::npos) << warnings[0];
}

TEST(Function, ConcurrentCallsGiveSerialResultsAndOneTracePerSignature) {
  FunctionOptions o;
  o.name = "f";
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() * 2 + 1); }, o);
  std::vector<Tensor> inputs = {Tensor({1}), Tensor({1, 2}), Tensor({1, 2, 3}),
                                Tensor({{1, 2}, {3, 4}})};
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 10000; ++k) {
        const Tensor& x = inputs[static_cast<size_t>((k + t) % 4)];
        Tensor y = f({x}).tensor();
        if (y.to_vector<int32_t>() != (x * 2 + 1).to_vector<int32_t>()) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(f.tracing_count(), 4);
}

TEST(Function, VariablesMayBeCreatedOnTheFirstTraceOnly) {
  // Buggy: creates a variable on every trace. As with tf.function, a first
  // trace that creates variables is run again with creation disallowed, so
  // the mistake surfaces on the first call.
  FunctionOptions o;
  o.name = "f";
  int buggy_traces = 0;
  Function buggy(
      [&](const std::vector<Value>& a) {
        ++buggy_traces;
        Variable v(Tensor(1.f), "v");
        return Value(v.read_value() + a[0].tensor());
      },
      o);
  expect_error([&] { buggy({Tensor(1.f)}); }, Code::kInvalidArgument,
               {"only supports singleton kiln.Variables created on the first call",
                "function 'f' created variable 'v' when traced again"});
  EXPECT_EQ(buggy_traces, 2);
  EXPECT_EQ(buggy.tracing_count(), 0);
  // Correct: created once, on the first call, and reused.
  Variable v;
  int good_traces = 0;
  Function good(
      [&](const std::vector<Value>& a) {
        ++good_traces;
        if (!v.defined()) {
          InitScope eager;  // create it outside the graph
          v = Variable(Tensor(1.f), "v");
        }
        return Value(v.read_value() + a[0].tensor());
      },
      o);
  EXPECT_EQ(good({Tensor(1.f)}).tensor().item<float>(), 2.f);
  EXPECT_EQ(good_traces, 2);  // the first call traced twice: it created a variable
  expect_tensor<float>(good({Tensor({1.f, 2.f})}).tensor(), {2}, {2.f, 3.f});
  EXPECT_EQ(good_traces, 3);
  // Both traces of the first call are counted and listed, as TensorFlow counts them.
  EXPECT_EQ(good.tracing_count(), 3);
  EXPECT_EQ(good.concrete_functions().size(), 3u);
}

TEST(Function, InitScopeRunsEagerlyAtTraceTime) {
  FunctionOptions o;
  o.name = "f";
  Tensor computed;
  Function f(
      [&](const std::vector<Value>& a) {
        {
          InitScope eager;
          computed = Tensor({1, 2}) * 10;  // a concrete value, computed once
        }
        return Value(a[0].tensor() + computed);
      },
      o);
  expect_tensor<int32_t>(f({Tensor({1, 1})}).tensor(), {2}, {11, 21});
  EXPECT_FALSE(computed.is_symbolic());
  expect_tensor<int32_t>(computed, {2}, {10, 20});
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Seed 000: a layer whose function returned nothing looked 10x faster because
// its work was pruned. kiln prunes too, and says so.
TEST(Function, NoReturnPruningWarnsAndKeepsStatefulOps) {
  std::vector<std::string> warnings;
  set_warning_handler([&](const std::string& cat, const std::string& msg) {
    warnings.push_back(cat + ": " + msg);
  });
  // Constants made eagerly, captured by the trace (like tf.constant in the seed).
  const Tensor shifts = cast(Tensor({7, 6, 5, 4, 3, 2, 1, 0}), DType::kUInt8);
  const Tensor one = cast(Tensor(1), DType::kUInt8);
  FunctionOptions o;
  o.name = "fun";
  o.arg_names = {"x"};
  Function fun(
      [&](const std::vector<Value>& a) {
        const Tensor& x = a[0].tensor();
        Tensor e = expand_dims(x, -1);
        Tensor shifted = right_shift(e, shifts);
        Tensor bits = bitwise_and(shifted, one);
        Tensor flat = reshape(bits, {2, -1});
        Tensor f = cast(flat, DType::kFloat32);
        (void)f;
        return Value();  // returns nothing
      },
      o);
  Tensor input = cast(Tensor({{1, 2}, {3, 4}}), DType::kUInt8);
  fun({input});
  auto cf = fun.get_concrete_function({input});
  EXPECT_EQ(cf->optimized_graph().listing(), "[] -> x\n");
  set_warning_handler(nullptr);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "NoReturnWarning: function 'fun' returns no value; 5 operations (e.g. 'Cast') were "
            "removed because nothing uses their result. A benchmark of this function measures "
            "nothing: return the result");

  // Stateful work (print, assign) survives pruning and runs every call.
  Variable counter(Tensor(0));
  Function side(
      [&](const std::vector<Value>& a) {
        Tensor unused = a[0].tensor() * 3;
        (void)unused;
        counter.assign_add(Tensor(1));
        return Value();
      },
      o);
  side({Tensor(1)});
  side({Tensor(2)});
  EXPECT_EQ(counter.read_value().item<int32_t>(), 2);
  // ... and a function with effects (a train step) does not warn though its
  // unused value was pruned.
  set_warning_handler([&](const std::string& cat, const std::string& msg) {
    warnings.push_back(cat + ": " + msg);
  });
  side({Tensor(3.f)});  // a new trace
  set_warning_handler(nullptr);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(Function, OptimizedGraphIsWhatRunsAndTheReportSaysWhy) {
  FunctionOptions o;
  o.name = "f";
  o.arg_names = {"x"};
  Function f(
      [](const std::vector<Value>& a) {
        Tensor x = a[0].tensor();
        Tensor c = Tensor({2.f}) * Tensor({3.f});  // folded
        Tensor y = x * 1.f + c;                    // x*1 simplified
        Tensor z = x * 1.f + c;                    // common subexpression
        return Value::tuple({Value(y), Value(z)});
      },
      o);
  Value r = f({Tensor({1.f})});
  expect_tensor<float>(r.items()[0].tensor(), {1}, {7.f});
  expect_tensor<float>(r.items()[1].tensor(), {1}, {7.f});
  auto cf = f.get_concrete_function({Tensor({1.f})});
  EXPECT_LT(cf->optimized_graph().num_nodes(), cf->graph().num_nodes());
  EXPECT_NE(cf->optimize_report().to_string().find("fold_constants"), std::string::npos);
  FunctionOptions raw = o;
  raw.optimize = false;
  Function g([](const std::vector<Value>& a) { return Value(a[0].tensor() * 1.f); }, raw);
  auto gcf = g.get_concrete_function({Tensor({1.f})});
  EXPECT_EQ(gcf->optimized_graph().num_nodes(), gcf->graph().num_nodes());
}

}  // namespace
}  // namespace kiln
