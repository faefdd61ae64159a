// TensorFlow's tensor bundle from C++ (include/kiln/checkpoint.h): round trips,
// files TensorFlow wrote, damaged files, and the fuzz corpus replayed.
#include "kiln/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <functional>

#include "../../fuzz/fuzz_body.h"
#include "kiln/kiln.h"
#include "saved_model/table.h"
#include "tensor_bundle.pb.h"
#include "test_util.h"

namespace kiln {
namespace {
namespace fs = std::filesystem;
using checkpoint::BundleReader;
using checkpoint::BundleWriter;
using testing::expect_error;
using testing::read_bytes;
using testing::write_bytes;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/kiln_ckpt_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str(const std::string& sub) const { return (path / sub).string(); }
};

const std::string kTfDtypes =
    std::string(KILN_SOURCE_DIR) + "/tests/fixtures/tf_written/checkpoints/dtypes/ckpt";

std::string write_sample(const TempDir& d) {
  const std::string prefix = d.str("c");
  BundleWriter w(prefix);
  w.add("f", Tensor::from_vector<float>({1.5f, -2, 3, 4, 5, 6}, {2, 3}));
  w.add("i", Tensor(int64_t{1} << 40));
  const bool flags[] = {true, false};
  w.add("b", Tensor::from_span<bool>(flags, {2}));
  w.add("s", Tensor::from_vector<std::string>({"kiln", "", "x"}, {3}));
  w.add("e", Tensor::empty(DType::kFloat32, {0, 5}));
  w.add_bytes("h", checkpoint::tf_dtype("int16"), {2}, std::string("\x01\x00\xff\xff", 4));
  w.finish();
  return prefix;
}

TEST(Checkpoint, RoundTripsEveryKind) {
  TempDir d;
  const std::string prefix = write_sample(d);
  EXPECT_TRUE(checkpoint::is_bundle(prefix));
  BundleReader r(prefix);
  EXPECT_EQ(r.keys(), (std::vector<std::string>{"b", "e", "f", "h", "i", "s"}));
  const Tensor f = r.read("f");
  EXPECT_EQ(f.shape(), Shape({2, 3}));
  EXPECT_EQ(f.data<float>()[0], 1.5f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.raw_data()) % 64, 0u);  // mapped, aligned
  // Mapped values are fixed: versioned (packings and values kept from
  // variables key on it), never written in place (another read shares them).
  EXPECT_NE(f.buffer()->version(), 0u);
  EXPECT_FALSE(f.buffer()->unique());
  EXPECT_NE(r.read("f").buffer()->version(), f.buffer()->version());
  EXPECT_EQ(r.read("i").item<int64_t>(), int64_t{1} << 40);
  EXPECT_FALSE(r.read("b").data<bool>()[1]);
  EXPECT_EQ(r.read("s").data<std::string>()[0], "kiln");
  EXPECT_EQ(r.read("e").shape(), Shape({0, 5}));
  EXPECT_EQ(r.entry("h").dtype, checkpoint::tf_dtype("int16"));
  EXPECT_EQ(r.bytes("h"), std::string("\x01\x00\xff\xff", 4));
  expect_error([&] { r.read("h"); }, Code::kUnimplemented, {"int16"});
  expect_error([&] { r.read("nope"); }, Code::kNotFound, {"Key nope not found"});
}

TEST(Checkpoint, ReadsWhatTensorFlowWrote) {
  BundleReader r(kTfDtypes);
  const Tensor f = r.read("model/f32/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(f.shape(), Shape({2, 3}));
  EXPECT_EQ(f.data<float>()[5], 1.25f);
  EXPECT_EQ(r.read("model/i64/.ATTRIBUTES/VARIABLE_VALUE").item<int64_t>(), (int64_t{1} << 40) + 3);
  const Tensor s = r.read("model/s/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(s.data<std::string>()[0], "hello");
  EXPECT_EQ(s.data<std::string>()[1], "");
  const auto g =
      checkpoint::decode_object_graph(r.strings(checkpoint::kObjectGraphKey).at(0), "graph");
  ASSERT_GE(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].children.at(0).first, "model");
  bool found = false;
  for (const auto& n : g.nodes)
    for (const auto& a : n.attributes)
      found |= a.checkpoint_key == "model/nested/w/.ATTRIBUTES/VARIABLE_VALUE";
  EXPECT_TRUE(found);
}

TEST(Checkpoint, ObjectGraphRoundTripsAndIsValidated) {
  checkpoint::ObjectGraph g;
  g.nodes.resize(3);
  g.nodes[0].children = {{"v", 1}, {"opt", 2}};
  g.nodes[1].attributes = {{"VARIABLE_VALUE", "v", "v/.ATTRIBUTES/VARIABLE_VALUE"}};
  g.nodes[2].slots = {{1, "m", 1}};
  const auto back = checkpoint::decode_object_graph(checkpoint::encode_object_graph(g), "g");
  EXPECT_EQ(back.nodes[0].children, g.nodes[0].children);
  EXPECT_EQ(back.nodes[1].attributes[0].checkpoint_key, "v/.ATTRIBUTES/VARIABLE_VALUE");
  EXPECT_EQ(back.nodes[2].slots[0].slot_name, "m");
  g.nodes[0].children.push_back({"bad", 9});
  expect_error([&] { checkpoint::decode_object_graph(checkpoint::encode_object_graph(g), "g"); },
               Code::kDataLoss, {"refers to node 9"});
  expect_error([&] { checkpoint::decode_object_graph("\xff\xff", "g"); }, Code::kDataLoss);
}

TEST(Checkpoint, WriterRefusesBadInput) {
  TempDir d;
  BundleWriter w(d.str("w"));
  w.add("a", Tensor(1.0f));
  expect_error([&] { w.add("a", Tensor(2.0f)); }, Code::kInvalidArgument, {"duplicate key"});
  expect_error([&] { w.add("", Tensor(2.0f)); }, Code::kInvalidArgument, {"must not be empty"});
  expect_error([&] { w.add_bytes("x", 1, {3}, "abc"); }, Code::kInvalidArgument,
               {"3 bytes for 3 elements"});
  expect_error([&] { w.add_strings("y", {2}, {"one"}); }, Code::kInvalidArgument, {"1 strings"});
  w.abandon();
  EXPECT_TRUE(fs::is_empty(d.path));  // the temporary data file is gone
}

TEST(Checkpoint, DamagedFilesAreClearErrors) {
  TempDir d;
  const std::string prefix = write_sample(d);
  const std::string index = checkpoint::index_path(prefix);
  const std::string data = checkpoint::data_path(prefix, 0, 1);
  const std::string good_index = read_bytes(index), good_data = read_bytes(data);
  auto with = [&](const std::string& path, std::string bytes, auto check) {
    write_bytes(path, bytes);
    check();
    write_bytes(index, good_index);
    write_bytes(data, good_data);
  };
  auto open = [&] { BundleReader r(prefix); };
  with(index, good_index.substr(0, 40),
       [&] { expect_error(open, Code::kDataLoss, {"not a table file"}); });
  std::string flipped = good_index;
  flipped[10] ^= 0x20;
  with(index, flipped, [&] { expect_error(open, Code::kDataLoss, {"checksum"}); });
  with(data, good_data.substr(0, good_data.size() - 1),
       [&] { expect_error(open, Code::kDataLoss, {"past the end"}); });
  std::string bad_data = good_data;
  bad_data[1] ^= 1;  // inside "f" (the first value, at offset 0)
  with(data, bad_data, [&] {
    BundleReader r(prefix);
    expect_error([&] { r.read("f"); }, Code::kDataLoss, {"fails its checksum"});
    EXPECT_EQ(r.read("i").item<int64_t>(), int64_t{1} << 40);  // the others still read
  });
  fs::remove(data);
  expect_error(open, Code::kNotFound, {"data-00000-of-00001"});
  fs::remove(index);
  expect_error(open, Code::kNotFound, {".index"});
  EXPECT_FALSE(checkpoint::is_bundle(prefix));
}

const std::string kTfPartitioned =
    std::string(KILN_SOURCE_DIR) + "/tests/fixtures/tf_written/checkpoints/partitioned/ckpt";

// Partitioned variables TensorFlow saved in slices read whole; the slices'
// own keys are not listed.
TEST(Checkpoint, ReadsTensorsTensorFlowSavedInSlices) {
  BundleReader r(kTfPartitioned);
  EXPECT_EQ(r.keys(), (std::vector<std::string>{"emb", "plain", "w"}));
  EXPECT_TRUE(r.entry("emb").partitioned);
  std::vector<float> emb(600), w(30);
  for (int i = 0; i < 600; ++i) emb[i] = static_cast<float>(i);
  for (int i = 0; i < 30; ++i) w[i] = 0.5f * static_cast<float>(i);
  testing::expect_tensor<float>(r.read("emb"), {200, 3}, emb);
  testing::expect_tensor<float>(r.read("w"), {5, 6}, w);
  testing::expect_tensor<float>(r.read("emb"), {200, 3}, emb);  // joined once, kept
  testing::expect_tensor<float>(r.read("plain"), {2}, {1, 2});
}

TEST(Checkpoint, DamagedSlicesAreClearErrors) {
  const std::string index = read_bytes(checkpoint::index_path(kTfPartitioned));
  const auto table = saved_model::detail::read_table(index, "t");
  struct Case {
    const char* fragment;
    std::function<void(tfproto::BundleEntryProto&)> edit_emb;  // the full tensor's entry
    bool drop_a_slice_entry = false;
  };
  const std::vector<Case> cases = {
      {"overlap", [](auto& e) { e.mutable_slices(1)->mutable_extent(0)->set_start(60); }},
      {"of dimension 0", [](auto& e) { e.mutable_slices(2)->mutable_extent(0)->set_length(99); }},
      {"hold 402 of its 600", [](auto& e) { e.mutable_slices()->RemoveLast(); }},
      {"a slice of rank",
       [](auto& e) {
         e.mutable_slices(0)->add_extent();
         e.mutable_slices(0)->add_extent();
       }},
      {"is missing", [](auto&) {}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fragment);
    TempDir d;
    const std::string prefix = d.str("ckpt");
    fs::copy_file(checkpoint::data_path(kTfPartitioned, 0, 1), checkpoint::data_path(prefix, 0, 1));
    saved_model::detail::TableBuilder t;
    bool dropped = false;
    for (const auto& [key, value] : table) {
      if (c.drop_a_slice_entry && !dropped && !key.empty() && key[0] == '\0') {
        dropped = true;
        continue;
      }
      if (key != "emb") {
        t.add(key, value);
        continue;
      }
      tfproto::BundleEntryProto e;
      ASSERT_TRUE(e.ParseFromString(value));
      c.edit_emb(e);
      t.add(key, e.SerializeAsString());
    }
    write_bytes(checkpoint::index_path(prefix), t.finish());
    expect_error([&] { BundleReader r(prefix); }, Code::kDataLoss, {c.fragment});
  }
}

TEST(Checkpoint, TableSpansBlocksAndChecksKeyOrder) {
  saved_model::detail::TableBuilder t;
  for (int i = 0; i < 20000; ++i) t.add(str_cat("key", 100000 + i), std::string(30, 'v'));
  const std::string file = t.finish();
  EXPECT_GT(file.size(), 2u * 262144);
  const auto entries = saved_model::detail::read_table(file, "t");
  ASSERT_EQ(entries.size(), 20000u);
  EXPECT_EQ(entries[12345].first, "key112345");
  saved_model::detail::TableBuilder bad;
  bad.add("b", "");
  expect_error([&] { bad.add("a", ""); }, Code::kInvalidArgument, {"must increase"});
}

TEST(Checkpoint, FuzzCorpusLoadsOrFailsCleanly) {
  const fs::path src = KILN_SOURCE_DIR;
  TempDir d;
  const std::string prefix = d.str("ckpt");
  fs::copy_file(kTfDtypes + ".index", checkpoint::index_path(prefix));
  fs::copy_file(checkpoint::data_path(kTfDtypes, 0, 1), checkpoint::data_path(prefix, 0, 1));
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(src / "tests/fuzz/bundle_corpus")) {
    const std::string bytes = read_bytes(e.path().string());
    SCOPED_TRACE(e.path().string());
    fuzz::load_bundle_one(prefix, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++n;
  }
  EXPECT_GT(n, 0u);
  EXPECT_NO_THROW(BundleReader r(prefix));  // restored after each input
}

}  // namespace
}  // namespace kiln
