// print (PrintV2): formatting, output streams, errors.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

// Prints through a registered ostringstream and returns what was written.
std::string printed(const std::vector<PrintArg>& args, PrintSettings settings = {}) {
  std::ostringstream os;
  print(args, os, settings);
  unregister_print_stream(os);
  return os.str();
}

TEST(Print, FormatsLikeTfPrint) {
  EXPECT_EQ(printed({"x =", Tensor({1, 2})}), "x = [1 2]\n");
  EXPECT_EQ(printed({Tensor(3.5f)}), "3.5\n");
  EXPECT_EQ(printed({"a", "b", "c"}), "a b c\n");
  EXPECT_EQ(printed({}), "\n");
  EXPECT_EQ(printed({Tensor({{1, 2}, {3, 4}})}), "[[1 2]\n [3 4]]\n");
  EXPECT_EQ(printed({Tensor({"ab", "c"})}), "[b'ab' b'c']\n");
  EXPECT_EQ(printed({"t:", Tensor({true, false})}), "t: [1 0]\n");
  EXPECT_EQ(printed({Tensor::empty(DType::kFloat32, {0})}), "[]\n");
  // A lone string scalar is written as it is (PrintV2's formatted input).
  EXPECT_EQ(printed({Tensor("abc")}), "abc\n");
  EXPECT_EQ(printed({"x:", Tensor("abc")}), "x: b'abc'\n");
  EXPECT_EQ(printed({Tensor({"abc"})}), "[b'abc']\n");
}

TEST(Print, NumbersAndStdStrings) {
  std::string s = "n";
  EXPECT_EQ(printed({s, 3, 2.5, std::string_view("v")}), "n 3 2.5 v\n");
  EXPECT_EQ(printed({int64_t{1} << 40}), "1099511627776\n");
}

TEST(Print, SepEndAndBracesInText) {
  EXPECT_EQ(printed({"a", Tensor(1), "b"}, {.sep = ", ", .end = "!"}), "a, 1, b!");
  EXPECT_EQ(printed({"{}", Tensor(1), "{x}}"}, {.sep = "{"}), "{}{1{{x}}\n");
  EXPECT_EQ(printed({Tensor(1), Tensor(2)}, {.sep = ""}), "12\n");
  EXPECT_EQ(printed({"x"}, {.end = ""}), "x");
}

TEST(Print, Summarize) {
  Tensor t = range(10);
  EXPECT_EQ(printed({t}), "[0 1 2 ... 7 8 9]\n");
  EXPECT_EQ(printed({t}, {.summarize = 2}), "[0 1 ... 8 9]\n");
  EXPECT_EQ(printed({t}, {.summarize = -1}), "[0 1 2 3 4 5 6 7 8 9]\n");
  EXPECT_EQ(printed({range(6)}), "[0 1 2 3 4 5]\n");
}

TEST(Print, VariableHandleAndViews) {
  Variable v(Tensor({1, 2}), "w");
  EXPECT_EQ(printed({v.handle()}), "<Variable 'w:0'>\n");
  EXPECT_EQ(printed({v.read_value()}), "[1 2]\n");
  Tensor base({1, 2, 3, 4, 5, 6});
  EXPECT_EQ(printed({base.view({3, 2})}), "[[1 2]\n [3 4]\n [5 6]]\n");
}

TEST(Print, StdoutAndStderr) {
  ::testing::internal::CaptureStderr();
  print({"to", Tensor({1})});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "to [1]\n");
  ::testing::internal::CaptureStdout();
  print({"out"}, {.output_stream = "stdout"});
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "out\n");
  ::testing::internal::CaptureStderr();
  print({"log"}, {.output_stream = "log(warning)"});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "log\n");
}

TEST(Print, FileStreamAppends) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("kiln_print_test_" + std::to_string(::getpid()) + ".txt");
  std::filesystem::remove(path);
  print({"one", Tensor(1)}, {.output_stream = "file://" + path.string()});
  print({"two"}, {.output_stream = "file://" + path.string()});
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), "one 1\ntwo\n");
  std::filesystem::remove(path);
}

TEST(Print, StreamRegistry) {
  std::ostringstream a, b;
  const std::string ia = register_print_stream(a);
  EXPECT_EQ(register_print_stream(a), ia);
  const std::string ib = register_print_stream(b);
  EXPECT_NE(ia, ib);
  EXPECT_EQ(ia.rfind("ostream:", 0), 0u);
  print({"to a"}, {.output_stream = ia});
  print({"to b"}, {.output_stream = ib});
  EXPECT_EQ(a.str(), "to a\n");
  EXPECT_EQ(b.str(), "to b\n");
  unregister_print_stream(a);
  unregister_print_stream(b);
  unregister_print_stream(b);  // no-op
  expect_error([&] { print({"x"}, {.output_stream = ia}); }, Code::kNotFound,
               {"PrintV2", ia, "not registered"});
}

TEST(Print, ConcurrentPrintsDoNotInterleave) {
  std::ostringstream os;
  const std::string id = register_print_stream(os);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) print({"thread", t, "line", i}, {.output_stream = id});
    });
  for (auto& th : threads) th.join();
  unregister_print_stream(os);
  std::istringstream in(os.str());
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_EQ(line.rfind("thread ", 0), 0u) << line;
    EXPECT_NE(line.find(" line "), std::string::npos) << line;
  }
  EXPECT_EQ(lines, 800);
}

TEST(Print, Errors) {
  expect_error([] { print({"x"}, {.output_stream = "bogus"}); }, Code::kInvalidArgument,
               {"PrintV2", "output_stream", "bogus"});
  expect_error([] { print({"x"}, {.output_stream = "file://"}); }, Code::kInvalidArgument,
               {"PrintV2", "output_stream"});
  expect_error([] { print({"x"}, {.output_stream = "ostream:abc"}); }, Code::kInvalidArgument,
               {"PrintV2", "output_stream"});
  expect_error([] { print({"x"}, {.output_stream = "ostream:987654321"}); }, Code::kNotFound,
               {"PrintV2", "not registered"});
  expect_error([] { print({"x"}, {.output_stream = "file:///nonexistent_dir_kiln/x.txt"}); },
               Code::kNotFound, {"PrintV2", "cannot open", "nonexistent_dir_kiln"});
  expect_error([] { print({Tensor(1)}, {.summarize = -2}); }, Code::kInvalidArgument,
               {"PrintV2", "summarize", "-2"});
  expect_error([] { print({Tensor()}); }, Code::kInvalidArgument, {"PrintV2", "undefined"});
  // The op directly: template and inputs must agree.
  const Tensor one(1);
  expect_error([&] { call_op(OpId::Print, {}, {std::string("{}")}); }, Code::kInvalidArgument,
               {"PrintV2", "1 placeholders", "0 input tensors"});
  expect_error([&] { call_op(OpId::Print, std::span<const Tensor>(&one, 1), {std::string("")}); },
               Code::kInvalidArgument, {"PrintV2", "0 placeholders", "1 input tensors"});
  expect_error([] { call_op(OpId::Print, {}, {std::string("a { b")}); }, Code::kInvalidArgument,
               {"PrintV2", "malformed template", "'{'"});
  expect_error([] { call_op(OpId::Print, {}, {std::string("}")}); }, Code::kInvalidArgument,
               {"PrintV2", "malformed template", "'}'"});
}

TEST(Print, OpRow) {
  const OpDef& d = op_def(OpId::Print);
  EXPECT_TRUE(d.has(kStateful));
  EXPECT_TRUE(d.has(kVariadicInput));
  EXPECT_TRUE(d.outputs.empty());
  EXPECT_EQ(d.attr_index("template"), 0);
  EXPECT_EQ(d.attr_index("output_stream"), 1);
  EXPECT_EQ(d.attr_index("summarize"), 2);
  EXPECT_EQ(d.attr_index("end"), 3);
  // Running the op returns no outputs.
  std::ostringstream os;
  const std::string id = register_print_stream(os);
  const Tensor ins[] = {Tensor(1), Tensor("s")};
  auto out =
      call_op(OpId::Print, ins, {std::string("{} and {}"), id, int64_t{3}, std::string(";")});
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(os.str(), "1 and b's';");
  unregister_print_stream(os);
}

}  // namespace
}  // namespace kiln
