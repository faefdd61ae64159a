// libkiln's thread-local storage: the library uses initial-exec TLS (fast
// access on the hot path), so its whole TLS block comes from the static TLS
// that glibc keeps spare for libraries loaded by dlopen (Python's import), a
// few KB shared with every other such library. A large thread_local (a
// 3 KB kernel cache did) made `import kiln` fail with "cannot allocate
// memory in static TLS block" depending on what was loaded before it.
#include <gtest/gtest.h>
#include <link.h>

#include <cstring>

#include "kiln/tensor.h"

namespace kiln {
namespace {

struct Found {
  size_t tls_bytes = 0;
  bool seen = false;
};

int visit(dl_phdr_info* info, size_t, void* data) {
  auto* f = static_cast<Found*>(data);
  if (!info->dlpi_name || !std::strstr(info->dlpi_name, "libkiln.so")) return 0;
  f->seen = true;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS) f->tls_bytes = info->dlpi_phdr[i].p_memsz;
  return 1;
}

TEST(StaticTls, LibkilnKeepsItsThreadLocalStorageSmall) {
  (void)Tensor(1.f);  // libkiln is loaded
  Found f;
  dl_iterate_phdr(visit, &f);
  ASSERT_TRUE(f.seen) << "libkiln.so is not among the loaded objects";
  // Large per-thread state belongs on the heap (detail::ThreadCache).
  EXPECT_LE(f.tls_bytes, 1024u) << "libkiln's TLS block is " << f.tls_bytes << " bytes";
}

}  // namespace
}  // namespace kiln
