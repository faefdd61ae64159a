// Replays the ONNX loader's fuzz corpus (tests/fuzz/onnx_corpus, grown by
// make fuzz): each input loads or fails with a kiln error; under
// make test-asan, with no sanitizer report.
#include <filesystem>

#include "../../fuzz/fuzz_body.h"
#include "test_util.h"

namespace kiln {
namespace {
namespace fs = std::filesystem;

TEST(OnnxFuzzCorpus, EveryInputLoadsOrFailsCleanly) {
  const fs::path dir = fs::path(KILN_SOURCE_DIR) / "tests/fuzz/onnx_corpus";
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string bytes = testing::read_bytes(e.path().string());
    SCOPED_TRACE(e.path().string());
    fuzz::load_onnx_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++n;
  }
  EXPECT_GT(n, 0u);
}

}  // namespace
}  // namespace kiln
