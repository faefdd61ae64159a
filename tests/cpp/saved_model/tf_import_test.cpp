// SavedModels TensorFlow wrote, from C++: the fixture loads and runs (also
// through kiln-run), damaged graphs are clear errors, and the fuzz corpus over
// a TF-written export replays cleanly.
#include <unistd.h>

#include <filesystem>

#include "../../fuzz/fuzz_body.h"
#include "kiln/kiln.h"
#include "kiln/npy.h"
#include "kiln/saved_model.h"
#include "saved_model.pb.h"
#include "test_util.h"

namespace kiln {
namespace {
namespace fs = std::filesystem;
namespace pb = ::kiln::tfproto;
using testing::expect_error;
using testing::read_bytes;
using testing::write_bytes;

const fs::path kModule =
    fs::path(KILN_SOURCE_DIR) / "tests/fixtures/tf_written/saved_models/module";

// A copy of a TF-written export whose saved_model.pb `edit` may change.
struct Copy {
  fs::path dir;
  explicit Copy(const fs::path& from = kModule) {
    char tmpl[] = "/tmp/kiln_tfsm_XXXXXX";
    dir = ::mkdtemp(tmpl);
    fs::copy(from, dir, fs::copy_options::recursive);
  }
  ~Copy() { fs::remove_all(dir); }
  template <typename F>
  void edit(F&& f) const {
    pb::SavedModel sm;
    ASSERT_TRUE(sm.ParseFromString(read_bytes((dir / "saved_model.pb").string())));
    f(sm);
    write_bytes((dir / "saved_model.pb").string(), sm.SerializeAsString());
  }
  std::string str() const { return dir.string(); }
};

pb::FunctionDef& function(pb::SavedModel& sm, const std::string& prefix) {
  for (auto& f :
       *sm.mutable_meta_graphs(0)->mutable_graph_def()->mutable_library()->mutable_function())
    if (f.signature().name().rfind(prefix, 0) == 0) return f;
  throw InternalError("no function " + prefix);
}

pb::NodeDef& node(pb::FunctionDef& f, const std::string& op) {
  for (auto& n : *f.mutable_node_def())
    if (n.op() == op) return n;
  throw InternalError("no node " + op);
}

const Tensor kX = Tensor::from_vector<float>({-2, -1, 0, 1, 2, 3}, {2, 3});

TEST(TfSavedModel, LoadsAndRunsWithItsVariables) {
  auto sm = saved_model::load(kModule.string());
  const auto& sig = sm->signature("serving_default");
  const auto out = sig({{"x", kX}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.at("y").shape(), Shape({2, 2}));
  EXPECT_EQ(out.at("total").shape(), Shape({2}));
  bool counted = false;
  for (const Variable& v : sm->variables())
    if (v.dtype() == DType::kInt64) counted = v.read_value().item<int64_t>() == 1;
  EXPECT_TRUE(counted);  // the function's assign_add ran
}

TEST(TfSavedModel, KilnRunServesIt) {
  Copy c;
  npy::write(c.str() + "/x.npy", kX);
  const std::string out = c.str() + "/out.txt";
  const std::string cmd = str_cat(KILN_RUN_BIN, " ", c.str(), " --signature serving_default",
                                  " --input x=", c.str(), "/x.npy > ", out, " 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_bytes(out);
}

TEST(TfSavedModel, MissingOpsAreListedTogether) {
  Copy c;
  c.edit([](pb::SavedModel& sm) {
    node(function(sm, "__inference___call__"), "MatMul").set_op("NotAnOpA");
    node(function(sm, "__inference___call__"), "Sum").set_op("NotAnOpB");
  });
  expect_error([&] { saved_model::load(c.str()); }, Code::kUnimplemented,
               {"cannot import 2 of TensorFlow's ops", "NotAnOpA: function", "NotAnOpB: function"});
}

TEST(TfSavedModel, DamagedFunctionsAreClearErrors) {
  struct Case {
    const char* what;
    std::function<void(pb::FunctionDef&)> edit;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"a missing input", [](pb::FunctionDef& f) { node(f, "Relu").set_input(0, "nosuch:z:0"); },
       "neither a node nor an argument"},
      {"a cycle",
       [](pb::FunctionDef& f) {
         node(f, "Relu").set_input(0, "cond/Identity:output:0");
         node(f, "Identity").set_input(0, "cond/Relu:activations:0");
       },
       "cycle"},
      {"a malformed name",
       [](pb::FunctionDef& f) { node(f, "Relu").set_input(0, "cond_relu_add:out:zz"); },
       "not a tensor name"},
      {"an output arg out of range",
       [](pb::FunctionDef& f) { node(f, "Identity").set_input(0, "cond/Relu:activations:7"); },
       "has 1 outputs"},
      {"two nodes of one name", [](pb::FunctionDef& f) { *f.add_node_def() = f.node_def(0); },
       "two nodes are named"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Copy c;
    c.edit([&](pb::SavedModel& sm) { k.edit(function(sm, "cond_true")); });
    expect_error(
        [&] {
          saved_model::load(c.str())->signature("serving_default")({{"x", kX}});
        },
        Code::kInvalidArgument, {k.fragment});
  }
}

// Asset files must be files of the export's assets/ folder.
TEST(TfSavedModel, AssetPathsStayInsideTheExport) {
  const fs::path assets = kModule.parent_path() / "asset_module";
  {
    Copy c(assets);
    auto sm = saved_model::load(c.str());
    auto out =
        sm->signature("serving_default")({{"words", Tensor::from_vector<std::string>({"w"}, {1})}});
    EXPECT_EQ(out.at("output_0").to_vector<std::string>()[0], "w|red\ngreen\nblue");
  }
  for (const char* name : {"../saved_model.pb", "/etc/hostname", "", "sub/../../x"}) {
    Copy c(assets);
    c.edit([&](pb::SavedModel& sm) {
      sm.mutable_meta_graphs(0)->mutable_asset_file_def(0)->set_filename(name);
    });
    expect_error([&] { saved_model::load(c.str()); }, Code::kInvalidArgument,
                 {"is not a file name inside assets/"});
  }
  {
    Copy c(assets);  // longer than any file name may be: missing, not a filesystem error
    c.edit([&](pb::SavedModel& sm) {
      sm.mutable_meta_graphs(0)->mutable_asset_file_def(0)->set_filename(std::string(5000, 'a'));
    });
    expect_error([&] { saved_model::load(c.str()); }, Code::kInvalidArgument, {"is missing"});
  }
  Copy c(assets);
  c.edit([](pb::SavedModel& sm) {
    for (auto& n : *sm.mutable_meta_graphs(0)->mutable_object_graph_def()->mutable_nodes())
      if (n.has_asset()) n.mutable_asset()->set_asset_file_def_index(7);
  });
  expect_error([&] { saved_model::load(c.str()); }, Code::kInvalidArgument, {"asset file 7"});
}

TEST(TfSavedModel, RecursionIsBounded) {
  Copy c;
  c.edit([](pb::SavedModel& sm) {
    auto& f = function(sm, "cond_true");
    pb::NodeDef* call = f.add_node_def();
    call->set_name("again");
    call->set_op("StatefulPartitionedCall");
    call->add_input("cond_relu_add");
    (*call->mutable_attr())["f"].mutable_func()->set_name(f.signature().name());
    (*f.mutable_ret())[f.signature().output_arg(0).name()] = "again:output:0";
  });
  expect_error([&] { saved_model::load(c.str()); }, Code::kInvalidArgument,
               {"nest deeper than 64"});
}

TEST(TfSavedModel, FuzzCorpusLoadsOrFailsCleanly) {
  Copy c;
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "tests/fuzz/tf_corpus")) {
    const std::string bytes = read_bytes(e.path().string());
    SCOPED_TRACE(e.path().string());
    fuzz::load_one(c.str(), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++n;
  }
  EXPECT_GT(n, 0u);
  EXPECT_NO_THROW(saved_model::load(c.str()));  // each file restored after its input
}

}  // namespace
}  // namespace kiln
