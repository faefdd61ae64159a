#include "saved_model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kiln/buffer.h"

namespace kiln::saved_model::detail {

MappedFile::~MappedFile() {
  if (base) ::munmap(base, size);
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw NotFoundError(str_cat(path, ": ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw DataLossError(str_cat(path, ": not a regular file"));
  return static_cast<uint64_t>(st.st_size);
}

std::shared_ptr<MappedFile> map_file(const std::string& path, uint64_t want) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw NotFoundError(str_cat(path, ": ", std::strerror(err)));
    throw DataLossError(str_cat(path, ": cannot open: ", std::strerror(err)));
  }
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok || static_cast<uint64_t>(st.st_size) != want) {
    ::close(fd);
    throw DataLossError(str_cat(path, ": ",
                                ok ? str_cat(st.st_size, " bytes, the index says ", want)
                                   : std::string("not a regular file")));
  }
  auto m = std::make_shared<MappedFile>();
  if (want) {
    void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      m->base = p;
      m->size = want;
    }
  }
  const int err = errno;
  ::close(fd);
  if (want && !m->base) throw DataLossError(str_cat(path, ": cannot map: ", std::strerror(err)));
  return m;
}

Tensor tensor_in(const std::shared_ptr<MappedFile>& m, const char* p, size_t n, DType dt,
                 const Shape& shape) {
  if (!n) return Tensor::empty(dt, shape);
  // The mapping is private and lives as long as the buffer, and kiln never
  // writes wrapped memory: the contents are fixed (one version, so packed
  // weights and values kept from variables key on it).
  Buffer* b = Buffer::wrap(
      const_cast<char*>(p), n, [m] {}, /*fixed=*/true);
  Tensor t = Tensor::from_buffer(b, 0, dt, shape);
  b->unref();  // the tensor holds it now
  return t;
}

}  // namespace kiln::saved_model::detail
