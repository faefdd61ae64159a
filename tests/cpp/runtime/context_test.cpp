#include <atomic>
#include <thread>

#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

// A stand-in for the graph layer's node, to check symbolic-tensor handling.
class FakeSymbol : public Symbol {
 public:
  std::string tensor_name(int32_t i) const override { return "x:" + std::to_string(i); }
  std::string describe() const override { return "node 'x' in function 'f'"; }
};

// Records op calls instead of running them, as a tracing context will.
class RecordingContext : public ExecutionContext {
 public:
  std::vector<std::string> calls;
  void execute(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs,
               std::vector<Tensor>& outputs) override {
    InferContext ic(op, inputs, attrs);
    op.infer(ic);
    calls.push_back(op.type_name);
    outputs.clear();
    for (const TensorSpec& s : ic.outputs())
      outputs.push_back(Tensor::symbolic(new FakeSymbol, 0, s.dtype, s.shape));
  }
  bool is_tracing() const override { return true; }
};

TEST(Context, EagerByDefault) {
  EXPECT_FALSE(current_context().is_tracing());
  testing::expect_tensor<int32_t>(Tensor({1, 2}) + Tensor({3, 4}), {2}, {4, 6});
}

TEST(Context, ScopeRoutesOpsToAnotherContextWithoutChangingOpCode) {
  RecordingContext rec;
  Tensor out;
  {
    ContextScope scope(rec);
    EXPECT_TRUE(current_context().is_tracing());
    out = Tensor({1.f, 2.f}) * 2.f + Tensor({1.f, 1.f});
  }
  EXPECT_FALSE(current_context().is_tracing());
  EXPECT_EQ(rec.calls, (std::vector<std::string>{"Mul", "AddV2"}));
  ASSERT_TRUE(out.is_symbolic());
  EXPECT_EQ(out.shape(), Shape({2}));
  EXPECT_EQ(out.to_string(), "Tensor(\"x:0\", shape=(2,), dtype=float32)");
  expect_error([&] { out.data<float>(); }, Code::kFailedPrecondition, {"symbolic", "function 'f'"});
  // Using the leaked symbolic tensor eagerly names it and its function.
  expect_error([&] { out + 1.f; }, Code::kInvalidArgument, {"x:0", "function 'f'"});
}

TEST(Context, TracingInferenceHandlesUnknownDims) {
  RecordingContext rec;
  ContextScope scope(rec);
  Tensor x = Tensor::symbolic(new FakeSymbol, 0, DType::kFloat32, Shape({-1, 3}));
  Tensor y = x + Tensor({1.f, 2.f, 3.f});
  EXPECT_EQ(y.shape(), Shape({-1, 3}));
}

TEST(Context, ScopeIsThreadLocal) {
  RecordingContext rec;
  ContextScope scope(rec);
  std::atomic<bool> other_is_eager{false};
  std::thread t([&] { other_is_eager = !current_context().is_tracing(); });
  t.join();
  EXPECT_TRUE(other_is_eager);
}

TEST(Context, UndefinedInputAndWrongArityAreErrors) {
  expect_error([] { add(Tensor(), Tensor(1)); }, Code::kInvalidArgument, {"undefined"});
  Tensor one(1);
  expect_error([&] { call_op1(OpId::Add, {one}); }, Code::kInvalidArgument,
               {"AddV2", "expected 2 inputs, got 1"});
}

TEST(Context, TemporariesAreUpdatedInPlace) {
  Tensor a = Tensor::from_vector<float>(std::vector<float>(1000, 1.f), {1000});
  Tensor tmp = a + 1.f;
  const void* p = tmp.raw_data();
  // `tmp` is only referenced by the call's argument list: its buffer is reused.
  Tensor r = call_op1(OpId::Add, {std::move(tmp), a});
  EXPECT_EQ(r.raw_data(), p);
  EXPECT_EQ(r.at<float>({5}), 3.f);
  // A tensor the caller still holds is never overwritten.
  Tensor r2 = a + a;
  EXPECT_NE(r2.raw_data(), a.raw_data());
  EXPECT_EQ(a.at<float>({0}), 1.f);
}

}  // namespace
}  // namespace kiln
