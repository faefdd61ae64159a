// Running compiled kernels: the process's table of loaded kernels and the
// JitKernel op's CPU kernel (broadcast strides, collapsed layout, the work
// split over kiln's pool).
#pragma once
#include <memory>
#include <string>

#include "emit_cpp.h"
#include "loader.h"

namespace kiln::jit {

/// Registers the kernels of a loaded module under "<module>/<symbol>"; the
/// module stays loaded for the life of the process.
void register_module(const std::string& module, std::shared_ptr<LoadedModule> so,
                     const std::vector<std::string>& symbols);
/// The kernel registered under `key`, or nullptr.
KernelFn find_kernel(const std::string& key);

/// Row kernels write outputs of at least this many bytes in all with
/// non-temporal stores (no read for ownership, nothing left in cache): 8 MB,
/// or half the last-level cache when that is larger.
size_t stream_bytes();
/// Sets stream_bytes() (0: back to the default); for tests.
void set_stream_bytes_for_tests(size_t bytes);

/// Binds OpId::JitKernel's CPU kernel (called while the op table is built).
void bind_jit_kernels(OpTableBuilder& t);

}  // namespace kiln::jit
