// The profiler: events of eager ops, function kernels, tracing and passes,
// thread ids, annotations' nesting, errors, and the files it writes.
#include "kiln/profiler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include "json_util.h"
#include "kiln/executor.h"
#include "kiln/function.h"
#include "kiln/trace.h"
#include "test_util.h"

namespace kiln {
namespace {

using profiler::Event;
using profiler::Profile;
using testing::Json;
namespace fs = std::filesystem;

// kiln's MatMul row has TensorFlow's op type (its node name is "MatMul").
constexpr const char* kMatMul = "BatchMatMulV2";

// At least two pool threads for the parallel-region test (set before first use).
const bool kPoolThreads = (config().num_threads = 4, true);

int64_t my_tid() {
  return static_cast<int64_t>(::syscall(SYS_gettid));
}

// Stops a profile a failing test left running.
struct ProfilerTest : ::testing::Test {
  void TearDown() override {
    try {
      profiler::stop();
    } catch (const UnavailableError&) {
    }
  }
};

std::vector<const Event*> by_op(const Profile& p, std::string_view op) {
  std::vector<const Event*> v;
  for (const Event& e : p.events)
    if (e.op == op) v.push_back(&e);
  return v;
}

const Event* by_name(const Profile& p, std::string_view name) {
  for (const Event& e : p.events)
    if (e.name == name) return &e;
  return nullptr;
}

bool encloses(const Event& outer, const Event& inner) {
  return outer.tid == inner.tid && outer.start_ns <= inner.start_ns &&
         inner.start_ns + inner.dur_ns <= outer.start_ns + outer.dur_ns;
}

Function matmul_relu() {
  FunctionOptions o;
  o.name = "mm_relu";
  return Function(
      [](const std::vector<Value>& a) {
        return Value(relu(matmul(a[0].tensor(), a[1].tensor()) + 1.f));
      },
      o);
}

// Chrome's trace format: the keys each phase needs.
void check_schema(const Json& doc) {
  ASSERT_TRUE(doc.has("traceEvents"));
  ASSERT_TRUE(doc["traceEvents"].is_array());
  for (const Json& e : doc["traceEvents"].arr()) {
    ASSERT_TRUE(e.is_object());
    for (const char* k : {"name", "ph", "pid"}) ASSERT_TRUE(e.has(k)) << k;
    ASSERT_TRUE(e["pid"].is_number());
    const std::string ph = e["ph"].str();
    ASSERT_TRUE(ph == "X" || ph == "C" || ph == "M") << ph;
    ASSERT_TRUE(e.has("args") && e["args"].is_object());
    if (ph == "M") {
      ASSERT_TRUE(e["args"]["name"].is_string());
      continue;
    }
    for (const char* k : {"cat", "ts", "tid"}) ASSERT_TRUE(e.has(k)) << k;
    ASSERT_TRUE(e["ts"].is_number());
    ASSERT_GE(e["ts"].num(), 0);
    if (ph == "X") {
      ASSERT_TRUE(e.has("dur") && e["dur"].is_number());
      ASSERT_GE(e["dur"].num(), 0);
    } else {
      for (const auto& [k, v] : e["args"].obj()) ASSERT_TRUE(v.is_number()) << k;
    }
  }
}

TEST_F(ProfilerTest, OffByDefaultAndNothingRecordedWhenOff) {
  EXPECT_FALSE(profiler::is_enabled());
  EXPECT_EQ(profiler::kernel_begin(), 0);
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  matmul(a, a);
  profiler::start();
  EXPECT_TRUE(profiler::is_enabled());
  const Profile p = profiler::stop();
  EXPECT_FALSE(profiler::is_enabled());
  EXPECT_TRUE(by_op(p, kMatMul).empty());
}

TEST_F(ProfilerTest, EagerOpsRecordOpShapesDtypeBytesAndThread) {
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector(std::vector<float>(12, 0.5f), {3, 4});
  profiler::start();
  Tensor c = matmul(a, b);
  Tensor d = relu(c);
  const Profile p = profiler::stop();
  const auto mm = by_op(p, kMatMul);
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(mm[0]->category, "eager");
  EXPECT_EQ(mm[0]->name, kMatMul);  // eager: named after the op type
  EXPECT_EQ(mm[0]->shapes_string(), "[2,4]");
  EXPECT_EQ(mm[0]->dtypes_string(), "float32");
  EXPECT_EQ(mm[0]->bytes, 2 * 4 * 4);
  EXPECT_EQ(mm[0]->tid, my_tid());
  EXPECT_GE(mm[0]->dur_ns, 0);
  const auto r = by_op(p, "Relu");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_GE(r[0]->start_ns, mm[0]->start_ns + mm[0]->dur_ns);  // in program order
}

TEST_F(ProfilerTest, FunctionKernelsTracingAndPasses) {
  Function f = matmul_relu();
  Tensor a = Tensor::from_vector(std::vector<float>(16, 1.f), {4, 4});
  profiler::start();
  f({Value(a), Value(a)});  // traced, optimized and compiled here
  f({Value(a), Value(a)});
  const Profile p = profiler::stop();
  const Event* trace = by_name(p, "trace mm_relu");
  ASSERT_NE(trace, nullptr);
  EXPECT_EQ(trace->category, "tracing");
  const Event* compile = by_name(p, "compile mm_relu");
  ASSERT_NE(compile, nullptr);
  const Event* pass = by_name(p, "cse");
  ASSERT_NE(pass, nullptr);
  EXPECT_EQ(pass->category, "optimize");
  EXPECT_TRUE(encloses(*compile, *pass));
  // Two runs of the plan, each with a MatMul kernel inside its function event.
  const auto mm = by_op(p, kMatMul);
  ASSERT_EQ(mm.size(), 2u);
  std::vector<const Event*> runs;
  for (const Event& e : p.events)
    if (e.category == "function" && e.name == "mm_relu") runs.push_back(&e);
  ASSERT_EQ(runs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(mm[i]->category, "kernel");
    EXPECT_FALSE(mm[i]->name.empty());
    EXPECT_EQ(mm[i]->shapes_string(), "[4,4]");
    EXPECT_EQ(mm[i]->tid, my_tid());
    EXPECT_TRUE(encloses(*runs[i], *mm[i]));
  }
  // Tracing records nodes; it runs no kernel of the function.
  for (const Event& e : p.events) {
    if (e.op == kMatMul) {
      EXPECT_FALSE(encloses(*trace, e));
    }
  }
}

TEST_F(ProfilerTest, EventsCarryTheIdOfTheirThread) {
  Tensor a = Tensor::from_vector(std::vector<float>(4, 1.f), {2, 2});
  profiler::start();
  std::set<int64_t> tids;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&] {
      {
        std::lock_guard<std::mutex> lock(mu);
        tids.insert(my_tid());
      }
      profiler::ScopedTrace t("worker");
      matmul(a, a);
    });
  for (auto& t : threads) t.join();  // the threads exit before stop()
  const Profile p = profiler::stop();
  const auto mm = by_op(p, kMatMul);
  ASSERT_EQ(mm.size(), 2u);
  std::set<int64_t> seen{mm[0]->tid, mm[1]->tid};
  EXPECT_EQ(seen, tids);
  for (const auto& [tid, name] : p.threads) EXPECT_GT(tid, 0);
}

// Threads keep recording while profiles start and stop: each profile holds
// only its own events, complete, and nothing races (run under make test-tsan).
TEST_F(ProfilerTest, StartAndStopWhileThreadsRecord) {
  Tensor a = Tensor::from_vector(std::vector<float>(4, 1.f), {2, 2});
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&] {
      while (!done.load()) {
        profiler::ScopedTrace t("work");
        relu(a);
      }
    });
  for (int round = 0; round < 20; ++round) {
    profiler::start();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const Profile p = profiler::stop();
    int64_t last = 0;
    for (const Event& e : p.events) {
      EXPECT_GE(e.start_ns, 0);
      EXPECT_GE(e.start_ns, last);  // sorted
      last = e.start_ns;
      if (e.op == "Relu") {
        EXPECT_EQ(e.shapes_string(), "[2,2]");
      }
    }
  }
  done = true;
  for (auto& t : threads) t.join();
}

TEST_F(ProfilerTest, ScopedTracesNestAndCarryArguments) {
  profiler::start();
  {
    profiler::ScopedTrace outer("outer");
    outer.add_arg("step", "3");
    {
      profiler::TraceMe inner([] { return std::string("inner"); });
      EXPECT_TRUE(inner.active());
      relu(Tensor({-1.f, 2.f}));
    }
  }
  const Profile p = profiler::stop();
  const Event* outer = by_name(p, "outer");
  const Event* inner = by_name(p, "inner");
  ASSERT_NE(outer, nullptr);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(outer->category, "user");
  ASSERT_EQ(outer->args.size(), 1u);
  EXPECT_EQ(outer->args[0], (std::pair<std::string, std::string>("step", "3")));
  EXPECT_TRUE(encloses(*outer, *inner));
  const auto r = by_op(p, "Relu");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(encloses(*inner, *r[0]));
  EXPECT_LT(outer - p.events.data(), inner - p.events.data());  // parents first
}

TEST_F(ProfilerTest, StartTwiceAndStopWithoutStartAreErrors) {
  EXPECT_THROW(
      {
        try {
          profiler::stop();
        } catch (const UnavailableError& e) {
          EXPECT_STREQ(e.what(), "Cannot export profiling results. No profiler is running.");
          throw;
        }
      },
      UnavailableError);
  profiler::start();
  EXPECT_THROW(
      {
        try {
          profiler::start();
        } catch (const FailedPreconditionError& e) {
          EXPECT_STREQ(e.what(), "Another profiler is running.");
          throw;
        }
      },
      FailedPreconditionError);
  EXPECT_TRUE(profiler::is_enabled());  // the first profile still runs
  profiler::stop();
  profiler::ProfilerOptions bad;
  bad.host_tracer_level = 7;
  EXPECT_THROW(profiler::start(bad), InvalidArgumentError);
  EXPECT_FALSE(profiler::is_enabled());
}

TEST_F(ProfilerTest, LevelsSelectWhatIsRecorded) {
  Tensor a = Tensor::from_vector(std::vector<float>(4, 1.f), {2, 2});
  profiler::ProfilerOptions o;
  o.host_tracer_level = 1;  // annotations only
  profiler::start(o);
  {
    profiler::ScopedTrace t("step");
    matmul(a, a);
  }
  Profile p = profiler::stop();
  EXPECT_NE(by_name(p, "step"), nullptr);
  EXPECT_TRUE(by_op(p, kMatMul).empty());
  o.host_tracer_level = 3;  // + memory
  profiler::start(o);
  Tensor c = matmul(a, a);
  p = profiler::stop();
  ASSERT_EQ(by_op(p, kMatMul).size(), 1u);
  const Event* mem = by_name(p, "Memory");
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->phase, 'C');
  EXPECT_GE(mem->value, static_cast<double>(c.nbytes()));
}

TEST_F(ProfilerTest, DelayDropsEarlyEvents) {
  Tensor a = Tensor::from_vector(std::vector<float>(4, 1.f), {2, 2});
  profiler::ProfilerOptions o;
  o.delay_ms = 30;
  profiler::start(o);
  matmul(a, a);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  relu(a);
  const Profile p = profiler::stop();
  EXPECT_TRUE(by_op(p, kMatMul).empty());
  ASSERT_EQ(by_op(p, "Relu").size(), 1u);
  EXPECT_GE(by_op(p, "Relu")[0]->start_ns, 30'000'000);
}

TEST_F(ProfilerTest, ChromeTraceJsonParsesAndFollowsTheSchema) {
  Function f = matmul_relu();
  Tensor a = Tensor::from_vector(std::vector<float>(16, 1.f), {4, 4});
  profiler::start();
  {
    profiler::ScopedTrace t("quote \" back\\slash\nline");
    f({Value(a), Value(a)});
  }
  const Profile p = profiler::stop();
  const Json doc = testing::parse_json(p.chrome_trace_json());
  check_schema(doc);
  bool kernel = false, named_thread = false, annotation = false;
  for (const Json& e : doc["traceEvents"].arr()) {
    if (e["ph"].str() == "M" && e["name"].str() == "thread_name")
      named_thread |= e["tid"].num() == static_cast<double>(my_tid());
    if (e["ph"].str() == "X" && e["name"].str() == "quote \" back\\slash\nline") annotation = true;
    if (e["ph"].str() != "X" || e["cat"].str() != "kernel" || e["args"]["op"].str() != kMatMul)
      continue;
    kernel = true;
    EXPECT_EQ(e["args"]["shapes"].str(), "[4,4]");
    EXPECT_EQ(e["args"]["dtype"].str(), "float32");
    EXPECT_EQ(e["args"]["bytes"].num(), 64);
    EXPECT_EQ(e["tid"].num(), static_cast<double>(my_tid()));
    EXPECT_EQ(e["pid"].num(), static_cast<double>(::getpid()));
  }
  EXPECT_TRUE(kernel);
  EXPECT_TRUE(named_thread);
  EXPECT_TRUE(annotation);
}

std::string gunzip(const std::string& path) {
  std::string out;
  FILE* f = ::popen(("gzip -dc '" + path + "'").c_str(), "r");
  if (!f) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
  return ::pclose(f) == 0 ? out : std::string();
}

TEST_F(ProfilerTest, SaveWritesGzipInTensorBoardsLayout) {
  const fs::path dir = fs::temp_directory_path() / str_cat("kiln_prof_", ::getpid());
  fs::remove_all(dir);
  profiler::start();
  matmul(Tensor::from_vector(std::vector<float>{1, 2}, {1, 2}),
         Tensor::from_vector(std::vector<float>{3, 4}, {2, 1}));
  const Profile p = profiler::stop();
  const std::string path = p.save(dir.string());
  const fs::path rel = fs::path(path).lexically_relative(dir);
  auto it = rel.begin();
  EXPECT_EQ(*it++, "plugins");
  EXPECT_EQ(*it++, "profile");
  EXPECT_EQ((it++)->string().size(), std::string("2025_01_31_12_00_00").size());
  EXPECT_TRUE(it->string().ends_with(".trace.json.gz"));
  const std::string text = gunzip(path);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text, p.chrome_trace_json());
  check_schema(testing::parse_json(text));
  // A second save of the same run gets a folder of its own.
  EXPECT_NE(p.save(dir.string()), path);
  // A logdir that is a file: an error naming it, no crash.
  const fs::path file = dir / "file";
  testing::write_bytes(file.string(), "x");
  try {
    p.save(file.string());
    FAIL() << "expected FailedPreconditionError";
  } catch (const FailedPreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a directory"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST_F(ProfilerTest, AWorkersProfileNamesItsRank) {
  // Under MPI each rank writes its own file, named and labelled by rank.
  const fs::path dir = fs::temp_directory_path() / str_cat("kiln_prof_worker_", ::getpid());
  fs::remove_all(dir);
  profiler::ProfilerOptions o;
  o.worker = 3;
  profiler::start(o);
  Tensor(1.f) + Tensor(2.f);
  const Profile p = profiler::stop();
  EXPECT_EQ(p.worker, 3);
  const std::string path = p.save(dir.string());
  EXPECT_TRUE(path.ends_with("_worker3.trace.json.gz")) << path;
  EXPECT_NE(p.chrome_trace_json().find("\"kiln worker 3\""), std::string::npos);
  o.worker = -2;
  EXPECT_THROW(profiler::start(o), InvalidArgumentError);
  // The next profile without a worker is labelled as before.
  profiler::start();
  EXPECT_EQ(profiler::stop().worker, -1);
  fs::remove_all(dir);
}

TEST_F(ProfilerTest, TableListsTopOpsByTotalTime) {
  Tensor a = Tensor::from_vector(std::vector<float>(64 * 64, 1.f), {64, 64});
  profiler::start();
  for (int i = 0; i < 3; ++i) relu(matmul(a, a));
  const Profile p = profiler::stop();
  const auto stats = p.op_stats();
  ASSERT_EQ(stats.size(), 2u);
  for (const auto& s : stats) EXPECT_EQ(s.calls, 3);
  EXPECT_GE(stats[0].total_ns, stats[1].total_ns);
  const std::string t = p.table();
  for (const char* col : {"Name", "Calls", "Total ms", "Avg us", "%"})
    EXPECT_NE(t.find(col), std::string::npos) << t;
  EXPECT_NE(t.find(kMatMul), std::string::npos) << t;
  EXPECT_NE(t.find("6 calls of 2 ops"), std::string::npos) << t;
  const std::string top1 = p.table(1);
  EXPECT_NE(top1.find(stats[0].op), std::string::npos);
  EXPECT_EQ(top1.find(stats[1].op + " "), std::string::npos) << top1;
}

// Two heavy independent branches: the executor runs them as a parallel region.
std::unique_ptr<Plan> two_branches() {
  Graph g("branches");
  TracingContext tc(g);
  ContextScope scope(tc);
  const Shape shape({128, 128});
  Tensor x = tc.add_input("x", DType::kFloat32, shape),
         y = tc.add_input("y", DType::kFloat32, shape);
  Tensor p = x, q = y;
  for (int i = 0; i < 12; ++i) {
    p = tanh(p * 0.5f) + x;
    q = tanh(q * -0.25f) + y;
  }
  g.outputs().push_back(tc.edge_for(p + q));
  return Plan::compile(g);
}

TEST_F(ProfilerTest, ParallelRegionsAndTheirChains) {
  ASSERT_TRUE(kPoolThreads);
  std::unique_ptr<Plan> plan = two_branches();
  if (plan->num_parallel_regions() == 0) GTEST_SKIP() << "no parallel region on this machine";
  Tensor x = Tensor::from_vector(std::vector<float>(128 * 128, 0.5f), {128, 128});
  profiler::start();
  plan->run(std::vector<Tensor>{x, x});
  const Profile p = profiler::stop();
  const Event* region = by_name(p, "parallel region");
  ASSERT_NE(region, nullptr);
  EXPECT_EQ(region->category, "executor");
  ASSERT_EQ(region->args.size(), 2u);
  EXPECT_EQ(region->args[1], (std::pair<std::string, std::string>("chains", "2")));
  std::vector<const Event*> chains;
  for (const Event& e : p.events)
    if (e.name.starts_with("chain ")) chains.push_back(&e);
  ASSERT_EQ(chains.size(), 2u);
  for (const Event* c : chains) {
    EXPECT_GE(c->start_ns, region->start_ns);
    EXPECT_LE(c->start_ns + c->dur_ns, region->start_ns + region->dur_ns);
    int kernels = 0;
    for (const Event& e : p.events) kernels += e.op == "Tanh" && encloses(*c, e);
    EXPECT_EQ(kernels, 12) << c->name;  // each branch's tanh, on the chain's thread
  }
}

TEST_F(ProfilerTest, JitCompileOrCacheHitIsRecorded) {
  FunctionOptions o;
  o.name = "jit_fn";
  o.jit_compile = true;
  Function f([](const std::vector<Value>& a) { return Value(a[0].tensor() * 2.f + 1.f); }, o);
  profiler::start();
  f({Value(Tensor({1.f, 2.f, 3.f}))});
  const Profile p = profiler::stop();
  const Event* jit = by_name(p, "jit jit_fn");
  ASSERT_NE(jit, nullptr);
  EXPECT_EQ(jit->category, "jit");
  const Event* step = by_name(p, "jit compile");
  if (!step) step = by_name(p, "jit disk cache");
  if (!step) step = by_name(p, "jit loaded in process");
  if (!step) GTEST_SKIP() << "no C++ compiler: the function ran in graph mode";
  EXPECT_TRUE(encloses(*jit, *step));
}

}  // namespace
}  // namespace kiln
