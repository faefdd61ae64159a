// The kiln._kiln extension module: error translation and the per-area
// bindings (tensor, ops, variables, function, control flow).
#include <nanobind/nanobind.h>

#include <string_view>

#include "bindings.h"
#include "convert.h"
#include "kiln/config.h"
#include "kiln/function.h"
#include "kiln/status.h"

namespace kiln::py {

void bind_errors(nb::module_& m) {
  // kiln errors become the classes of kiln.errors (OpError subclasses).
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      std::string name = e.code() == Code::kOk ? "UnknownError" : error_class_name(e.code());
      if (std::string_view(e.what()).find("captured an external symbolic tensor") !=
          std::string_view::npos)
        name = "LeakedTensorError";  // also a TypeError, as in TensorFlow
      nb::object cls = nb::module_::import_("kiln.errors").attr(name.c_str());
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
  (void)m;
}

}  // namespace kiln::py

NB_MODULE(_kiln, m) {
  using namespace kiln::py;
  m.doc() = "kiln's C++ core (tensors, ops, functions); use the `kiln` package.";
  m.attr("__version__") = kiln::version();
  // Functions and variables held by modules are still alive at exit; that
  // is expected, not a leak worth reporting.
  nanobind::set_leak_warnings(false);
  bind_errors(m);
  bind_tensor(m);
  bind_ops(m);
  bind_variables(m);
  bind_function(m);
  bind_control_flow(m);
  bind_autodiff(m);
  bind_saved_model(m);
  bind_onnx_load(m);
  bind_onnx_export(m);
  bind_distribute(m);
  bind_checkpoint(m);
  bind_record_io(m);
  bind_profiler(m);
  bind_summary(m);
  // A thread waiting for another thread's trace releases the GIL, which the
  // tracing thread needs to run the Python function (else both wait forever).
  kiln::set_blocking_hooks(kiln::BlockingHooks{
      []() -> void* { return PyGILState_Check() ? PyEval_SaveThread() : nullptr; },
      [](void* token) {
        if (token) PyEval_RestoreThread(static_cast<PyThreadState*>(token));
      }});
}
