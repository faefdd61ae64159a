// kiln.train's C++ side: TensorFlow's tensor bundle (include/kiln/checkpoint.h)
// as plain Python data. Values cross as bytes (written) or are copied into a
// NumPy array the caller allocates (read), so any NumPy dtype TF has works.
#include "kiln/checkpoint.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "bindings.h"

namespace kiln::py {
namespace {

using checkpoint::BundleReader;
using checkpoint::BundleWriter;
using checkpoint::ObjectGraph;

int dtype_number(const std::string& name) {
  const int n = checkpoint::tf_dtype(name);
  if (!n) throw UnimplementedError(str_cat("checkpoints do not hold ", name, " values"));
  return n;
}

nb::bytes object_graph_bytes(const nb::list& nodes) {
  ObjectGraph g;
  for (nb::handle h : nodes) {
    auto [children, attributes, slots] = nb::cast<std::tuple<nb::list, nb::list, nb::list>>(h);
    ObjectGraph::Node n;
    for (nb::handle c : children) n.children.push_back(nb::cast<std::pair<std::string, int>>(c));
    for (nb::handle a : attributes) {
      auto [name, full, key] = nb::cast<std::tuple<std::string, std::string, std::string>>(a);
      n.attributes.push_back({name, full, key});
    }
    for (nb::handle s : slots) {
      auto [orig, name, node] = nb::cast<std::tuple<int, std::string, int>>(s);
      n.slots.push_back({orig, name, node});
    }
    g.nodes.push_back(std::move(n));
  }
  const std::string b = checkpoint::encode_object_graph(g);
  return nb::bytes(b.data(), b.size());
}

nb::list object_graph_nodes(const nb::bytes& bytes, const std::string& where) {
  const ObjectGraph g = checkpoint::decode_object_graph({bytes.c_str(), bytes.size()}, where);
  nb::list out;
  for (const ObjectGraph::Node& n : g.nodes) {
    nb::list children, attributes, slots;
    for (const auto& [name, id] : n.children) children.append(nb::make_tuple(name, id));
    for (const auto& a : n.attributes)
      attributes.append(nb::make_tuple(a.name, a.full_name, a.checkpoint_key));
    for (const auto& s : n.slots)
      slots.append(nb::make_tuple(s.original_node, s.slot_name, s.slot_node));
    out.append(nb::make_tuple(children, attributes, slots));
  }
  return out;
}

// Copies the plain tensor `key` into `out` (C-contiguous, of its size).
void read_into(const BundleReader& r, const std::string& key,
               nb::ndarray<nb::c_contig, nb::device::cpu> out) {
  std::string_view b;
  {
    nb::gil_scoped_release release;
    b = r.bytes(key);
  }
  if (out.nbytes() != b.size())
    throw InvalidArgumentError(
        str_cat("'", key, "': ", b.size(), " stored bytes for a buffer of ", out.nbytes()));
  if (!b.empty()) std::memcpy(out.data(), b.data(), b.size());
}

nb::list read_strings(const BundleReader& r, const std::string& key) {
  std::vector<std::string> s;
  {
    nb::gil_scoped_release release;
    s = r.strings(key);
  }
  nb::list out;
  for (const std::string& x : s) out.append(nb::bytes(x.data(), x.size()));
  return out;
}

}  // namespace

void bind_checkpoint(nb::module_& m) {
  nb::class_<BundleReader>(m, "_BundleReader")
      .def(nb::init<const std::string&>(), nb::call_guard<nb::gil_scoped_release>())
      .def("keys", &BundleReader::keys)
      .def("entry",
           [](const BundleReader& r, const std::string& key) {
             const checkpoint::Entry& e = r.entry(key);
             return nb::make_tuple(std::string(checkpoint::dtype_name(e.dtype)), e.shape);
           })
      .def("read_into", &read_into)
      .def("read_strings", &read_strings);
  nb::class_<BundleWriter>(m, "_BundleWriter")
      .def(nb::init<std::string>())
      .def("add_bytes",
           [](BundleWriter& w, const std::string& key, const std::string& dtype,
              const std::vector<int64_t>& shape, nb::bytes data) {
             w.add_bytes(key, dtype_number(dtype), shape, {data.c_str(), data.size()});
           })
      .def("add_strings",
           [](BundleWriter& w, const std::string& key, const std::vector<int64_t>& shape,
              const std::vector<nb::bytes>& values) {
             std::vector<std::string> s;
             for (const nb::bytes& v : values) s.emplace_back(v.c_str(), v.size());
             w.add_strings(key, shape, s);
           })
      .def("finish", &BundleWriter::finish, nb::call_guard<nb::gil_scoped_release>())
      .def("abandon", &BundleWriter::abandon);
  m.def("_is_bundle", &checkpoint::is_bundle);
  m.def("_encode_object_graph", &object_graph_bytes);
  m.def("_decode_object_graph", &object_graph_nodes);
}

}  // namespace kiln::py
