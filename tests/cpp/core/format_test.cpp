#include "test_util.h"

namespace kiln {
namespace {

struct FormatCase {
  Tensor t;
  std::string want;
};

TEST(Format, MatchesTensorFlowPrinting) {
  const FormatCase cases[] = {
      {Tensor(2), "2"},
      {Tensor(2.2f), "2.2"},
      {Tensor(1.0f), "1"},
      {Tensor("aa"), "b'aa'"},
      {Tensor("it's"), "b\"it's\""},
      {Tensor(std::string("a\nb\x01")), "b'a\\nb\\x01'"},
      {Tensor({4, 1}), "[4 1]"},
      {Tensor({{1, 2}, {3, 4}}), "[[1 2]\n [3 4]]"},
      {Tensor({{{1, 2}}, {{3, 4}}}), "[[[1 2]]\n\n [[3 4]]]"},
      {Tensor({true, false}), "[1 0]"},
      {Tensor({0.246533215f, 0.15038693f}), "[0.246533215 0.15038693]"},
      {Tensor({1.5, 0.1}), "[1.5 0.1]"},
      {Tensor({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}), "[1 2 3 ... 8 9 10]"},
      {Tensor({1, 2, 3, 4, 5, 6}), "[1 2 3 4 5 6]"},
  };
  for (const auto& c : cases) EXPECT_EQ(c.t.to_string(), c.want);
}

TEST(Format, SummarizesOuterAxes) {
  std::vector<int32_t> v(8 * 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
  Tensor t = Tensor::from_vector(v, {8, 2});
  EXPECT_EQ(t.to_string(), "[[0 1]\n [2 3]\n [4 5]\n ...\n [10 11]\n [12 13]\n [14 15]]");
  PrintOptions all;
  all.summarize = -1;
  EXPECT_EQ(format_tensor(Tensor({1, 2, 3, 4, 5, 6, 7}), all), "[1 2 3 4 5 6 7]");
}

TEST(Format, NonFiniteFloats) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor t = Tensor::from_vector<float>({inf, -inf, std::nanf("")}, {3});
  EXPECT_EQ(t.to_string(), "[inf -inf nan]");
}

TEST(Format, DebugStringLikeTfTensorStr) {
  EXPECT_EQ(Tensor({4, 1}).debug_string(), "kiln.Tensor([4 1], shape=(2,), dtype=int32)");
  EXPECT_EQ(Tensor({{1, 2}, {3, 4}}).debug_string(),
            "kiln.Tensor(\n[[1 2]\n [3 4]], shape=(2, 2), dtype=int32)");
  EXPECT_EQ(Tensor("aa").debug_string(), "kiln.Tensor(b'aa', shape=(), dtype=string)");
}

}  // namespace
}  // namespace kiln
