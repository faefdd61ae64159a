#include "threading.h"

#include <cblas.h>
#include <dlfcn.h>

#include <mutex>

#include "core/tls.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

thread_local bool t_single KILN_TLS = false;
thread_local int t_omp_threads KILN_TLS = 0;  // what this thread last gave OpenMP

// OpenMP's setter, when the process has an OpenMP runtime (oneDNN's libgomp); looked up
// at run time so kiln needs no OpenMP at build time and works with other oneDNN builds.
using SetThreads = void (*)(int);
using GetThreads = int (*)();
SetThreads omp_setter() {
  static const SetThreads f =
      reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  return f;
}
// What OpenMP currently has for this thread (learned once per thread).
int omp_threads_now() {
  if (t_omp_threads == 0) {
    static const GetThreads get =
        reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    t_omp_threads = get ? get() : 1;
  }
  return t_omp_threads;
}

}  // namespace

int library_threads() {
  const int n = t_single ? 1 : ThreadPool::global().num_threads();
  if (n != omp_threads_now()) {
    if (SetThreads f = omp_setter()) f(n);
    t_omp_threads = n;
  }
  return n;
}

LibrariesSingleThreaded::LibrariesSingleThreaded() : outer_(!t_single), saved_(omp_threads_now()) {
  t_single = true;
}
LibrariesSingleThreaded::~LibrariesSingleThreaded() {
  if (!outer_) return;
  t_single = false;
  // Give the thread back its OpenMP setting (code of the caller's may use OpenMP).
  if (t_omp_threads != saved_) {
    if (SetThreads f = omp_setter()) f(saved_);
    t_omp_threads = saved_;
  }
}

void openblas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

}  // namespace kiln::cpu
