// libFuzzer target over the checkpoint reader (make fuzz; see fuzz_body.h).
// KILN_FUZZ_BUNDLE names the base checkpoint prefix whose files inputs replace.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "fuzz_body.h"
#include "kiln/config.h"

namespace {
const std::string& work_prefix() {
  static const std::string prefix = [] {
    const char* base = std::getenv("KILN_FUZZ_BUNDLE");
    if (!base) {
      std::fprintf(stderr, "set KILN_FUZZ_BUNDLE to a checkpoint prefix\n");
      std::abort();
    }
    const std::string d = "/tmp/kiln_bundle_fuzz_" + std::to_string(::getpid());
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    const std::string b = base;
    std::filesystem::copy_file(kiln::checkpoint::index_path(b), d + "/ckpt.index");
    std::filesystem::copy_file(kiln::checkpoint::data_path(b, 0, 1),
                               kiln::checkpoint::data_path(d + "/ckpt", 0, 1));
    kiln::config().max_allocation_bytes = int64_t{1} << 30;
    return d + "/ckpt";
  }();
  return prefix;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::load_bundle_one(work_prefix(), data, size);
  return 0;
}
