// Running compiled kernels: the process's table of loaded kernels and the
// JitKernel op's CPU kernel (broadcast strides, collapsed layout, the work
// split over kiln's pool).
#pragma once
#include <memory>
#include <string>

#include "jit/build/loader.h"
#include "jit/codegen/emit_cpp.h"

namespace kiln::jit {

/// Registers the kernels of a loaded module under "<module>/<symbol>"; the
/// module stays loaded for the life of the process.
void register_module(const std::string& module, std::shared_ptr<LoadedModule> so,
                     const std::vector<std::string>& symbols);
/// The kernel registered under `key`, or nullptr.
KernelFn find_kernel(const std::string& key);

/// Binds OpId::JitKernel's CPU kernel (called while the op table is built).
void bind_jit_kernels(OpTableBuilder& t);

}  // namespace kiln::jit
