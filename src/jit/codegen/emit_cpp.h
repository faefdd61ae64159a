// The C++ backend of the JIT: fused-kernel IR -> one self-contained
// translation unit (the scalar-math prelude, then one extern "C" function per
// kernel), compiled by the system compiler.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "jit/ir/jit_ir.h"

namespace kiln::jit {

/// What a generated kernel receives (the same struct is declared in the
/// generated code). Sizes are the collapsed layout's; `fast` is set when every
/// input's inner stride matches the pattern the kernel was specialized for;
/// `stream` asks a row kernel to write its rows with non-temporal stores
/// (outputs too large to stay in cache); `tile` (nullptr: none), per input,
/// the tile of rows [r0, r1) x columns [c0, c1) of an input read transposed,
/// copied out row-major with `tile_pitch` values per row (runtime.cpp).
struct KernelArgs {
  const void* const* in;
  void* const* out;
  int64_t rank;
  const int64_t* shape;    ///< rank dims
  const int64_t* strides;  ///< input k's strides at [k * rank, (k + 1) * rank)
  int64_t fast;
  int64_t stream;
  const void* const* tile = nullptr;
  int64_t tile_pitch = 0;
};
/// A generated kernel: rows [r0, r1) x columns [c0, c1) of the layout.
using KernelFn = void (*)(const KernelArgs*, int64_t r0, int64_t r1, int64_t c0, int64_t c1);

/// The inner-loop pattern (per input: 1 contiguous, 0 broadcast, 2 strided:
/// a transposed read, any stride) the kernel is specialized for, predicted
/// from its static dims.
std::vector<uint8_t> predicted_pattern(const Kernel& k);

/// The translation unit for `kernels` (symbols are their names).
std::string emit_module(const std::vector<Kernel>& kernels);

/// The scalar-math prelude (fast_math.h + functors.h), embedded at build time.
const char* prelude_source();

}  // namespace kiln::jit
