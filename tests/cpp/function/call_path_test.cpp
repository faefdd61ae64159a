// The cached-call fast path: per-thread hit memo, call_tensors, the
// input_signature shortcut, and plans that read inputs and constants in place.
#include <atomic>
#include <thread>

#include "kiln/function.h"
#include "kiln/kiln.h"
#include "kiln/trace.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;

Function::Body affine(float scale) {
  return
      [scale](const std::vector<Value>& a) { return Value(a[0].tensor() * scale + a[1].tensor()); };
}
FunctionOptions affine_options() {
  FunctionOptions o;
  o.name = "affine";
  o.arg_names = {"x", "y"};
  return o;
}
Function make_affine(float scale) {
  return Function(affine(scale), affine_options());
}

TEST(CallPath, RetracesOnDtypeAndShapeChangesAfterHits) {
  Function f = make_affine(2.f);
  Tensor a({1.f, 2.f}), b({2.f, 0.f});
  for (int i = 0; i < 3; ++i) expect_tensor<float>(f({a, b}).tensor(), {2}, {4.f, 4.f});
  EXPECT_EQ(f.tracing_count(), 1);
  // New shape, then new dtype: each traces once, then hits.
  for (int i = 0; i < 3; ++i)
    expect_tensor<float>(f({Tensor({1.f, 2.f, 3.f}), Tensor({0.f, 1.f, 0.f})}).tensor(), {3},
                         {2.f, 5.f, 6.f});
  EXPECT_EQ(f.tracing_count(), 2);
  FunctionOptions o;
  Function g([](const std::vector<Value>& v) { return Value(v[0].tensor() + v[1].tensor()); }, o);
  for (int i = 0; i < 2; ++i) {
    expect_tensor<int32_t>(g({Tensor(1), Tensor(2)}).tensor(), {}, {3});
    expect_tensor<double>(
        g({cast(Tensor(1), DType::kFloat64), cast(Tensor(2), DType::kFloat64)}).tensor(), {},
        {3.0});
  }
  EXPECT_EQ(g.tracing_count(), 2);
  // Back to the first signature: a hit (memo or cache), no new trace.
  expect_tensor<float>(f({a, b}).tensor(), {2}, {4.f, 4.f});
  EXPECT_EQ(f.tracing_count(), 2);
}

TEST(CallPath, MoreSignaturesThanTheMemoHoldsStayCorrect) {
  FunctionOptions o;
  o.name = "plus_n";
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() + 1); }, o);
  std::vector<Tensor> inputs;
  for (int n = 1; n <= 20; ++n) inputs.push_back(fill({n}, Tensor(n)));
  for (int round = 0; round < 3; ++round)
    for (const Tensor& x : inputs) {
      Tensor y = f({x}).tensor();
      ASSERT_EQ(y.shape(), x.shape());
      EXPECT_EQ(y.to_vector<int32_t>()[0], static_cast<int32_t>(x.dim(0)) + 1);
    }
  EXPECT_EQ(f.tracing_count(), 20);
}

TEST(CallPath, FunctionsWithEqualKeysNeverShareAMemoEntry) {
  Tensor a({1.f, 2.f}), b({1.f, 1.f});
  Function f = make_affine(2.f);
  Function g = make_affine(10.f);
  for (int i = 0; i < 3; ++i) {
    expect_tensor<float>(f({a, b}).tensor(), {2}, {3.f, 5.f});
    expect_tensor<float>(g({a, b}).tensor(), {2}, {11.f, 21.f});
  }
  // A function made after another was destroyed (possibly at the same
  // address) has its own identity.
  for (float scale = 3.f; scale < 8.f; scale += 1.f) {
    auto h = std::make_unique<Function>(affine(scale), affine_options());
    expect_tensor<float>((*h)({a, b}).tensor(), {2}, {scale + 1.f, 2.f * scale + 1.f});
    expect_tensor<float>((*h)({a, b}).tensor(), {2}, {scale + 1.f, 2.f * scale + 1.f});
  }
}

TEST(CallPath, CallTensorsEqualsTheValueCall) {
  Function f = make_affine(3.f);
  Tensor a({1.f, 2.f}), b({0.5f, 0.5f});
  std::vector<Tensor> args{a, b};
  expect_tensor<float>(f.call_tensors(args).tensor(), {2}, {3.5f, 6.5f});
  expect_tensor<float>(f({a, b}).tensor(), {2}, {3.5f, 6.5f});
  EXPECT_EQ(f.tracing_count(), 1);               // the two entry points share the cache
  std::vector<Tensor> mixed{a, Tensor({0, 0})};  // float32 + int32: fails while tracing
  expect_error([&] { f.call_tensors(mixed); }, Code::kInvalidArgument, {"dtype mismatch"});
  EXPECT_EQ(f.tracing_count(), 1);
  std::vector<Tensor> undefined{a, Tensor()};
  expect_error([&] { f.call_tensors(undefined); }, Code::kInvalidArgument,
               {"undefined tensor argument"});
  Variable v(Tensor({1.f}));
  std::vector<Tensor> handle{v.handle(), b};
  expect_error([&] { f.call_tensors(handle); }, Code::kInvalidArgument,
               {"pass the Variable itself, not its handle"});
}

TEST(CallPath, InputSignatureShortcutChecksStructureAndSpecs) {
  FunctionOptions o;
  o.name = "sig";
  o.arg_names = {"x"};
  o.input_signature = std::vector<ArgSpec>{{DType::kFloat32, Shape({-1}), ""}};
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() * 2.f); }, o);
  for (int n = 1; n <= 3; ++n) {
    Tensor x = fill({n}, Tensor(1.f));
    expect_tensor<float>(f({x}).tensor(), {n}, std::vector<float>(static_cast<size_t>(n), 2.f));
    expect_tensor<float>(f.call_tensors(std::vector<Tensor>{x}).tensor(), {n},
                         std::vector<float>(static_cast<size_t>(n), 2.f));
  }
  EXPECT_EQ(f.tracing_count(), 1);
  expect_error(
      [&] {
        f({Tensor({1, 2})});
      },
      Code::kInvalidArgument, {"incompatible with input_signature", "int32"});
  expect_error([&] { f({Tensor(1.f)}); }, Code::kInvalidArgument,
               {"incompatible with input_signature"});
  expect_error(
      [&] {
        f({Tensor({1.f}), Value(5)});
      },
      Code::kInvalidArgument, {"expected 1 tensor arguments matching input_signature, got 2"});
  EXPECT_EQ(f.tracing_count(), 1);
}

// A variable bound to an input_signature spec is read, as TensorFlow converts
// the argument to a tensor (no retrace; a tape sees the read); one of another
// dtype is refused like a tensor.
TEST(CallPath, VariablesBoundToInputSignatureSpecsAreRead) {
  FunctionOptions o;
  o.name = "sig";
  o.input_signature = std::vector<ArgSpec>{{DType::kFloat32, Shape({-1}), "x"}};
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() * 2.f); }, o);
  Variable v(Tensor({1.f, 2.f, 3.f}));
  expect_tensor<float>(f({Value(v)}).tensor(), {3}, {2.f, 4.f, 6.f});
  expect_tensor<float>(f({Value(Tensor({1.f}))}).tensor(), {1}, {2.f});
  EXPECT_EQ(f.tracing_count(), 1);
  GradientTape tape;
  const Tensor y = reduce_sum(f({Value(v)}).tensor());
  expect_tensor<float>(tape.gradient(y, v), {3}, {2.f, 2.f, 2.f});
  Variable ints(Tensor({1, 2}));
  expect_error([&] { f({Value(ints)}); }, Code::kInvalidArgument,
               {"incompatible with input_signature", "int32"});
}

TEST(CallPath, PlansReadInputsAndConstantsInPlaceWithoutChangingThem) {
  FunctionOptions o;
  o.name = "mixed";
  // Outputs: an input as is, a constant, a value returned twice, and x + x
  // (one input read twice by one step).
  const Tensor k({5.f, 6.f});
  Function f(
      [&](const std::vector<Value>& a) {
        const Tensor& x = a[0].tensor();
        Tensor y = x + x;
        return Value::tuple({Value(x), Value(k), Value(y), Value(y), Value(y * 2.f + k)});
      },
      o);
  for (int i = 0; i < 3; ++i) {
    // The only handle to the input is the argument itself: in-place reuse
    // by a kernel would show as a changed input.
    std::vector<Value> args{Value(Tensor({1.f, 2.f}))};
    Value r = f(args);
    expect_tensor<float>(args[0].tensor(), {2}, {1.f, 2.f});
    ASSERT_EQ(r.items().size(), 5u);
    expect_tensor<float>(r.items()[0].tensor(), {2}, {1.f, 2.f});
    expect_tensor<float>(r.items()[1].tensor(), {2}, {5.f, 6.f});
    expect_tensor<float>(r.items()[2].tensor(), {2}, {2.f, 4.f});
    expect_tensor<float>(r.items()[3].tensor(), {2}, {2.f, 4.f});
    expect_tensor<float>(r.items()[4].tensor(), {2}, {9.f, 14.f});
  }
  expect_tensor<float>(k, {2}, {5.f, 6.f});
  // call_flat with the sole handle to its input leaves it intact too.
  auto cf = f.get_concrete_function({Value(Tensor({0.f, 0.f}))});
  std::vector<Tensor> in{Tensor({3.f, 4.f})};
  std::vector<Tensor> out = cf->call_flat(in);
  expect_tensor<float>(in[0], {2}, {3.f, 4.f});
  expect_tensor<float>(out[4], {2}, {17.f, 22.f});
  const std::string plan = cf->plan().debug_string();
  EXPECT_NE(plan.find("in0"), std::string::npos) << plan;
  EXPECT_NE(plan.find("c0"), std::string::npos) << plan;
}

TEST(CallPath, VariablesAndPythonLikeScalarsStillKeyTheCache) {
  Variable v(Tensor({1.f}));
  FunctionOptions o;
  o.name = "scaled";
  Function f(
      [](const std::vector<Value>& a) {
        return Value(a[0].variable().read_value() * static_cast<float>(a[1].as_int()));
      },
      o);
  expect_tensor<float>(f({Value(v), Value(2)}).tensor(), {1}, {2.f});
  v.assign(Tensor({3.f}));
  expect_tensor<float>(f({Value(v), Value(2)}).tensor(), {1}, {6.f});  // read at run time
  expect_tensor<float>(f({Value(v), Value(3)}).tensor(), {1}, {9.f});  // a new value: a trace
  expect_tensor<float>(f({Value(v), Value(2)}).tensor(), {1}, {6.f});
  EXPECT_EQ(f.tracing_count(), 2);
}

TEST(CallPath, RetracingWarningAfterALongSteadyState) {
  std::vector<std::string> warnings;
  set_warning_handler([&](const std::string& cat, const std::string& msg) {
    if (cat == "RetracingWarning") warnings.push_back(msg);
  });
  FunctionOptions o;
  o.name = "steady";
  o.arg_names = {"x"};
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() + 1); }, o);
  for (int i = 0; i < 100; ++i) f({Tensor({1})});
  EXPECT_TRUE(warnings.empty());
  for (int n = 2; n <= 7; ++n) f({fill({n}, Tensor(0))});
  set_warning_handler(nullptr);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("was traced 5 times in its last 10 calls"), std::string::npos)
      << warnings[0];
}

TEST(CallPath, ConcurrentCallsOverMoreSignaturesThanTheMemoHolds) {
  FunctionOptions o;
  o.name = "f";
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() * 3 - 1); }, o);
  std::vector<Tensor> inputs;
  for (int n = 1; n <= 12; ++n) inputs.push_back(fill({n}, Tensor(n)));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 3000; ++k) {
        const Tensor& x = inputs[static_cast<size_t>((k * 7 + t) % 12)];
        Tensor y = (k % 2 ? f.call_tensors(std::vector<Tensor>{x}) : f({x})).tensor();
        if (y.to_vector<int32_t>() != (x * 3 - 1).to_vector<int32_t>()) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(f.tracing_count(), 12);
}

}  // namespace
}  // namespace kiln
