// kiln.onnx.export's C++ side: a concrete function as ONNX model bytes.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "kiln/onnx.h"

namespace kiln::py {

void bind_onnx_export(nb::module_& m) {
  m.def(
      "_onnx_export_bytes",
      [](std::shared_ptr<const ConcreteFunction> cf, int opset, const std::string& graph_name,
         std::vector<std::string> output_names) {
        onnx::ExportOptions o;
        o.opset = opset;
        o.graph_name = graph_name;
        o.output_names = std::move(output_names);
        std::string bytes;
        {
          nb::gil_scoped_release release;
          bytes = onnx::export_bytes(*cf, o);
        }
        return nb::bytes(bytes.data(), bytes.size());
      },
      nb::arg("concrete_function"), nb::arg("opset") = onnx::kDefaultOpset,
      nb::arg("graph_name") = "", nb::arg("output_names") = std::vector<std::string>{});
}

}  // namespace kiln::py
