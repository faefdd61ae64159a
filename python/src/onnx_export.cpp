// kiln.onnx.export's C++ side: a concrete function written as an ONNX model.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "kiln/onnx.h"

namespace kiln::py {

void bind_onnx_export(nb::module_& m) {
  m.def(
      "_onnx_export",
      [](std::shared_ptr<const ConcreteFunction> cf, const std::string& path, int opset,
         const std::string& graph_name, std::vector<std::string> output_names) {
        onnx::ExportOptions o;
        o.opset = opset;
        o.graph_name = graph_name;
        o.output_names = std::move(output_names);
        nb::gil_scoped_release release;
        onnx::export_function(*cf, path, o);  // atomic: temporary file, then rename
      },
      nb::arg("concrete_function"), nb::arg("path"), nb::arg("opset") = onnx::kDefaultOpset,
      nb::arg("graph_name") = "", nb::arg("output_names") = std::vector<std::string>{});
}

}  // namespace kiln::py
