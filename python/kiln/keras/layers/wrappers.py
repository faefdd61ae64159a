"""Layer wrappers: Bidirectional (an RNN run both ways) and TimeDistributed (a layer applied to
every step), with Keras 3's arguments, sublayer names and errors."""
from kiln.keras.layers.base import Layer, InputSpec, deserialize_nested, serialize_nested
from kiln.keras.layers.rnn import RNN
from kiln.ops import array_ops
from kiln.tensor_shape import TensorShape

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


def _renamed(name, prefix):
    return prefix + (name[len(prefix):] if name.startswith(prefix) else name)


def _copy(layer, **changes):
    config = layer.get_config()
    config.update(changes)
    return type(layer).from_config(config)


class Bidirectional(Layer):
    """Runs a recurrent ``layer`` forwards and a copy of it backwards over
    the steps (sublayers ``forward_<name>`` and ``backward_<name>``) and
    merges their outputs (``merge_mode``: concat, sum, mul, ave, or None for
    the pair); with return_sequences the backward outputs are put back in
    step order first. ``return_state`` appends both layers' states."""

    _kiln_static_shapes = True

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, RNN):
            raise ValueError("Please initialize `Bidirectional` layer with a `keras.layers.Layer` "
                             f"instance that is a recurrent layer. Received: {layer}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should be "
                             "one of {'sum', 'mul', 'ave', 'concat', None}")
        if backward_layer is not None and not isinstance(backward_layer, RNN):
            raise ValueError("`backward_layer` need to be a recurrent layer. Received: "
                             f"backward_layer={backward_layer}")
        self.forward_layer = _copy(layer, name=_renamed(layer.name, "forward_"))
        if backward_layer is None:
            self.backward_layer = _copy(layer, name=_renamed(layer.name, "backward_"),
                                        go_backwards=True)
        else:
            self.backward_layer = backward_layer
        self._verify_layers()
        for sub in (self.forward_layer, self.backward_layer):
            # As Keras: masked steps give zeros when the sequences are returned.
            sub.zero_output_for_mask = sub.return_sequences
        self.merge_mode = merge_mode
        self.return_sequences = self.forward_layer.return_sequences
        self.return_state = self.forward_layer.return_state
        self.supports_masking = True
        self.input_spec = InputSpec(ndim=3)
        if weights is not None:
            self._kiln_initial_weights = weights

    def _verify_layers(self):
        fwd, bwd = self.forward_layer, self.backward_layer
        if fwd.go_backwards == bwd.go_backwards:
            raise ValueError("Forward layer and backward layer should have different "
                             "`go_backwards` value. Received: forward_layer.go_backwards "
                             f"{fwd.go_backwards}, backward_layer.go_backwards="
                             f"{bwd.go_backwards}")
        for a in ("stateful", "return_sequences", "return_state"):
            if getattr(fwd, a) != getattr(bwd, a):
                raise ValueError("Forward layer and backward layer are expected to have the "
                                 f'same value for attribute "{a}", got "{getattr(fwd, a)}" '
                                 f'for forward layer and "{getattr(bwd, a)}" for backward '
                                 "layer")

    def build(self, input_shape):
        self.forward_layer.build(input_shape)
        self.backward_layer.build(input_shape)
        self.built = True

    def _merge(self, y, y_rev):
        if self.merge_mode == "concat":
            return array_ops.concat([y, y_rev], -1)
        if self.merge_mode == "sum":
            return y + y_rev
        if self.merge_mode == "ave":
            return (y + y_rev) * 0.5
        if self.merge_mode == "mul":
            return y * y_rev
        return [y, y_rev]

    def call(self, inputs, mask=None, training=None, initial_state=None):
        fwd_state = bwd_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            fwd_state, bwd_state = initial_state[:half], initial_state[half:]
        kwargs = {"mask": mask, "training": training}
        y = self.forward_layer(inputs, initial_state=fwd_state, **kwargs)
        y_rev = self.backward_layer(inputs, initial_state=bwd_state, **kwargs)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = array_ops.reverse(y_rev, [1])
        out = self._merge(y, y_rev)
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def compute_mask(self, inputs, mask=None):
        out = mask if self.return_sequences else None
        if self.merge_mode is None:
            out = [out, out]
        if self.return_state:
            n = len(self.forward_layer.cell.get_initial_state(1, "float32"))
            return (out if isinstance(out, list) else [out]) + [None] * (2 * n)
        return out

    def compute_output_shape(self, input_shape):
        shape = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            states = list(shape[1:]) * 2
            shape = shape[0]
        dims = list(shape)
        if self.merge_mode == "concat":
            dims[-1] = None if dims[-1] is None else dims[-1] * 2
        out = [TensorShape(dims)] * 2 if self.merge_mode is None else TensorShape(dims)
        if self.return_state:
            return (out if isinstance(out, list) else [out]) + states
        return out

    def get_config(self):
        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": serialize_nested(self.forward_layer),
                "backward_layer": serialize_nested(self.backward_layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer = deserialize_nested(config.pop("layer"), custom_objects)
        backward = config.pop("backward_layer", None)
        if backward is not None:
            config["backward_layer"] = deserialize_nested(backward, custom_objects)
        return cls(layer, **config)


class TimeDistributed(Layer):
    """Applies ``layer`` to every step of [batch, steps, ...] inputs (the
    steps folded into the batch): one set of weights for all steps."""

    _kiln_static_shapes = True

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(layer, Layer):
            raise ValueError("Please initialize `TimeDistributed` layer with a "
                             f"`keras.layers.Layer` instance. Received: {layer}")
        self.layer = layer
        self.supports_masking = True

    def build(self, input_shape):
        dims = list(TensorShape(input_shape))
        if len(dims) < 3:
            raise ValueError("`TimeDistributed` Layer should be passed an `input_shape` with at "
                             f"least 3 dimensions, received: {tuple(input_shape)}")
        if not self.layer.built:
            self.layer.build([None] + dims[2:])
            self.layer.built = True
        self.built = True

    def call(self, inputs, training=None, mask=None):
        shape = array_ops.shape(inputs)
        inner = [-1] + list(inputs.shape[2:])
        if any(d is None for d in inner[1:]):
            inner = array_ops.concat([[-1], shape[2:]], 0)
        y = self.layer(array_ops.reshape(inputs, inner), training=training)
        out_shape = array_ops.concat([shape[:2], array_ops.shape(y)[1:]], 0)
        return array_ops.reshape(y, out_shape)

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        inner = self.layer.compute_output_shape([None] + dims[2:])
        return TensorShape(dims[:2] + list(inner)[1:])

    def get_config(self):
        return {**super().get_config(), "layer": serialize_nested(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer = deserialize_nested(config.pop("layer"), custom_objects)
        return cls(layer, **config)


__all__ = ["Bidirectional", "TimeDistributed"]
