// Internal: the thread budget as oneDNN and OpenBLAS see it.
//
// kiln owns one budget, the size of its thread pool (Config::num_threads). OpenBLAS
// always runs single-threaded, called from kiln's pool tasks (matmul.cpp splits the
// product); oneDNN's OpenMP runtime gets the budget per calling thread, or one thread
// inside a pool task (conv.cpp runs large convolutions as row blocks on the pool), so
// that no runtime's threads spin while another's work waits.
#pragma once

namespace kiln::cpu {

/// oneDNN's OpenMP thread count for primitives created or run on this thread: the pool's
/// size, or 1 inside a LibrariesSingleThreaded scope. Applied to OpenMP (a per-thread
/// setting) when it differs from what this thread last set.
int library_threads();

/// While alive, oneDNN runs single-threaded on this thread (a pool task's share);
/// the thread's OpenMP setting is restored at the end.
class LibrariesSingleThreaded {
 public:
  LibrariesSingleThreaded();
  ~LibrariesSingleThreaded();
  LibrariesSingleThreaded(const LibrariesSingleThreaded&) = delete;
  LibrariesSingleThreaded& operator=(const LibrariesSingleThreaded&) = delete;

 private:
  bool outer_;
  int saved_;
};

/// Sets OpenBLAS to one thread (once per process); call before any BLAS routine.
void openblas_single_threaded();

}  // namespace kiln::cpu
