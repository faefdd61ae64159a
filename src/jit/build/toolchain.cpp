#include "toolchain.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/env.h"
#include "kiln/status.h"

extern char** environ;

namespace kiln::jit {
namespace fs = std::filesystem;
namespace {

// -O3 without -ffast-math: IEEE semantics as in the eager kernels.
// -ffp-contract=fast (GCC's default outside strict ISO mode, and what the
// eager AVX2 kernels get): a * b + c may become one FMA, so floats agree with
// graph mode within a few ulp, not bit for bit. -fopenmp-simd honours the
// row kernels' `#pragma omp simd` on their lane loops (no OpenMP runtime). No
// -fvisibility=hidden: entry points are plain extern "C" functions.
// -mprefer-vector-width=512: GCC keeps to 256-bit vectors on AVX-512 hosts
// unless told; 512 took softmax rows 1.2 -> 1.1 ms and a float16 chain 10 ->
// 7 ms on an AVX-512 Xeon (docs/BENCHMARKS.md). No effect without AVX-512.
const std::vector<std::string>& default_flags() {
  static const std::vector<std::string> flags = {
      "-std=c++20",    "-O3",      "-march=native",   "-mprefer-vector-width=512",
      "-fPIC",         "-shared",  "-fno-math-errno", "-ffp-contract=fast",
      "-fopenmp-simd", "-fno-plt", "-DNDEBUG",        "-fno-semantic-interposition",
      "-pipe"};
  return flags;
}

constexpr std::string_view kTempPrefix = "kiln-jit-";

// The pid in a temporary directory's name "kiln-jit-<pid>-XXXXXX", or 0.
pid_t owner_of(std::string_view name) {
  if (!name.starts_with(kTempPrefix)) return 0;
  name.remove_prefix(kTempPrefix.size());
  const size_t dash = name.find('-');
  if (dash == 0 || dash == std::string_view::npos || name.size() - dash != 7) return 0;
  pid_t pid = 0;
  for (char c : name.substr(0, dash)) {
    if (c < '0' || c > '9' || pid > 100000000) return 0;
    pid = pid * 10 + (c - '0');
  }
  return pid;
}

// Removes this user's temporary directories whose process is gone (killed
// during a compile: its compiler died with it, see run_process).
void remove_orphaned_dirs(const fs::path& base) {
  std::error_code ec;
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const pid_t pid = owner_of(it->path().filename().string());
    struct stat st {};
    if (pid <= 0 || pid == ::getpid() || ::lstat(it->path().c_str(), &st) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code e;
      fs::remove_all(it->path(), e);
    }
  }
}

// A private directory (mode 0700) under $TMPDIR, removed with its contents;
// its name carries this process's pid, so a later process removes it when
// this one was killed first.
class TempDir {
 public:
  TempDir() {
    std::string base = env("TMPDIR");
    fs::path dir = fs::absolute(base.empty() ? "/tmp" : base);
    remove_orphaned_dirs(dir);
    std::string tmpl = (dir / str_cat(kTempPrefix, ::getpid(), "-XXXXXX")).string();
    if (!::mkdtemp(tmpl.data())) {
      throw InternalError(str_cat("kiln jit: cannot create a temporary directory ", tmpl, ": ",
                                  std::strerror(errno)));
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_file(const fs::path& p, std::string_view data) {
  std::ofstream out(p, std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) throw InternalError(str_cat("kiln jit: cannot write ", p));
}

// The first `n` lines of `text`, with a count of the lines left out.
std::string first_lines(std::string_view text, int n) {
  size_t pos = 0;
  for (int i = 0; i < n && pos < text.size(); ++i) {
    size_t nl = text.find('\n', pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  std::string out(text.substr(0, pos));
  if (pos < text.size()) {
    auto rest = std::count(text.begin() + static_cast<std::ptrdiff_t>(pos), text.end(), '\n');
    out += str_cat("[... ", rest, " more lines]\n");
  }
  return out;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return str_cat("failed with exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return str_cat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)),
                   ")");
  }
  return str_cat("ended with wait status ", status);
}

// The child's environment: ours, with TMPDIR pointing into the private
// directory so a killed compiler leaves no intermediate files behind.
std::vector<std::string> child_env(const fs::path& tmpdir) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "TMPDIR=", 7) != 0) out.emplace_back(*e);
  }
  out.push_back("TMPDIR=" + tmpdir.string());
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The child's wait status, or nullopt when it outlives `timeout_s`.
std::optional<int> wait_for(pid_t pid, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  Fd pidfd;
#ifdef SYS_pidfd_open
  pidfd.fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // readable when it exits
#endif
  int backoff_ms = 1;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) {
      throw InternalError(
          str_cat("kiln jit: waiting for the compiler failed: ", std::strerror(errno)));
    }
    auto left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    int ms = static_cast<int>(std::min(100.0, std::ceil(left)));
    if (pidfd.fd >= 0) {
      pollfd p{pidfd.fd, POLLIN, 0};
      ::poll(&p, 1, ms);
    } else {  // kernels before 5.3: poll with a growing sleep
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, backoff_ms)));
      backoff_ms = std::min(2 * backoff_ms, 20);
    }
  }
}

struct Outcome {
  int spawn_error = 0;  // errno when the program could not be started
  int status = 0;       // wait status
  bool timed_out = false;
};

// The executable posix_spawnp would run for `name`: itself when it holds a
// '/', else the first executable file of that name on $PATH.
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = env("PATH");
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    const size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? colon : colon - start);
    const std::string full = (dir.empty() ? fs::path(".") : fs::path(dir)) / name;
    if (::access(full.c_str(), X_OK) == 0 && !fs::is_directory(full)) return full;
    if (colon == std::string::npos) return name;  // execve fails: ENOENT
    start = colon + 1;
  }
}

void kill_own_group(int) {
  ::kill(0, SIGKILL);
}

// The forked helper between this process and the compiler (only
// async-signal-safe calls: this process may have other threads). It leads
// a process group of its own, which holds the compiler and the compiler's
// children; when this process dies (kill -9 included), the kernel sends it
// SIGTERM (PR_SET_PDEATHSIG) and it kills the whole group, so no compiler
// runs on as an orphan. It exits as the compiler did. The compiler gets
// default signal dispositions (a host such as Python may ignore some) and
// an empty mask.
// `exec_error` (shared memory) receives execve's errno when it fails.
[[noreturn]] void helper(pid_t parent, const char* program, char* const* argv, char* const* envp,
                         int in, int out, volatile int* exec_error, const char* cwd) {
  ::setpgid(0, 0);
  struct sigaction sa {};
  sa.sa_handler = kill_own_group;
  ::sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = SIG_DFL;  // waitpid needs SIGCHLD not ignored
  ::sigaction(SIGCHLD, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) kill_own_group(0);  // died before prctl
  const pid_t child = ::fork();
  if (child == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGPIPE, SIGXFSZ, SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      ::sigaction(sig, &dfl, nullptr);
    if (::dup2(in, 0) >= 0 && ::dup2(out, 1) >= 0 && ::dup2(out, 2) >= 0 && ::chdir(cwd) == 0)
      ::execve(program, argv, envp);
    *exec_error = errno;
    ::_exit(127);
  }
  if (child < 0) {
    *exec_error = errno;
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  ::kill(::getpid(), sig);
  ::_exit(128 + sig);
}

// Runs argv (no shell) in `cwd` with stdin from /dev/null and stdout+stderr
// into `log`, under helper(): killed with its children after `timeout_s`
// seconds or when this process dies.
Outcome run_process(std::vector<std::string> argv, const fs::path& cwd, const fs::path& log,
                    double timeout_s) {
  // Everything the forked helper touches is made before fork.
  const std::string program = resolve_program(argv[0]);
  std::vector<std::string> envs = child_env(cwd);
  auto args = c_strings(argv), envp = c_strings(envs);
  const std::string dir = cwd.string();
  Outcome result;
  Fd in, out;
  in.fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  out.fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  // Shared with the helper's child (a pipe's write end would also reach
  // helpers that other threads fork meanwhile, and hold readers open).
  void* page =
      ::mmap(nullptr, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (in.fd < 0 || out.fd < 0 || page == MAP_FAILED) {
    result.spawn_error = errno;
    if (page != MAP_FAILED) ::munmap(page, sizeof(int));
    return result;
  }
  volatile int* exec_error = static_cast<volatile int*>(page);
  *exec_error = 0;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0)
    helper(parent, program.c_str(), args.data(), envp.data(), in.fd, out.fd, exec_error,
           dir.c_str());
  if (pid < 0) {
    result.spawn_error = errno;
    ::munmap(page, sizeof(int));
    return result;
  }
  ::setpgid(pid, pid);  // also here: a timeout may kill the group before the helper ran
  std::optional<int> status = wait_for(pid, timeout_s);
  if (!status) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &result.status, 0);
    result.timed_out = true;
  } else {
    result.status = *status;
  }
  if (*exec_error != 0) {
    result.spawn_error = *exec_error;
    result.timed_out = false;
  }
  ::munmap(page, sizeof(int));
  return result;
}

bool succeeded(const Outcome& o) {
  return !o.spawn_error && !o.timed_out && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0;
}

// Why a run failed, e.g. "failed with exit status 1" or "timed out after 2 s (killed)".
std::string describe(const Outcome& o, double timeout_s) {
  if (o.spawn_error) return str_cat("could not be started: ", std::strerror(o.spawn_error));
  if (o.timed_out)
    return str_cat("timed out after ", timeout_s,
                   " s (killed; KILN_JIT_COMPILE_TIMEOUT sets the limit in seconds)");
  return describe_status(o.status);
}

// The first line of `cxx --version`; throws InternalError saying why it could not run.
std::string compiler_version(const std::string& cxx) {
  TempDir dir;
  Outcome out = run_process({cxx, "--version"}, dir.path(), dir.path() / "version.txt", 30);
  std::string text = read_file(dir.path() / "version.txt");
  if (!succeeded(out)) {
    if (out.spawn_error) throw InternalError(std::strerror(out.spawn_error));
    throw InternalError(
        str_cat("`", cxx, " --version` ", describe(out, 30), ": ", first_lines(text, 3)));
  }
  std::string line = text.substr(0, text.find('\n'));
  if (line.empty()) throw InternalError(str_cat("`", cxx, " --version` printed nothing"));
  return line;
}

struct Probe {
  std::optional<Toolchain> toolchain;
  std::string why;
};

Probe probe_toolchain() {
  const std::string from_env = env("KILN_CXX");
  std::string cxx = from_env.empty() ? "c++" : from_env;
  // The compiler runs in a temporary directory: make a relative path absolute.
  if (cxx.find('/') != std::string::npos) cxx = fs::absolute(cxx).string();
  try {
    std::string version = compiler_version(cxx);
    std::vector<std::string> flags = default_flags();
    // GCC marks objects with STB_GNU_UNIQUE symbols (statics of inline functions)
    // NODELETE: dlclose would never unload them. Each module is self-contained.
    if (version.find("clang") == std::string::npos) flags.push_back("-fno-gnu-unique");
    return {Toolchain{cxx, version, std::move(flags)}, ""};
  } catch (const Error& e) {
    if (!from_env.empty())
      return {std::nullopt, str_cat("KILN_CXX='", from_env, "' could not be run: ", e.what())};
    return {std::nullopt, str_cat("no C++ compiler: 'c++' could not be run (", e.what(),
                                  "); install g++ or set KILN_CXX")};
  }
}

std::mutex& toolchain_mutex() {
  static std::mutex mu;
  return mu;
}
std::optional<Probe>& cached_probe() {
  static std::optional<Probe> probe;
  return probe;
}

std::string read_cpu_features() {
  utsname u{};
  std::string arch = ::uname(&u) == 0 ? u.machine : "unknown";
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line)) {
    std::string key = line.substr(0, line.find(':'));
    key.erase(key.find_last_not_of(" \t") + 1);
    if ((key == "flags" || key == "Features") && line.find(':') != std::string::npos) {
      flags = line.substr(line.find(':') + 1);
      break;
    }
  }
  // On x86 the line mixes ISA extensions with kernel and erratum flags: keep
  // the families compilers generate code for. Elsewhere every feature is ISA.
  static const char* kIsa[] = {
      "sse",   "ssse3", "avx",    "fma",    "f16c",    "bmi",     "popcnt",     "lzcnt", "abm",
      "movbe", "adx",   "aes",    "pclmul", "vaes",    "vpclmul", "gfni",       "sha",   "amx",
      "cx16",  "xsave", "rdrand", "rdseed", "lahf_lm", "prfchw",  "clflushopt", "clwb",  "movdir"};
  bool x86 = arch == "x86_64" || (arch.size() == 4 && arch[0] == 'i' && arch.ends_with("86"));
  std::istringstream words(flags);
  std::string out = arch + ":", w;
  while (words >> w) {
    bool keep = !x86 || std::any_of(std::begin(kIsa), std::end(kIsa),
                                    [&](const char* p) { return w.starts_with(p); });
    if (keep) out += " " + w;
  }
  return out;
}

}  // namespace

std::optional<Toolchain> find_toolchain(std::string* why) {
  std::lock_guard<std::mutex> lock(toolchain_mutex());
  auto& probe = cached_probe();
  if (!probe) probe = probe_toolchain();
  if (why) *why = probe->why;
  return probe->toolchain;
}

void reset_toolchain_for_tests() {
  std::lock_guard<std::mutex> lock(toolchain_mutex());
  cached_probe().reset();
}

std::string cpu_features() {
  static const std::string features = read_cpu_features();
  return features;
}

double compile_timeout() {
  return env_seconds("KILN_JIT_COMPILE_TIMEOUT", kDefaultCompileTimeout);
}

std::string compile_shared_object(const Toolchain& tc, std::string_view source,
                                  std::optional<double> timeout, std::string* report) {
  const double timeout_s = timeout ? *timeout : compile_timeout();
  TempDir dir;
  write_file(dir.path() / "kernel.cpp", source);
  // Relative names: diagnostics say "kernel.cpp:3:1" and the bytes do not depend on the directory.
  std::vector<std::string> argv{tc.cxx};
  argv.insert(argv.end(), tc.flags.begin(), tc.flags.end());
  const bool clang = tc.version.find("clang") != std::string::npos;
  if (report) {
    if (clang)
      argv.insert(argv.end(), {"-Rpass=loop-vectorize", "-Rpass-missed=loop-vectorize"});
    else
      argv.push_back("-fopt-info-loop-vec-optimized-missed-note=vec.txt");
  }
  argv.insert(argv.end(), {"-o", "kernel.so", "kernel.cpp"});
  Outcome out = run_process(std::move(argv), dir.path(), dir.path() / "compile.log", timeout_s);
  if (out.timed_out) {
    throw DeadlineExceededError(
        str_cat("kiln jit: the compiler ", tc.cxx, " ", describe(out, timeout_s)));
  }
  if (!succeeded(out)) {
    throw InternalError(str_cat("kiln jit: the compiler ", tc.cxx, " ", describe(out, timeout_s),
                                " on a generated translation unit; its diagnostics:\n",
                                first_lines(read_file(dir.path() / "compile.log"), 40)));
  }
  std::string so = read_file(dir.path() / "kernel.so");
  if (so.empty()) throw InternalError(str_cat("kiln jit: ", tc.cxx, " wrote no shared object"));
  if (report) *report = read_file(dir.path() / (clang ? "compile.log" : "vec.txt"));
  return so;
}

}  // namespace kiln::jit
