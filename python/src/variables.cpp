// kiln.Variable: mutable state with TensorFlow's Variable API and the Tensor
// operators (which read the current value).
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "convert.h"
#include "kiln/function.h"
#include "kiln/ops.h"
#include "kiln/trace.h"

namespace kiln::py {

void bind_variables(nb::module_& m) {
  auto cls = nb::class_<Variable>(m, "Variable", nb::dynamic_attr(), nb::is_weak_referenceable(),
                                  "Mutable state with a fixed dtype and shape (tf.Variable).");
  cls.def(
         "__init__",
         [](Variable* self, nb::handle initial_value, bool trainable, nb::handle name,
            nb::handle dtype, nb::handle shape) {
           nb::object init = nb::borrow(initial_value);
           Tensor value;
           {
             // Initial values are computed eagerly, outside any trace (init_scope).
             InitScope scope;
             if (PyCallable_Check(init.ptr()) && !is_tensor(init) && !is_variable(init))
               init = init();
             value = to_tensor(init, to_dtype_or_none(dtype), "Variable initial_value");
           }
           if (!shape.is_none()) {
             nb::object dims = nb::borrow(shape);
             if (nb::hasattr(shape, "as_list")) dims = shape.attr("as_list")();
             std::vector<int64_t> want;
             for (nb::handle d : dims) want.push_back(d.is_none() ? -1 : nb::cast<int64_t>(d));
             if (!Shape(want).is_compatible_with(value.shape()))
               throw nb::value_error(str_cat("Variable: initial value of shape ",
                                             value.shape().to_string(), " does not fit shape ",
                                             Shape(want).to_string())
                                         .c_str());
           }
           std::string n = name.is_none() ? "Variable" : nb::cast<std::string>(name);
           try {
             new (self) Variable(value, n, trainable);
           } catch (const InvalidArgumentError& e) {
             // A function creating variables on a retrace: point at the user's line.
             const std::string msg = e.what();
             if (msg.find(kSingletonVariablesError) == std::string::npos) throw;
             nb::object text = nb::module_::import_("kiln.errors").attr("_in_user_code")(msg);
             throw InvalidArgumentError(nb::cast<std::string>(text));
           }
         },
         nb::arg("initial_value"), nb::arg("trainable") = true, nb::arg("name").none() = nb::none(),
         nb::arg("dtype").none() = nb::none(), nb::arg("shape").none() = nb::none())
      .def_prop_ro("name", &Variable::name)
      .def_prop_ro("dtype", [](const Variable& v) { return dtype_object(v.dtype()); })
      .def_prop_ro("_dims",
                   [](const Variable& v) {
                     nb::list l;
                     for (int64_t d : v.shape().dims()) l.append(d);
                     return nb::tuple(l);
                   })
      .def_prop_ro("trainable", &Variable::trainable)
      .def_prop_ro("handle", [](const Variable& v) { return wrap(v.handle()); })
      .def_prop_ro("_id", &Variable::id)
      .def_prop_ro("device",
                   [](const Variable&) {
                     return std::string("/job:localhost/replica:0/task:0/device:CPU:0");
                   })
      .def(
          "read_value", [](const Variable& v) { return wrap(v.read_value()); },
          "The current value (a snapshot; read at run time inside functions).")
      .def("value", [](const Variable& v) { return wrap(v.read_value()); })
      .def(
          "assign",
          [](nb::handle self, nb::handle value, bool, nb::handle, bool read_value) -> nb::object {
            Variable& v = nb::cast<Variable&>(self);
            v.assign(to_tensor(value, v.dtype(), "assign"));
            return read_value ? nb::borrow(self) : nb::none();
          },
          nb::arg("value"), nb::arg("use_locking") = false, nb::arg("name").none() = nb::none(),
          nb::arg("read_value") = true, "Replaces the value (dtype and shape must match).")
      .def(
          "assign_add",
          [](nb::handle self, nb::handle delta, bool, nb::handle, bool read_value) -> nb::object {
            Variable& v = nb::cast<Variable&>(self);
            v.assign_add(to_tensor(delta, v.dtype(), "assign_add"));
            return read_value ? nb::borrow(self) : nb::none();
          },
          nb::arg("delta"), nb::arg("use_locking") = false, nb::arg("name").none() = nb::none(),
          nb::arg("read_value") = true, "value += delta.")
      .def(
          "assign_sub",
          [](nb::handle self, nb::handle delta, bool, nb::handle, bool read_value) -> nb::object {
            Variable& v = nb::cast<Variable&>(self);
            v.assign_sub(to_tensor(delta, v.dtype(), "assign_sub"));
            return read_value ? nb::borrow(self) : nb::none();
          },
          nb::arg("delta"), nb::arg("use_locking") = false, nb::arg("name").none() = nb::none(),
          nb::arg("read_value") = true, "value -= delta.")
      .def("__hash__", [](const Variable& v) { return v.id(); })
      .def("__len__", [](const Variable& v) {
        if (v.shape().rank() == 0) throw nb::type_error("len() of a scalar Variable");
        return v.shape().dim(0);
      });
  add_tensor_operators(cls);
}

}  // namespace kiln::py
