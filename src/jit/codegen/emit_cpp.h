// The C++ backend of the JIT: fused-kernel IR -> one self-contained
// translation unit (the scalar-math prelude, then one extern "C" function per
// kernel), compiled by the system compiler.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "jit/ir/jit_ir.h"
#include "jit/ir/program.h"

namespace kiln::jit {

/// The inner-loop pattern (per input: 1 contiguous, 0 broadcast, 2 strided:
/// a transposed read, any stride) the kernel is specialized for, predicted
/// from its static dims.
std::vector<uint8_t> predicted_pattern(const Kernel& k);

/// The translation unit for `kernels` (symbols are their names).
std::string emit_module(const std::vector<Kernel>& kernels);

/// The scalar-math prelude (fast_math.h + functors.h), embedded at build time.
const char* prelude_source();

}  // namespace kiln::jit
