// The JIT's compiler driver: finds the system C++ compiler and turns one
// translation unit into the bytes of a shared object.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::jit {

/// A C++ compiler and the flags the JIT compiles with.
struct Toolchain {
  std::string cxx;                 ///< the compiler: an absolute path, or a name looked up on PATH
  std::string version;             ///< first line of `cxx --version` (part of the cache key)
  std::vector<std::string> flags;  ///< code generation and output flags (part of the cache key)
};

/// The compiler to use: $KILN_CXX when set and non-empty (it must run), else
/// `c++` on PATH. std::nullopt with `*why` (when non-null) filled when none
/// works, e.g. "KILN_CXX='/nope' could not be run: ...". The answer is cached
/// for the process (thread-safe).
std::optional<Toolchain> find_toolchain(std::string* why);

/// Forgets find_toolchain's cached answer, so the next call re-reads the environment.
void reset_toolchain_for_tests();

/// The host's architecture and the CPU's instruction-set extensions that
/// -march=native turns on, e.g. "x86_64: sse4_2 avx avx2 fma ...", from
/// /proc/cpuinfo (read once). Part of the cache key.
std::string cpu_features();

/// Seconds a compile may take: $KILN_JIT_COMPILE_TIMEOUT, else 120.
inline constexpr double kDefaultCompileTimeout = 120;
double compile_timeout();

/// Compiles `source` (one C++ translation unit) into a shared object and
/// returns its bytes. Runs the compiler without a shell in a private temporary
/// directory (removed afterwards; one left by a killed process is removed by
/// the next compile), stdin from /dev/null, output captured; the compiler
/// (and its children) are killed after `timeout` seconds (default:
/// compile_timeout()) or when this process dies, even by SIGKILL. Throws
/// kiln::InternalError with the exit status and the first 40 lines of the
/// diagnostics when compiling fails, kiln::DeadlineExceededError when it
/// times out. With `report`, it also
/// receives the compiler's account of the loops it vectorized or not, one
/// message per line ("kernel.cpp:LINE:COL: optimized: loop vectorized ...",
/// "...: missed: ..." or "...: note: ..." from GCC's
/// -fopt-info-loop-vec-optimized-missed-note;
/// "...: remark: vectorized loop ..." and the like from clang's
/// -Rpass(-missed)=loop-vectorize).
std::string compile_shared_object(const Toolchain& tc, std::string_view source,
                                  std::optional<double> timeout = std::nullopt,
                                  std::string* report = nullptr);

}  // namespace kiln::jit
