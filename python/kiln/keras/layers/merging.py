"""Merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate,
and their functional forms (add, multiply, ...)."""
from kiln import _kiln
from kiln.keras.layers.base import Layer
from kiln.ops import _helpers as h
from kiln.ops import array_ops
from kiln.tensor_shape import TensorShape

raw = _kiln.raw


def _broadcast(a, b, who):
    """The broadcast of two static shapes; ValueError when incompatible."""
    a, b = list(TensorShape(a)), list(TensorShape(b))
    if len(a) < len(b):
        a, b = b, a
    b = [1] * (len(a) - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x is None or y is None:
            known = y if x is None else x
            out.append(known if known is not None and known != 1 else None)
        elif x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ValueError(f"{who}: inputs have incompatible shapes {TensorShape(a)} and "
                             f"{TensorShape(b)}")
    return out


class _Merge(Layer):
    """Elementwise merge of a list of at least two tensors with broadcasting."""

    _kiln_static_shapes = True
    _min_inputs = 2

    def _check(self, shapes):
        if not isinstance(shapes, (list, tuple)):
            raise ValueError(f"A merge layer should be called on a list of inputs. Received: "
                             f"inputs={shapes!r} (not a list of tensors)")
        if len(shapes) < self._min_inputs:
            raise ValueError(f"A merge layer should be called on a list of at least "
                             f"{self._min_inputs} inputs. Got {len(shapes)} inputs.")

    def build(self, input_shape):
        self._check(input_shape)
        self.compute_output_shape(input_shape)
        self.built = True

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        out = input_shape[0]
        for s in input_shape[1:]:
            out = _broadcast(out, s, type(self).__name__)
        return TensorShape(out)

    def call(self, inputs):
        self._check(inputs)
        ts = [h.tensor(t) for t in inputs]
        out = ts[0]
        for t in ts[1:]:
            out = self._merge(out, t)
        return self._finish(out, len(ts))

    def _finish(self, out, n):
        return out


class Add(_Merge):
    """Sum of the inputs."""

    def _merge(self, a, b):
        return raw.AddV2(a, b)


class Subtract(_Merge):
    """inputs[0] - inputs[1] (exactly two inputs)."""

    def _check(self, shapes):
        super()._check(shapes)
        if len(shapes) != 2:
            raise ValueError(f"A Subtract layer should be called on exactly 2 inputs. "
                             f"Received: {len(shapes)} inputs")

    def _merge(self, a, b):
        return raw.Sub(a, b)


class Multiply(_Merge):
    """Elementwise product of the inputs."""

    def _merge(self, a, b):
        return raw.Mul(a, b)


class Average(_Merge):
    """Elementwise mean of the inputs."""

    def _merge(self, a, b):
        return raw.AddV2(a, b)

    def _finish(self, out, n):
        return raw.Mul(out, h.tensor(1.0 / n, out.dtype))


class Maximum(_Merge):
    """Elementwise maximum of the inputs."""

    def _merge(self, a, b):
        return raw.Maximum(a, b)


class Minimum(_Merge):
    """Elementwise minimum of the inputs."""

    def _merge(self, a, b):
        return raw.Minimum(a, b)


class Concatenate(_Merge):
    """Concatenation along ``axis`` (other dims must match)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        shapes = [list(TensorShape(s)) for s in input_shape]
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes):
            raise ValueError(f"Concatenate: inputs must have the same rank, got shapes "
                             f"{[tuple(s) for s in shapes]}")
        if not -rank <= self.axis < rank:
            raise ValueError(f"Concatenate: axis {self.axis} is out of range for rank {rank}")
        ax = self.axis % rank
        out = list(shapes[0])
        for s in shapes[1:]:
            for i in range(rank):
                if i == ax:
                    out[i] = None if out[i] is None or s[i] is None else out[i] + s[i]
                elif out[i] is not None and s[i] is not None and out[i] != s[i]:
                    raise ValueError(
                        f"A Concatenate layer requires inputs with matching shapes except "
                        f"for the concatenation axis. Received: input_shape={input_shape}")
                elif out[i] is None:
                    out[i] = s[i]
        return TensorShape(out)

    def call(self, inputs):
        self._check(inputs)
        return array_ops.concat([h.tensor(t) for t in inputs], self.axis)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


def add(inputs, **kwargs):
    """Functional form of Add: ``add([x, y])``."""
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """Functional form of Subtract."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """Functional form of Multiply."""
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """Functional form of Average."""
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """Functional form of Maximum."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """Functional form of Minimum."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """Functional form of Concatenate."""
    return Concatenate(axis=axis, **kwargs)(inputs)
