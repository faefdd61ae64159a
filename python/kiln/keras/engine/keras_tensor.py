"""Symbolic Keras tensors and the nodes that record layer calls.

``kiln.keras.Input`` returns a KerasTensor: a shape and a dtype, no value.
Calling a layer on KerasTensors builds the layer, works out the output shapes
and records a Node (layer, call arguments, outputs); a functional Model later
replays the nodes on real tensors.

Layers sit above this module (Layer.__call__ records nodes with symbolic_call);
the layer that arithmetic on Keras tensors makes is named by
``KerasTensor._op_layer``, which kiln.keras.layers.core sets.
"""
import itertools

from kiln import _kiln
from kiln import nest
from kiln.function import function as kfunction
from kiln.tensor_shape import TensorShape

_NODE_IDS = itertools.count()


class KerasTensor:
    """A symbolic tensor of the functional API: ``shape`` (a TensorShape whose
    batch dimension is usually None), ``dtype`` and ``name``. It has no value;
    pass it to layers to build a model."""

    __slots__ = ("shape", "dtype", "name", "_node", "_index", "__weakref__")

    def __init__(self, shape, dtype="float32", name=None, node=None, index=0):
        self.shape = TensorShape(shape)
        self.dtype = _kiln.as_dtype(dtype)
        self.name = name
        self._node = node
        self._index = index

    @property
    def ndim(self):
        return self.shape.rank

    def get_shape(self):
        return self.shape

    @property
    def node(self):
        """The Node whose call produced this tensor."""
        return self._node

    def __repr__(self):
        return (f"<KerasTensor shape={tuple(self.shape) if self.shape.rank is not None else None}"
                f", dtype={self.dtype.name}, name={self.name}>")

    def __array__(self, *args, **kwargs):
        raise TypeError(f"{self!r} is symbolic (from kiln.keras.Input): it has no value. "
                        "Pass it to Keras layers to build a model, then call the model.")

    def __bool__(self):
        raise TypeError("A symbolic KerasTensor cannot be used as a Python bool.")

    # Arithmetic builds a small op layer, as in Keras' functional API: an
    # _OpLambda(fn, name) from kiln.keras.layers.core, which sets this attribute.
    _op_layer = None

    def _op(self, fn, other, name, reverse=False):
        args = [other, self] if reverse else [self, other]
        return self._op_layer(fn, name)(args)

    def __add__(self, o):
        return self._op(lambda a, b: a + b, o, "add")

    def __radd__(self, o):
        return self._op(lambda a, b: a + b, o, "add", True)

    def __sub__(self, o):
        return self._op(lambda a, b: a - b, o, "subtract")

    def __rsub__(self, o):
        return self._op(lambda a, b: a - b, o, "subtract", True)

    def __mul__(self, o):
        return self._op(lambda a, b: a * b, o, "multiply")

    def __rmul__(self, o):
        return self._op(lambda a, b: a * b, o, "multiply", True)

    def __truediv__(self, o):
        return self._op(lambda a, b: a / b, o, "truediv")

    def __rtruediv__(self, o):
        return self._op(lambda a, b: a / b, o, "truediv", True)

    def __neg__(self):
        return self._op_layer(lambda a: -a, "negative")(self)

    __hash__ = object.__hash__


class Node:
    """One call of a layer on KerasTensors: ``call_args`` / ``call_kwargs`` as
    given (KerasTensors inside), ``outputs`` (a structure of KerasTensors)."""

    def __init__(self, layer, call_args, call_kwargs):
        self.id = next(_NODE_IDS)
        self.layer = layer
        self.call_args = call_args
        self.call_kwargs = call_kwargs
        self.input_tensors = [t for t in nest.flatten((call_args, call_kwargs))
                              if isinstance(t, KerasTensor)]
        self.outputs = None
        self.output_tensors = []

    @property
    def input_structure(self):
        return self.call_args[0] if self.call_args else None

    @property
    def parent_nodes(self):
        return [t._node for t in self.input_tensors if t._node is not None]

    def substitute(self, values):
        """call args / kwargs with each KerasTensor replaced by values[id(t)]."""
        if len(self.call_args) == 1 and not self.call_kwargs and \
                isinstance(self.call_args[0], KerasTensor):
            return (values[id(self.call_args[0])],), {}

        def sub(x):
            return values[id(x)] if isinstance(x, KerasTensor) else x
        args, kwargs = nest.map_structure(sub, (list(self.call_args), self.call_kwargs))
        return tuple(args), kwargs

    def __repr__(self):
        return f"<Node {self.layer.name} #{self.id}>"


def _output_specs(layer, inputs, args, kwargs):
    """A structure of (TensorShape, dtype) for the layer's outputs."""
    if layer._kiln_static_shapes and type(layer).call.__module__.startswith("kiln."):
        in_shapes = nest.map_structure(
            lambda t: t.shape if isinstance(t, KerasTensor) else None, inputs)
        out = layer.compute_output_shape(in_shapes)
        dtype = layer._output_dtype(inputs) if hasattr(layer, "_output_dtype") \
            else layer._dtype
        if isinstance(out, (list, tuple)) and out and \
                isinstance(out[0], (TensorShape, list, tuple)) and \
                not isinstance(out, TensorShape):
            return [(TensorShape(s), dtype) for s in out]
        return (TensorShape(out), dtype)
    return _traced_specs(layer, inputs, args, kwargs)


def _traced_specs(layer, inputs, args, kwargs):
    """Output shapes and dtypes by tracing the layer on placeholders."""
    structure = (inputs, list(args), kwargs)
    flat = nest.flatten(structure)
    kts = [x for x in flat if isinstance(x, KerasTensor)]

    def run(*tensors):
        it = iter(tensors)
        rebuilt = [next(it) if isinstance(x, KerasTensor) else x for x in flat]
        inp, a, kw = nest.pack_sequence_as(structure, rebuilt)
        return layer(inp, *a, **kw)

    specs = [_kiln.TensorSpec(list(t.shape) if t.shape.rank is not None else None, t.dtype)
             for t in kts]
    cf = kfunction(run, autograph=False).get_concrete_function(*specs)
    out = cf.structured_outputs

    def spec(t):
        if not isinstance(t, _kiln.Tensor):
            raise TypeError(f"Layer {layer.name!r} returned {t!r}; layers called on Keras "
                            "tensors must return tensors")
        return (TensorShape(t.shape), t.dtype)
    return nest.map_structure(spec, out)


def symbolic_call(layer, inputs, args, kwargs):
    """Records ``layer(inputs, *args, **kwargs)`` on KerasTensors; returns the
    output KerasTensors."""
    if not layer.built and layer.input_spec is not None:
        layer._check_input_spec(inputs)
    layer._maybe_build(inputs)
    if layer.input_spec is not None:
        layer._check_input_spec(inputs)
    specs = _output_specs(layer, inputs, args, kwargs)
    node = Node(layer, (inputs,) + tuple(args), dict(kwargs))
    flat_specs = _flatten_specs(specs)
    outs = []
    for i, (shape, dtype) in enumerate(flat_specs):
        suffix = "" if len(flat_specs) == 1 else f"_{i}"
        outs.append(KerasTensor(shape, dtype, name=f"{layer.name}{suffix}", node=node, index=i))
    node.output_tensors = outs
    node.outputs = _pack_specs(specs, outs)
    layer._kiln_nodes.append(node)
    return node.outputs


def _is_spec(s):
    return isinstance(s, tuple) and len(s) == 2 and isinstance(s[0], TensorShape)


def _flatten_specs(s):
    if _is_spec(s):
        return [s]
    if isinstance(s, dict):
        return [x for k in sorted(s) for x in _flatten_specs(s[k])]
    return [x for e in s for x in _flatten_specs(e)]


def _pack_specs(s, outs):
    it = iter(outs)

    def rec(x):
        if _is_spec(x):
            return next(it)
        if isinstance(x, dict):
            return {k: rec(x[k]) for k in sorted(x)}
        return type(x)(rec(e) for e in x) if isinstance(x, tuple) else [rec(e) for e in x]
    return rec(s)


def is_keras_tensor(x):
    """True for symbolic tensors of the functional API."""
    return isinstance(x, KerasTensor)
