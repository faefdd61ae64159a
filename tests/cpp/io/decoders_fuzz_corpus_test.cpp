// Replays the decoders' fuzz corpus and crash reproducers (tests/fuzz/
// decoders_corpus and decoders_crashes, grown by make fuzz-decoders): each
// input decodes or fails with an error; under make test-asan, with no
// sanitizer report.
#include <filesystem>

#include "../../fuzz/decoders_body.h"
#include "test_util.h"

namespace kiln {
namespace {
namespace fs = std::filesystem;

TEST(DecodersFuzzCorpus, EveryInputDecodesOrFailsCleanly) {
  size_t n = 0;
  for (const char* sub : {"tests/fuzz/decoders_corpus", "tests/fuzz/decoders_crashes"}) {
    for (const auto& e : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / sub)) {
      if (e.path().extension() == ".py") continue;  // the bomb's generator, not an input
      const std::string bytes = testing::read_bytes(e.path().string());
      SCOPED_TRACE(e.path().string());
      fuzz::decoders::decode_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++n;
    }
  }
  EXPECT_GT(n, 700u);
}

}  // namespace
}  // namespace kiln
