"""kiln.keras.layers.Layer: weights created on first call by build()."""
import re

from kiln import _kiln
from kiln.keras import initializers
from kiln.module import Module
from kiln.tensor_shape import TensorShape


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_NAME_COUNTS = {}


def _unique(base):
    n = _NAME_COUNTS.get(base, 0)
    _NAME_COUNTS[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def _input_shape(x):
    if isinstance(x, (list, tuple)):
        return [_input_shape(e) for e in x]
    if isinstance(x, dict):
        return {k: _input_shape(v) for k, v in x.items()}
    shape = getattr(x, "shape", None)
    return TensorShape(shape) if shape is not None else None


class Layer(Module):
    """A callable with weights (tf.keras.layers.Layer). Subclasses implement
    build(input_shape) to create weights with add_weight and call(inputs)."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        super().__init__(name=name or _unique(_snake(type(self).__name__)))
        self._trainable = trainable
        self._dtype = _kiln.as_dtype(dtype) if dtype is not None else _kiln.as_dtype("float32")
        self.built = False
        self._kiln_weights = []

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)

    @property
    def dtype(self):
        return self._dtype.name

    def build(self, input_shape):
        """Creates the weights; called once, before the first call."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        return inputs

    def __call__(self, inputs, *args, **kwargs):
        if not self.built:
            self.build(_input_shape(inputs))
            self.built = True
        call = self.call
        if not _kiln.executing_eagerly():
            # Inside a traced function, convert the user's call() (AutoGraph):
            # it is user code reached through this library method.
            from kiln import autograph
            call = autograph.maybe_convert(call)
        return call(inputs, *args, **kwargs)

    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=True, constraint=None, **kwargs):
        """Creates a variable tracked by this layer."""
        shape = () if shape is None else tuple(int(d) for d in shape)
        dtype = _kiln.as_dtype(dtype) if dtype is not None else self._dtype
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        init = initializers.get(initializer)
        from kiln.scopes import init_scope
        with init_scope():
            value = init(shape, dtype=dtype)
            value = _kiln.constant(value, dtype=dtype)
            v = _kiln.Variable(value, trainable=trainable and self._trainable,
                               name=name or "Variable")
        self._kiln_weights.append(v)
        return v

    @property
    def weights(self):
        return list(self._kiln_weights) + [w for m in self._sublayers() for w in m.weights
                                           if all(w is not x for x in self._kiln_weights)]

    @property
    def trainable_weights(self):
        return [w for w in self.weights if w.trainable]

    @property
    def non_trainable_weights(self):
        return [w for w in self.weights if not w.trainable]

    @property
    def variables(self):
        return tuple(self.weights)

    @property
    def trainable_variables(self):
        return tuple(self.trainable_weights)

    def _sublayers(self):
        return [m for m in self.submodules if isinstance(m, Layer)]

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        ws = self.weights
        if len(weights) != len(ws):
            raise ValueError(f"Layer {self.name} expects {len(ws)} weights, got {len(weights)}")
        for w, v in zip(ws, weights):
            w.assign(v)

    def compute_output_shape(self, input_shape):
        raise NotImplementedError(
            f"Layer {type(self).__name__} does not define compute_output_shape")

    def count_params(self):
        return int(sum(w.shape.num_elements() for w in self.weights))

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
