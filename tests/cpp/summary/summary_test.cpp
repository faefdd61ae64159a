// Event files (src/summary, include/kiln/summary.h): the writer's file and
// its first event, writes eagerly and inside a Function, the flush policy,
// and the errors of bad writers, handles and records.
#include "kiln/summary.h"

#include <atomic>
#include <filesystem>
#include <fstream>

#include "kiln/function.h"
#include "kiln/ops.h"
#include "kiln/record_io.h"
#include "kiln/variable.h"
#include "test_util.h"

namespace kiln {
namespace {
namespace fs = std::filesystem;
using summary::FileWriter;

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / str_cat("kiln_summary_", ::getpid(), "_", name);
  fs::remove_all(p);
  return p.string();
}

TEST(Summary, WriterMakesTheLogdirAndAVersionEvent) {
  const std::string dir = temp_dir("version") + "/a/b";
  FileWriter w = FileWriter::create(dir);
  EXPECT_EQ(fs::path(w.path()).parent_path().string(), dir);
  EXPECT_EQ(fs::path(w.path()).filename().string().rfind("events.out.tfevents.", 0), 0u);
  const auto events = summary::read_events(w.path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_GT(events[0].wall_time, 1.7e9);
}

TEST(Summary, ScalarsAndTextEagerly) {
  FileWriter w = FileWriter::create(temp_dir("eager"));
  summary::scalar(w, "loss", Tensor(0.5), 3);
  summary::text(w, "note", Tensor(std::string("hi")), 4);
  w.flush();
  const auto events = summary::read_events(w.path());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].step, 3);
  ASSERT_EQ(events[1].values.size(), 1u);
  const summary::EventValue& v = events[1].values[0];
  EXPECT_EQ(v.tag, "loss");
  EXPECT_EQ(v.plugin_name, "scalars");
  EXPECT_EQ(v.data_class, summary::DataClass::kScalar);
  EXPECT_EQ(v.tensor.dtype(), DType::kFloat32);
  EXPECT_EQ(v.tensor.item<float>(), 0.5f);
  EXPECT_EQ(events[2].values[0].tensor.data<std::string>()[0], "hi");
  EXPECT_EQ(events[2].values[0].plugin_name, "text");
}

TEST(Summary, WritesInsideAFunctionRunOnEveryCall) {
  FileWriter w = FileWriter::create(temp_dir("function"));
  Variable step(Tensor(int64_t{0}));
  Function f([&](const std::vector<Value>& a) {
    summary::write(w, step.read_value(), a[0].tensor() * 2.f, Tensor(std::string("y")),
                   Tensor(summary::metadata("scalars")));
    step.assign_add(Tensor(int64_t{1}));
    return Value();
  });
  for (int i = 0; i < 3; ++i) f({Tensor(static_cast<float>(i))});
  EXPECT_EQ(f.tracing_count(), 1);
  w.close();
  EXPECT_TRUE(w.closed());
  const auto events = summary::read_events(w.path());
  ASSERT_EQ(events.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i + 1].step, i);
    EXPECT_EQ(events[i + 1].values[0].tensor.item<float>(), 2.f * i);
  }
}

TEST(Summary, QueueWritesOutWhenFullOrFlushed) {
  summary::FileWriterOptions o;
  o.max_queue = 2;
  o.flush_millis = 1000000;
  FileWriter w = FileWriter::create(temp_dir("queue"), o);
  for (int i = 0; i < 2; ++i) summary::scalar(w, "q", Tensor(1.f), i);
  EXPECT_EQ(summary::read_events(w.path()).size(), 1u);  // queued
  summary::scalar(w, "q", Tensor(1.f), 2);               // over max_queue
  EXPECT_EQ(summary::read_events(w.path()).size(), 4u);
}

TEST(Summary, ErrorsAreClear) {
  const std::string dir = temp_dir("errors");
  fs::create_directories(dir);
  std::ofstream(dir + "/file") << "x";
  EXPECT_THROW(FileWriter::create(dir + "/file"), FailedPreconditionError);
  summary::FileWriterOptions bad;
  bad.max_queue = -1;
  EXPECT_THROW(FileWriter::create(dir, bad), InvalidArgumentError);
  bad = {};
  bad.filename_suffix = "/x";
  EXPECT_THROW(FileWriter::create(dir, bad), InvalidArgumentError);
  // A variable's handle is not a writer.
  Variable v(Tensor(1.f));
  EXPECT_THROW(FileWriter::from_handle(v.handle()), InvalidArgumentError);
  FileWriter w = FileWriter::create(dir);
  EXPECT_THROW(
      summary::write(w, Tensor(1.f), Tensor(1.f), Tensor(std::string("t")), Tensor(std::string())),
      InvalidArgumentError);  // step must be int64
  EXPECT_THROW(summary::write(w, Tensor(int64_t{0}), Tensor(1.f), Tensor(std::string("t")),
                              Tensor(std::string("\xff\xff"))),
               InvalidArgumentError);  // not a SummaryMetadata
  EXPECT_THROW(summary::write_raw(w, Tensor(int64_t{0}), Tensor(std::string("\xff\xff"))),
               InvalidArgumentError);
  w.close();
  EXPECT_THROW(summary::scalar(w, "late", Tensor(1.f), 0), FailedPreconditionError);
  EXPECT_THROW(summary::parse_event("\xff\xff\xff"), DataLossError);
}

TEST(Summary, GraphEvents) {
  FileWriter w = FileWriter::create(temp_dir("graph"));
  summary::write_graph(w, Tensor(int64_t{7}), Tensor(std::string("\x0a\x03\x0a\x01x")));
  w.flush();
  const auto events = summary::read_events(w.path());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].step, 7);
  EXPECT_EQ(events[1].graph_def, std::string("\x0a\x03\x0a\x01x"));
}

std::atomic<int> g_observed{0};

TEST(Summary, CallObserverAndGraphDefsOfSeveralFunctions) {
  FunctionOptions o;
  o.name = "double_it";
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() * 2.f); }, o);
  o.name = "neg";
  Function g([](const std::vector<Value>& a) { return Value(negative(a[0].tensor())); }, o);
  f({Tensor(1.f)});
  set_call_observer([](const ConcreteFunction&) { ++g_observed; });
  f({Tensor(2.f)});  // a cached call is observed too
  g({Tensor(2.f)});
  auto cf = g.get_concrete_function({Tensor(2.f)});
  (*cf)({Tensor(3.f)});
  set_call_observer(nullptr);
  f({Tensor(2.f)});
  EXPECT_EQ(g_observed.load(), 3);
  const std::string one = summary::graph_def(cf->graph());
  EXPECT_NE(one.find("Neg"), std::string::npos);
  EXPECT_EQ(one.find("neg/"), std::string::npos);
  const std::string both = summary::graph_def(
      {&f.get_concrete_function({Tensor(2.f)})->graph(), &cf->graph(), &cf->graph()});
  EXPECT_NE(both.find("double_it/"), std::string::npos);
  EXPECT_NE(both.find("neg/"), std::string::npos);
  EXPECT_NE(both.find("neg_1/"), std::string::npos);  // names made unique
}

}  // namespace
}  // namespace kiln
