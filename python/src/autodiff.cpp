// kiln._kiln._GradientTape: the C++ GradientTape for Python's kiln.GradientTape
// (python/kiln/gradient.py handles nesting, the `with` block and None).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "kiln/gradient_tape.h"
#include "kiln/ops.h"

namespace kiln::py {
namespace {

GradSource source_of(nb::handle h) {
  if (is_variable(h)) return GradSource(nb::cast<Variable&>(h));
  if (is_tensor(h)) return GradSource(nb::cast<Tensor&>(h));
  throw nb::type_error(str_cat("GradientTape: sources must be tensors or variables, got ",
                               nb::cast<std::string>(nb::str(h.type())))
                           .c_str());
}

}  // namespace

void bind_autodiff(nb::module_& m) {
  nb::class_<GradientTape>(m, "_GradientTape", "Records ops for reverse-mode differentiation.")
      .def(nb::init<bool, bool>(), nb::arg("persistent") = false,
           nb::arg("watch_accessed_variables") = true)
      .def("watch",
           [](GradientTape& t, nb::handle x) {
             GradSource s = source_of(x);
             if (s.is_variable())
               t.watch(s.variable());
             else
               t.watch(s.tensor());
           })
      .def(
          "gradient",
          [](GradientTape& t, nb::list targets, nb::list sources, nb::list output_gradients,
             bool zero) {
            std::vector<Tensor> ts;
            for (nb::handle x : targets) ts.push_back(to_tensor(x, DType::kInvalid, "target"));
            std::vector<GradSource> ss;
            for (nb::handle x : sources) ss.push_back(source_of(x));
            std::vector<Tensor> og;
            for (nb::handle x : output_gradients)
              og.push_back(x.is_none() ? Tensor()
                                       : to_tensor(x, DType::kInvalid, "output_gradients"));
            std::vector<Tensor> gs = t.gradient(
                ts, ss, og, zero ? UnconnectedGradients::kZero : UnconnectedGradients::kNone);
            nb::list out;
            for (Tensor& g : gs) out.append(g.defined() ? wrap(std::move(g)) : nb::none());
            return out;
          },
          nb::arg("targets"), nb::arg("sources"), nb::arg("output_gradients"), nb::arg("zero"))
      .def(
          "jacobian",
          [](GradientTape& t, nb::handle target, nb::handle sources, bool zero) {
            std::vector<GradSource> ss;
            for (nb::handle x : sources) ss.push_back(source_of(x));
            std::vector<Tensor> js =
                t.jacobian(to_tensor(target, DType::kInvalid, "target"), ss,
                           zero ? UnconnectedGradients::kZero : UnconnectedGradients::kNone);
            nb::list out;
            for (Tensor& j : js) out.append(j.defined() ? wrap(std::move(j)) : nb::none());
            return out;
          },
          nb::arg("target"), nb::arg("sources"), nb::arg("zero"))
      .def("watched_variables", &GradientTape::watched_variables,
           "The watched variables, in the order they were first watched.")
      .def("stop", &GradientTape::stop, "Ends recording (the end of the with block).")
      .def("start", &GradientTape::start, "Resumes recording.")
      .def("reset", &GradientTape::reset, "Forgets everything recorded and watched.")
      .def_prop_ro("persistent", &GradientTape::persistent)
      .def_prop_ro("recording", &GradientTape::recording);
  m.def(
      "stop_gradient",
      [](nb::handle x) {
        return wrap(stop_gradient(to_tensor(x, DType::kInvalid, "stop_gradient")));
      },
      nb::arg("input"), "The input, with no gradient flowing through it (tf.stop_gradient).");
}

}  // namespace kiln::py
