"""User functions of dataset transformations (map, filter, ...): traced once, as in
tf.data, against the input dataset's element_spec."""
import collections.abc

import numpy as np

from kiln import _kiln, nest
from kiln._composite import CompositeTensor
from kiln.autograph import convert_for_trace
from kiln.control_flow import while_loop
from kiln.data import structure
from kiln.function import function


def _flat_wrapper(n, impl):
    """A function of exactly n positional parameters calling impl(*args)
    (kiln.function's input_signature needs one parameter per spec)."""
    names = ", ".join(f"a{i}" for i in range(n))
    src = f"def elementwise({names}):\n    return impl(({names}{',' if n == 1 else ''}))\n"
    ns = {"impl": impl}
    exec(src, ns)  # noqa: S102 -- a fixed template; only parameter names vary
    return ns["elementwise"]


def _normalize_output(value, who):
    # tf.data rule: a list returned from a map function is a tuple of components.
    def rec(x):
        if isinstance(x, CompositeTensor):  # SparseTensor and RaggedTensor stay whole
            return x
        if isinstance(x, list):
            return tuple(rec(c) for c in x)
        if isinstance(x, collections.abc.Mapping):
            return {k: rec(v) for k, v in x.items()} if type(x) is dict else \
                type(x)((k, rec(v)) for k, v in x.items())
        if isinstance(x, tuple):
            items = [rec(c) for c in x]
            return type(x)(*items) if hasattr(type(x), "_fields") else tuple(items)
        return x
    return structure.normalize_element(rec(value), f"{who} result")


class StructuredFunction:
    """fn(element) for elements of `input_spec`, traced at construction (so its
    errors show at map() time). Tuple elements are passed unpacked (fn(*element)),
    others as one argument. Ragged and sparse values in and out cross the
    traced function as their component tensors.

    Made eagerly, fn becomes a kiln.function with the element spec as its
    input_signature (traced once, as in tf.data). Made while tracing, fn may
    capture that trace's tensors, so it is called inline wherever it is applied;
    its result structure comes from a probe trace in a never-running loop."""

    def __init__(self, fn, input_spec, who):
        if not callable(fn):
            raise TypeError(f"{who}: expected a callable, got {fn!r}")
        self.who = who
        self.input_spec = input_spec
        self._user = convert_for_trace(fn)  # AutoGraph: tensor if/while in map fns
        self.output_structure = None
        self._function = None
        if _kiln.executing_eagerly():
            flat = structure.component_specs(input_spec)
            wrapper = _flat_wrapper(len(flat), self._apply_components)
            wrapper.__name__ = getattr(fn, "__name__", "fn").replace("<lambda>", "lambda")
            self._function = function(wrapper, input_signature=flat, autograph=False)
            self._function.get_concrete_function()
        else:
            self._probe()

    def _apply_components(self, args):
        out = self._apply(structure.from_components(self.input_spec, list(args)))
        return structure.to_components(self.output_structure, out)

    def _apply(self, element):
        if isinstance(element, tuple) and not hasattr(type(element), "_fields"):
            out = self._user(*element)
        else:
            out = self._user(element)
        out = _normalize_output(out, self.who)
        if self.output_structure is None:
            self.output_structure = nest.map_structure(structure.spec_of, out)
        return out

    def _probe(self):
        flat = structure.component_specs(self.input_spec)
        init = tuple(structure.dummy_value(s) for s in flat)

        def body(*vals):
            self._apply(structure.from_components(self.input_spec, list(vals)))
            return vals
        while_loop(lambda *vals: structure.to_tensor(np.bool_(False)), body, init,
                   shape_invariants=tuple(s.shape for s in flat), name="probe")

    @property
    def inline(self):
        """True when made while tracing (fn is called inline where applied)."""
        return self._function is None

    @property
    def output_spec(self):
        return self.output_structure

    def __call__(self, element):
        if self._function is None:
            return self._apply(element)
        out = self._function(*structure.to_components(self.input_spec, element))
        out = out if isinstance(out, (list, tuple)) else [out]
        return structure.from_components(self.output_structure, list(out))


def predicate(fn, input_spec, who):
    """A StructuredFunction that must return a scalar bool."""
    f = StructuredFunction(fn, input_spec, who)
    spec = f.output_structure
    if nest.is_nested(spec) or spec.dtype != _kiln.as_dtype("bool") or \
            (spec.shape.rank is not None and spec.shape.rank != 0):
        raise ValueError(f"{who}: the predicate must return a scalar bool tensor, got "
                         f"{spec!r}")
    return f


def call_unpacked(fn, element):
    """fn(*element) for a plain tuple element, fn(element) otherwise (tf.data's rule)."""
    if isinstance(element, tuple) and not hasattr(type(element), "_fields"):
        return fn(*element)
    return fn(element)


def probe(fn, input_spec, stand_in, who):
    """fn's Python result on a traced stand-in of one element of input_spec:
    symbolic tensors for its TensorSpecs, stand_in(spec) for its other leaves
    (e.g. a spec-only dataset for a DatasetSpec). The trace never runs."""
    flat = nest.flatten(input_spec)
    tensor_specs = [s for s in flat if isinstance(s, _kiln.TensorSpec)]
    user = convert_for_trace(fn)
    results = []

    def apply(tensors):
        it = iter(tensors)
        leaves = [next(it) if isinstance(s, _kiln.TensorSpec) else stand_in(s) for s in flat]
        results.append(call_unpacked(user, nest.pack_sequence_as(input_spec, leaves)))
        return structure.to_tensor(np.int32(0))

    if _kiln.executing_eagerly():
        wrapper = _flat_wrapper(len(tensor_specs), apply)
        wrapper.__name__ = f"{who}_probe"
        function(wrapper, input_signature=tensor_specs, autograph=False).get_concrete_function()
    elif not tensor_specs:
        apply(())
    else:
        def body(*vals):
            apply(vals)
            return vals
        init = tuple(structure.dummy_value(s) for s in tensor_specs)
        while_loop(lambda *vals: structure.to_tensor(np.bool_(False)), body, init,
                   shape_invariants=tuple(s.shape for s in tensor_specs), name="probe")
    return results[0]


def as_structure(value):
    """A function's result with lists as tuples (tf.data's rule)."""
    if isinstance(value, list):
        return tuple(as_structure(c) for c in value)
    if isinstance(value, dict):
        return {k: as_structure(v) for k, v in value.items()}
    if isinstance(value, tuple) and not hasattr(type(value), "_fields"):
        return tuple(as_structure(c) for c in value)
    return value
