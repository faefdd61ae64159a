// Export -> load round trips in C++, and loads of damaged or hostile exports.
#include "kiln/saved_model.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kiln/checkpoint.h"
#include "kiln/control_flow.h"
#include "kiln/kiln.h"
#include "kiln/npy.h"
#include "saved_model.pb.h"
#include "saved_model/graph_def.h"
#include "test_util.h"

namespace kiln {
namespace {
namespace fs = std::filesystem;
namespace pb = kiln::tfproto;
using saved_model::Exporter;
using testing::expect_error;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/kiln_sm_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str(const std::string& sub = "") const { return (path / sub).string(); }
};

using testing::read_bytes;
using testing::write_bytes;

std::shared_ptr<const ConcreteFunction> trace(Function& f, std::vector<ArgSpec> specs) {
  std::vector<Value> args(specs.begin(), specs.end());
  return f.get_concrete_function(args);
}

// y = tanh(x @ w + b), w and b variables; input [None, 3].
struct Dense {
  Variable w{Tensor::from_vector<float>({1, -2, 0.5f, 3, 0.25f, -1}, {3, 2}), "w"};
  Variable b{Tensor::from_vector<float>({0.1f, -0.2f}, {2}), "b"};
  Function f{[this](const std::vector<Value>& a) {
               return Value::dict(
                   {{"y", Value(tanh(matmul(a[0].tensor(), w.read_value()) + b.read_value()))}});
             },
             [] {
               FunctionOptions o;
               o.name = "dense";
               o.arg_names = {"x"};
               return o;
             }()};
};

// Dense's function with its serving_default signature (x -> y), saved in `dir`.
void save_dense(const std::string& dir) {
  Dense m;
  auto cf = trace(m.f, {ArgSpec{DType::kFloat32, Shape{-1, 3}, "x"}});
  Exporter e;
  e.add_signature("serving_default", cf, {"x"}, {"y"});
  e.save(dir);
}

Tensor input23() {
  return Tensor::from_vector<float>({1, 2, 3, -1, 0.5f, 2}, {2, 3});
}

TEST(SavedModel, RoundTripsAFunctionWithVariablesAndASignature) {
  TempDir d;
  Dense m;
  auto cf = trace(m.f, {ArgSpec{DType::kFloat32, Shape{-1, 3}, "x"}});
  Exporter e;
  const int fn = e.add_function({cf});
  e.add_child(Exporter::kRoot, "__call__", fn);
  e.add_child(Exporter::kRoot, "w", e.add_variable(m.w));
  e.add_signature("serving_default", cf, {"x"}, {"y"});
  e.save(d.str());
  ASSERT_TRUE(fs::exists(d.str("saved_model.pb")));
  ASSERT_TRUE(fs::exists(d.str("variables/variables.data-00000-of-00001")));
  ASSERT_TRUE(checkpoint::is_bundle(d.str("variables/variables")));  // TensorFlow's layout

  Tensor want = m.f({input23()}).items()[0].tensor();
  m.w.assign(Tensor::from_vector<float>(std::vector<float>(6, 0.f), {3, 2}));  // after saving

  auto sm = saved_model::load(d.str());
  const auto& sig = sm->signature("serving_default");
  EXPECT_EQ(sig.input_keys(), std::vector<std::string>{"x"});
  EXPECT_EQ(sig.output_keys(), std::vector<std::string>{"y"});
  EXPECT_EQ(sig.to_string(), "serving_default(x: float32(None, 3)) -> (y: float32(None, 2))");
  auto out = sig({{"x", input23()}});
  testing::expect_tensor<float>(out.at("y"), {2, 2}, want.to_vector<float>());
  // Both variables are restored (b only through the function's capture).
  ASSERT_EQ(sm->variables().size(), 2u);
  // The object graph keeps names; the function runs structured.
  const auto& root = sm->objects()[0];
  int fn_node = -1;
  for (const auto& [n, c] : root.children)
    if (n == "__call__") fn_node = c;
  ASSERT_GE(fn_node, 0);
  const auto& lf = sm->objects()[static_cast<size_t>(fn_node)];
  ASSERT_EQ(lf.functions.size(), 1u);
  Value r = (*lf.functions[0])({Value(input23())});
  ASSERT_EQ(r.kind(), Value::Kind::kDict);
  testing::expect_tensor<float>(r.items()[0].tensor(), {2, 2}, want.to_vector<float>());
  // Errors name the signature's inputs.
  expect_error([&] { sig({}); }, Code::kInvalidArgument, {"missing input 'x'"});
  expect_error(
      [&] {
        sig({{"x", input23()}, {"z", input23()}});
      },
      Code::kInvalidArgument, {"unknown input 'z'"});
  expect_error([&] { sm->signature("nope"); }, Code::kNotFound, {"serving_default"});
}

TEST(SavedModel, LoadedVariablesAreIndependentAndWritable) {
  TempDir d;
  save_dense(d.str());
  auto a = saved_model::load(d.str());
  auto b = saved_model::load(d.str());
  for (Variable v : a->variables()) v.assign(zeros_like(v.read_value()));
  auto ya = a->signature("serving_default")({{"x", input23()}}).at("y");
  auto yb = b->signature("serving_default")({{"x", input23()}}).at("y");
  testing::expect_tensor<float>(ya, {2, 2}, {0, 0, 0, 0});
  EXPECT_NE(yb.to_vector<float>()[0], 0.f);
}

TEST(SavedModel, TwoSignaturesOfOneFunctionKeepTheirKeys) {
  TempDir d;
  Dense m;
  auto cf = trace(m.f, {ArgSpec{DType::kFloat32, Shape{-1, 3}, "x"}});
  Exporter e;
  e.add_signature("a", cf, {"x"}, {"y"});
  e.add_signature("b", cf, {"features"}, {"scores"});
  e.save(d.str());
  auto sm = saved_model::load(d.str());
  std::vector<std::string> keys;
  for (const auto& o : sm->objects())
    if (o.kind == saved_model::LoadedObject::Kind::kSignature) keys.push_back(o.signature);
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(sm->signature("b").input_keys(), std::vector<std::string>{"features"});
  EXPECT_EQ(sm->signature("b")({{"features", input23()}}).count("scores"), 1u);
}

TEST(SavedModel, ConcurrentCallsOfOneSignature) {
  TempDir d;
  save_dense(d.str());
  auto sm = saved_model::load(d.str());
  const auto& sig = sm->signature("serving_default");
  const std::vector<float> want = sig({{"x", input23()}}).at("y").to_vector<float>();
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Tensor x = i % 2 ? input23() : concat({input23(), input23()}, 0);  // two batch sizes
        std::vector<float> y = sig({{"x", x}}).at("y").to_vector<float>();
        if (!std::equal(want.begin(), want.end(), y.begin())) ++wrong;
      }
      (void)t;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// A function with cond, while_loop and a TensorArray (doubling a value from
// 1, or adding 1 while the counter is <= 1), saved in `dir`; returns its
// output for n = 5.
Value save_loops(const std::string& dir) {
  FunctionOptions o;
  o.name = "loops";
  Function f(
      [](const std::vector<Value>& a) {
        Tensor n = a[0].tensor();
        TensorArray ta(DType::kFloat32, n);
        auto r = while_loop([&](const std::vector<Tensor>& v) { return less(v[0], n); },
                            [&](const std::vector<Tensor>& v) {
                              TensorArray t = ta.with_handle(v[2]);
                              Tensor x = cond(
                                  greater(v[0], Tensor(1)),
                                  [&] { return std::vector<Tensor>{v[1] * 2.f}; },
                                  [&] { return std::vector<Tensor>{v[1] + 1.f}; })[0];
                              return std::vector<Tensor>{v[0] + 1, x, t.write(v[0], x).handle()};
                            },
                            {Tensor(0), Tensor(1.f), ta.handle()});
        return Value::tuple({Value(r[1]), Value(ta.with_handle(r[2]).stack())});
      },
      o);
  auto cf = trace(f, {ArgSpec{DType::kInt32, Shape{}, "n"}});
  Value want = f({Value(Tensor(5))});
  Exporter e;
  e.add_child(Exporter::kRoot, "loops", e.add_function({cf}));
  e.add_signature("serving_default", cf, {"n"}, {"output_0", "output_1"});
  e.save(dir);
  return want;
}

TEST(SavedModel, RoundTripsCondWhileAndTensorArray) {
  TempDir d;
  Value want = save_loops(d.str());
  auto sm = saved_model::load(d.str());
  auto out = sm->signature("serving_default")({{"n", Tensor(5)}});
  testing::expect_tensor<float>(out.at("output_0"), {},
                                want.items()[0].tensor().to_vector<float>());
  testing::expect_tensor<float>(out.at("output_1"), {5},
                                want.items()[1].tensor().to_vector<float>());
}

TEST(SavedModel, WritesListsAndLoopsInTensorFlowsForm) {
  TempDir d;
  save_loops(d.str());
  pb::SavedModel sm;
  ASSERT_TRUE(sm.ParseFromString(read_bytes(d.str("saved_model.pb"))));
  const auto& lib = sm.meta_graphs(0).graph_def().library();
  std::map<std::string, const pb::FunctionDef*> fns;
  for (const auto& f : lib.function()) fns[f.signature().name()] = &f;
  int reserves = 0, whiles = 0;
  for (const auto& f : lib.function())
    for (const auto& n : f.node_def()) {
      if (n.op() == "TensorListReserve") {
        ++reserves;
        EXPECT_EQ(n.input_size(), 2);  // (element_shape, num_elements)
        EXPECT_EQ(n.attr().at("shape_type").type(), pb::DT_INT32);
      }
      if (n.op() != "While") continue;
      ++whiles;
      const auto& t = n.attr().at("T").list();
      ASSERT_EQ(t.type_size(), n.input_size());
      EXPECT_EQ(t.type(2), pb::DT_VARIANT);  // the list
      const pb::FunctionDef& body = *fns.at(n.attr().at("body").func().name());
      EXPECT_EQ(body.signature().output_arg_size(), n.input_size());  // captures pass through
      EXPECT_EQ(body.signature().input_arg(2).type(), pb::DT_VARIANT);
      EXPECT_EQ(n.attr().at(saved_model::detail::kKilnPassedAttr).i(), n.input_size() - 3);
    }
  EXPECT_EQ(reserves, 1);
  EXPECT_EQ(whiles, 1);
  auto out = saved_model::load(d.str())->signature("serving_default")({{"n", Tensor(4)}});
  testing::expect_tensor<float>(out.at("output_1"), {4}, {2, 3, 6, 12});
}

TEST(SavedModelHostile, LoopsPassingCapturesThrough) {
  auto edit = [](const std::string& dir, int64_t passed) {
    pb::SavedModel sm;
    ASSERT_TRUE(sm.ParseFromString(read_bytes(dir + "/saved_model.pb")));
    auto* lib = sm.mutable_meta_graphs(0)->mutable_graph_def()->mutable_library();
    for (auto& f : *lib->mutable_function())
      for (auto& n : *f.mutable_node_def())
        if (n.op() == "While")
          (*n.mutable_attr())[saved_model::detail::kKilnPassedAttr].set_i(passed);
    write_bytes(dir + "/saved_model.pb", sm.SerializeAsString());
  };
  for (int64_t passed : {int64_t{-1}, int64_t{2}, int64_t{99}}) {
    TempDir d;
    save_loops(d.str());
    edit(d.str(), passed);
    expect_error([&] { saved_model::load(d.str()); }, Code::kInvalidArgument, {"through"});
  }
}

TEST(SavedModel, RoundTripsStringsBoundArgumentsAndJit) {
  TempDir d;
  FunctionOptions o;
  o.name = "greet";
  o.arg_names = {"s", "times"};
  Function f(
      [](const std::vector<Value>& a) {
        Tensor s = a[0].tensor();
        for (int64_t i = 1; i < a[1].as_int(); ++i) s = string_join({s, Tensor("!")});
        return Value::list({Value(s), Value(string_length(s)), Value()});
      },
      o);
  auto cf = f.get_concrete_function({ArgSpec{DType::kString, Shape{2}, "s"}, Value(3)});
  FunctionOptions oj;
  oj.name = "square";
  oj.jit_compile = true;
  Function g([](const std::vector<Value>& a) { return Value(a[0].tensor() * a[0].tensor() + 1.f); },
             oj);
  auto jf = trace(g, {ArgSpec{DType::kFloat32, Shape{-1}, "x"}});
  Exporter e;
  e.add_child(Exporter::kRoot, "greet", e.add_function({cf}));
  e.add_child(Exporter::kRoot, "square", e.add_function({jf}));
  e.save(d.str());
  auto sm = saved_model::load(d.str());
  EXPECT_TRUE(sm->signatures().empty());
  std::shared_ptr<const ConcreteFunction> lg, ls;
  for (const auto& [n, c] : sm->objects()[0].children) {
    if (n == "greet") lg = sm->objects()[static_cast<size_t>(c)].functions.at(0);
    if (n == "square") ls = sm->objects()[static_cast<size_t>(c)].functions.at(0);
  }
  ASSERT_TRUE(lg && ls);
  Tensor words = Tensor::from_vector<std::string>({"a", "bc"}, {2});
  Value r = (*lg)({Value(words), Value(3)});
  testing::expect_tensor<std::string>(r.items()[0].tensor(), {2}, {"a!!", "bc!!"});
  testing::expect_tensor<int32_t>(r.items()[1].tensor(), {2}, {3, 4});
  EXPECT_TRUE(r.items()[2].is_none());
  // A bound argument keeps its traced value.
  expect_error([&] { (*lg)({Value(words), Value(2)}); }, Code::kInvalidArgument, {"times"});
  EXPECT_TRUE(ls->jit_compile());
  testing::expect_tensor<float>((*ls)({Value(Tensor::from_vector<float>({1, 2}, {2}))}).tensor(),
                                {2}, {2, 5});
}

// ---- damaged and hostile exports ----

// A small export to damage: Dense's signature.
struct Saved {
  TempDir d;
  Saved() { save_dense(d.str()); }
  std::string pb_path() const { return d.str("saved_model.pb"); }
  // Rewrites saved_model.pb through `edit`.
  template <typename F>
  void edit(F&& f) const {
    pb::SavedModel sm;
    ASSERT_TRUE(sm.ParseFromString(read_bytes(pb_path())));
    f(sm);
    write_bytes(pb_path(), sm.SerializeAsString());
  }
  // The function the signature calls.
  static pb::FunctionDef& fn(pb::SavedModel& sm) {
    auto* lib = sm.mutable_meta_graphs(0)->mutable_graph_def()->mutable_library();
    for (auto& f : *lib->mutable_function())
      if (f.signature().name().rfind("__inference_", 0) == 0) return f;
    throw InternalError("no function");
  }
  // The concrete function the signature calls (its wrapper returning a dict).
  template <typename Map>
  static pb::SavedConcreteFunction& signature_cf(Map& cfs) {
    for (auto& [name, cf] : cfs)
      if (name.find("signature_wrapper") != std::string::npos) return cf;
    throw InternalError("no signature function");
  }
  static pb::NodeDef& node(pb::SavedModel& sm, const std::string& op) {
    for (auto& n : *fn(sm).mutable_node_def())
      if (n.op() == op) return n;
    throw InternalError("no node " + op);
  }
  // A float32 Const node "c" of `n` elements holding `bytes`.
  static void add_const(pb::SavedModel& sm, int64_t n, const std::string& bytes) {
    auto& c = *fn(sm).add_node_def();
    c.set_name("c");
    c.set_op("Const");
    auto* t = (*c.mutable_attr())["value"].mutable_tensor();
    t->set_dtype(pb::DT_FLOAT);
    t->mutable_tensor_shape()->add_dim()->set_size(n);
    t->set_tensor_content(bytes);
  }
  void expect(Code code, std::initializer_list<std::string> fragments) const {
    expect_error([&] { saved_model::load(d.str()); }, code, fragments);
  }
};

TEST(SavedModelHostile, MissingOrUnparsableFiles) {
  expect_error([] { saved_model::load("/nonexistent/kiln"); }, Code::kNotFound, {"saved_model.pb"});
  Saved s;
  const std::string bytes = read_bytes(s.pb_path());
  write_bytes(s.pb_path(), bytes.substr(0, bytes.size() / 2));
  s.expect(Code::kDataLoss, {"saved_model.pb", "truncated or corrupt"});
  write_bytes(s.pb_path(), std::string(100, '\xff'));
  s.expect(Code::kDataLoss, {"saved_model.pb"});
}

TEST(SavedModelHostile, FormatVersions) {
  Saved s;
  s.edit([](pb::SavedModel& sm) { sm.set_kiln_format_version(99); });
  s.expect(Code::kInvalidArgument, {"format 99 is newer"});
  // Without kiln's version the file is TensorFlow's: its functions are
  // imported op by op (kiln's exports use TensorFlow's ops, so this one loads).
  s.edit([](pb::SavedModel& sm) { sm.set_kiln_format_version(0); });
  EXPECT_NO_THROW(saved_model::load(s.d.str()));
  s.edit([](pb::SavedModel& sm) {
    sm.set_kiln_format_version(1);
    sm.set_saved_model_schema_version(7);
  });
  s.expect(Code::kInvalidArgument, {"schema version 7"});
}

TEST(SavedModelHostile, VariableFiles) {
  const std::string data_file = "variables/variables.data-00000-of-00001";
  {
    Saved s;
    std::string data = read_bytes(s.d.str(data_file));
    data[5] ^= 0x40;
    write_bytes(s.d.str(data_file), data);
    s.expect(Code::kDataLoss, {"fails its checksum"});
  }
  {
    Saved s;
    std::string data = read_bytes(s.d.str(data_file));
    write_bytes(s.d.str(data_file), data.substr(0, data.size() - 4));
    s.expect(Code::kDataLoss, {data_file, "past the end"});
  }
  {
    Saved s;
    fs::remove(s.d.str("variables/variables.index"));
    s.expect(Code::kNotFound, {"variables/variables.index"});
  }
  {
    Saved s;
    write_bytes(s.d.str("variables/variables.index"), "\x08\x01\x1a\x05garbage");
    s.expect(Code::kDataLoss, {"variables.index", "not a table file"});
  }
}

TEST(SavedModelHostile, EarlierKilnVariableFiles) {
  // Exports of earlier kilns (tests/fuzz/base is one) still load, and their
  // damaged files are still reported.
  const fs::path base = fs::path(KILN_SOURCE_DIR) / "tests/fuzz/base";
  ASSERT_TRUE(fs::exists(base / "variables/kiln_variables.index"));
  EXPECT_NO_THROW(saved_model::load(base.string()));
  TempDir d;
  fs::copy(base, d.path, fs::copy_options::recursive);
  write_bytes(d.str("variables/kiln_variables.index"), "\x08\x01\x1a\x05garbage");
  expect_error([&] { saved_model::load(d.str()); }, Code::kDataLoss, {"kiln_variables.index"});
}

TEST(SavedModelHostile, GraphContents) {
  struct Case {
    const char* what;
    std::function<void(pb::SavedModel&)> edit;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"unknown op",
       [](pb::SavedModel& sm) { Saved::node(sm, "BatchMatMulV2").set_op("RunShell"); },
       {"unknown op 'RunShell'"}},
      {"a compiled kernel (names code in the loading process)",
       [](pb::SavedModel& sm) { Saved::node(sm, "BatchMatMulV2").set_op("_JitKernel"); },
       {"op '_JitKernel' is made by kiln's optimizer"}},
      {"a fused op",
       [](pb::SavedModel& sm) { Saved::node(sm, "BatchMatMulV2").set_op("FusedElementwise"); },
       {"op 'FusedElementwise' is made by kiln's optimizer"}},
      {"placeholder node",
       [](pb::SavedModel& sm) { Saved::node(sm, "BatchMatMulV2").set_op("Placeholder"); },
       {"unknown op 'Placeholder'"}},
      {"missing input",
       [](pb::SavedModel& sm) { Saved::node(sm, "BatchMatMulV2").set_input(0, "nowhere:0"); },
       {"names no earlier node"}},
      {"bad output index",
       [](pb::SavedModel& sm) { Saved::node(sm, "BatchMatMulV2").set_input(0, "x:7"); },
       {"names output 7"}},
      {"malformed input",
       [](pb::SavedModel& sm) { Saved::node(sm, "BatchMatMulV2").set_input(0, "x:-1"); },
       {"malformed input"}},
      {"wrong input count",
       [](pb::SavedModel& sm) { Saved::node(sm, "BatchMatMulV2").mutable_input()->RemoveLast(); },
       {"BatchMatMulV2", "expected 2 inputs"}},
      {"shapes that do not match",
       [](pb::SavedModel& sm) {
         auto& n = Saved::node(sm, "BatchMatMulV2");
         n.set_input(1, n.input(0));
       },
       {"incompatible shapes"}},
      {"unknown attribute",
       [](pb::SavedModel& sm) {
         (*Saved::node(sm, "BatchMatMulV2").mutable_attr())["evil"].set_i(1);
       },
       {"unknown attribute 'evil'"}},
      {"attribute of the wrong type",
       [](pb::SavedModel& sm) {
         (*Saved::node(sm, "BatchMatMulV2").mutable_attr())["adj_x"].set_s("yes");
       },
       {"'adj_x' has the wrong type"}},
      {"repeated node name",
       [](pb::SavedModel& sm) {
         Saved::node(sm, "Tanh").set_name(Saved::node(sm, "BatchMatMulV2").name());
       },
       {"repeated node name"}},
      {"calls itself",
       [](pb::SavedModel& sm) {
         auto& n = Saved::node(sm, "Tanh");
         n.set_op("PartitionedCall");
         n.mutable_attr()->erase("T");
         (*n.mutable_attr())["f"].mutable_func()->set_name(Saved::fn(sm).signature().name());
       },
       {"calls itself"}},
      {"a call of no function",
       [](pb::SavedModel& sm) {
         auto& n = Saved::node(sm, "Tanh");
         n.set_op("PartitionedCall");
         n.mutable_attr()->erase("T");
         (*n.mutable_attr())["f"].mutable_func()->set_name("missing");
       },
       {"no function named 'missing'"}},
      {"constant of the wrong size",
       [](pb::SavedModel& sm) { Saved::add_const(sm, 1000000, "abcd"); },
       {"needs 4000000 bytes, the file has 4"}},
      {"huge dimension",
       [](pb::SavedModel& sm) { Saved::add_const(sm, int64_t{1} << 62, ""); },
       {"dimension", "out of range"}},
      {"bad dtype",
       [](pb::SavedModel& sm) {
         (*Saved::node(sm, "ReadVariableOp").mutable_attr())["dtype"].set_type(
             static_cast<pb::DataType>(77));
       },
       {"DataType 77"}},
      {"output naming nothing",
       [](pb::SavedModel& sm) { (*Saved::fn(sm).mutable_ret())["output_0"] = "ghost:0"; },
       {"output 'output_0'"}},
      {"variable bound to a non-variable",
       [](pb::SavedModel& sm) {
         auto& cfs =
             *sm.mutable_meta_graphs(0)->mutable_object_graph_def()->mutable_concrete_functions();
         for (auto& [name, cf] : cfs) cf.set_bound_inputs(0, 0);
       },
       {"not a variable"}},
      {"child out of range",
       [](pb::SavedModel& sm) {
         auto* c = sm.mutable_meta_graphs(0)
                       ->mutable_object_graph_def()
                       ->mutable_nodes(0)
                       ->add_children();
         c->set_node_id(1000);
         c->set_local_name("x");
       },
       {"bad child"}},
      {"signature naming no call",
       [](pb::SavedModel& sm) {
         auto& sd = (*sm.mutable_meta_graphs(0)->mutable_signature_def())["serving_default"];
         (*sd.mutable_outputs())["y"].set_name("serving_default_x:0");
       },
       {"do not name a function call"}},
      {"variable argument naming no variable",
       [](pb::SavedModel& sm) {
         auto& cfs =
             *sm.mutable_meta_graphs(0)->mutable_object_graph_def()->mutable_concrete_functions();
         auto* arg = Saved::signature_cf(cfs)
                         .mutable_canonicalized_input_signature()
                         ->mutable_tuple_value()
                         ->mutable_values(0)
                         ->mutable_tuple_value()
                         ->mutable_values(0);
         auto* t = arg->mutable_type_spec_value();
         t->set_type_spec_class(pb::TypeSpecProto::VARIABLE_SPEC);
         auto* st = t->mutable_type_state()->mutable_tuple_value();
         for (int i = 0; i < 3; ++i) st->add_values()->set_bool_value(true);
         st->add_values()->set_int64_value(0);  // the root object
       },
       {"names object 0, which is not a variable"}},
      {"deep structure",
       [](pb::SavedModel& sm) {
         auto& cfs =
             *sm.mutable_meta_graphs(0)->mutable_object_graph_def()->mutable_concrete_functions();
         pb::StructuredValue* v = Saved::signature_cf(cfs).mutable_output_signature();
         for (int i = 0; i < 40; ++i) v = v->mutable_list_value()->add_values();
       },
       {"deeper than"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Saved s;
    s.edit(c.edit);
    expect_error([&] { saved_model::load(s.d.str()); }, Code::kInvalidArgument, {});
    try {
      saved_model::load(s.d.str());
    } catch (const Error& e) {
      for (const auto& f : c.fragments)
        EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// kiln-run lists the signatures and runs one on .npy inputs.
TEST(KilnRun, ListsAndRunsASignature) {
  Saved s;
  const std::string bin = KILN_RUN_BIN;
  const std::string out = s.d.str("out.txt");
  auto run = [&](const std::string& args) {
    return std::system((bin + " " + args + " > " + out + " 2>&1").c_str());
  };
  ASSERT_EQ(run(s.d.str()), 0);
  EXPECT_NE(read_bytes(out).find("serving_default(x: float32(None, 3)) -> (y: float32(None, 2))"),
            std::string::npos)
      << read_bytes(out);
  npy::write(s.d.str("x.npy"), input23());
  fs::create_directory(s.d.str("res"));
  ASSERT_EQ(run(str_cat(s.d.str(), " --signature serving_default --input x=", s.d.str("x.npy"),
                        " --output-dir ", s.d.str("res"))),
            0)
      << read_bytes(out);
  Dense m;
  Tensor want = m.f({input23()}).items()[0].tensor();
  Tensor got = npy::read(s.d.str("res/y.npy"));
  testing::expect_tensor<float>(got, {2, 2}, want.to_vector<float>());
  EXPECT_NE(run(str_cat(s.d.str(), " --signature nope")), 0);
  EXPECT_NE(read_bytes(out).find("no signature 'nope'"), std::string::npos) << read_bytes(out);
  EXPECT_NE(run(str_cat(s.d.str(), " --signature serving_default --input x=", s.d.str("out.txt"))),
            0);
  EXPECT_NE(read_bytes(out).find("not a .npy file"), std::string::npos) << read_bytes(out);
  EXPECT_NE(run("--bogus"), 0);
}

}  // namespace
}  // namespace kiln
