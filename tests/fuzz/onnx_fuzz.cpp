// libFuzzer target over the ONNX loader (make fuzz; see fuzz_body.h). Seeds:
// ONNX's backend node-test models and kiln's own exports (make_onnx_seeds.py).
#include "fuzz_body.h"
#include "kiln/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool limited = (kiln::config().max_allocation_bytes = int64_t{1} << 30, true);
  (void)limited;
  kiln::fuzz::load_onnx_one(data, size);
  return 0;
}
