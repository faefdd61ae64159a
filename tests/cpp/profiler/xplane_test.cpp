// The profile as an XSpace (TensorBoard's profile plugin): planes, lines per
// thread, TensorFlow's op event names, stats, and the file save() writes.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kiln/function.h"
#include "kiln/profiler.h"
#include "test_util.h"
#include "xplane.pb.h"

namespace kiln {
namespace {

using profiler::Event;
using profiler::Profile;
namespace fs = std::filesystem;
namespace xp = tensorflow::profiler;

Event make_event(std::string name, std::string category, std::string op, int64_t start, int64_t dur,
                 int64_t tid) {
  Event e;
  e.name = std::move(name);
  e.category = std::move(category);
  e.op = std::move(op);
  e.start_ns = start;
  e.dur_ns = dur;
  e.tid = tid;
  return e;
}

// A profile with a function on one thread enclosing a kernel, an eager op on
// another thread, an annotation with an argument, and a memory counter.
Profile sample() {
  Profile p;
  p.start_unix_us = 1'700'000'000'000'000;
  p.pid = 42;
  p.threads = {{7, "python"}, {9, ""}};
  p.events.push_back(make_event("step", "function", "", 100, 900, 7));
  Event k = make_event("dense/MatMul", "kernel", "BatchMatMulV2", 200, 300, 7);
  k.shapes = {2, 4, 8};
  k.dtypes = {DType::kFloat32};
  k.bytes = 128;
  p.events.push_back(k);
  Event r = make_event("Relu", "eager", "Relu", 150, 50, 9);
  r.shapes = {1, 3};
  r.dtypes = {DType::kFloat32};
  r.bytes = 12;
  p.events.push_back(r);
  Event u = make_event("batch", "user", "", 1200, 10, 9);
  u.args = {{"step", "3"}};
  p.events.push_back(u);
  Event c = make_event("Memory", "memory", "", 300, 0, 7);
  c.phase = 'C';
  c.value = 4096;
  p.events.push_back(c);
  return p;
}

xp::XSpace parse(const std::string& bytes) {
  xp::XSpace space;
  EXPECT_TRUE(space.ParseFromString(bytes));
  return space;
}

// name -> value (as text) of an event's stats.
std::map<std::string, std::string> stats_of(const xp::XPlane& plane, const xp::XEvent& e) {
  std::map<std::string, std::string> out;
  for (const xp::XStat& s : e.stats()) {
    const std::string& name = plane.stat_metadata().at(s.metadata_id()).name();
    out[name] =
        s.value_case() == xp::XStat::kStrValue ? s.str_value() : std::to_string(s.int64_value());
  }
  return out;
}

TEST(XPlaneTest, HostPlaneHasALinePerThreadAndTensorFlowsOpNames) {
  const xp::XSpace space = parse(sample().xspace());
  ASSERT_EQ(space.planes_size(), 1);
  ASSERT_EQ(space.hostnames_size(), 1);
  EXPECT_FALSE(space.hostnames(0).empty());
  const xp::XPlane& plane = space.planes(0);
  EXPECT_EQ(plane.name(), "/host:CPU");
  for (const auto& [id, m] : plane.event_metadata()) EXPECT_EQ(id, m.id());
  for (const auto& [id, m] : plane.stat_metadata()) EXPECT_EQ(id, m.id());
  ASSERT_EQ(plane.lines_size(), 2);
  std::map<int64_t, const xp::XLine*> lines;
  for (const xp::XLine& l : plane.lines()) lines[l.id()] = &l;
  ASSERT_TRUE(lines.count(7) && lines.count(9));
  EXPECT_EQ(lines[7]->name(), "python");
  EXPECT_EQ(lines[9]->name(), "thread 9");
  for (const auto& [tid, l] : lines) {
    EXPECT_EQ(l->timestamp_ns(), 1'700'000'000'000'000'000);
    EXPECT_EQ(l->duration_ps(), 1'210'000);  // to the end of the last event
  }
  auto name_of = [&](const xp::XEvent& e) {
    return plane.event_metadata().at(e.metadata_id()).name();
  };
  // Thread 7: the function and its kernel (the counter is left out).
  const xp::XLine& t7 = *lines[7];
  ASSERT_EQ(t7.events_size(), 2);
  EXPECT_EQ(name_of(t7.events(0)), "step");
  EXPECT_EQ(t7.events(0).offset_ps(), 100'000);
  EXPECT_EQ(t7.events(0).duration_ps(), 900'000);
  EXPECT_EQ(stats_of(plane, t7.events(0)).at("category"), "function");
  // The kernel is scoped by the function run that encloses it on its thread.
  EXPECT_EQ(name_of(t7.events(1)), "step/dense/MatMul:BatchMatMulV2");
  const auto k = stats_of(plane, t7.events(1));
  EXPECT_EQ(k.at("shapes"), "[4,8]");
  EXPECT_EQ(k.at("dtype"), "float32");
  EXPECT_EQ(k.at("bytes"), "128");
  EXPECT_EQ(k.at("is_eager"), "0");
  // Thread 9: the eager op, then the annotation with its argument.
  const xp::XLine& t9 = *lines[9];
  ASSERT_EQ(t9.events_size(), 2);
  EXPECT_EQ(name_of(t9.events(0)), "Relu:Relu");
  EXPECT_EQ(stats_of(plane, t9.events(0)).at("is_eager"), "1");
  EXPECT_EQ(name_of(t9.events(1)), "batch");
  EXPECT_EQ(stats_of(plane, t9.events(1)).at("step"), "3");
}

TEST(XPlaneTest, EventNamesAreInternedOnce) {
  Profile p = sample();
  // A second run of the node in the same function, and one outside any function.
  p.events.insert(p.events.begin() + 2,
                  make_event("dense/MatMul", "kernel", "BatchMatMulV2", 600, 50, 7));
  p.events.push_back(make_event("dense/MatMul", "kernel", "BatchMatMulV2", 2000, 5, 7));
  const xp::XSpace space = parse(p.xspace());
  const xp::XPlane& plane = space.planes(0);
  std::map<std::string, int> names;
  for (const auto& [id, m] : plane.event_metadata()) ++names[m.name()];
  EXPECT_EQ(names["step/dense/MatMul:BatchMatMulV2"], 1);
  EXPECT_EQ(names["dense/MatMul:BatchMatMulV2"], 1);
  int uses = 0;
  for (const xp::XLine& l : plane.lines())
    for (const xp::XEvent& e : l.events())
      uses +=
          plane.event_metadata().at(e.metadata_id()).name() == "step/dense/MatMul:BatchMatMulV2";
  EXPECT_EQ(uses, 2);
}

TEST(XPlaneTest, AnEmptyProfileIsAValidSpace) {
  const xp::XSpace space = parse(Profile().xspace());
  ASSERT_EQ(space.planes_size(), 1);
  EXPECT_EQ(space.planes(0).lines_size(), 0);
}

TEST(XPlaneTest, SaveWritesTheSpaceBesideTheTrace) {
  const fs::path dir = fs::temp_directory_path() / str_cat("kiln_xplane_", ::getpid());
  fs::remove_all(dir);
  profiler::start();
  Tensor(1.f) + Tensor(2.f);
  const Profile p = profiler::stop();
  const fs::path trace = p.save(dir.string());
  std::string stem = trace.filename().string();
  stem.resize(stem.size() - std::string(".trace.json.gz").size());
  std::ifstream in(trace.parent_path() / (stem + ".xplane.pb"), std::ios::binary);
  ASSERT_TRUE(in.good());
  std::stringstream bytes;
  bytes << in.rdbuf();
  EXPECT_EQ(bytes.str(), p.xspace());
  const xp::XSpace space = parse(bytes.str());
  bool add = false;
  for (const auto& [id, m] : space.planes(0).event_metadata()) add |= m.name() == "AddV2:AddV2";
  EXPECT_TRUE(add);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
