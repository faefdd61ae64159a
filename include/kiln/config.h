// Runtime configuration: one struct, documented. The environment variables
// kiln reads (OMP_NUM_THREADS as the default thread budget, the JIT's
// compiler and cache, ...) are listed in docs/ENVIRONMENT.md.
#pragma once
#include <cstdint>

namespace kiln {

struct Config {
  /// Largest single allocation allowed, in bytes; larger requests raise
  /// ResourceExhaustedError instead of risking an OOM kill. 0 = default
  /// (3/4 of physical memory).
  int64_t max_allocation_bytes = 0;
  /// kiln's thread budget: the pool that runs large kernels, oneDNN's
  /// convolutions and OpenBLAS's products (each single-threaded inside a pool
  /// task, so no runtime spins beside another). 0 = OMP_NUM_THREADS when set,
  /// else the CPUs the process may run on. Fixed once the pool starts.
  int num_threads = 0;
  /// Elements below which elementwise kernels stay single-threaded.
  int64_t parallel_grain = 1 << 16;
  /// Run independent heavy branches of a function's plan concurrently on the
  /// thread pool (see kiln/executor.h); checked on every run. A branch is
  /// heavy from about 4 * parallel_grain element-operations, a value read
  /// when the plan is analysed (at compile time or after its first run).
  bool parallel_branches = true;
  /// Keep the values a function computes from variables alone (a batch norm's
  /// scale and shift) between its calls, recomputing them only when one of
  /// those variables changed (see kiln/executor.h). Applies to functions that
  /// read variables but write no state; checked on every run.
  bool memoize_variable_values = true;
  /// Bytes of convolution filters kept reordered into oneDNN's weights layout
  /// (per process; each reordered once per version of its buffer). To make room
  /// for new ones, filters not used in a while (models no longer run) are
  /// dropped; past the budget, new filters are reordered on every call.
  /// Winograd's filters are 1.8-4x the filter's bytes: ResNet50 packs ~235 MB.
  int64_t packed_weights_bytes = int64_t{1} << 30;
  /// Bytes of freed blocks kept per size class in the shared pool.
  int64_t pool_cache_bytes = int64_t{256} << 20;
  /// Log level for the function layer: 0 = off (default); 1 = log every
  /// retrace with its reason (through the warning handler, category
  /// "RetraceLog"); 2 = also log each trace's optimization report
  /// ("OptimizeLog").
  int log_level = 0;
  /// Run Graph::verify() after tracing and after every optimization pass.
  /// On in debug builds and in kiln's tests; off by default in release.
  bool verify_graphs = kDebugBuild;
  /// Check every float output of every op for NaN/Inf and raise
  /// InvalidArgumentError naming the op (tf.debugging.enable_check_numerics).
  bool check_numerics = false;
  /// Flush denormal float results to zero inside kiln's ops, eager and in
  /// functions (FTZ on x86, FZ on Arm), as TensorFlow's CPU ops do: values
  /// below 1.2e-38 (float32) take a slow path in the CPU, and a long
  /// training run's gradients reach them. The caller's floating-point mode
  /// is restored when each op or call returns. Checked per op and call.
  bool flush_denormals = true;
  /// jit_compile=True kernels keep a float value at its own precision where a
  /// chain of ops rounds it to float16/bfloat16 and widens it back (each op of
  /// a mixed_bfloat16 layer computes in float32 and rounds): XLA's
  /// xla_allow_excess_precision, on by default in TensorFlow. Faster, and at
  /// least as accurate; values leaving a kernel are still rounded. A bf16
  /// convolution's epilogue (fuse_conv, both modes) likewise computes on its
  /// float32 accumulator. false (or
  /// XLA_FLAGS=--xla_allow_excess_precision=false) rounds after every op, as
  /// unfused graph mode does. Read when a function is compiled.
  bool jit_excess_precision = true;
  /// Convolutions and products may trade float32 precision for speed:
  /// TensorFlow's tf.config.experimental.enable_tensor_float_32_execution, on
  /// by default there too (where it allows TF32 math on GPUs: errors ~1e-3).
  /// In kiln, float32 3x3 stride-1 convolutions whose filter is unchanged since
  /// its previous call (inference) then run as Winograd's algorithm (errors
  /// ~1e-5 of the output's scale, against ~1e-6 direct; docs/OPS.md). Checked
  /// per call.
  bool tensor_float_32 = true;

#ifdef NDEBUG
  static constexpr bool kDebugBuild = false;
#else
  static constexpr bool kDebugBuild = true;
#endif
};

/// The process-wide configuration (read by the runtime on each use).
Config& config();
/// Effective allocation cap in bytes.
int64_t max_allocation_bytes();
/// kiln's version, "MAJOR.MINOR.PATCH" (the VERSION file at the top of the tree).
const char* version();

/// What this CPU gives kiln's kernels, probed once (oneDNN 2.6 implements these
/// on AVX-512 only; elsewhere kiln computes the same values its own way).
struct CpuKernels {
  /// Winograd's float32 3x3 convolutions (Config::tensor_float_32); else direct.
  bool winograd = false;
  /// bfloat16 products and convolutions; else computed on float32 copies
  /// (MatMul nodes, no jit products, weights rounded on each call).
  bool bf16_products = false;
  bool bf16_convolutions = false;
  /// oneDNN's float32 brgemm products (weights packed once); else OpenBLAS.
  bool f32_onednn_products = false;
};
CpuKernels cpu_kernels();

}  // namespace kiln
