"""kiln.keras.Sequential: a plain stack of layers, each with one input and one output."""
from kiln.keras.engine.keras_tensor import KerasTensor
from kiln.keras.layers.base import Layer, call_with_mask
from kiln.keras.layers._path_scope import layer_scope
from kiln.keras.layers.input_layer import InputLayer, Input
from kiln.keras.engine import summary as summary_mod
from kiln.keras.engine.training import Model
from kiln.tensor_shape import TensorShape


class Sequential(Model):
    """Layers applied one after another (tf.keras.Sequential).

    The input shape comes from an ``Input`` / ``InputLayer`` added first, an
    ``input_shape`` argument of the first layer, ``build(input_shape)``, or
    the first call; once known, every weight is created and summary() works.
    """

    def __init__(self, layers=None, name=None, trainable=True):
        super().__init__(name=name, trainable=trainable)
        self._kiln_layers = []
        self._kiln_input = None       # the symbolic input, once the shape is known
        self._kiln_out = None         # symbolic outputs, one per layer
        if layers is not None:
            if not isinstance(layers, (list, tuple)):
                layers = [layers]
            for layer in layers:
                self.add(layer)

    @property
    def layers(self):
        """The added layers (the input layer is not listed)."""
        return list(self._kiln_layers)

    def _sublayers_direct(self):
        return list(self._kiln_layers)

    def add(self, layer):
        """Appends a layer (or an Input tensor / InputLayer, first only)."""
        if isinstance(layer, KerasTensor):
            node = layer._node
            if node is None or not isinstance(node.layer, InputLayer):
                raise ValueError("Sequential.add: only Keras tensors from kiln.keras.Input "
                                 f"can be added, got {layer!r}")
            layer = node.layer
        if isinstance(layer, InputLayer):
            if self._kiln_layers or self._kiln_input is not None:
                raise ValueError("Sequential.add: an InputLayer can only be the first layer")
            self._kiln_input = layer.output
            self._kiln_out = []
            self.built = True
            return
        if not isinstance(layer, Layer):
            raise TypeError("The added layer must be an instance of class Layer. Received: "
                            f"layer={layer!r} of type {type(layer)}.")
        if any(existing.name == layer.name for existing in self._kiln_layers):
            raise ValueError(f'All layers added to a Sequential model should have unique names. '
                             f'Name "{layer.name}" is already the name of a layer in this model.')
        self._kiln_layers.append(layer)
        if self._kiln_input is None and len(self._kiln_layers) == 1 and \
                layer._batch_input_shape is not None:
            self._kiln_input = Input(batch_shape=layer._batch_input_shape,
                                     dtype=layer.dtype)
            self._kiln_out = []
        if self._kiln_input is not None:
            self._propagate(len(self._kiln_layers) - 1)

    def _propagate(self, start):
        with layer_scope(self):  # weights at "<model name>/<layer>/...", as Keras 3
            self._propagate_layers(start)

    def _propagate_layers(self, start):
        x = self._kiln_input if start == 0 else self._kiln_out[start - 1]
        del self._kiln_out[start:]
        for layer in self._kiln_layers[start:]:
            x = layer(x)
            if not isinstance(x, KerasTensor):
                raise ValueError(f"All layers in a Sequential model should have a single "
                                 f"output tensor; layer {layer.name!r} returned {x!r}")
            self._kiln_out.append(x)
        self.built = True

    def pop(self):
        """Removes the last layer."""
        if not self._kiln_layers:
            raise TypeError("There are no layers in the model.")
        layer = self._kiln_layers.pop()
        if self._kiln_out:
            self._kiln_out = self._kiln_out[:len(self._kiln_layers)]
        return layer

    def build(self, input_shape=None):
        """Creates every layer's weights for inputs of ``input_shape`` (batch included)."""
        if input_shape is None:
            if self._kiln_input is None:
                raise ValueError("You must provide an `input_shape` argument.")
        else:
            shape = TensorShape(input_shape)
            if self._kiln_input is None or not shape.is_compatible_with(self._kiln_input.shape):
                self._kiln_input = Input(batch_shape=tuple(shape))
        self._kiln_out = []
        self._propagate(0)

    def get_build_config(self):
        if self._kiln_input is not None:
            return {"input_shape": tuple(self._kiln_input.shape.as_list())}
        return super().get_build_config()

    def _maybe_build(self, inputs):
        if self._kiln_input is None and hasattr(inputs, "shape"):
            shape = TensorShape(inputs.shape)
            if shape.rank is not None and shape.rank >= 1:
                self.build([None] + list(shape)[1:])
                return
        self.built = True

    def call(self, inputs, training=None, mask=None):
        if not self._kiln_layers:
            raise ValueError("Sequential model has no layers; add some before calling it")
        x = inputs
        for layer in self._kiln_layers:
            x, mask = call_with_mask(layer, (x,), {}, mask)
        return x

    @property
    def inputs(self):
        return [self._kiln_input] if self._kiln_input is not None else None

    @property
    def outputs(self):
        return [self._kiln_out[-1]] if self._kiln_out else None

    @property
    def input(self):
        if self._kiln_input is not None:
            return self._kiln_input
        return super().input

    @property
    def output(self):
        if self._kiln_out:
            return self._kiln_out[-1]
        return super().output

    def _kiln_summary_rows(self):
        rows = []
        for i, layer in enumerate(self._kiln_layers):
            if self._kiln_out and i < len(self._kiln_out):
                shape = summary_mod.format_shape(self._kiln_out[i])
            else:
                shape = "?"
            rows.append((layer, shape, []))
        return rows

    def get_config(self):
        return self._kiln_saving.sequential_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        with cls._kiln_saving.scope(custom_objects or {}):
            return cls._kiln_saving.sequential_from_config(cls, config)
