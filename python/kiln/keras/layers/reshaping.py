"""Reshaping layers: Permute, RepeatVector, Cropping1D/2D, ZeroPadding1D, UpSampling1D/2D
(Keras 3's arguments, defaults and errors)."""
import kiln.image as image_ops
from kiln.keras.layers import _args
from kiln.keras.layers.base import Layer, InputSpec
from kiln.ops import array_ops, core, math_ops
from kiln.tensor_shape import TensorShape


class Permute(Layer):
    """Permutes the axes after the batch axis: ``dims`` counts them from 1
    ((2, 1) swaps the first two)."""

    _kiln_static_shapes = True

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set of "
                             "indices in `dims` must be consecutive and start from 1. "
                             f"Received dims={dims}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs):
        return array_ops.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        return TensorShape([dims[0]] + [dims[d] for d in self.dims])

    def get_config(self):
        return {**super().get_config(), "dims": self.dims}


def _cropping_pairs(cropping):
    bad = ValueError("`cropping` should be either an int, a tuple of 2 ints "
                     "(symmetric_height_crop, symmetric_width_crop), or a tuple of 2 tuples of 2 "
                     "ints ((top_crop, bottom_crop), (left_crop, right_crop)). Received: "
                     f"cropping={cropping}.")
    if isinstance(cropping, int) and not isinstance(cropping, bool):
        pairs = ((cropping, cropping), (cropping, cropping))
    elif isinstance(cropping, (list, tuple)) and len(cropping) == 2:
        pairs = []
        for c in cropping:
            if isinstance(c, int) and not isinstance(c, bool):
                pairs.append((c, c))
            elif isinstance(c, (list, tuple)) and len(c) == 2 and all(
                    isinstance(v, int) and not isinstance(v, bool) for v in c):
                pairs.append(tuple(c))
            else:
                raise bad
        pairs = tuple(pairs)
    else:
        raise bad
    if any(v < 0 for p in pairs for v in p):
        raise bad
    return pairs


class Cropping2D(Layer):
    """Crops rows and columns off a 4-D input: ``cropping`` is an int,
    (sym_h, sym_w) or ((top, bottom), (left, right))."""

    _kiln_static_shapes = True

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.cropping = _cropping_pairs(cropping)
        self.data_format = _args.data_format(data_format)
        self.input_spec = InputSpec(ndim=4)

    def _spatial(self):
        return (1, 2) if self.data_format == "channels_last" else (2, 3)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        for axis, (a, b) in zip(self._spatial(), self.cropping):
            if dims[axis] is not None:
                if a + b >= dims[axis]:
                    raise ValueError(
                        "Values in `cropping` argument should be smaller than the corresponding "
                        f"spatial dimension of the input. Received: input_shape={input_shape}, "
                        f"cropping={self.cropping}")
                dims[axis] -= a + b
        return TensorShape(dims)

    def call(self, inputs):
        self.compute_output_shape(inputs.shape)  # the error above, for known dims
        idx = [slice(None)] * 4
        for axis, (a, b) in zip(self._spatial(), self.cropping):
            idx[axis] = slice(a, -b if b else None)
        return inputs[tuple(idx)]

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping,
                "data_format": self.data_format}


_INTERPOLATIONS = ("nearest", "bilinear")


class UpSampling2D(Layer):
    """Repeats the rows and columns of a 4-D input ``size`` = (rows, cols)
    times ("nearest"), or resizes them by that factor ("bilinear", as
    tf.image.resize)."""

    _kiln_static_shapes = True

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.size = _args.int_tuple(size, 2, "size")
        self.data_format = _args.data_format(data_format)
        if interpolation not in _INTERPOLATIONS:
            raise ValueError(f"`interpolation` argument should be one of {list(_INTERPOLATIONS)}"
                             f". Received: interpolation={interpolation!r}")
        self.interpolation = interpolation
        self.input_spec = InputSpec(ndim=4)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        axes = (1, 2) if self.data_format == "channels_last" else (2, 3)
        for axis, s in zip(axes, self.size):
            if dims[axis] is not None:
                dims[axis] *= s
        return TensorShape(dims)

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, (0, 2, 3, 1))
        sh, sw = self.size
        h, w, c = x.shape[1], x.shape[2], x.shape[3]
        if self.interpolation == "bilinear":
            if h is None or w is None:
                raise ValueError("UpSampling2D(interpolation='bilinear') needs the input's height "
                                 f"and width defined. Received: input_shape={inputs.shape}")
            x = image_ops.resize(x, [h * sh, w * sw], method="bilinear")
        elif None not in (h, w, c):
            # Each value times a [sh, sw] block of ones (a broadcast whose
            # gradient sums the block), the blocks then laid out as rows.
            x = array_ops.reshape(x, [-1, h, 1, w, 1, c])
            x = x * array_ops.ones([1, 1, sh, 1, sw, 1], dtype=x.dtype)
            x = array_ops.reshape(x, [-1, h * sh, w * sw, c])
        else:  # sizes known only at run time: row and column indices gathered
            shape = array_ops.shape(x)
            for axis, s in ((1, sh), (2, sw)):
                index = math_ops.floordiv(core.range(shape[axis] * s), s)
                x = array_ops.gather(x, index, axis=axis)
        if self.data_format == "channels_first":
            x = array_ops.transpose(x, (0, 3, 1, 2))
        return x

    def get_config(self):
        return {**super().get_config(), "size": self.size, "data_format": self.data_format,
                "interpolation": self.interpolation}


class RepeatVector(Layer):
    """Repeats [batch, features] inputs ``n`` times: [batch, n, features]."""

    _kiln_static_shapes = True

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"Expected an integer value for `n`, got {type(n)}.")
        self.n = n
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        x = array_ops.expand_dims(inputs, 1)
        return x * array_ops.ones([1, self.n, 1], dtype=x.dtype)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        return TensorShape([dims[0], self.n, dims[1]])

    def get_config(self):
        return {**super().get_config(), "n": self.n}


def _pair(value, name, layer):
    """An int or two ints as (before, after), each >= 0."""
    pair = (value, value) if isinstance(value, int) and not isinstance(value, bool) \
        else tuple(value) if isinstance(value, (list, tuple)) else None
    if pair is None or len(pair) != 2 or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in pair):
        raise ValueError(f"`{name}` of {layer} should be an int or a tuple of 2 non-negative "
                         f"ints. Received: {name}={value}")
    return pair


class Cropping1D(Layer):
    """Crops ``cropping`` = (start, end) steps off [batch, steps, features]."""

    _kiln_static_shapes = True

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.cropping = _pair(cropping, "cropping", "Cropping1D")
        self.input_spec = InputSpec(ndim=3)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        a, b = self.cropping
        if dims[1] is not None:
            if a + b >= dims[1]:
                raise ValueError("`cropping` parameter of `Cropping1D` layer must be smaller "
                                 f"than the input length. Received: inputs.shape={input_shape}, "
                                 f"and cropping={self.cropping}")
            dims[1] -= a + b
        return TensorShape(dims)

    def call(self, inputs):
        self.compute_output_shape(inputs.shape)
        a, b = self.cropping
        return inputs[:, a:(-b if b else None), :]

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}


class ZeroPadding1D(Layer):
    """Pads ``padding`` = (start, end) zero steps around [batch, steps, features]
    ([batch, features, steps] with data_format="channels_first")."""

    _kiln_static_shapes = True

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.padding = _pair(padding, "padding", "ZeroPadding1D")
        self.data_format = _args.data_format(data_format)
        self.input_spec = InputSpec(ndim=3)

    def _steps_axis(self):
        return 1 if self.data_format == "channels_last" else 2

    def call(self, inputs):
        pads = [[0, 0], [0, 0], [0, 0]]
        pads[self._steps_axis()] = list(self.padding)
        return array_ops.pad(inputs, pads)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        axis = self._steps_axis()
        if dims[axis] is not None:
            dims[axis] += sum(self.padding)
        return TensorShape(dims)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding,
                "data_format": self.data_format}


class UpSampling1D(Layer):
    """Repeats each step of [batch, steps, features] ``size`` times."""

    _kiln_static_shapes = True

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = _args.positive_int(size, "size", "UpSampling1D")
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        steps, features = inputs.shape[1], inputs.shape[2]
        if steps is not None and features is not None:
            x = array_ops.reshape(inputs, [-1, steps, 1, features])
            x = x * array_ops.ones([1, 1, self.size, 1], dtype=x.dtype)
            return array_ops.reshape(x, [-1, steps * self.size, features])
        index = math_ops.floordiv(core.range(array_ops.shape(inputs)[1] * self.size), self.size)
        return array_ops.gather(inputs, index, axis=1)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        if dims[1] is not None:
            dims[1] *= self.size
        return TensorShape(dims)

    def get_config(self):
        return {**super().get_config(), "size": self.size}


__all__ = ["Permute", "RepeatVector", "Cropping1D", "Cropping2D", "ZeroPadding1D",
           "UpSampling1D", "UpSampling2D"]
