// Denormal results flushed to zero inside kiln's ops, as TensorFlow's CPU
// ops do (its ScopedFlushDenormal): arithmetic on a float32 below 1.2e-38 (or
// a float64 below 2.2e-308) takes a slow microcode path on x86, and a long
// training run's gradients and probabilities reach that range. Only results
// are flushed (x86 FTZ, not DAZ): a denormal input is still read as itself,
// so sign, ceil, sqrt or log of one stay exact (with DAZ, kernels that read
// a float's bits disagree with its arithmetic). Since no op makes one, only
// inputs from outside can be denormal. The caller's mode comes back when the
// op or call returns, so code outside kiln (Python, NumPy) keeps IEEE
// denormals. Config::flush_denormals turns it off.
#pragma once
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "kiln/config.h"

namespace kiln::detail {

#if defined(__x86_64__) || defined(__i386__)
inline constexpr uint64_t kFlushBits = 0x8000;  // MXCSR: FTZ (bit 15)
inline uint64_t fp_mode() {
  return _mm_getcsr();
}
inline void set_fp_mode(uint64_t m) {
  _mm_setcsr(static_cast<unsigned>(m));
}
#elif defined(__aarch64__)
inline constexpr uint64_t kFlushBits = uint64_t{1} << 24;  // FPCR: FZ (inputs too)
inline uint64_t fp_mode() {
  uint64_t m;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(m));
  return m;
}
inline void set_fp_mode(uint64_t m) {
  __asm__ __volatile__("msr fpcr, %0" : : "r"(m));
}
#else
inline constexpr uint64_t kFlushBits = 0;  // no control: IEEE denormals
inline uint64_t fp_mode() {
  return 0;
}
inline void set_fp_mode(uint64_t) {}
#endif

/// While alive, this thread flushes denormals (when config().flush_denormals);
/// restores the mode it found. Nested scopes cost one mode read.
class ScopedFlushDenormals {
 public:
  ScopedFlushDenormals() {
    if (kFlushBits == 0 || !config().flush_denormals) return;
    old_ = fp_mode();
    if ((old_ & kFlushBits) == kFlushBits) return;
    set_fp_mode(old_ | kFlushBits);
    restore_ = true;
  }
  ~ScopedFlushDenormals() {
    if (restore_) set_fp_mode(old_);
  }
  ScopedFlushDenormals(const ScopedFlushDenormals&) = delete;
  ScopedFlushDenormals& operator=(const ScopedFlushDenormals&) = delete;

 private:
  uint64_t old_ = 0;
  bool restore_ = false;
};

}  // namespace kiln::detail
