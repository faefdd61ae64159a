// kiln.onnx.load's C++ side: a model file or bytes -> kiln::onnx::Model (its
// function, or its traces per value of the inputs it reads by value).
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "kiln/onnx.h"

namespace kiln::py {

void bind_onnx_load(nb::module_& m) {
  using onnx::Model;
  nb::class_<Model>(m, "_OnnxModel")
      .def_ro("input_names", &Model::input_names)
      .def_ro("output_names", &Model::output_names)
      .def_ro("value_inputs", &Model::value_inputs)
      .def_ro("ir_version", &Model::ir_version)
      .def_ro("opset", &Model::opset)
      .def_ro("producer_name", &Model::producer_name)
      .def_ro("function", &Model::function)
      .def(
          "concrete_function",
          [](const Model& model, const std::vector<Tensor>& inputs) {
            nb::gil_scoped_release release;
            return model.concrete_function(inputs);
          },
          nb::arg("inputs"))
      .def(
          "__call__",
          [](const Model& model, const std::vector<Tensor>& inputs) {
            nb::gil_scoped_release release;
            return model(inputs);
          },
          nb::arg("inputs"));
  m.def("_onnx_load", [](const std::string& path, bool jit_compile) {
    nb::gil_scoped_release release;
    return onnx::load(path, onnx::LoadOptions{jit_compile, ""});
  });
  m.def("_onnx_load_bytes", [](nb::bytes data, bool jit_compile) {
    std::string bytes(data.c_str(), data.size());
    nb::gil_scoped_release release;
    return onnx::load_bytes(bytes, "<bytes>", onnx::LoadOptions{jit_compile, ""});
  });
  m.def("_onnx_supported_ops", &onnx::supported_import_ops);
}

}  // namespace kiln::py
