// libFuzzer target over kiln-serve's request parsing (make fuzz-serve; the
// inputs are described in serve_body.h).
#include "serve_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::serve::run_one(data, size);
  return 0;
}
