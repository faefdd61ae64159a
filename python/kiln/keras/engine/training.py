"""kiln.keras.Model: a functional model ``Model(inputs, outputs)`` or a
subclassed model that overrides call()."""
import numpy as np

from kiln import _kiln
from kiln import nest
from kiln.keras.layers.base import Layer
from kiln.keras.engine import summary as summary_mod
from kiln.keras.engine.functional import GraphNetwork
from kiln.tensor_shape import TensorShape


def _is_single_shape(shape):
    if isinstance(shape, TensorShape):
        return True
    return isinstance(shape, (list, tuple)) and all(
        d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in shape)


class Model(Layer):
    """A layer with training-free model utilities (tf.keras.Model).

    ``Model(inputs, outputs, name=None)`` builds a functional model from Keras
    tensors (``kiln.keras.Input`` and layer calls); calling it replays the
    recorded layer calls on real tensors, eagerly or inside kiln.function.
    Subclasses may instead create layers in __init__ and override call().
    """

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", None)
        outputs = kwargs.pop("outputs", None)
        if len(args) > 2:
            raise TypeError(f"Model() takes at most 2 positional arguments (inputs, outputs), "
                            f"got {len(args)}")
        if args:
            inputs = args[0]
        if len(args) > 1:
            outputs = args[1]
        super().__init__(**kwargs)
        self._kiln_graph = None
        self._kiln_predict_fn = None
        if inputs is not None or outputs is not None:
            if inputs is None or outputs is None:
                raise ValueError("A functional Model needs both inputs and outputs")
            self._kiln_graph = GraphNetwork(inputs, outputs, self.name)
            self.built = True

    # ---- structure ----

    @property
    def layers(self):
        """The model's layers (a functional model lists its input layers first)."""
        if self._kiln_graph is not None:
            return list(self._kiln_graph.layers)
        return self._sublayers_direct()

    def _sublayers_direct(self):
        if self._kiln_graph is not None:
            return list(self._kiln_graph.layers)
        return super()._sublayers_direct()

    @property
    def submodules(self):
        out, seen = [], set()

        def rec(layer):
            for sub in layer._sublayers_direct():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out.append(sub)
                    rec(sub)
        rec(self)
        return tuple(out)

    @property
    def inputs(self):
        """The functional model's input Keras tensors (a list)."""
        return list(self._kiln_graph.inputs) if self._kiln_graph is not None else None

    @property
    def outputs(self):
        """The functional model's output Keras tensors (a list)."""
        return list(self._kiln_graph.outputs) if self._kiln_graph is not None else None

    @property
    def input(self):
        if self._kiln_graph is not None:
            return self._kiln_graph.input_structure
        return super().input

    @property
    def output(self):
        if self._kiln_graph is not None:
            return self._kiln_graph.output_structure
        return super().output

    def get_layer(self, name=None, index=None):
        """The layer called ``name``, or at position ``index`` of ``layers``."""
        if index is not None and name is not None:
            raise ValueError("Provide only a layer name or a layer index. Received: "
                             f"index={index}, name={name}.")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only "
                                 f"has {len(layers)} layers.")
            return layers[index]
        if name is not None:
            for layer in layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: "
                             f"{[layer.name for layer in layers]}.")
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    # ---- building and calling ----

    def _maybe_build(self, inputs):
        if not self.built:
            # A subclassed model builds its layers as call() reaches them.
            self.built = True

    def build(self, input_shape=None):
        """Creates every weight. Functional models are built already; a
        subclassed model traces call() on placeholders of ``input_shape``."""
        if self._kiln_graph is not None:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument to build a "
                             "subclassed model.")
        def spec(shape):
            return _kiln.TensorSpec(list(TensorShape(shape)), self._dtype)
        if _is_single_shape(input_shape):
            specs = spec(input_shape)
        elif isinstance(input_shape, dict):
            specs = {k: spec(v) for k, v in input_shape.items()}
        else:
            specs = [spec(s) for s in input_shape]
        from kiln.function import function as kfunction
        self.built = True
        kfunction(lambda x: self.call(x), autograph=True).get_concrete_function(specs)

    def call(self, inputs, training=None, mask=None):
        if self._kiln_graph is not None:
            return self._kiln_graph.run(inputs)
        raise NotImplementedError(f"Model {type(self).__name__} has no call(): a subclassed "
                                  "model must override call(), or use Model(inputs, outputs)")

    def compute_output_shape(self, input_shape):
        raise NotImplementedError  # shapes of nested models are found by tracing

    # ---- inference utilities ----

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs as NumPy arrays, computed ``batch_size`` samples at
        a time (default 32) in a kiln.function and concatenated."""
        if steps is not None:
            raise ValueError("predict: steps is not supported; pass the whole input")
        if batch_size is None:
            batch_size = 32
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size <= 0:
            raise ValueError(f"predict: batch_size must be a positive int, got {batch_size!r}")
        flat = [a.numpy() if isinstance(a, (_kiln.Tensor, _kiln.Variable)) else np.asarray(a)
                for a in nest.flatten(x)]
        if not flat:
            raise ValueError("predict: no input data")
        sizes = {a.shape[0] if a.ndim else None for a in flat}
        if len(sizes) != 1 or None in sizes:
            raise ValueError(f"predict: all inputs need the same number of samples (first "
                             f"dimension), got shapes {[a.shape for a in flat]}")
        n = sizes.pop()
        if n == 0:
            raise ValueError("predict: the input has 0 samples")
        if self._kiln_predict_fn is None:
            from kiln.function import function as kfunction
            self._kiln_predict_fn = kfunction(self._kiln_predict_step)
        results = []
        for start in range(0, n, batch_size):
            batch = [_kiln.convert_to_tensor(np.ascontiguousarray(a[start:start + batch_size]))
                     for a in flat]
            batch = batch[0] if not nest.is_nested(x) else nest.pack_sequence_as(x, batch)
            out = self._kiln_predict_fn(batch)
            results.append([t.numpy() for t in nest.flatten(out)])
            structure = out
        merged = [np.concatenate([r[i] for r in results], axis=0)
                  for i in range(len(results[0]))]
        if not nest.is_nested(structure):
            return merged[0]
        return nest.pack_sequence_as(structure, merged)

    def _kiln_predict_step(self, x):
        return self(x, training=False)

    def predict_on_batch(self, x):
        """The outputs for one batch, as NumPy arrays."""
        out = self(x, training=False)
        return nest.map_structure(lambda t: t.numpy(), out)

    def compile(self, *args, **kwargs):
        raise NotImplementedError("kiln.keras models are inference-only for now: compile/fit "
                                  "arrive with gradients")

    fit = evaluate = train_on_batch = compile

    # ---- summary ----

    def _kiln_summary_rows(self):
        rows = []
        graph = self._kiln_graph
        for layer in self.layers:
            if graph is None:
                nodes = layer._kiln_nodes
            else:
                nodes = graph.layer_nodes.get(id(layer)) or layer._kiln_nodes[:1]
            shape = summary_mod.format_shape(nodes[0].outputs) if len(nodes) == 1 \
                else "multiple"
            connected = []
            for node in nodes:
                for t in node.input_tensors:
                    src = t._node
                    connected.append(f"{src.layer.name}[{src.layer._kiln_nodes.index(src)}]"
                                     f"[{t._index}]")
            rows.append((layer, shape, connected))
        return rows

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False,
                show_trainable=False, layer_range=None):
        """Prints the model's layers with their output shapes and parameter
        counts, then the total, trainable and non-trainable parameter counts."""
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        if expand_nested:
            raise NotImplementedError("summary(expand_nested=True) is not supported yet")
        if layer_range is not None:
            raise NotImplementedError("summary(layer_range=...) is not supported yet")
        lines = summary_mod.summary_lines(self, line_length, positions, show_trainable)
        fn = print_fn or print
        for line in lines:
            fn(line)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable}
