// Replays the loader's fuzz corpus and crash reproducers (tests/fuzz/corpus,
// grown by make fuzz) against tests/fuzz/base: each must load or fail with a
// kiln error; under make test-asan, with no sanitizer report.
#include <filesystem>

#include "../../fuzz/fuzz_body.h"
#include "test_util.h"

namespace kiln {
namespace {
namespace fs = std::filesystem;

TEST(FuzzCorpus, EveryInputLoadsOrFailsCleanly) {
  const fs::path src = KILN_SOURCE_DIR;
  const fs::path work = fs::temp_directory_path() / ("kiln_corpus_" + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::copy(src / "tests/fuzz/base", work, fs::copy_options::recursive);
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(src / "tests/fuzz/corpus")) {
    const std::string bytes = testing::read_bytes(e.path().string());
    SCOPED_TRACE(e.path().string());
    fuzz::load_one(work.string(), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++n;
  }
  fs::remove_all(work);
  EXPECT_GT(n, 0u);
  // The base itself is a valid export.
  EXPECT_NO_THROW(saved_model::load((src / "tests/fuzz/base").string()));
}

}  // namespace
}  // namespace kiln
