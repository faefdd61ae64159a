// Variables: the Variable class and the ReadVariableOp / Assign*VariableOp ops.
#include <atomic>
#include <limits>
#include <set>
#include <thread>

#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
using testing::expect_tensor;

template <typename T>
Tensor make(const std::vector<T>& values, const Shape& shape) {
  Tensor t = Tensor::empty(dtype_v<T>, shape);
  T* p = t.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

TEST(Variable, PropertiesAndHandle) {
  Variable v(Tensor({1, 2, 3}), "v");
  EXPECT_TRUE(v.defined());
  EXPECT_EQ(v.name(), "v:0");
  EXPECT_EQ(v.dtype(), DType::kInt32);
  EXPECT_EQ(v.shape(), (Shape{3}));
  EXPECT_TRUE(v.trainable());
  const Tensor& h = v.handle();
  EXPECT_EQ(h.dtype(), DType::kResource);
  EXPECT_EQ(h.shape(), Shape());
  EXPECT_EQ(h.resource(), v.resource());
  EXPECT_EQ(v.resource()->debug_name(), "Variable 'v:0'");
  Variable d(Tensor(1.5f), "", false);
  EXPECT_EQ(d.name(), "Variable:0");
  EXPECT_FALSE(d.trainable());
  EXPECT_EQ(Variable(Tensor(1)).name(), "Variable:0");
}

TEST(Variable, IdsAreUniqueAndCopiesShareTheVariable) {
  std::set<int64_t> ids;
  for (int i = 0; i < 100; ++i) ids.insert(Variable(i).id());
  EXPECT_EQ(ids.size(), 100u);
  Variable a(Tensor({1, 2}));
  Variable b = a;
  EXPECT_EQ(a.id(), b.id());
  EXPECT_TRUE(a.is_same(b));
  EXPECT_FALSE(a.is_same(Variable(Tensor({1, 2}))));
  b.assign(Tensor({5, 6}));
  expect_tensor<int32_t>(a.read_value(), {2}, {5, 6});
  EXPECT_GT(Variable(0).id(), a.id());  // never reused, increasing
}

template <typename T>
void check_read_assign(std::vector<T> init, std::vector<T> next) {
  SCOPED_TRACE(dtype_name(dtype_v<T>));
  const Shape shape{static_cast<int64_t>(init.size())};
  Variable v(make<T>(init, shape), "x");
  EXPECT_EQ(v.dtype(), dtype_v<T>);
  expect_tensor<T>(v.read_value(), shape, init);
  Tensor snapshot = v.value();
  v.assign(make<T>(next, shape));
  expect_tensor<T>(v.read_value(), shape, next);
  expect_tensor<T>(snapshot, shape, init);  // reads are snapshots
  expect_tensor<T>(static_cast<Tensor>(v), shape, next);
}

TEST(Variable, ReadAndAssignEveryDtype) {
  check_read_assign<bool>({true, false}, {false, false});
  check_read_assign<int8_t>({-1, 2}, {3, -4});
  check_read_assign<uint8_t>({250, 2}, {0, 255});
  check_read_assign<int32_t>({1, 2, 3}, {4, 5, 6});
  check_read_assign<int64_t>({int64_t{1} << 40}, {-7});
  check_read_assign<float>({1.5f, 2.5f}, {-0.5f, 0.f});
  check_read_assign<double>({0.1}, {0.2});
  check_read_assign<std::string>({"a", "b"}, {"cc", ""});
}

TEST(Variable, ScalarVariablesAndScalarAssign) {
  Variable v(1);
  EXPECT_EQ(v.dtype(), DType::kInt32);
  EXPECT_EQ(v.shape(), Shape());
  v.assign(7);
  expect_tensor<int32_t>(v.value(), {}, {7});
  Variable f(2.5);  // C++ double literal -> float32, as TensorFlow does
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  f.assign_add(0.25);
  expect_tensor<float>(f.value(), {}, {2.75f});
  Variable b(true);
  b.assign(false);
  expect_tensor<bool>(b.value(), {}, {false});
  expect_error([&] { v.assign(1.5); }, Code::kInvalidArgument, {"int32"});
}

template <typename T>
void check_add_sub(std::vector<T> init, std::vector<T> delta) {
  SCOPED_TRACE(dtype_name(dtype_v<T>));
  const Shape shape{static_cast<int64_t>(init.size())};
  Variable v(make<T>(init, shape));
  std::vector<T> sum(init.size()), back(init.size());
  for (size_t i = 0; i < init.size(); ++i) sum[i] = static_cast<T>(init[i] + delta[i]);
  Tensor t = v.assign_add(make<T>(delta, shape));  // returns the variable; converts by reading
  expect_tensor<T>(t, shape, sum);
  v.assign_sub(make<T>(delta, shape));
  expect_tensor<T>(v.read_value(), shape, init);
}

TEST(Variable, AssignAddSubEveryNumericDtype) {
  check_add_sub<int8_t>({1, -2, 100}, {3, 4, 20});
  check_add_sub<uint8_t>({1, 2, 250}, {3, 4, 10});
  check_add_sub<int32_t>({1, 2}, {10, -20});
  check_add_sub<int64_t>({int64_t{1} << 40}, {5});
  check_add_sub<float>({1.5f, -1.f}, {0.25f, 2.f});
  check_add_sub<double>({0.5}, {0.25});
}

TEST(Variable, IntegerArithmeticWraps) {
  Variable v(Tensor(std::numeric_limits<int32_t>::max()));
  v.assign_add(1);
  expect_tensor<int32_t>(v.value(), {}, {std::numeric_limits<int32_t>::min()});
  v.assign_sub(1);
  expect_tensor<int32_t>(v.value(), {}, {std::numeric_limits<int32_t>::max()});
  Variable w(Tensor(std::numeric_limits<int64_t>::min()));
  w.assign_sub(Tensor(int64_t{1}));
  expect_tensor<int64_t>(w.value(), {}, {std::numeric_limits<int64_t>::max()});
}

TEST(Variable, UpdatesInPlaceOnlyWhenNoSnapshotSharesTheBuffer) {
  Variable v(Tensor({1.f, 2.f, 3.f}));
  const Buffer* before;
  {
    Tensor r = v.read_value();
    before = r.buffer();
  }
  // The initial value's buffer is still shared with nobody -> in place.
  v.assign_add(Tensor({1.f, 1.f, 1.f}));
  Tensor r1 = v.read_value();
  EXPECT_EQ(r1.buffer(), before);
  expect_tensor<float>(r1, {3}, {2.f, 3.f, 4.f});
  // r1 holds the buffer: the update must copy and leave r1 alone.
  v.assign_sub(Tensor({2.f, 2.f, 2.f}));
  expect_tensor<float>(r1, {3}, {2.f, 3.f, 4.f});
  Tensor r2 = v.read_value();
  EXPECT_NE(r2.buffer(), r1.buffer());
  expect_tensor<float>(r2, {3}, {0.f, 1.f, 2.f});
  // An assigned user tensor is never written through.
  Tensor mine({10.f, 20.f, 30.f});
  v.assign(mine);
  v.assign_add(Tensor({1.f, 1.f, 1.f}));
  expect_tensor<float>(mine, {3}, {10.f, 20.f, 30.f});
  expect_tensor<float>(v.read_value(), {3}, {11.f, 21.f, 31.f});
  // Adding the variable to itself reads a snapshot first.
  v.assign_add(v.read_value());
  expect_tensor<float>(v.read_value(), {3}, {22.f, 42.f, 62.f});
}

TEST(Variable, InitialValueIsNotWrittenThrough) {
  Tensor init({1, 2});
  Variable v(init);
  v.assign_add(Tensor({5, 5}));
  expect_tensor<int32_t>(init, {2}, {1, 2});
  expect_tensor<int32_t>(v.read_value(), {2}, {6, 7});
}

TEST(Variable, ViewsAsValues) {
  Tensor base({1, 2, 3, 4});
  Variable v(base.view({2, 2}));
  EXPECT_EQ(v.shape(), (Shape{2, 2}));
  v.assign(Tensor({9, 8, 7, 6}).view({2, 2}));
  v.assign_add(Tensor({1, 1, 1, 1}).view({2, 2}));
  expect_tensor<int32_t>(v.read_value(), {2, 2}, {10, 9, 8, 7});
  Variable e(Tensor::empty(DType::kFloat32, {0, 3}));
  e.assign_add(Tensor::empty(DType::kFloat32, {0, 3}));
  expect_tensor<float>(e.read_value(), {0, 3}, {});
}

TEST(Variable, OperatorsThroughConversion) {
  Variable v(Tensor({1, 2}));
  expect_tensor<int32_t>(v + 1, {2}, {2, 3});
  expect_tensor<int32_t>(v * v, {2}, {1, 4});
  expect_tensor<int32_t>(add(v, Tensor({10, 20})), {2}, {11, 22});
  Tensor t = v;
  expect_tensor<int32_t>(t, {2}, {1, 2});
}

TEST(Variable, ToString) {
  Variable v(Tensor(1), "v");
  EXPECT_EQ(v.to_string(), "<kiln.Variable 'v:0' shape=() dtype=int32, numpy=1>");
  Variable m(Tensor({{1.5f, 2.f}, {3.f, 4.f}}), "m");
  EXPECT_EQ(m.to_string(),
            "<kiln.Variable 'm:0' shape=(2, 2) dtype=float32, numpy=\n[[1.5 2]\n [3 4]]>");
  std::ostringstream os;
  os << Variable(Tensor({"a"}), "s");
  EXPECT_EQ(os.str(), "<kiln.Variable 's:0' shape=(1,) dtype=string, numpy=[b'a']>");
  EXPECT_EQ(Variable().to_string(), "<kiln.Variable (empty)>");
}

TEST(Variable, AssignErrorsNameTheVariable) {
  Variable v(Tensor({1, 2}), "v");
  expect_error(
      [&] {
        v.assign(Tensor({1.f, 2.f}));
      },
      Code::kInvalidArgument, {"AssignVariableOp", "'v:0'", "dtype float32", "dtype int32"});
  expect_error(
      [&] {
        v.assign(Tensor({1, 2, 3}));
      },
      Code::kInvalidArgument, {"AssignVariableOp", "'v:0'", "shape (3,)", "shape (2,)"});
  expect_error(
      [&] {
        v.assign_add(Tensor({{1, 2}}));
      },
      Code::kInvalidArgument, {"AssignAddVariableOp", "'v:0'", "shape (1, 2)", "shape (2,)"});
  expect_error(
      [&] {
        v.assign_sub(Tensor({int64_t{1}, int64_t{2}}));
      },
      Code::kInvalidArgument, {"AssignSubVariableOp", "'v:0'", "int64", "int32"});
  expect_error([&] { v.assign_add(1); }, Code::kInvalidArgument,
               {"AssignAddVariableOp", "shape ()", "shape (2,)"});
  expect_error([&] { v.assign(Tensor()); }, Code::kInvalidArgument, {"undefined"});
  Variable s(Tensor({"a"}), "s");
  expect_error([&] { s.assign_add(Tensor({"b"})); }, Code::kInvalidArgument,
               {"AssignAddVariableOp", "string", "'s:0'"});
  Variable b(Tensor({true}), "b");
  expect_error([&] { b.assign_sub(Tensor({true})); }, Code::kInvalidArgument,
               {"AssignSubVariableOp", "bool", "'b:0'"});
  // Failed assignments leave the value alone.
  expect_tensor<int32_t>(v.read_value(), {2}, {1, 2});
}

TEST(Variable, ConstructionErrors) {
  expect_error([] { Variable v{Tensor()}; }, Code::kInvalidArgument, {"Variable", "undefined"});
  Variable h(1);
  expect_error([&] { Variable v(h.handle()); }, Code::kInvalidArgument, {"Variable", "resource"});
  Variable empty;
  EXPECT_FALSE(empty.defined());
  expect_error([&] { empty.read_value(); }, Code::kFailedPrecondition, {"Variable", "empty"});
  expect_error([&] { empty.assign(1); }, Code::kFailedPrecondition, {"Variable"});
  expect_error([&] { (void)empty.name(); }, Code::kFailedPrecondition, {"Variable"});
}

class NotAVariable final : public Resource {
 public:
  std::string debug_name() const override { return "Thing 't'"; }
};

Tensor handle_to(Resource* r) {
  Tensor h = Tensor::empty(DType::kResource, Shape());
  *static_cast<Resource**>(h.mutable_raw_data()) = r;  // adopts the reference
  return h;
}

TEST(VariableOps, HandleErrors) {
  expect_error([] { read_variable(Tensor(1), DType::kInt32, {}); }, Code::kInvalidArgument,
               {"ReadVariableOp", "resource handle", "int32"});
  Tensor thing = handle_to(new NotAVariable);
  expect_error([&] { read_variable(thing, DType::kInt32, {}); }, Code::kInvalidArgument,
               {"ReadVariableOp", "Thing 't'", "not a variable"});
  expect_error([&] { assign_variable(thing, Tensor(1)); }, Code::kInvalidArgument,
               {"AssignVariableOp", "not a variable"});
  Tensor null = Tensor::empty(DType::kResource, Shape());
  expect_error([&] { read_variable(null, DType::kInt32, {}); }, Code::kInvalidArgument,
               {"ReadVariableOp", "null"});
  Tensor two = Tensor::empty(DType::kResource, Shape{2});
  expect_error([&] { read_variable(two, DType::kInt32, {}); }, Code::kInvalidArgument,
               {"ReadVariableOp", "scalar", "(2,)"});
  Variable v(Tensor({1, 2}), "v");
  expect_error([&] { read_variable(v.handle(), DType::kFloat32, {2}); }, Code::kInvalidArgument,
               {"ReadVariableOp", "dtype attribute float32", "'v:0'", "int32"});
  expect_error([&] { read_variable(v.handle(), DType::kInt32, {3}); }, Code::kInvalidArgument,
               {"ReadVariableOp", "shape attribute (3,)", "'v:0'", "(2,)"});
  expect_error(
      [&] {
        call_op(OpId::AssignVariable, std::vector<Tensor>{v.handle(), Tensor({1, 2})},
                {DType::kFloat32});
      },
      Code::kInvalidArgument, {"AssignVariableOp", "dtype attribute is float32"});
  expect_error([&] { call_op(OpId::ReadVariable, std::vector<Tensor>{v.handle()}); },
               Code::kInvalidArgument, {"ReadVariableOp", "missing required attribute"});
}

TEST(VariableOps, HandleKeepsTheVariableAlive) {
  Tensor h;
  {
    Variable v(Tensor({4, 5}), "kept");
    h = v.handle();
  }
  expect_tensor<int32_t>(read_variable(h, DType::kInt32, {2}), {2}, {4, 5});
  assign_add_variable(h, Tensor({1, 1}));
  assign_sub_variable(h, Tensor({2, 0}));
  expect_tensor<int32_t>(read_variable(h, DType::kInt32, {2}), {2}, {3, 6});
  assign_variable(h, Tensor({0, 0}));
  expect_tensor<int32_t>(read_variable(h, DType::kInt32, {-1}), {2}, {0, 0});
  EXPECT_EQ(h.resource()->use_count(), 1);  // only the handle's buffer
}

TEST(VariableOps, OpRows) {
  for (OpId id :
       {OpId::ReadVariable, OpId::AssignVariable, OpId::AssignAddVariable, OpId::AssignSubVariable})
    EXPECT_TRUE(op_def(id).has(kStateful)) << op_def(id).type_name;
  EXPECT_EQ(op_def(OpId::ReadVariable).outputs.size(), 1u);
  EXPECT_TRUE(op_def(OpId::AssignVariable).outputs.empty());
  EXPECT_EQ(op_def(OpId::ReadVariable).attr_index("dtype"), 0);
  EXPECT_EQ(op_def(OpId::ReadVariable).attr_index("shape"), 1);
  EXPECT_EQ(op_def(OpId::AssignAddVariable).attr_index("dtype"), 0);
}

TEST(Variable, ConcurrentAddsAndReads) {
  const int64_t n = 4096;
  Variable v(zeros({n}, DType::kInt64));
  std::atomic<bool> torn{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 250; ++i) v.assign_add(ones({n}, DType::kInt64));
    });
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 250; ++i) {
        Tensor r = v.read_value();
        const int64_t* p = r.data<int64_t>();
        for (int64_t k = 1; k < n; ++k)
          if (p[k] != p[0]) torn = true;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_FALSE(torn.load());
  Tensor final_value = v.read_value();
  for (int64_t x : final_value.to_vector<int64_t>()) ASSERT_EQ(x, 1000);
}

}  // namespace
}  // namespace kiln
