// Replays kiln-serve's fuzz corpus (tests/fuzz/serve_corpus, grown by make
// fuzz-serve) and, without libFuzzer, deterministic mutations of each input
// (bytes flipped, cut, repeated): each request parses or fails with a kiln
// error; under make test-asan, with no sanitizer report.
#include <algorithm>
#include <filesystem>
#include <random>

#include "../../fuzz/serve_body.h"
#include "test_util.h"

namespace kiln {
namespace {
namespace fs = std::filesystem;

std::string mutate(std::string s, std::mt19937& rng) {
  if (s.size() < 2) return s;
  std::uniform_int_distribution<size_t> at(1, s.size() - 1);  // keep the selector
  switch (rng() % 4) {
    case 0: s[at(rng)] = static_cast<char>(rng()); break;
    case 1: s.resize(at(rng)); break;
    case 2: s.insert(at(rng), s.substr(at(rng), 8)); break;
    default: std::swap(s[at(rng)], s[at(rng)]); break;
  }
  return s;
}

TEST(ServeFuzzCorpus, EveryRequestParsesOrFailsCleanly) {
  std::mt19937 rng(46);
  size_t n = 0;
  for (const auto& e :
       fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "tests/fuzz/serve_corpus")) {
    std::string bytes = testing::read_bytes(e.path().string());
    SCOPED_TRACE(e.path().string());
    for (int k = 0; k < 1000; ++k) {
      fuzz::serve::run_one(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      bytes = k % 20 == 19 ? testing::read_bytes(e.path().string()) : mutate(bytes, rng);
    }
    ++n;
  }
  EXPECT_GE(n, 30u);
}

}  // namespace
}  // namespace kiln
