// libFuzzer target over kiln's decoders of untrusted bytes (make fuzz-decoders;
// the inputs and decoders are described in decoders_body.h).
#include "decoders_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::decoders::decode_one(data, size);
  return 0;
}
