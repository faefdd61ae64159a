// kiln.saved_model's C++ side: the Exporter, and a loaded export as plain
// Python data (kiln/saved_model.py builds the restored objects from it).
#include "kiln/saved_model.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace kiln::py {

void bind_saved_model(nb::module_& m) {
  using saved_model::Exporter;
  nb::class_<Exporter>(m, "_Exporter")
      .def(nb::init<>())
      .def("add_object", &Exporter::add_object, nb::arg("identifier"))
      .def("add_variable", &Exporter::add_variable)
      .def("add_function", &Exporter::add_function)
      .def("add_child", &Exporter::add_child)
      .def("add_signature", &Exporter::add_signature)
      .def("save", &Exporter::save, nb::call_guard<nb::gil_scoped_release>());

  m.def(
      "_tf_import_coverage", [] { return saved_model::tf_import_coverage(); },
      "[(TensorFlow op, how kiln imports it)] for docs/TF_OPS.md.");

  // (objects, signatures): objects[i] = (kind, identifier, children, functions,
  // variable or None, signature key, asset path); signatures[key] = (function, input keys,
  // output keys).
  m.def("_load_saved_model", [](const std::string& dir) {
    std::shared_ptr<const saved_model::SavedModel> sm;
    {
      nb::gil_scoped_release release;
      sm = saved_model::load(dir);
    }
    static const char* kinds[] = {"user", "function", "variable", "signature", "asset"};
    nb::list objects;
    for (const auto& o : sm->objects()) {
      nb::list children;
      for (const auto& [n, c] : o.children) children.append(nb::make_tuple(n, c));
      nb::object var =
          o.kind == saved_model::LoadedObject::Kind::kVariable ? nb::cast(o.variable) : nb::none();
      objects.append(nb::make_tuple(kinds[static_cast<int>(o.kind)], o.identifier, children,
                                    nb::cast(o.functions), var, o.signature, o.asset_path));
    }
    nb::dict sigs;
    for (const auto& [k, s] : sm->signatures()) {
      // Variables stay alive through the functions' handle constants.
      sigs[k.c_str()] = nb::make_tuple(s.function(), s.input_keys(), s.output_keys());
    }
    return nb::make_tuple(objects, sigs);
  });
}

}  // namespace kiln::py
