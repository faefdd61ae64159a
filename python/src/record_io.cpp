// kiln.io's C++ side: TFRecord files (include/kiln/record_io.h) and CRC-32C.
#include "kiln/record_io.h"

#include <nanobind/stl/string.h>

#include "bindings.h"
#include "core/crc32c.h"

namespace kiln::py {
namespace {

nb::bytes to_bytes(const std::string& s) {
  return nb::bytes(s.data(), s.size());
}

std::string_view view(const nb::bytes& b) {
  return {b.c_str(), b.size()};
}

}  // namespace

void bind_record_io(nb::module_& m) {
  nb::class_<io::RecordWriter>(m, "RecordWriter")
      .def(
          "__init__",
          [](io::RecordWriter* self, const std::string& path, const std::string& compression,
             int level, bool append) {
            io::RecordWriterOptions o;
            o.compression = io::compression_from_string(compression);
            o.compression_level = level;
            o.append = append;
            new (self) io::RecordWriter(path, o);
          },
          nb::arg("path"), nb::arg("compression") = "", nb::arg("level") = -1,
          nb::arg("append") = false)
      .def("write", [](io::RecordWriter& w, const nb::bytes& b) { w.write(view(b)); })
      .def("flush", &io::RecordWriter::flush)
      .def("close", &io::RecordWriter::close)
      .def_prop_ro("closed", &io::RecordWriter::closed);

  nb::class_<io::RecordReader>(m, "RecordReader")
      .def(
          "__init__",
          [](io::RecordReader* self, const std::string& path, const std::string& compression,
             size_t buffer_size) {
            new (self)
                io::RecordReader(path, io::compression_from_string(compression), buffer_size);
          },
          nb::arg("path"), nb::arg("compression") = "", nb::arg("buffer_size") = 256 * 1024)
      // The next record's bytes, or None at the end of the file.
      .def("read",
           [](io::RecordReader& r) -> nb::object {
             std::string out;
             bool got;
             {
               nb::gil_scoped_release unlocked;
               got = r.read(&out);
             }
             if (!got) return nb::none();
             return to_bytes(out);
           })
      .def_prop_ro("offset", &io::RecordReader::offset);

  m.def(
      "crc32c",
      [](const nb::bytes& b, uint32_t crc) { return detail::crc32c(b.c_str(), b.size(), crc); },
      nb::arg("data"), nb::arg("crc") = 0);
  m.def("mask_crc32c", &detail::mask_crc);
  m.def("frame_record", [](const nb::bytes& b) { return to_bytes(io::frame_record(view(b))); });
}

}  // namespace kiln::py
