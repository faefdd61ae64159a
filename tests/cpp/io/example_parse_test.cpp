// tf.train.Example parsing (src/io/example_wire.cpp and the _ParseExample*
// kernels): wire-format rules (packed and unpacked lists, last map entry,
// oneof switches), the ops eagerly, and damaged bytes.
#include <gtest/gtest.h>

#include <random>

#include "io/example_wire.h"
#include "kiln/kiln.h"

namespace kiln::io {
namespace {

std::string varint(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s += static_cast<char>(v | 0x80);
  return s + static_cast<char>(v);
}
std::string len_field(int field, const std::string& body) {
  return varint(static_cast<uint64_t>(field) << 3 | 2) + varint(body.size()) + body;
}
// An Example with one feature: `list` is the Feature's body.
std::string example(const std::string& key, const std::string& feature) {
  return len_field(1, len_field(1, len_field(1, key) + len_field(2, feature)));
}
std::string int64_list(const std::vector<int64_t>& v, bool packed) {
  std::string body;
  if (packed) {
    std::string p;
    for (int64_t x : v) p += varint(static_cast<uint64_t>(x));
    body = len_field(1, p);
  } else {
    for (int64_t x : v) body += varint(1 << 3 | 0) + varint(static_cast<uint64_t>(x));
  }
  return len_field(3, body);
}

TEST(ExampleWire, PackedUnpackedAndMergeRules) {
  FeatureView f;
  std::string err;
  std::vector<int64_t> got;
  for (bool packed : {true, false}) {
    got.clear();
    const std::string bytes = example("k", int64_list({1, -2, 300}, packed));  // f views it
    ASSERT_TRUE(find_feature(bytes, "k", &f, &err));
    ASSERT_EQ(f.kind, FeatureKind::kInt64);
    ASSERT_TRUE(append_int64s(f, &got));
    EXPECT_EQ(got, (std::vector<int64_t>{1, -2, 300}));
  }
  // The last entry of a key wins; a later list of another kind replaces the first.
  const std::string two = example("k", int64_list({1}, true)) + example("k", int64_list({2}, true));
  ASSERT_TRUE(find_feature(two, "k", &f, &err));
  got.clear();
  ASSERT_TRUE(append_int64s(f, &got));
  EXPECT_EQ(got, std::vector<int64_t>{2});
  const std::string floats = len_field(2, len_field(1, std::string("\0\0\x80\x3f", 4)));
  const std::string switched = example("k", int64_list({1}, true) + floats);
  ASSERT_TRUE(find_feature(switched, "k", &f, &err));
  EXPECT_EQ(f.kind, FeatureKind::kFloat);
  std::vector<float> fl;
  ASSERT_TRUE(append_floats(f, &fl));
  EXPECT_EQ(fl, std::vector<float>{1.0f});
  const std::string other = example("other", floats);
  ASSERT_TRUE(find_feature(other, "k", &f, &err));
  EXPECT_FALSE(f.found);
  EXPECT_TRUE(find_feature("", "k", &f, &err));
  // An empty packed list (the fuzzer's case: no values, nothing copied).
  ASSERT_TRUE(find_feature(example("k", len_field(2, len_field(1, ""))), "k", &f, &err));
  fl.clear();
  ASSERT_TRUE(append_floats(f, &fl));
  EXPECT_TRUE(fl.empty());
}

TEST(ExampleWire, DamagedBytesAreErrors) {
  FeatureView f;
  std::string err;
  EXPECT_FALSE(find_feature("\xff\xff", "k", &f, &err));
  EXPECT_FALSE(find_feature(std::string("\x0a\x05", 2), "k", &f, &err));
  const std::string good =
      example("k", int64_list({1, 2, 3}, true)) + example("s", len_field(1, len_field(1, "abc")));
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    std::string b = good;
    b[rng() % b.size()] = static_cast<char>(rng());
    b.resize(rng() % (b.size() + 1));
    std::vector<int64_t> v;
    std::vector<std::string_view> s;
    if (find_feature(b, "k", &f, &err)) (void)append_int64s(f, &v);
    if (find_feature(b, "s", &f, &err)) (void)append_bytes(f, &s);
  }
}

// A SequenceExample with context `ctx` (an Example's body) and one feature
// list: `steps` are the Feature bodies of its steps.
std::string sequence_example(const std::string& ctx, const std::string& key,
                             const std::vector<std::string>& steps) {
  std::string list;
  for (const std::string& s : steps) list += len_field(1, s);
  return ctx + len_field(2, len_field(1, len_field(1, key) + len_field(2, list)));
}

TEST(ExampleWire, FeatureListsOfSequenceExamples) {
  const std::string ctx = example("len", int64_list({2}, true));
  const std::string seq =
      sequence_example(ctx, "t", {int64_list({1, 2}, true), int64_list({3}, false)});
  FeatureListView list;
  ASSERT_TRUE(find_feature_list(seq, "t", &list));
  ASSERT_TRUE(list.found);
  ASSERT_EQ(list.steps.size(), 2u);
  std::vector<int64_t> got;
  for (const FeatureView& step : list.steps) ASSERT_TRUE(append_int64s(step, &got));
  EXPECT_EQ(got, (std::vector<int64_t>{1, 2, 3}));
  // The context reads as an Example; other keys are absent; the last entry wins.
  FeatureView f;
  std::string err;
  ASSERT_TRUE(find_feature(seq, "len", &f, &err));
  EXPECT_EQ(f.kind, FeatureKind::kInt64);
  ASSERT_TRUE(find_feature_list(seq, "other", &list));
  EXPECT_FALSE(list.found);
  const std::string twice = seq + sequence_example("", "t", {int64_list({9}, true)});
  ASSERT_TRUE(find_feature_list(twice, "t", &list));
  ASSERT_EQ(list.steps.size(), 1u);
  // Damaged bytes: an error or a list, never a crash.
  EXPECT_FALSE(find_feature_list(std::string("\x12\x05\x0a\x03\x0a\x01", 6), "t", &list));
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string b = seq;
    b[rng() % b.size()] = static_cast<char>(rng());
    b.resize(rng() % (b.size() + 1));
    std::vector<int64_t> v;
    if (find_feature_list(b, "t", &list))
      for (const FeatureView& step : list.steps) (void)append_int64s(step, &v);
  }
}

TEST(ExampleOps, DenseAndVarLen) {
  const Tensor serialized = Tensor::from_vector<std::string>(
      {example("k", int64_list({1, 2}, true)), example("k", int64_list({3, 4}, false))}, Shape{2});
  const Tensor no_names = Tensor::empty(DType::kString, Shape{0});
  const std::vector<Tensor> dense_in = {serialized, no_names,
                                        Tensor::empty(DType::kInt64, Shape{0})};
  const std::vector<Tensor> varlen_in = {serialized, no_names};
  auto dense_attrs = [](const char* key) {
    return Attrs{std::string(key), DType::kInt64, std::vector<int64_t>{2}, false};
  };
  std::vector<Tensor> out = call_op(OpId::ParseExampleDense, dense_in, dense_attrs("k"));
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(out[0].to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
  out = call_op(OpId::ParseExampleVarLen, varlen_in, {std::string("k"), DType::kInt64});
  EXPECT_EQ(out[0].to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_THROW(call_op(OpId::ParseExampleDense, dense_in, dense_attrs("missing")),
               InvalidArgumentError);
  EXPECT_THROW(call_op(OpId::ParseExampleVarLen, varlen_in, {std::string("k"), DType::kFloat32}),
               InvalidArgumentError);
}

}  // namespace
}  // namespace kiln::io
