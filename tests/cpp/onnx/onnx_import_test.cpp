// ONNX import: models built with the protobuf messages, loaded, run and
// compared; every malformed or hostile model is a clear error.
#include <thread>

#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "onnx.pb.h"
#include "test_util.h"

namespace kiln {
namespace {
namespace pb = onnxproto;
using testing::expect_error;
using testing::expect_tensor;

// A model builder: inputs, initializers, nodes, outputs.
struct Builder {
  pb::ModelProto m;
  pb::GraphProto* g;
  explicit Builder(int64_t opset = 17) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g = m.mutable_graph();
    g->set_name("model");
  }
  static void type(pb::ValueInfoProto* v, int elem, std::vector<int64_t> dims) {
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto* s = t->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0)
        s->add_dim()->set_dim_param("N");
      else
        s->add_dim()->set_dim_value(d);
    }
  }
  Builder& input(const std::string& n, int elem, std::vector<int64_t> dims) {
    auto* v = g->add_input();
    v->set_name(n);
    type(v, elem, dims);
    return *this;
  }
  Builder& output(const std::string& n, int elem = pb::TensorProto::FLOAT) {
    auto* v = g->add_output();
    v->set_name(n);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    return *this;
  }
  pb::TensorProto* init_f(const std::string& n, std::vector<int64_t> dims, std::vector<float> v) {
    auto* t = g->add_initializer();
    t->set_name(n);
    t->set_data_type(pb::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return t;
  }
  pb::TensorProto* init_i(const std::string& n, std::vector<int64_t> v) {
    auto* t = g->add_initializer();
    t->set_name(n);
    t->set_data_type(pb::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return t;
  }
  pb::NodeProto* node(const std::string& op, std::vector<std::string> in,
                      std::vector<std::string> out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return n;
  }
  static void attr_i(pb::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_ints(pb::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  std::string bytes() const { return m.SerializeAsString(); }
  onnx::Model load(onnx::LoadOptions o = {}) const { return onnx::load_bytes(bytes(), "m", o); }
};

Tensor f32(std::vector<float> v, Shape s) {
  return Tensor::from_vector(v, s);
}

TEST(OnnxImport, AddReluWithInitializerAndSymbolicBatch) {
  Builder b;
  b.input("x", pb::TensorProto::FLOAT, {-1, 3}).output("y");
  b.init_f("w", {3}, {1, 2, 3});
  b.node("Add", {"x", "w"}, {"t"});
  b.node("Relu", {"t"}, {"y"});
  onnx::Model m = b.load();
  ASSERT_TRUE(m.function);
  EXPECT_EQ(m.input_names, std::vector<std::string>{"x"});
  EXPECT_EQ(m.opset, 17);
  for (int64_t n : {1, 4}) {  // one trace serves every batch size
    std::vector<float> x(static_cast<size_t>(3 * n), -2.f);
    x[0] = 1.f;
    auto out = m(std::vector<Tensor>{f32(x, Shape{n, 3})});
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> want(static_cast<size_t>(3 * n), 0.f);
    want[0] = 2.f;
    for (int64_t r = 0; r < n; ++r) want[static_cast<size_t>(3 * r + 2)] = 1.f;
    expect_tensor<float>(out[0], Shape{n, 3}, want);
  }
}

TEST(OnnxImport, ConvPoolGemmSoftmax) {
  // NCHW conv (pads, bias), max pool, flatten, Gemm, softmax: against values
  // computed by hand for a 1x1x4x4 input of ones.
  Builder b;
  b.input("x", pb::TensorProto::FLOAT, {1, 1, 4, 4}).output("y");
  b.init_f("w", {2, 1, 3, 3}, std::vector<float>(18, 1.f));
  b.init_f("bias", {2}, {0.f, 1.f});
  auto* conv = b.node("Conv", {"x", "w", "bias"}, {"c"});
  Builder::attr_ints(conv, "pads", {1, 1, 1, 1});
  auto* pool = b.node("MaxPool", {"c"}, {"p"});
  Builder::attr_ints(pool, "kernel_shape", {2, 2});
  Builder::attr_ints(pool, "strides", {2, 2});
  b.node("Flatten", {"p"}, {"f"});
  b.init_f("g", {8, 2}, std::vector<float>(16, 0.f));
  auto* gemm = b.node("Gemm", {"f", "g"}, {"z"});
  Builder::attr_i(gemm, "transB", 0);
  b.node("Softmax", {"z"}, {"y"});
  auto out = b.load()(std::vector<Tensor>{f32(std::vector<float>(16, 1.f), Shape{1, 1, 4, 4})});
  expect_tensor<float>(out[0], Shape{1, 2}, {0.5f, 0.5f});
}

TEST(OnnxImport, ValueInputsTraceOncePerValue) {
  // Reshape's shape from a graph input works at run time; ReduceSum's axes
  // from a graph input are read by value: one trace per value.
  Builder b(18);
  b.input("x", pb::TensorProto::FLOAT, {2, 3}).input("axes", pb::TensorProto::INT64, {1});
  b.output("y");
  b.node("ReduceSum", {"x", "axes"}, {"y"});
  onnx::Model m = b.load();
  EXPECT_EQ(m.value_inputs, std::vector<std::string>{"axes"});
  EXPECT_FALSE(m.function);
  const Tensor x = f32({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  auto a0 = m(std::vector<Tensor>{x, Tensor::from_vector<int64_t>({0}, Shape{1})});
  expect_tensor<float>(a0[0], Shape{1, 3}, {5, 7, 9});
  auto a1 = m(std::vector<Tensor>{x, Tensor::from_vector<int64_t>({1}, Shape{1})});
  expect_tensor<float>(a1[0], Shape{2, 1}, {6, 15});
  const std::vector<Tensor> same = {x, Tensor::from_vector<int64_t>({1}, Shape{1})};
  EXPECT_EQ(m.concrete_function(same).get(), m.concrete_function(same).get());
  expect_error(
      [&] {
        m(std::vector<Tensor>{x, Tensor::from_vector<std::string>({"a"}, Shape{1})});
      },
      Code::kInvalidArgument, {"read by value"});
}

TEST(OnnxImport, LoopWithScanOutputAndIf) {
  // sum = 0; for i < 3: sum += x; scan sum -> [3, 2]; then If(sum > 0) -> sum, else -sum.
  Builder b(17);
  b.input("x", pb::TensorProto::FLOAT, {2}).output("s").output("scan").output("r");
  b.init_i("m", {3});
  b.init_f("zero", {2}, {0, 0});
  auto* loop = b.node("Loop", {"m", "", "zero"}, {"s", "scan"});
  auto* body_attr = loop->add_attribute();
  body_attr->set_name("body");
  body_attr->set_type(pb::AttributeProto::GRAPH);
  pb::GraphProto* body = body_attr->mutable_g();
  body->set_name("body");
  for (auto [n, t] : {std::pair{"i", pb::TensorProto::INT64},
                      {"c", pb::TensorProto::BOOL},
                      {"acc", pb::TensorProto::FLOAT}}) {
    auto* v = body->add_input();
    v->set_name(n);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(t);
  }
  auto* add = body->add_node();
  add->set_op_type("Add");
  add->add_input("acc");
  add->add_input("x");  // from the enclosing graph
  add->add_output("next");
  auto* id = body->add_node();
  id->set_op_type("Identity");
  id->add_input("c");
  id->add_output("c_out");
  for (auto [n, t] : {std::pair{"c_out", pb::TensorProto::BOOL},
                      {"next", pb::TensorProto::FLOAT},
                      {"next", pb::TensorProto::FLOAT}}) {
    auto* v = body->add_output();
    v->set_name(n);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(t);
  }
  b.node("ReduceSum", {"s"}, {"total"});
  b.init_f("z", {}, {0});
  b.node("Greater", {"total", "z"}, {"pos"});
  auto* iff = b.node("If", {"pos"}, {"r"});
  for (auto [name, op] : {std::pair{"then_branch", "Identity"}, {"else_branch", "Neg"}}) {
    auto* a = iff->add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto::GRAPH);
    auto* n = a->mutable_g()->add_node();
    n->set_op_type(op);
    n->add_input("s");
    n->add_output("o");
    a->mutable_g()->add_output()->set_name("o");
  }
  onnx::Model m = b.load();
  auto out = m(std::vector<Tensor>{f32({1, -2}, Shape{2})});
  expect_tensor<float>(out[0], Shape{2}, {3, -6});
  expect_tensor<float>(out[1], Shape{3, 2}, {1, -2, 2, -4, 3, -6});
  expect_tensor<float>(out[2], Shape{2}, {-3, 6});
}

TEST(OnnxImport, JitCompileRunsTheSameModel) {
  Builder b;
  b.input("x", pb::TensorProto::FLOAT, {-1, 4}).output("y");
  b.node("Sigmoid", {"x"}, {"s"});
  b.node("Mul", {"x", "s"}, {"y"});
  onnx::Model plain = b.load(), jit = b.load(onnx::LoadOptions{true, ""});
  EXPECT_TRUE(jit.function->jit_compile());
  const Tensor x = f32({-2, -1, 0.5f, 3, 1, 2, -0.25f, 0}, Shape{2, 4});
  testing::expect_tensor_near<float>(jit(std::vector<Tensor>{x})[0], Shape{2, 4},
                                     plain(std::vector<Tensor>{x})[0].to_vector<float>(), 1e-6);
}

TEST(OnnxImport, UnsupportedOpsAreListedAtOnce) {
  Builder b;
  b.input("x", pb::TensorProto::FLOAT, {2}).output("y");
  b.node("Hardmax", {"x"}, {"a"});
  b.node("Relu", {"a"}, {"b"});
  b.node("LpNormalization", {"b"}, {"y"});
  auto* custom = b.node("Fancy", {"x"}, {"z"});
  custom->set_domain("com.example");
  expect_error([&] { b.load(); }, Code::kInvalidArgument,
               {"cannot import these ops", "Hardmax", "LpNormalization", "com.example.Fancy"});
  EXPECT_FALSE(onnx::supported_import_ops().empty());
}

// One malformed model per case: the load fails with InvalidArgument naming the problem.
TEST(OnnxImport, MalformedModelsAreClearErrors) {
  using Edit = std::function<void(Builder&)>;
  const std::vector<std::pair<std::string, Edit>> cases = {
      {"no graph", [](Builder& b) { b.m.clear_graph(); }},
      {"opset 99 is not one kiln reads",
       [](Builder& b) { b.m.mutable_opset_import(0)->set_version(99); }},
      {"imports no default-domain opset", [](Builder& b) { b.m.clear_opset_import(); }},
      {"not produced by an earlier node",
       [](Builder& b) { b.g->mutable_node(0)->set_input(0, "nope"); }},
      {"never produced", [](Builder& b) { b.g->mutable_output(0)->set_name("ghost"); }},
      {"needs 8 bytes of raw data",
       [](Builder& b) {
         auto* t = b.init_f("k", {2}, {});
         t->set_raw_data("abc");
       }},
      {"dimension -5 is out of range", [](Builder& b) { b.init_f("k", {-5}, {}); }},
      {"holds 0 values",
       [](Builder& b) {
         b.init_f("k", {int64_t{1} << 39, 4}, {});
       }},
      {"external data",
       [](Builder& b) {
         auto* t = b.init_f("k", {1}, {1});
         t->set_data_location(pb::TensorProto::EXTERNAL);
       }},
      {"ONNX type UINT16 is not one kiln supports",
       [](Builder& b) {
         b.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(4);
       }},
      {"repeated or unnamed", [](Builder& b) { b.input("x", pb::TensorProto::FLOAT, {2}); }},
      {"missing or repeated name",
       [](Builder& b) {
         b.init_f("k", {1}, {1});
         b.init_f("k", {1}, {2});
       }},
      {"attribute 'perm' is INT, not INTS",
       [](Builder& b) {
         auto* n = b.node("Transpose", {"x"}, {"tt"});
         Builder::attr_i(n, "perm", 1);
       }},
      {"defined twice", [](Builder& b) { b.node("Relu", {"x"}, {"y"}); }},
      {"is not a tensor",
       [](Builder& b) { b.g->mutable_input(0)->mutable_type()->clear_tensor_type(); }},
      {"the bytes do not parse", [](Builder& b) { b.m.set_producer_name(std::string(1, '\xff')); }},
  };
  for (const auto& [want, edit] : cases) {
    SCOPED_TRACE(want);
    Builder b;
    b.input("x", pb::TensorProto::FLOAT, {2}).output("y");
    b.node("Relu", {"x"}, {"y"});
    edit(b);
    std::string bytes = b.bytes();
    if (want == "the bytes do not parse") bytes = "\x0a\xff\xff\xff\xff\x0f";
    expect_error([&] { onnx::load_bytes(bytes, "m"); }, Code::kInvalidArgument, {want});
  }
}

TEST(OnnxImport, DeepNestingIsRefused) {
  Builder b;
  b.input("c", pb::TensorProto::BOOL, {}).output("y");
  pb::GraphProto* g = b.g;
  for (int depth = 0; depth < 20; ++depth) {
    auto* n = g->add_node();
    n->set_op_type("If");
    n->add_input("c");
    n->add_output(depth == 0 ? "y" : "o");
    for (const char* name : {"then_branch", "else_branch"}) {
      auto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(pb::AttributeProto::GRAPH);
      a->mutable_g()->add_output()->set_name("o");
    }
    g = n->mutable_attribute(0)->mutable_g();
  }
  expect_error([&] { b.load(); }, Code::kInvalidArgument, {"nest deeper"});
}

TEST(OnnxImport, MissingFileIsNotFound) {
  expect_error([] { onnx::load("/nonexistent/model.onnx"); }, Code::kNotFound);
}

TEST(OnnxImport, ConcurrentCallsAgree) {
  Builder b;
  b.input("x", pb::TensorProto::FLOAT, {-1, 8}).output("y");
  b.node("Tanh", {"x"}, {"t"});
  b.node("ReduceSum", {"t"}, {"y"});
  onnx::Model m = b.load();
  const Tensor x = f32(std::vector<float>(64, 0.5f), Shape{8, 8});
  const float want = m(std::vector<Tensor>{x})[0].to_vector<float>()[0];
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i)
        bad += m(std::vector<Tensor>{x})[0].to_vector<float>()[0] != want;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace kiln
