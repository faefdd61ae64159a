// The one way kiln reads its environment: every variable it reads is named
// at a call of these helpers and listed in docs/ENVIRONMENT.md.
#pragma once
#include <cstdint>
#include <string>

namespace kiln {

/// The value of the environment variable `name`; "" when unset.
std::string env(const char* name);

/// A number of seconds > 0 from `name`; `fallback` when it is unset or
/// empty. Any other value is ignored with one line on stderr naming it.
double env_seconds(const char* name, double fallback);

/// A whole number >= 0 from `name` (decimal digits); `fallback` when it is
/// unset or empty. Any other value is ignored with one line on stderr.
uint64_t env_count(const char* name, uint64_t fallback);

/// Config::jit_excess_precision, unless XLA_FLAGS holds
/// --xla_allow_excess_precision=false (TensorFlow's switch): whether a float
/// value a chain of ops rounds to a half type and widens back may keep its
/// precision (jit kernels, fuse_conv's bfloat16 epilogues).
bool excess_precision_allowed();

}  // namespace kiln
