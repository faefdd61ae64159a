// Control flow and printing from Python: cond / while_loop over flat tensor
// lists (kiln/control_flow.py handles nesting), TensorArray, and print with
// output streams that write to Python's sys.stdout / sys.stderr.
#include "kiln/control_flow.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <sstream>

#include "bindings.h"
#include "convert.h"
#include "kiln/context.h"
#include "kiln/ops.h"

namespace kiln::py {

namespace {

std::vector<Tensor> tensor_list(nb::handle seq, const char* what) {
  std::vector<Tensor> out;
  for (nb::handle x : seq) out.push_back(to_tensor(x, DType::kInvalid, what));
  return out;
}

nb::list py_list(std::vector<Tensor> ts) {
  nb::list l;
  for (Tensor& t : ts) l.append(wrap(std::move(t)));
  return l;
}

// A stream whose text goes to a Python file object; sys.stdout / sys.stderr
// are looked up at each write so pytest's capture and redirections work.
class PyStreamBuf final : public std::stringbuf {
 public:
  PyStreamBuf(std::string sys_name, nb::object file)
      : sys_name_(std::move(sys_name)), file_(std::move(file)) {}
  int sync() override {
    std::string text = str();
    str("");
    if (text.empty()) return 0;
    nb::gil_scoped_acquire gil;
    try {
      nb::object f =
          sys_name_.empty() ? file_ : nb::module_::import_("sys").attr(sys_name_.c_str());
      f.attr("write")(text);
      if (nb::hasattr(f, "flush")) f.attr("flush")();
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("kiln.print");
    }
    return 0;
  }

 private:
  std::string sys_name_;
  nb::object file_;
};

struct PyStream {
  PyStreamBuf buf;
  std::ostream os;
  std::string id;
  PyStream(std::string sys_name, nb::object file)
      : buf(std::move(sys_name), std::move(file)), os(&buf) {
    id = register_print_stream(os);
  }
};

std::string stream_id(nb::handle stream) {
  static PyStream* out = new PyStream("stdout", nb::object());
  static PyStream* err = new PyStream("stderr", nb::object());
  if (stream.is_none()) return err->id;
  if (nb::isinstance<nb::str>(stream)) return nb::cast<std::string>(stream);
  nb::module_ sys = nb::module_::import_("sys");
  if (stream.is(sys.attr("stdout")) || stream.is(sys.attr("__stdout__"))) return out->id;
  if (stream.is(sys.attr("stderr")) || stream.is(sys.attr("__stderr__"))) return err->id;
  // Any other file-like object: a stream kept for the life of the process.
  static std::vector<std::pair<nb::object, PyStream*>>* others =
      new std::vector<std::pair<nb::object, PyStream*>>();
  for (auto& [o, s] : *others)
    if (o.is(stream)) return s->id;
  auto* s = new PyStream("", nb::borrow(stream));
  others->emplace_back(nb::borrow(stream), s);
  return s->id;
}

// A Python callable as the body of an EagerPyFunc op (kiln.py_function).
class PySubgraph final : public Subgraph {
 public:
  PySubgraph(std::string name, nb::object fn, std::vector<TensorSpec> outs)
      : name_(std::move(name)), fn_(std::move(fn)), outs_(std::move(outs)) {}
  ~PySubgraph() override {
    if (!Py_IsInitialized()) {
      fn_.release();  // the interpreter is gone: nothing to release into
      return;
    }
    nb::gil_scoped_acquire gil;
    fn_.reset();
  }
  const std::string& name() const override { return name_; }
  std::span<const TensorSpec> input_specs() const override { return {}; }
  std::span<const TensorSpec> output_specs() const override { return outs_; }
  std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
    nb::gil_scoped_acquire gil;
    // Python errors (in the callback or converting its results) become kiln
    // errors naming the callback: the op may be running inside a graph.
    try {
      return call(inputs);
    } catch (nb::python_error& e) {
      // kiln errors raised by the callback keep their kind and message;
      // StopIteration (an exhausted iterator) is OutOfRange, as in tf.data.
      nb::module_ errors = nb::module_::import_("kiln.errors");
      if (e.matches(PyExc_StopIteration)) throw OutOfRangeError("End of sequence");
      if (e.matches(errors.attr("OpError"))) {
        std::string kind = nb::cast<std::string>(e.type().attr("__name__"));
        std::string msg = nb::cast<std::string>(nb::str(e.value()));
        Code c = error_code_from_class_name(kind);
        throw_error(c == Code::kOk ? Code::kInvalidArgument : c, msg);
      }
      throw InvalidArgumentError(str_cat("EagerPyFunc '", name_, "' raised ", e.what()));
    } catch (nb::builtin_exception& e) {
      throw InvalidArgumentError(str_cat("EagerPyFunc '", name_, "': ", e.what()));
    }
  }

 private:
  std::vector<Tensor> call(std::span<const Tensor> inputs) const {
    nb::list args;
    for (const Tensor& t : inputs) args.append(wrap(t));
    nb::object r = fn_(*nb::tuple(args));
    std::vector<Tensor> out;
    if (outs_.size() == 1 && !nb::isinstance<nb::list>(r) && !nb::isinstance<nb::tuple>(r)) {
      out.push_back(to_tensor(r, outs_[0].dtype, "py_function result"));
      return out;
    }
    size_t i = 0;
    for (nb::handle x : r) {
      DType want = i < outs_.size() ? outs_[i].dtype : DType::kInvalid;
      out.push_back(to_tensor(x, want, "py_function result"));
      ++i;
    }
    return out;
  }

  std::string name_;
  nb::object fn_;
  std::vector<TensorSpec> outs_;
};

// kiln.TensorArray (a Python class deriving from _TensorArray), which
// kiln/control_flow.py registers once; nullptr until then.
PyObject* g_result_class = nullptr;

// A new kiln.TensorArray holding `ta` (every write returns a new one; of
// subclasses too, as before the class moved to C++).
nb::object new_tensor_array(nb::handle self, TensorArray ta) {
  nb::object o = nb::inst_alloc(g_result_class ? nb::handle(g_result_class) : self.type());
  new (nb::inst_ptr<TensorArray>(o)) TensorArray(std::move(ta));
  nb::inst_mark_ready(o);
  return o;
}

bool truthy(nb::handle h) {
  const int r = PyObject_IsTrue(h.ptr());
  if (r < 0) throw nb::python_error();
  return r == 1;
}

// The C++ half of kiln.TensorArray (tf.TensorArray's signature; the Python
// class adds gather, scatter and the docs). Methods take TensorFlow's unused
// `name` so calls need no Python frame.
void bind_tensor_array(nb::module_& m) {
  auto ta_of = [](nb::handle self) -> const TensorArray& {
    const TensorArray* ta = nullptr;
    if (!nb::try_cast<const TensorArray*>(self, ta, false) || !ta)
      throw nb::type_error(
          str_cat("expected a kiln.TensorArray, got ", Py_TYPE(self.ptr())->tp_name).c_str());
    return *ta;
  };
  m.def("_set_tensor_array_class", [](nb::handle cls) {
    if (!PyType_Check(cls.ptr()) ||
        !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()),
                          reinterpret_cast<PyTypeObject*>(nb::type<TensorArray>().ptr())))
      throw nb::type_error("expected a subclass of _TensorArray");
    Py_XSETREF(g_result_class, nb::borrow(cls).release().ptr());
  });
  nb::class_<TensorArray>(m, "_TensorArray")
      .def(
          "__init__",
          [](TensorArray* self, nb::handle dtype, nb::handle size, nb::handle dynamic_size,
             nb::handle, nb::handle, nb::handle, nb::handle, nb::handle infer_shape,
             nb::handle element_shape, nb::handle, nb::handle) {
            const bool dynamic = truthy(dynamic_size);
            if (size.is_none() && !dynamic)
              throw nb::value_error("TensorArray: size must be given unless dynamic_size=True");
            const DType dt = to_dtype(dtype);
            Tensor n = size.is_none() ? Tensor(int32_t{0}) : to_tensor(size, DType::kInt32, "size");
            new (self) TensorArray(dt, n, dynamic, to_shape(element_shape), truthy(infer_shape));
          },
          nb::arg("dtype"), nb::arg("size").none() = nb::none(),
          nb::arg("dynamic_size").none() = nb::none(),
          nb::arg("clear_after_read").none() = nb::none(),
          nb::arg("tensor_array_name").none() = nb::none(), nb::arg("handle").none() = nb::none(),
          nb::arg("flow").none() = nb::none(), nb::arg("infer_shape").none() = true,
          nb::arg("element_shape").none() = nb::none(),
          nb::arg("colocate_with_first_write_call").none() = true,
          nb::arg("name").none() = nb::none())
      .def("_with_handle",
           [ta_of](nb::handle self, nb::handle h) {
             return new_tensor_array(self, ta_of(self).with_handle(to_tensor(h)));
           })
      .def(
          "write",
          [ta_of](nb::handle self, nb::handle index, nb::handle value, nb::handle) {
            const TensorArray& ta = ta_of(self);
            return new_tensor_array(
                self, ta.write(to_tensor(index, DType::kInt32, "index"),
                               to_tensor(value, ta.dtype(), "TensorArray.write value")));
          },
          nb::arg("index"), nb::arg("value"), nb::arg("name").none() = nb::none())
      .def(
          "read",
          [](const TensorArray& ta, nb::handle index, nb::handle) {
            return wrap(ta.read(to_tensor(index, DType::kInt32, "index")));
          },
          nb::arg("index"), nb::arg("name").none() = nb::none())
      .def(
          "stack", [](const TensorArray& ta, nb::handle) { return wrap(ta.stack()); },
          nb::arg("name").none() = nb::none())
      .def(
          "unstack",
          [ta_of](nb::handle self, nb::handle value, nb::handle) {
            const TensorArray& ta = ta_of(self);
            return new_tensor_array(
                self, ta.unstack(to_tensor(value, ta.dtype(), "TensorArray.unstack value")));
          },
          nb::arg("value"), nb::arg("name").none() = nb::none())
      .def(
          "size", [](const TensorArray& ta, nb::handle) { return wrap(ta.size()); },
          nb::arg("name").none() = nb::none())
      .def_prop_ro("handle", [](const TensorArray& ta) { return wrap(ta.handle()); })
      .def_prop_ro("flow", [](const TensorArray& ta) { return wrap(ta.handle()); })
      .def_prop_ro("dtype", [](const TensorArray& ta) { return dtype_object(ta.dtype()); })
      .def_prop_ro("element_shape",
                   [](const TensorArray& ta) { return shape_object(ta.element_shape()); })
      .def_prop_ro("dynamic_size", &TensorArray::dynamic_size)
      .def_prop_ro("infer_shape", &TensorArray::infer_shape);
}

}  // namespace

void bind_control_flow(nb::module_& m) {
  m.def(
      "_custom_gradient",
      [](nb::handle args, nb::handle values, nb::object grad_fn, const std::string& name) {
        std::vector<Tensor> xs = tensor_list(args, "custom_gradient argument");
        std::vector<Tensor> ys = tensor_list(values, "custom_gradient result");
        std::vector<TensorSpec> specs;
        for (const Tensor& x : xs) specs.push_back({x.dtype(), x.shape()});
        Ref<Subgraph> fn = Ref<Subgraph>::adopt(new PySubgraph(name, grad_fn, std::move(specs)));
        std::vector<Tensor> in = xs;
        in.insert(in.end(), ys.begin(), ys.end());
        std::vector<Tensor> out =
            call_op(OpId::CustomGradient, in, Attrs{fn, static_cast<int64_t>(xs.size())});
        nb::list l;
        for (Tensor& t : out) l.append(wrap(std::move(t)));
        return l;
      },
      nb::arg("args"), nb::arg("values"), nb::arg("grad_fn"), nb::arg("name"),
      "Records the values as the outputs of an op whose gradient is grad_fn "
      "(tf.custom_gradient).");
  m.def(
      "_py_function",
      [](nb::object func, nb::handle inputs, nb::handle tout, nb::handle output_shapes,
         bool stateful) {
        (void)stateful;  // always stateful: the callback may have side effects
        std::vector<TensorSpec> outs;
        size_t i = 0;
        std::vector<nb::handle> shapes;
        if (!output_shapes.is_none())
          for (nb::handle s : output_shapes) shapes.push_back(s);
        for (nb::handle d : tout) {
          Shape s = i < shapes.size() ? to_shape(shapes[i]) : Shape::unknown_rank();
          outs.push_back({to_dtype(d), s});
          ++i;
        }
        std::string name = nb::hasattr(func, "__name__")
                               ? nb::cast<std::string>(func.attr("__name__"))
                               : std::string("py_function");
        Ref<Subgraph> body = Ref<Subgraph>::adopt(new PySubgraph(name, func, std::move(outs)));
        std::vector<Tensor> in = tensor_list(inputs, "py_function input");
        if (!current_context().is_tracing()) {
          // Eagerly: call now (result shapes are only known after the call).
          std::vector<Tensor> out = body->run(in);
          if (out.size() != body->output_specs().size())
            throw InvalidArgumentError(str_cat("py_function '", name, "' returned ", out.size(),
                                               " values, expected ", body->output_specs().size()));
          return py_list(std::move(out));
        }
        Attrs attrs{AttrValue(body)};
        return py_list(call_op(OpId::PyFunction, in, std::move(attrs)));
      },
      nb::arg("func"), nb::arg("inputs"), nb::arg("tout"), nb::arg("output_shapes").none(),
      nb::arg("stateful") = true,
      "Runs func on eager tensors when the op executes (kiln.py_function).");
  m.def(
      "_cond",
      [](nb::handle pred, nb::object true_fn, nb::object false_fn, const std::string& name) {
        Tensor p = to_tensor(pred, DType::kInvalid, "cond pred");
        auto branch = [](nb::object fn) {
          return [fn]() { return tensor_list(fn(), "cond branch output"); };
        };
        return py_list(cond(p, branch(true_fn), branch(false_fn), name));
      },
      nb::arg("pred"), nb::arg("true_fn"), nb::arg("false_fn"), nb::arg("name") = "cond",
      "cond over flat tensor lists (use kiln.cond).");
  m.def(
      "_while_loop",
      [](nb::object cond_fn, nb::object body_fn, nb::handle loop_vars, nb::handle invariants,
         int64_t maximum_iterations, const std::string& name) {
        WhileOptions o;
        o.maximum_iterations = maximum_iterations;
        o.name = name;
        if (!invariants.is_none())
          for (nb::handle s : invariants)
            o.shape_invariants.push_back(s.is_none() ? std::nullopt
                                                     : std::optional<Shape>(to_shape(s)));
        auto c = [cond_fn](const std::vector<Tensor>& vars) {
          return to_tensor(cond_fn(py_list(vars)), DType::kInvalid, "while_loop cond");
        };
        auto b = [body_fn](const std::vector<Tensor>& vars) {
          return tensor_list(body_fn(py_list(vars)), "while_loop body output");
        };
        return py_list(while_loop(c, b, tensor_list(loop_vars, "loop_vars"), o));
      },
      nb::arg("cond"), nb::arg("body"), nb::arg("loop_vars"), nb::arg("shape_invariants").none(),
      nb::arg("maximum_iterations"), nb::arg("name"),
      "while_loop over flat tensor lists (use kiln.while_loop).");

  bind_tensor_array(m);

  m.def(
      "_print",
      [](nb::handle args, nb::handle output_stream, const std::string& sep, const std::string& end,
         int64_t summarize) {
        std::vector<PrintArg> pa;
        for (nb::handle a : args) {
          if (nb::isinstance<nb::str>(a))
            pa.emplace_back(nb::cast<std::string>(a));
          else
            pa.emplace_back(to_tensor(a, DType::kInvalid, "print"));
        }
        PrintSettings s;
        s.output_stream = stream_id(output_stream);
        s.sep = sep;
        s.end = end;
        s.summarize = summarize;
        print(pa, s);
      },
      nb::arg("args"), nb::arg("output_stream").none(), nb::arg("sep"), nb::arg("end"),
      nb::arg("summarize"));
}

}  // namespace kiln::py
