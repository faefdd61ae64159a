// Internal: a read-only file mapped copy-on-write (writes to a tensor sharing
// it stay in memory); unmapped when the last holder lets go.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "kiln/tensor.h"

namespace kiln::saved_model::detail {

struct MappedFile {
  void* base = nullptr;
  size_t size = 0;
  ~MappedFile();
  const char* data() const { return static_cast<const char*>(base); }
};

/// Maps the regular file `path`, which must hold exactly `want` bytes
/// (DataLossError naming the file otherwise; NotFoundError when missing).
std::shared_ptr<MappedFile> map_file(const std::string& path, uint64_t want);

/// The size of the regular file `path`; NotFoundError when missing.
uint64_t file_size(const std::string& path);

/// A tensor sharing `n` bytes at `p` inside `m` (kept alive by the tensor).
Tensor tensor_in(const std::shared_ptr<MappedFile>& m, const char* p, size_t n, DType dt,
                 const Shape& shape);

}  // namespace kiln::saved_model::detail
