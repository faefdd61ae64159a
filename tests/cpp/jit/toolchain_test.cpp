// The JIT's compiler driver: finding the compiler, compiling, diagnostics,
// timeouts. Fake compilers (shell scripts) pin down how the compiler is run.
#include "jit/build/toolchain.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "jit/build/loader.h"
#include "jit_test_util.h"
#include "kiln/status.h"

namespace kiln::jit {
namespace {
namespace fs = std::filesystem;
using testing::ScopedEnv;
using testing::TempDir;

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// A toolchain whose "compiler" is a shell script with `body`.
Toolchain fake_compiler(const TempDir& tmp, const std::string& body) {
  fs::path script = tmp.path() / "fake-cxx";
  std::ofstream(script) << "#!/bin/sh\n" << body << "\n";
  fs::permissions(script, fs::perms::owner_all);
  return Toolchain{script.string(), "fake 1.0", {}};
}

std::optional<Toolchain> real_toolchain() {
  std::string why;
  auto tc = find_toolchain(&why);
  if (!tc) ADD_FAILURE() << "no compiler: " << why;
  return tc;
}

TEST(Toolchain, FindsTheSystemCompiler) {
  auto tc = real_toolchain();
  ASSERT_TRUE(tc);
  EXPECT_FALSE(tc->cxx.empty());
  EXPECT_FALSE(tc->version.empty());
  EXPECT_FALSE(contains(tc->version, "\n"));
  auto has = [&](const char* f) {
    return std::find(tc->flags.begin(), tc->flags.end(), f) != tc->flags.end();
  };
  EXPECT_TRUE(has("-O3"));
  EXPECT_TRUE(has("-shared"));
  EXPECT_TRUE(has("-fPIC"));
  EXPECT_FALSE(has("-ffast-math"));
}

TEST(Toolchain, CompilesAndLoadsAProbe) {
  auto tc = real_toolchain();
  ASSERT_TRUE(tc);
  auto start = std::chrono::steady_clock::now();
  std::string so = compile_shared_object(*tc, "extern \"C\" int kiln_probe() { return 42; }\n");
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ info ] compiling the probe took " << ms << " ms (" << so.size() << " bytes)\n";
  ASSERT_GE(so.size(), 4u);
  EXPECT_EQ(so.substr(0, 4),
            "\x7f"
            "ELF");
  LoadedModule m = LoadedModule::load(so);
  auto probe = reinterpret_cast<int (*)()>(m.symbol("kiln_probe"));
  EXPECT_EQ(probe(), 42);
}

// Threads compile at once (each its own directory and child) and share one probe.
TEST(Toolchain, ConcurrentCompiles) {
  reset_toolchain_for_tests();
  std::vector<std::thread> threads;
  std::vector<int> got(4, -1);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&got, i] {
      auto tc = find_toolchain(nullptr);
      if (!tc) return;
      std::string src = "extern \"C\" int kiln_probe() { return " + std::to_string(i) + "; }\n";
      LoadedModule m = LoadedModule::load(compile_shared_object(*tc, src));
      got[i] = reinterpret_cast<int (*)()>(m.symbol("kiln_probe"))();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Toolchain, SyntaxErrorThrowsWithDiagnostics) {
  auto tc = real_toolchain();
  ASSERT_TRUE(tc);
  try {
    compile_shared_object(*tc, "extern \"C\" int broken( { return 1 }\n");
    FAIL() << "a syntax error compiled";
  } catch (const InternalError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "exit status 1")) << msg;
    EXPECT_TRUE(contains(msg, "kernel.cpp:1")) << msg;
    EXPECT_TRUE(contains(msg, "error")) << msg;
  }
}

TEST(Toolchain, MissingCompilerFromEnvironment) {
  ScopedEnv cxx("KILN_CXX", "/nonexistent/c++");
  reset_toolchain_for_tests();
  std::string why;
  EXPECT_EQ(find_toolchain(&why), std::nullopt);
  EXPECT_TRUE(contains(why, "KILN_CXX='/nonexistent/c++' could not be run")) << why;
  {
    ScopedEnv failing("KILN_CXX", "/bin/false");
    EXPECT_EQ(find_toolchain(nullptr), std::nullopt);  // cached until reset
    reset_toolchain_for_tests();
    EXPECT_EQ(find_toolchain(&why), std::nullopt);
    EXPECT_TRUE(contains(why, "exit status 1")) << why;
  }
  ScopedEnv empty("KILN_CXX", "");  // empty counts as unset
  reset_toolchain_for_tests();
  EXPECT_TRUE(find_toolchain(&why)) << why;
  reset_toolchain_for_tests();
}

TEST(Toolchain, CompilerFromEnvironment) {
  TempDir tmp;
  Toolchain fake = fake_compiler(tmp, "echo 'fake c++ 9.9'");
  ScopedEnv cxx("KILN_CXX", fake.cxx);
  reset_toolchain_for_tests();
  auto tc = find_toolchain(nullptr);
  reset_toolchain_for_tests();
  ASSERT_TRUE(tc);
  EXPECT_EQ(tc->cxx, fake.cxx);
  EXPECT_EQ(tc->version, "fake c++ 9.9");
}

// The compiler runs in a private directory that is also its TMPDIR, with
// stdin from /dev/null, and the arguments end with -o kernel.so kernel.cpp.
TEST(Toolchain, CompilerRunsInAPrivateDirectory) {
  TempDir tmp;
  Toolchain tc =
      fake_compiler(tmp, R"({ pwd; echo "$TMPDIR"; cat kernel.cpp; cat; echo "$@"; } > kernel.so)");
  tc.flags = {"-flag"};
  std::string out = compile_shared_object(tc, "SOURCE\n");
  std::string cwd = out.substr(0, out.find('\n'));
  EXPECT_TRUE(contains(cwd, "kiln-jit-")) << out;
  EXPECT_EQ(out, cwd + "\n" + cwd + "\nSOURCE\n-flag -o kernel.so kernel.cpp\n");
  EXPECT_FALSE(fs::exists(cwd));  // removed afterwards
}

TEST(Toolchain, DiagnosticsAreCutAt40Lines) {
  TempDir tmp;
  Toolchain tc =
      fake_compiler(tmp, "i=1; while [ $i -le 100 ]; do echo diag$i >&2; i=$((i+1)); done; exit 3");
  try {
    compile_shared_object(tc, "");
    FAIL() << "a failing compiler succeeded";
  } catch (const InternalError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(contains(msg, "exit status 3")) << msg;
    EXPECT_TRUE(contains(msg, "diag40\n")) << msg;
    EXPECT_FALSE(contains(msg, "diag41")) << msg;
    EXPECT_TRUE(contains(msg, "60 more lines")) << msg;
  }
}

TEST(Toolchain, NoOutputFileThrows) {
  TempDir tmp;
  EXPECT_THROW(compile_shared_object(fake_compiler(tmp, "exit 0"), ""), InternalError);
}

// A hung compiler is killed with its whole process group: the background
// child that would write a marker after a second dies too.
TEST(Toolchain, TimeoutKillsTheCompilerAndItsChildren) {
  TempDir tmp;
  fs::path marker = tmp.path() / "marker";
  Toolchain tc = fake_compiler(tmp, "(sleep 1; touch '" + marker.string() + "') & sleep 30");
  auto start = std::chrono::steady_clock::now();
  try {
    compile_shared_object(tc, "", 0.3);
    FAIL() << "a hung compiler succeeded";
  } catch (const DeadlineExceededError& e) {
    EXPECT_TRUE(contains(e.what(), "timed out after 0.3 s")) << e.what();
    EXPECT_TRUE(contains(e.what(), "KILN_JIT_COMPILE_TIMEOUT")) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(fs::exists(marker));
}

// KILN_JIT_COMPILE_TIMEOUT sets the limit (a value that is not seconds > 0
// keeps the default).
TEST(Toolchain, TimeoutFromTheEnvironment) {
  TempDir tmp;
  {
    ScopedEnv t("KILN_JIT_COMPILE_TIMEOUT", std::nullopt);
    EXPECT_EQ(compile_timeout(), kDefaultCompileTimeout);
  }
  for (const char* bad : {"0", "-1", "soon"}) {
    ScopedEnv t("KILN_JIT_COMPILE_TIMEOUT", bad);
    EXPECT_EQ(compile_timeout(), kDefaultCompileTimeout) << bad;
  }
  ScopedEnv t("KILN_JIT_COMPILE_TIMEOUT", "0.4");
  EXPECT_EQ(compile_timeout(), 0.4);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(compile_shared_object(fake_compiler(tmp, "sleep 30"), ""), DeadlineExceededError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// A compile removes the temporary directories of processes that died during
// theirs (named kiln-jit-<pid>-XXXXXX), and nothing else.
TEST(Toolchain, DirectoriesOfDeadProcessesAreRemoved) {
  TempDir tmp;
  ScopedEnv t("TMPDIR", tmp.path().string());
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const fs::path orphan = tmp.path() / str_cat("kiln-jit-", dead, "-abc123");
  const std::vector<fs::path> kept = {tmp.path() / "kiln-jit-1-abc123",  // pid 1 lives
                                      tmp.path() / "kiln-jit-abc123",    // no pid
                                      tmp.path() / str_cat("kiln-jit-", dead, "-abc"),
                                      tmp.path() / "other"};
  for (const fs::path& d : kept) fs::create_directories(d / "sub");
  fs::create_directories(orphan / "sub");
  std::ofstream(orphan / "sub" / "kernel.o") << "x";
  TempDir scripts;
  const Toolchain tc = fake_compiler(scripts, "echo so > kernel.so");
  EXPECT_EQ(compile_shared_object(tc, ""), "so\n");
  EXPECT_FALSE(fs::exists(orphan));
  for (const fs::path& d : kept) EXPECT_TRUE(fs::exists(d)) << d;
  int ours = 0;  // the compile's own directory is gone too
  for (const auto& e : fs::directory_iterator(tmp.path()))
    ours += e.path().filename().string().starts_with(str_cat("kiln-jit-", ::getpid(), "-"));
  EXPECT_EQ(ours, 0);
}

// The compiler runs with default dispositions for the signals a host may
// ignore (SIGINT, SIGPIPE, ...), even when this process ignores them.
// (Other bits of SigIgn may come from whatever started the test.)
TEST(Toolchain, CompilerGetsDefaultSignals) {
  TempDir tmp;
  struct sigaction ignore {
  }, old_int{}, old_pipe{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGPIPE, &ignore, &old_pipe);
  const Toolchain tc = fake_compiler(tmp, "grep '^SigIgn:' /proc/$$/status > kernel.so");
  const std::string out = compile_shared_object(tc, "");
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ASSERT_TRUE(contains(out, "SigIgn:")) << out;
  const uint64_t ignored = std::stoull(out.substr(out.find(':') + 1), nullptr, 16);
  for (int sig : {SIGINT, SIGPIPE, SIGTERM, SIGHUP, SIGQUIT, SIGXFSZ, SIGCHLD})
    EXPECT_EQ(ignored & (uint64_t{1} << (sig - 1)), 0u) << "signal " << sig << " ignored: " << out;
}

TEST(Toolchain, CpuFeatures) {
  std::string f = cpu_features();
  EXPECT_EQ(f, cpu_features());
  EXPECT_FALSE(contains(f, "\n"));
#if defined(__x86_64__)
  EXPECT_TRUE(f.starts_with("x86_64:")) << f;
  EXPECT_TRUE(contains(f, " sse2")) << f;
  EXPECT_FALSE(contains(f, " fpu ")) << f;  // not an extension compilers target
#endif
}

}  // namespace
}  // namespace kiln::jit
