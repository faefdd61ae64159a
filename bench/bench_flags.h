// kiln's own benchmark flags, taken out of argv before Google Benchmark
// parses it: --kiln_threads=N sets kiln::config().num_threads.
#pragma once
#include <string>

#include "kiln/config.h"

namespace kiln::bench {

/// Applies and removes kiln's flags; returns the new argc.
inline int take_kiln_flags(int argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--kiln_threads=", 0) == 0)
      config().num_threads = std::stoi(arg.substr(15));
    else
      argv[kept++] = argv[i];
  }
  return kept;
}

}  // namespace kiln::bench
