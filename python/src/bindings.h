// The per-area binding entry points of the kiln._kiln extension.
#pragma once
#include <nanobind/nanobind.h>

#include "kiln/variable.h"

namespace kiln::py {
namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_ops(nb::module_& m);
void bind_variables(nb::module_& m);
void bind_function(nb::module_& m);
void bind_control_flow(nb::module_& m);
void bind_autodiff(nb::module_& m);
void bind_saved_model(nb::module_& m);
void bind_onnx_load(nb::module_& m);
void bind_onnx_export(nb::module_& m);
void bind_distribute(nb::module_& m);
void bind_checkpoint(nb::module_& m);
void bind_record_io(nb::module_& m);
void bind_profiler(nb::module_& m);
void bind_summary(nb::module_& m);

/// The Tensor operators (+, ==, [], bool, numpy, ...) on another class.
void add_tensor_operators(nb::class_<Variable>& cls);
/// The tensor's value as NumPy (0-d as a NumPy scalar when scalar_as_item).
nb::object tensor_numpy(const Tensor& t, bool scalar_as_item);

}  // namespace kiln::py
