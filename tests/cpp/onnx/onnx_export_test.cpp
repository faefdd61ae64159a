// ONNX export: the model proto's structure for traced functions (inputs,
// initializers, nodes, control flow) and the export's errors. Running the
// models is tests/python/onnx/test_onnx_export.py's job (onnxruntime).
#include <algorithm>

#include "kiln/control_flow.h"
#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "onnx.pb.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;
namespace pb = onnxproto;

std::shared_ptr<const ConcreteFunction> trace(Function& f, std::vector<ArgSpec> specs) {
  std::vector<Value> args(specs.begin(), specs.end());
  return f.get_concrete_function(args);
}

Function make(std::function<Tensor(const std::vector<Value>&)> body, const char* name = "f") {
  FunctionOptions o;
  o.name = name;
  o.arg_names = {"x"};
  return Function([body](const std::vector<Value>& a) { return Value(body(a)); }, o);
}

pb::ModelProto exported(const ConcreteFunction& cf, onnx::ExportOptions o = {}) {
  pb::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(onnx::export_bytes(cf, o)));
  return m;
}

std::vector<std::string> op_types(const pb::GraphProto& g) {
  std::vector<std::string> v;
  for (const auto& n : g.node()) v.push_back(n.op_type());
  return v;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(OnnxExport, ModelHeaderInputsAndOutputs) {
  Function f = make([](const std::vector<Value>& a) { return tanh(a[0].tensor()) * 2.0f; });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{-1, 3}, "x"}});
  const pb::ModelProto m = exported(*cf);
  EXPECT_EQ(m.ir_version(), 8);
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  EXPECT_EQ(m.opset_import(0).version(), 17);
  EXPECT_EQ(m.producer_name(), "kiln");
  EXPECT_FALSE(m.producer_version().empty());
  const pb::GraphProto& g = m.graph();
  EXPECT_EQ(g.name(), "f");
  ASSERT_EQ(g.input_size(), 1);
  EXPECT_EQ(g.input(0).name(), "x");
  const auto& shape = g.input(0).type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 2);
  EXPECT_FALSE(shape.dim(0).dim_param().empty());  // None -> a symbolic dim
  EXPECT_EQ(shape.dim(1).dim_value(), 3);
  ASSERT_EQ(g.output_size(), 1);
  EXPECT_EQ(g.output(0).name(), "output_0");
  const auto ops = op_types(g);
  EXPECT_TRUE(has(ops, "Tanh"));
  EXPECT_TRUE(has(ops, "Mul"));
  EXPECT_EQ(ops.back(), "Identity");
  EXPECT_EQ(g.node(g.node_size() - 1).output(0), "output_0");
  EXPECT_EQ(g.initializer_size(), 1);  // the constant 2
}

TEST(OnnxExport, OutputNamesGraphNameAndIrVersionFollowOptions) {
  Function f = make([](const std::vector<Value>& a) { return a[0].tensor() + 1.0f; });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{2}, "x"}});
  onnx::ExportOptions o;
  o.opset = 19;
  o.graph_name = "g";
  o.output_names = {"y"};
  const pb::ModelProto m = exported(*cf, o);
  EXPECT_EQ(m.ir_version(), 9);
  EXPECT_EQ(m.graph().name(), "g");
  EXPECT_EQ(m.graph().output(0).name(), "y");
  o.output_names = {"a", "b"};
  expect_error([&] { onnx::export_bytes(*cf, o); }, Code::kInvalidArgument, {"2 output names"});
}

TEST(OnnxExport, IrVersionFollowsTheOpset) {
  Function f = make([](const std::vector<Value>& a) { return a[0].tensor() + 1.0f; });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{2}, "x"}});
  for (auto [opset, ir] : std::vector<std::pair<int, int>>{{11, 6}, {13, 7}, {18, 8}, {21, 10}}) {
    onnx::ExportOptions o;
    o.opset = opset;
    const pb::ModelProto m = exported(*cf, o);
    EXPECT_EQ(m.ir_version(), ir) << "opset " << opset;
    EXPECT_EQ(m.opset_import(0).version(), opset);
  }
}

// Every elementwise row of unary.def and binary.def names its ONNX export.
TEST(OnnxExport, EveryElementwiseDefRowHasAnOnnxMapping) {
  const OpId rows[] = {
#define KILN_UNARY(op, dtypes, rule, onnx) OpId::op,
#define KILN_PREDICATE(op, dtypes, onnx) OpId::op,
#define KILN_BINARY(op, dtypes, kind, traits, rule, onnx) OpId::op,
#include "ops/binary.def"
#include "ops/unary.def"
#undef KILN_UNARY
#undef KILN_PREDICATE
#undef KILN_BINARY
  };
  for (OpId id : rows) {
    const OpDef& d = op_def(id);
    EXPECT_TRUE(d.onnx != nullptr || d.onnx_type != nullptr) << d.type_name;
  }
}

TEST(OnnxExport, ConstantsOnlyReadAsAttributesMakeNoInitializers) {
  Function f = make([](const std::vector<Value>& a) {
    return reshape(a[0].tensor(), Tensor::from_vector<int32_t>({-1, 2}, {2}));
  });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{-1, 4}, "x"}});
  const pb::ModelProto m = exported(*cf);
  ASSERT_EQ(m.graph().initializer_size(), 1);  // Reshape's int64 shape, not the int32 input
  EXPECT_EQ(m.graph().initializer(0).data_type(), pb::TensorProto::INT64);
}

TEST(OnnxExport, VariablesCapturedByALoopBodyAreInitializers) {
  Variable w{Tensor::from_vector<float>({0.5f, -1, 2}, {3}), "w"};
  Function f = make([&](const std::vector<Value>& a) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < 3; },
                      [&](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[0] + 1, v[1] * w.read_value()};
                      },
                      {Tensor(0), a[0].tensor()})[1];
  });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{3}, "x"}});
  const pb::ModelProto m = exported(*cf);
  bool found = false;
  for (const auto& t : m.graph().initializer()) found |= t.name() == "w";
  EXPECT_TRUE(found);
}

TEST(OnnxExport, OpsetOutOfRangeIsAnError) {
  Function f = make([](const std::vector<Value>& a) { return a[0].tensor() + 1.0f; });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{2}, "x"}});
  for (int opset : {onnx::kMinOpset - 1, onnx::kMaxOpset + 1}) {
    onnx::ExportOptions o;
    o.opset = opset;
    expect_error([&] { onnx::export_bytes(*cf, o); }, Code::kInvalidArgument, {"opset"});
  }
}

TEST(OnnxExport, VariablesBecomeInitializersWithTheirValues) {
  Variable w{Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}), "kernel"};
  Function f =
      make([&](const std::vector<Value>& a) { return matmul(a[0].tensor(), w.read_value()); });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{-1, 3}, "x"}});
  const pb::ModelProto m = exported(*cf);
  ASSERT_EQ(m.graph().initializer_size(), 1);
  const pb::TensorProto& t = m.graph().initializer(0);
  EXPECT_EQ(t.name(), "kernel");
  ASSERT_EQ(t.dims_size(), 2);
  EXPECT_EQ(t.dims(0), 3);
  EXPECT_EQ(t.raw_data().size(), 6 * sizeof(float));
  EXPECT_TRUE(has(op_types(m.graph()), "MatMul"));
  EXPECT_EQ(m.graph().input_size(), 1);  // the variable is no graph input
}

TEST(OnnxExport, CharUnpackUsesBitShiftAndBitwiseAnd) {
  Function f = make([](const std::vector<Value>& a) {
    const Tensor bits = Tensor::from_vector<uint8_t>({7, 6, 5, 4, 3, 2, 1, 0}, {8});
    const Tensor x = expand_dims(a[0].tensor(), -1);
    const Tensor b = bitwise_and(right_shift(x, bits), Tensor(Scalar(1), DType::kUInt8));
    return cast(reshape(b, {-1, 32}), DType::kFloat32);
  });
  auto cf = trace(f, {ArgSpec{DType::kUInt8, Shape{-1, 4}, "x"}});
  onnx::ExportOptions o;
  o.opset = 18;
  const auto ops = op_types(exported(*cf, o).graph());
  for (const char* op : {"Unsqueeze", "BitShift", "BitwiseAnd", "Reshape", "Cast"})
    EXPECT_TRUE(has(ops, op)) << op;
  // BitwiseAnd needs opset 18.
  expect_error([&] { onnx::export_bytes(*cf); }, Code::kInvalidArgument,
               {"BitwiseAnd", "opset 18"});
}

TEST(OnnxExport, CondBecomesIfWithBranchGraphs) {
  Function f = make([](const std::vector<Value>& a) {
    const Tensor x = a[0].tensor();
    return cond(
        reduce_sum(x) > 0.0f, [&] { return std::vector<Tensor>{x * 2.0f}; },
        [&] { return std::vector<Tensor>{-x}; })[0];
  });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{3}, "x"}});
  const pb::ModelProto m = exported(*cf);
  const pb::NodeProto* node = nullptr;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "If") node = &n;
  ASSERT_NE(node, nullptr);
  ASSERT_EQ(node->attribute_size(), 2);
  EXPECT_TRUE(has(op_types(node->attribute(0).g()), "Mul"));
  EXPECT_TRUE(has(op_types(node->attribute(1).g()), "Neg"));
}

TEST(OnnxExport, WhileLoopBecomesLoop) {
  Function f = make([](const std::vector<Value>& a) {
    return while_loop([](const std::vector<Tensor>& v) { return v[0] < 10; },
                      [](const std::vector<Tensor>& v) {
                        return std::vector<Tensor>{v[0] + 1, tanh(v[1])};
                      },
                      {Tensor(0), a[0].tensor()})[1];
  });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{3}, "x"}});
  const pb::ModelProto m = exported(*cf);
  const pb::NodeProto* loop = nullptr;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Loop") loop = &n;
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->input_size(), 4);  // M (empty), cond, two loop variables
  EXPECT_EQ(loop->input(0), "");
  const pb::GraphProto& body = loop->attribute(0).g();
  EXPECT_EQ(body.input_size(), 4);
  EXPECT_EQ(body.output_size(), 3);
  EXPECT_TRUE(has(op_types(body), "Tanh"));
  EXPECT_TRUE(has(op_types(body), "Less"));
}

TEST(OnnxExport, UnsupportedOpsAreAllListed) {
  Variable v{Tensor(1.0f), "counter"};
  Function f = make([&](const std::vector<Value>& a) {
    v.assign_add(Tensor(1.0f));
    const Tensor n = cast(string_length(Tensor("abc")), DType::kFloat32);
    return a[0].tensor() * n + string_to_number(as_string(a[0].tensor()), DType::kFloat32);
  });
  auto cf = trace(f, {ArgSpec{DType::kFloat32, Shape{2}, "x"}});
  expect_error([&] { onnx::export_bytes(*cf); }, Code::kInvalidArgument,
               {"AssignAddVariableOp", "AsString", "StringToNumber", "no ONNX mapping"});
}

}  // namespace
}  // namespace kiln
