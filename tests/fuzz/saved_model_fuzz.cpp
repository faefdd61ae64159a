// libFuzzer target over the saved-model loader (make fuzz; see fuzz_body.h).
// KILN_FUZZ_BASE names the export whose files the inputs replace.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "fuzz_body.h"
#include "kiln/config.h"

namespace {
const std::string& work_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("KILN_FUZZ_BASE");
    if (!base) {
      std::fprintf(stderr, "set KILN_FUZZ_BASE to a kiln export\n");
      std::abort();
    }
    std::string d = "/tmp/kiln_fuzz_" + std::to_string(::getpid());
    std::filesystem::remove_all(d);
    std::filesystem::copy(base, d, std::filesystem::copy_options::recursive);
    kiln::config().max_allocation_bytes = int64_t{1} << 30;
    return d;
  }();
  return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::load_one(work_dir(), data, size);
  return 0;
}
