"""InputLayer and Input: the entry points of a functional model."""
from kiln.keras.engine.keras_tensor import KerasTensor, Node
from kiln.keras.layers.base import Layer, _unique
from kiln.tensor_shape import TensorShape


def _as_shape(shape, what):
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise ValueError(f"Input: {what} must be a tuple of ints or None, got {shape!r}") \
            from None
    for d in dims:
        if d is not None and (isinstance(d, bool) or not isinstance(d, int) or d < 0):
            raise ValueError(f"Input: {what} must contain non-negative ints or None, "
                             f"got {shape!r}")
    return dims


class InputLayer(Layer):
    """The layer behind ``kiln.keras.Input``: holds the symbolic input tensor
    (``output``) of a model; called on real tensors it is the identity."""

    _kiln_static_shapes = True

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 sparse=None, name=None, ragged=None, batch_shape=None, shape=None,
                 optional=False, **kwargs):
        if shape is not None:  # Keras 3's name
            if input_shape is not None:
                raise ValueError("InputLayer: give only one of shape and input_shape")
            input_shape = shape
        if optional:
            raise NotImplementedError("InputLayer(optional=True): optional inputs (None "
                                      "passed for an input) are not supported by kiln yet")
        if sparse or ragged:
            raise ValueError("InputLayer: sparse and ragged inputs are not supported by kiln")
        if input_tensor is not None:
            raise ValueError("InputLayer: input_tensor is not supported; use shape/batch_shape")
        if "batch_input_shape" in kwargs:
            batch_shape = kwargs.pop("batch_input_shape")
        if batch_shape is not None and input_shape is not None:
            raise ValueError("InputLayer: give only one of input_shape and batch_shape")
        if batch_shape is None:
            if input_shape is None:
                raise ValueError("Please provide to Input a `shape` or a `batch_shape` argument. "
                                 "Note that `shape` does not include the batch dimension.")
            batch_shape = (batch_size,) + _as_shape(input_shape, "shape")
        else:
            batch_shape = _as_shape(batch_shape, "batch_shape")
        super().__init__(name=name or _unique("input", zero_based=False),
                         dtype=dtype if dtype is not None else "float32",  # not the policy's
                         **kwargs)
        self._batch_input_shape = tuple(batch_shape)
        self.built = True
        node = Node(self, (), {})
        t = KerasTensor(TensorShape(batch_shape), self._dtype, name=self.name, node=node)
        node.output_tensors = [t]
        node.outputs = t
        self._kiln_nodes.append(node)

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return TensorShape(input_shape)

    def get_config(self):
        return {"batch_shape": self._batch_input_shape, "dtype": self.dtype, "sparse": False,
                "ragged": False, "name": self.name, "optional": False}


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None,
          ragged=None, batch_shape=None, optional=False, **kwargs):
    """A symbolic input of a functional model (tf.keras.Input): a KerasTensor
    of shape ``(batch_size,) + shape`` (or ``batch_shape``) and ``dtype``
    (default float32)."""
    if kwargs:
        raise TypeError(f"Input: unexpected keyword argument(s) {sorted(kwargs)}")
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype, input_tensor=tensor,
                       sparse=sparse, name=name, ragged=ragged, batch_shape=batch_shape,
                       optional=optional)
    return layer.output
