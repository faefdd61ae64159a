"""kiln.function: trace a Python function into a graph once per input signature.

The call hot path (trace key, cache lookup, graph execution) is C++
(kiln._kiln._Function); this module handles what only Python knows: the
function's signature (keyword and default arguments), methods (one cache per
instance), AutoGraph conversion and the ConcreteFunction / graph views.
"""
import functools
import inspect
import weakref

import numpy as np

from kiln import _function_text as _text
from kiln import _input_signature as _sig
from kiln._input_signature import InputSignatureError  # noqa: F401  (kiln.function's)
from kiln import _kiln, nest
from kiln import config as _config
from kiln._composite import CompositeTensor
from kiln.autograph import convert_for_trace
from kiln.errors import InvalidArgumentError
from kiln.tensor_shape import TensorShape

_P = inspect.Parameter
_UNSET = object()  # an argument not given in a call


class _Tracer:
    """What the C++ side calls while tracing: rebuilds the Python call from the
    canonical argument list and runs the (AutoGraph-converted) function.
    Holds no reference to the Function, so no reference cycle is formed."""

    __slots__ = ("fn", "params", "autograph", "self_ref", "_converted", "__weakref__")

    def __init__(self, fn, params, autograph, self_ref):
        self.fn = fn
        self.params = params
        self.autograph = autograph
        self.self_ref = self_ref
        self._converted = None

    def target(self):
        if not self.autograph:
            return self.fn
        if self._converted is None:
            self._converted = convert_for_trace(self.fn)
        return self._converted

    def __call__(self, *canon):
        args, kwargs = _uncanonicalize(self.params, canon)
        if self.self_ref is not None:
            obj = self.self_ref()
            if obj is None:
                raise ReferenceError("the object this method belongs to no longer exists")
            args = (obj,) + tuple(args)
        return _outputs_to_tensors(self.target()(*args, **kwargs))


def _outputs_to_tensors(out):
    """Python numbers, bools, strings and NumPy values returned by a traced
    function become tensors, as TensorFlow converts every output."""
    if out is None:
        return None

    def conv(x):
        if isinstance(x, (bool, int, float, str, bytes, np.ndarray, np.generic)):
            return _kiln.convert_to_tensor(x)
        return x

    if not nest.is_nested(out):
        return conv(out)
    return nest.map_structure(conv, out)


def _spec_values(structure):
    """Composite specs (ExtensionType.Spec) replaced by what a trace is made from: a value
    of the composite type holding TensorSpecs (their `_kiln_trace_value()`)."""
    return nest.map_structure(
        lambda s: s._kiln_trace_value() if hasattr(s, "_kiln_trace_value") else s, structure)


def _uncanonicalize(params, canon):
    args, kwargs = [], {}
    for p, v in zip(params, canon):
        if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
            args.append(v)
        elif p.kind == _P.VAR_POSITIONAL:
            args.extend(v)
        elif p.kind == _P.KEYWORD_ONLY:
            kwargs[p.name] = v
        else:
            kwargs.update(v)
    return args, kwargs


_CF_PREFIX = "ConcreteFunction "


class RetraceReason:
    """Why a call traced again: the argument that differed and how."""

    __slots__ = ("argument", "before", "after", "_text")

    def __init__(self, argument, before, after, text):
        self.argument, self.before, self.after, self._text = argument, before, after, text

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"RetraceReason({self._text!r})"


class Function(_kiln._Function):
    """A Python function traced into graphs (tf.function's Function)."""

    def __init__(self, python_function, name=None, input_signature=None, autograph=True,
                 jit_compile=None, reduce_retracing=False, _self_ref=None):
        if not callable(python_function):
            raise TypeError(f"kiln.function expects a callable, got {python_function!r}")
        sig = inspect.signature(python_function)
        params = list(sig.parameters.values())
        if _self_ref is not None:
            params = params[1:]
        self._params = params
        self._signature = sig.replace(parameters=params)
        self._python_function = python_function
        self._self_ref = _self_ref
        self._autograph = autograph
        if jit_compile is None:  # tf.config.optimizer.set_jit decides
            jit_compile = _config.optimizer.get_jit() == "autoclustering"
        self._jit_compile = bool(jit_compile)
        self._reduce_retracing = reduce_retracing
        self._input_signature = None
        self._attr_name = None
        self._bound = None  # instances' Functions, for objects without __dict__
        fname = name or getattr(python_function, "__name__", "function")
        self._name = fname
        if input_signature is not None:
            input_signature = list(input_signature)
            for s in _sig.signature_leaves(input_signature):
                if not isinstance(s, _kiln.TensorSpec) and not hasattr(s, "_kiln_trace_value"):
                    raise TypeError(
                        f"input_signature must be a list of kiln.TensorSpec, got {s!r}")
            self._input_signature = tuple(input_signature)
            if not all(isinstance(s, _kiln.TensorSpec) for s in input_signature):
                # C++ takes one TensorSpec per argument: nested and composite specs
                # are called through the signature's one concrete function.
                self.__class__ = _SpecSignatureFunction
        simple = all(p.kind == _P.POSITIONAL_OR_KEYWORD for p in params)
        nparams = len(params) if simple else 2**62
        names = [p.name for p in params]
        self._tracer = _Tracer(python_function, params, autograph, _self_ref)
        # Simple signatures are bound in C++ (keywords, defaults) on each call.
        defaults = tuple(p.default for p in params) if simple else None
        cpp_signature = None if isinstance(self, _SpecSignatureFunction) else \
            self._input_signature
        # tf.config.optimizer's switches as they stand when the function is made.
        super().__init__(self._tracer, fname, names, cpp_signature,
                         bool(reduce_retracing), bool(jit_compile), nparams, defaults, _P.empty,
                         sorted(_config.optimizer._disabled_passes()))
        functools.update_wrapper(self, python_function, updated=())

    # -- the Python side of the call path --

    def _canonicalize(self, args, kwargs):
        """Binds a call to the signature: one value per parameter, defaults filled;
        values bound to input_signature specs are converted to their dtypes."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}(): {e}") from None
        bound.apply_defaults()
        try:
            return self._canonical_values(bound)
        except (TypeError, ValueError) as e:
            if self._input_signature is None:
                raise
            raise _sig.conversion_error(tuple(bound.arguments.values()), self._input_signature,
                                    str(e)) from None

    def _canonical_values(self, bound):
        canon = []
        sig = self._input_signature
        for k, p in enumerate(self._params):
            v = bound.arguments.get(p.name, p.default)
            if p.kind == _P.VAR_POSITIONAL:
                v = tuple(v) if v is not _P.empty else ()
                if sig is not None:  # its specs follow the named ones
                    v = tuple(_sig.convert_to_spec(x, sig[k + j]) if k + j < len(sig) else x
                              for j, x in enumerate(v))
            elif sig is not None and k < len(sig) and v is not _P.empty and \
                    p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
                v = _sig.convert_to_spec(v, sig[k])
            elif p.kind == _P.VAR_KEYWORD:
                v = dict(v) if v is not _P.empty else {}
            canon.append(v)
        return tuple(canon)

    def _call_eagerly(self, *args, **kwargs):
        if self._self_ref is not None:
            return self._python_function(self._self_ref(), *args, **kwargs)
        return self._python_function(*args, **kwargs)

    # -- the TensorFlow API --

    @property
    def python_function(self):
        """The Python function given to kiln.function (a Function when one was given)."""
        return self._python_function

    @property
    def name(self):
        return self._name

    def _raise_conversion_error(self, args, detail):
        # Called by the C++ __call__ when an argument cannot become its spec's tensor.
        raise _sig.conversion_error(self._flat_call_args(args), self._input_signature, detail)

    def _raise_signature_error(self, args, detail):
        # Called by the C++ __call__ when arguments do not match input_signature:
        # the seed guide's text (the call's inputs, *args items in place of their
        # tuple, and the signature), kiln's own line as a note.
        raise _sig.signature_error(self._flat_call_args(args), self._input_signature, detail)

    def _flat_call_args(self, args):
        # The values of a canonical call: *args items in place of their tuple.
        args = tuple(args)
        if len(args) != len(self._params) or \
                not any(p.kind == _P.VAR_POSITIONAL for p in self._params):
            return args
        out = []
        for p, v in zip(self._params, args):
            if p.kind == _P.VAR_POSITIONAL:
                out.extend(v)
            elif p.kind != _P.VAR_KEYWORD:
                out.append(v)
        return tuple(out)

    @property
    def input_signature(self):
        return self._input_signature

    @property
    def function_spec(self):
        return self._signature

    def get_concrete_function(self, *args, **kwargs):
        """Traces (or finds) the graph for these arguments without running it.
        Tensor arguments may be given as kiln.TensorSpec."""
        if self._input_signature is not None and not args and not kwargs:
            args = self._input_signature
        canon = self._canonicalize(args, kwargs)
        if self._input_signature is not None and \
                all(p.kind == _P.POSITIONAL_OR_KEYWORD for p in self._params):
            canon = tuple(self._input_signature) + tuple(canon[len(self._input_signature):])
        return ConcreteFunction(self._get_concrete(_spec_values(canon)), self)

    def experimental_get_compiler_ir(self, *args, **kwargs):
        """TensorFlow's API for jit_compile=True functions: returns
        ``generator(stage="hlo")`` giving the compiled form as text. Stages:
        "hlo" (the fused kernels' IR as lowered), "optimized_hlo" (after the
        kernel passes), "source" (the generated C++)."""
        cf = self.get_concrete_function(*args, **kwargs)

        def compiler_ir_generator(stage="hlo", device_name=None, platform_name=None):
            if stage not in _COMPILER_IR_STAGES:
                raise ValueError(f"Invalid stage {stage!r}; valid stages are "
                                 + ", ".join(repr(s) for s in _COMPILER_IR_STAGES))
            if not self._jit_compile:
                raise ValueError("experimental_get_compiler_ir needs a function created with "
                                 "jit_compile=True")
            return cf._cf._compiler_ir(stage)
        return compiler_ir_generator

    def pretty_printed_concrete_signatures(self, verbose=True):
        """Every traced signature, in trace order, as the seed guide prints them
        ("double(a)\n  Args:\n ...  Returns:\n ..."; a function with an input_signature
        is traced for it first, as TensorFlow does)."""
        if self._input_signature is not None and not self._concrete_functions():
            self.get_concrete_function()
        cfs = [ConcreteFunction(cf, self) for cf in self._concrete_functions()]
        return "\n\n".join(cf.pretty_printed_signature(verbose) for cf in cfs)

    def retrace_reasons(self):
        """One record per retrace: the argument that differed and how."""
        return [RetraceReason(*r) for r in self._retrace_reasons()]

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        d = getattr(instance, "__dict__", None)
        key = self._attr_name or self._name
        if d is not None:
            f = d.get(key)
            if isinstance(f, Function) and f._self_ref is not None:
                return f
        elif self._bound is not None:
            f = self._bound.get(instance)
            if f is not None:
                return f
        f = Function(self._python_function, name=self._name,
                     input_signature=self._input_signature, autograph=self._autograph,
                     jit_compile=self._jit_compile, reduce_retracing=self._reduce_retracing,
                     _self_ref=weakref.ref(instance))
        if d is not None:
            d[key] = f  # later lookups find it directly: obj.method is stable
        else:
            if self._bound is None:
                self._bound = weakref.WeakKeyDictionary()
            self._bound[instance] = f
        return f

    def __set_name__(self, owner, name):
        self._attr_name = name

    def __repr__(self):
        return f"<kiln.function {self._name} at 0x{id(self):x}>"


class _SpecSignatureFunction(Function):
    """A Function whose input_signature holds composite specs (ExtensionType.Spec): the
    C++ call path takes flat TensorSpecs only, so each call goes through the one concrete
    function traced from the signature (the seed's input_signature error when it does not fit)."""

    def __call__(self, *args, **kwargs):
        if _config.functions_run_eagerly():
            return self._call_eagerly(*args, **kwargs)
        binding = self._signature.bind(*args, **kwargs)
        bound = binding.arguments
        for p, spec in zip(self._params, self._input_signature):
            if p.name not in bound:
                continue
            try:
                bound[p.name] = _sig.fit_nested(bound[p.name], spec, f"'{p.name}'")
            except (TypeError, ValueError) as e:
                raise _sig.signature_error(tuple(bound.values()), self._input_signature,
                                       f"argument {e}") from None
        cf = self.__dict__.get("_signature_cf")
        if cf is None:
            cf = self.__dict__["_signature_cf"] = self.get_concrete_function()
        return cf(*binding.args, **binding.kwargs)


class ConcreteFunction:
    """One traced graph of a Function: callable with tensors (positionally or by
    keyword; non-tensor arguments bound at trace time may be left out)."""

    def __init__(self, cf, function):
        self._cf = cf
        self._function = function
        self._params = function._params if function is not None else []

    @classmethod
    def from_cpp(cls, cf):
        """Wraps a C++ concrete function made outside a kiln.function (a loaded
        saved model or ONNX model): its parameters are its argument names."""
        self = cls(cf, None)
        self._params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                        for n in cf._arg_names]
        return self

    @property
    def name(self):
        return self._cf.name

    @property
    def structured_input_signature(self):
        """(args, kwargs) as traced (TensorFlow's split: *args items among the
        positional ones, keyword-only and **kwargs items by name); tensor
        arguments appear as TensorSpecs."""
        return _text.structured_signature(self._params, self._traced_values())

    def _traced_values(self):
        """The traced arguments; when a Python object bound at trace time no longer
        exists (its weak reference is dead), each argument without a placeholder of
        its name shows as a dead reference (TensorFlow prints those as dead Weakrefs)."""
        try:
            return self._cf._structured_input_signature
        except ValueError:
            inputs = {d["name"]: d["outputs"][0] for d in _kiln._graph_of(self._cf, False)._nodes()
                      if d["op"] == "Placeholder"}
            return tuple(_kiln.TensorSpec(inputs[n][1], inputs[n][0], name=n) if n in inputs
                         else _text.DEAD for n in self._cf._arg_names)

    @property
    def structured_outputs(self):
        """The result structure with the graph's symbolic output tensors."""
        return self._cf._structured_outputs

    @property
    def graph(self):
        """The graph as traced."""
        return FuncGraph(_kiln._graph_of(self._cf, False))

    @property
    def optimized_graph(self):
        """The graph that runs, after pruning, folding, CSE and fusion."""
        return FuncGraph(_kiln._graph_of(self._cf, True))

    @property
    def pruned_ops(self):
        return self._cf.pruned_ops

    @property
    def optimize_report(self):
        return self._cf.optimize_report

    def pretty_printed_signature(self, verbose=True):
        """The seed guide's text (the C++ pretty_signature without its "ConcreteFunction "
        prefix): the header "double(a)" (bound Python values shown as "b=2"), then
        "  Args:" and "  Returns:" blocks ("    a: string Tensor, shape=()"); the header
        alone when not verbose."""
        text = self._cf.pretty_signature().rstrip("\n")
        if text.startswith(_CF_PREFIX):
            text = text[len(_CF_PREFIX):]
        header = text.split("\n", 1)[0]
        if not verbose:
            return header
        return header + "\n" + _text.signature_blocks(
            self._cf._arg_names, self._traced_values(), self.structured_outputs)

    def __str__(self):
        return _CF_PREFIX + self.pretty_printed_signature()

    def __repr__(self):
        return f"<ConcreteFunction {self.pretty_printed_signature(False)} at 0x{id(self):X}>"

    def __call__(self, *args, **kwargs):
        try:
            return self._call_structured(args, kwargs)
        except TypeError as e:
            # TensorFlow's fallback: positional tensors fill the tensor
            # arguments in order; Python values stay as bound at trace time.
            traced = self._cf._structured_input_signature
            if kwargs or not args or not all(isinstance(a, _kiln.Tensor) for a in args) or \
                    len(args) != sum(_count_specs(t) for t in traced):
                flat = self._flat_signature_error(args, kwargs)
                if flat is None:
                    raise
                try:  # as the seed's traceback shows it: the flat signature's error,
                    raise flat  # then, "during handling", the structured one
                except TypeError:
                    e.__suppress_context__ = False
                    raise e
            leaves = iter(args)
            return self._cf._call([_fill_specs(t, leaves) for t in traced])

    def _flat_signature_error(self, args, kwargs):
        """The TypeError of the flat signature (the tensor arguments in order) for
        arguments that fit neither signature, in the seed guide's text ("pow(a) got
        unexpected keyword arguments: b."); None when the flat one is not the reason."""
        traced = self._cf._structured_input_signature
        names = [p.name for p in self._params]
        flat = [names[i] if i < len(names) else f"args_{i}"
                for i, t in enumerate(traced) if _has_spec(t)]
        fname = self._function._name if self._function is not None else self.name
        missing = [n for n in flat[len(args):] if n not in kwargs]
        if len(args) > len(flat):
            why = f"takes {len(flat)} positional arguments, got {len(args)}"
        elif missing:
            why = f"missing required arguments: {', '.join(missing)}"
        elif set(kwargs) - set(flat):
            why = f"got unexpected keyword arguments: {', '.join(sorted(set(kwargs) - set(flat)))}"
        else:
            return None
        return TypeError(f"{fname}({', '.join(flat)}) {why}.")

    def _check_call(self, args, kwargs):
        """TypeError unless these arguments match the traced ones: structure,
        tensor dtypes and shapes, and the values bound at trace time."""
        traced = self._cf._structured_input_signature
        values = self._bind(traced, args, kwargs)
        for t, v in zip(traced, values):
            if v is _UNSET:
                continue
            for ts, x in zip(nest.flatten(t), nest.flatten(v)):
                if isinstance(ts, _kiln.TensorSpec):
                    x = x if isinstance(x, (_kiln.Tensor, _kiln.Variable)) else \
                        _kiln.convert_to_tensor(x, dtype=ts.dtype)
                    if not ts.is_compatible_with(x):
                        raise TypeError(f"{self.name}(): {x!r} does not fit {ts!r}")
                elif isinstance(ts, _kiln.Variable):
                    if not isinstance(x, _kiln.Variable) or x._id != ts._id:
                        raise TypeError(f"{self.name}(): {x!r} is not the traced variable {ts!r}")
                elif type(ts) is not type(x) or ts != x:
                    raise TypeError(f"{self.name}(): {x!r} differs from the traced {ts!r}")

    def _bind(self, traced, args, kwargs):
        values = [_UNSET] * len(traced)
        names = [p.name for p in self._params]
        if len(args) > len(values):
            raise TypeError(f"{self.name}() takes {len(values)} arguments, got {len(args)}")
        for i, a in enumerate(args):
            values[i] = a
        for k, v in kwargs.items():
            if k not in names or names.index(k) >= len(values):
                raise TypeError(f"{self.name}() got an unexpected keyword argument '{k}'")
            i = names.index(k)
            if values[i] is not _UNSET:
                raise TypeError(f"{self.name}() got multiple values for argument '{k}'")
            values[i] = v
        for i, v in enumerate(values):
            name = _arg_name(names, i)
            if v is _UNSET and _has_spec(traced[i]):
                raise TypeError(f"{self.name}() missing required tensor argument '{name}'")
            if v is not _UNSET:
                _check_structure(traced[i], v, name, self.name)
        return values

    def _call_structured(self, args, kwargs):
        traced = self._cf._structured_input_signature
        bound = self._bind(traced, args, kwargs)
        values = [t if v is _UNSET else _convert_leaves(t, v) for t, v in zip(traced, bound)]
        try:
            return self._cf._call(values)
        except InvalidArgumentError as e:
            if "was constructed with" in str(e):
                # A different value for an argument bound at trace time: TensorFlow's TypeError.
                raise TypeError(str(e)) from None
            err = self._dtype_error(traced, values, e)
            if err is e:
                raise
            raise err from None

    def _dtype_error(self, traced, values, error):
        """TensorFlow's InvalidArgumentError for a tensor of the wrong dtype
        (kiln's own text kept as a note); other errors as they are."""
        pairs = []
        _spec_leaves(traced, values, pairs)
        op = f"__inference_{self.name}"
        for i, (spec, x) in enumerate(pairs):
            if isinstance(x, (_kiln.Tensor, _kiln.Variable)) and x.dtype != spec.dtype:
                err = InvalidArgumentError(
                    f"cannot compute {op} as input #{i}(zero-based) was expected to be a "
                    f"{_text.dtype_name(spec.dtype)} tensor but is a "
                    f"{_text.dtype_name(x.dtype)} tensor [Op:{op}]")
                err.add_note(str(error))
                return err
        return error


def _items(v):
    """The items of a list/tuple, or the components of a composite tensor."""
    return v._components() if isinstance(v, CompositeTensor) else v


def _count_specs(v):
    if isinstance(v, _kiln.TensorSpec):
        return 1
    if isinstance(v, (list, tuple)):
        return sum(_count_specs(x) for x in _items(v))
    if isinstance(v, dict):
        return sum(_count_specs(x) for x in v.values())
    return 0


def _fill_specs(v, leaves):
    # v with its TensorSpec leaves replaced, in order, by the next of `leaves`.
    if isinstance(v, _kiln.TensorSpec):
        return next(leaves)
    if isinstance(v, (list, tuple)):
        items = [_fill_specs(x, leaves) for x in _items(v)]
        return type(v)(*items) if hasattr(v, "_fields") else type(v)(items)
    if isinstance(v, dict):
        return {k: _fill_specs(x, leaves) for k, x in v.items()}
    return v


def _check_structure(traced, value, path, fname):
    """TypeError when `value` does not have the traced structure (lists and
    tuples are interchangeable; bound Python values are checked in C++)."""
    def fail(what):
        raise TypeError(f"{fname}(): argument '{path}' does not match the traced structure: "
                        f"it {what}; the concrete function was traced with {traced!r}")
    if isinstance(traced, _kiln.TensorSpec):
        if isinstance(value, dict):
            fail(f"is a {type(value).__name__}, expected a tensor")
    elif isinstance(traced, CompositeTensor):  # RaggedTensor, SparseTensor: by component
        if type(value) is not type(traced):
            fail(f"is a {type(value).__name__}, expected a {type(traced).__name__}")
        for f, t, v in zip(traced._fields, traced._components(), value._components()):
            _check_structure(t, v, f"{path}.{f}", fname)
    elif isinstance(traced, (list, tuple)):
        if not isinstance(value, (list, tuple)) or isinstance(value, dict):
            fail(f"is a {type(value).__name__}, expected a sequence of {len(traced)}")
        if len(value) != len(traced):
            fail(f"has {len(value)} elements, expected {len(traced)}")
        for i, (t, v) in enumerate(zip(traced, value)):
            _check_structure(t, v, f"{path}[{i}]", fname)
    elif isinstance(traced, dict):
        if not isinstance(value, dict):
            fail(f"is a {type(value).__name__}, expected a dict")
        if set(value) != set(traced):
            fail(f"has keys {sorted(value)}, expected {sorted(traced)}")
        for k in traced:
            _check_structure(traced[k], value[k], f"{path}[{k!r}]", fname)


def _arg_name(names, i):
    return names[i] if i < len(names) else f"args_{i}"


def _convert_leaves(traced, value):
    """value with Python lists, numbers and NumPy arrays given for traced tensor
    arguments converted to the traced dtype (as TensorFlow's call converts them)."""
    if isinstance(traced, _kiln.TensorSpec):
        if isinstance(value, (_kiln.Tensor, _kiln.Variable)) or value is None:
            return value
        return _kiln.convert_to_tensor(value, dtype=traced.dtype)
    if isinstance(traced, (list, tuple)) and not isinstance(traced, CompositeTensor) and \
            isinstance(value, (list, tuple)) and not hasattr(type(value), "_fields"):
        return type(value)(_convert_leaves(t, v) for t, v in zip(traced, value))
    if isinstance(traced, dict) and isinstance(value, dict):
        return {k: _convert_leaves(traced.get(k), v) for k, v in value.items()}
    return value


def _spec_leaves(traced, value, out):
    # (TensorSpec, value) pairs in placeholder (flatten) order.
    if isinstance(traced, _kiln.TensorSpec):
        out.append((traced, value))
    elif isinstance(traced, dict) and isinstance(value, dict):
        for k in sorted(traced):
            _spec_leaves(traced[k], value.get(k), out)
    elif isinstance(traced, (list, tuple)) and isinstance(value, (list, tuple)):
        for t, v in zip(_items(traced), _items(value)):
            _spec_leaves(t, v, out)


def _has_spec(v):
    if isinstance(v, _kiln.TensorSpec):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_spec(x) for x in _items(v))
    if isinstance(v, dict):
        return any(_has_spec(x) for x in v.values())
    return False


class NodeDef:
    """One node of a graph listing (as in GraphDef): name, op, input."""

    __slots__ = ("name", "op", "input", "outputs", "location")

    def __init__(self, d):
        self.name = d["name"]
        self.op = d["op"]
        self.input = list(d["input"])
        self.outputs = d["outputs"]
        self.location = d["location"]

    def __repr__(self):
        ins = "".join(f'\n  input: "{i}"' for i in self.input)
        return f'name: "{self.name}"\nop: "{self.op}"{ins}'


class GraphDef:
    __slots__ = ("node",)

    def __init__(self, nodes):
        self.node = nodes

    def __repr__(self):
        return "\n".join(f"node {{\n  {n!r}\n}}".replace("\n", "\n  ") for n in self.node)


class FuncGraph:
    """A read-only view of a traced graph."""

    def __init__(self, g):
        self._g = g

    @property
    def name(self):
        return self._g.name

    def as_graph_def(self):
        return GraphDef([NodeDef(d) for d in self._g._nodes()])

    def get_operations(self):
        return self.as_graph_def().node

    @property
    def inputs(self):
        return self._g._inputs()

    @property
    def outputs(self):
        return self._g._outputs()

    def listing(self):
        return self._g.listing()

    def debug_listing(self):
        return self._g.debug_listing()

    def to_dot(self):
        return self._g.to_dot()

    def __str__(self):
        return self._g.debug_listing()


_COMPILER_IR_STAGES = ("hlo", "optimized_hlo", "source")


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_relax_shapes=None, name=None,
             experimental_autograph_options=None, experimental_follow_type_hints=None,
             experimental_implements=None, experimental_attributes=None):
    """Compiles a function into a callable graph (tf.function).

    Usable as ``@kiln.function`` or ``@kiln.function(input_signature=...)``.
    """
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or experimental_relax_shapes

    def decorate(f):
        # A Function given is called as it is (TensorFlow's nesting: its own trace
        # cache, one call node in this graph).
        return Function(f, name=name, input_signature=input_signature, autograph=autograph,
                        jit_compile=jit_compile, reduce_retracing=reduce_retracing)

    if func is None:
        return decorate
    return decorate(func)


__all__ = ["function", "Function", "ConcreteFunction", "FuncGraph", "RetraceReason",
           "InputSignatureError", "TensorShape"]
