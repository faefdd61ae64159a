"""kiln.keras.Model: a functional model ``Model(inputs, outputs)`` or a
subclassed model that overrides call()."""
import json

import numpy as np

from kiln import _kiln, _restore_hooks
from kiln import nest
from kiln.distribute import distribute_lib
from kiln.function import function as kfunction
from kiln.keras import optimizers
from kiln.keras.layers.base import Layer, _input_shape
from kiln.keras.layers._path_scope import plain_shape
from kiln.keras.engine import summary as summary_mod
from kiln.keras.engine import trainer
from kiln.keras.engine.functional import GraphNetwork
from kiln.tensor_shape import TensorShape


def _is_single_shape(shape):
    if isinstance(shape, TensorShape):
        return True
    return isinstance(shape, (list, tuple)) and all(
        d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in shape)


class Model(Layer):
    """A layer with training and inference utilities (tf.keras.Model).

    ``Model(inputs, outputs, name=None)`` builds a functional model from Keras
    tensors (``kiln.keras.Input`` and layer calls); calling it replays the
    recorded layer calls on real tensors, eagerly or inside kiln.function.
    Subclasses may instead create layers in __init__ and override call().
    compile() then fit() / evaluate() train and test it (engine/trainer.py).
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
        # A model created in a strategy's scope trains with that strategy.
        self._kiln_strategy = (distribute_lib.get_strategy() if distribute_lib.has_strategy()
                               else None)
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
            self._kiln_build_shapes = {"input_shape": plain_shape(_input_shape(inputs))}
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
        self.built = True
        kfunction(lambda x: self.call(x), autograph=True).get_concrete_function(specs)

    def get_build_config(self):
        if self._kiln_graph is not None:
            return {"input_shape": None}  # as Keras 3: built from its inputs
        return super().get_build_config()

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

    # ---- training (the loops live in engine/trainer.py) ----

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=1,
                jit_compile=None, auto_scale_loss=True, **kwargs):
        """Configures the model for training (tf.keras.Model.compile).

        optimizer: a name ('adam', 'sgd', ...) or an optimizer instance.
        loss: a name ('sparse_categorical_crossentropy', 'mse', ...), a Loss, a
          function(y_true, y_pred), or for several outputs a list / dict of them.
        metrics: a list of names ('accuracy', 'mae', ...), Metric objects or
          functions; 'accuracy' becomes binary, sparse or categorical accuracy
          to fit the loss and the shapes. weighted_metrics also use sample_weight.
        run_eagerly: run the steps op by op instead of as one kiln.function.
        jit_compile: passed to the step's kiln.function.
        auto_scale_loss: under the "mixed_float16" policy, wrap the optimizer
          in a LossScaleOptimizer (as Keras 3).
        Unknown names raise ValueError here.
        """
        if kwargs:
            raise TypeError(f"compile() got unexpected keyword arguments {sorted(kwargs)}")
        if steps_per_execution not in (None, 1):
            raise NotImplementedError("compile: steps_per_execution > 1 is not supported yet")
        with trainer.strategy_scope(self):  # the optimizer's variables are mirrored too
            self._kiln_compiled = trainer.CompiledState(
                self, optimizer, loss, loss_weights, metrics, weighted_metrics, run_eagerly,
                jit_compile)
            given = self._kiln_compiled.optimizer
            if auto_scale_loss and self.dtype_policy.name == "mixed_float16" and \
                    given is not None and not isinstance(given, optimizers.LossScaleOptimizer):
                self._kiln_compiled.optimizer = optimizers.LossScaleOptimizer(
                    given, name="loss_scale_optimizer")
        self._kiln_compile_args = {  # for get_compile_config (saving)
            "optimizer": given,  # as given: Keras saves the optimizer before its wrapping
            "loss": loss, "metrics": metrics, "loss_weights": loss_weights,
            "weighted_metrics": weighted_metrics, "run_eagerly": run_eagerly,
            "jit_compile": jit_compile}
        self._kiln_announce_optimizer()

    def _kiln_announce_optimizer(self):
        """A checkpoint read before compile gives the optimizer its saved
        state (iterations now, slots when built), as TensorFlow does."""
        if _restore_hooks.PENDING:
            _restore_hooks.notify(self, "optimizer", self.optimizer)

    @property
    def distribute_strategy(self):
        """The kiln.distribute strategy the model was created under (the
        current strategy when it was created outside any)."""
        return self._kiln_strategy or distribute_lib.get_strategy()

    @property
    def optimizer(self):
        """The compiled optimizer (None before compile)."""
        state = getattr(self, "_kiln_compiled", None)
        return state.optimizer if state is not None else None

    @optimizer.setter
    def optimizer(self, value):
        if not self.compiled:
            raise RuntimeError(trainer._NOT_COMPILED)
        self._kiln_compiled.optimizer = optimizers.get(value)
        self._kiln_compiled.train_function = None
        self._kiln_announce_optimizer()

    @property
    def loss(self):
        """The loss as given to compile()."""
        state = getattr(self, "_kiln_compiled", None)
        return state.loss if state is not None else None

    @property
    def compiled(self):
        return getattr(self, "_kiln_compiled", None) is not None

    @property
    def run_eagerly(self):
        state = getattr(self, "_kiln_compiled", None)
        return bool(state is not None and state.run_eagerly)

    @property
    def output_names(self):
        """The names of the output layers (one per model output)."""
        outputs = self.outputs
        if not outputs:
            return ["output_1"]
        return [t._node.layer.name if getattr(t, "_node", None) is not None else
                f"output_{i + 1}" for i, t in enumerate(outputs)]

    @property
    def metrics(self):
        """The loss tracker and the compiled metrics (those resolved from names
        such as 'accuracy' appear after the first train or test step)."""
        state = getattr(self, "_kiln_compiled", None)
        return state.all_metrics() if state is not None else []

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        """Resets the state of every metric (fit does it at each epoch start)."""
        trainer.reset_metrics(self)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        """The total loss of a batch: compiled losses and regularization."""
        return trainer.compute_loss(self, x, y, y_pred, sample_weight)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Updates the compiled metrics; returns {name: result} of all metrics."""
        return trainer.compute_metrics(self, x, y, y_pred, sample_weight)

    def train_step(self, data):
        """One step on a batch ``data`` = (x, y[, sample_weight]): forward under
        a GradientTape, loss, gradients, optimizer.apply_gradients, metric
        updates. Returns {name: result}. Override to customize fit()."""
        return trainer.train_step(self, data)

    def test_step(self, data):
        """Loss and metric updates on a batch; override to customize evaluate()."""
        return trainer.test_step(self, data)

    def make_train_function(self, force=False):
        """The train step as one kiln.function (made once per compile)."""
        if force and self.compiled:
            self._kiln_compiled.train_function = None
        return trainer.make_function(self, "train")

    def make_test_function(self, force=False):
        """The test step as one kiln.function (made once per compile)."""
        if force and self.compiled:
            self._kiln_compiled.test_function = None
        return trainer.make_function(self, "test")

    @property
    def train_function(self):
        state = getattr(self, "_kiln_compiled", None)
        return state.train_function if state is not None else None

    @property
    def test_function(self):
        state = getattr(self, "_kiln_compiled", None)
        return state.test_function if state is not None else None

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, **kwargs):
        """Trains for ``epochs`` passes over the data (tf.keras.Model.fit).

        x, y: NumPy arrays or kiln tensors (nested for several inputs/outputs),
        or x a kiln.data.Dataset of (x, y[, sample_weight]) batches and y None.
        batch_size defaults to 32; shuffle reshuffles the samples each epoch.
        validation_split holds out the last fraction of the samples;
        validation_data is (x_val, y_val[, sw_val]) or a dataset. verbose: 0
        silent, 1 a progress bar, 2 one line per epoch. Returns a History whose
        ``history`` dict holds each epoch's loss and metrics (and val_ ones).
        """
        if kwargs:
            raise TypeError(f"fit() got unexpected keyword arguments {sorted(kwargs)}")
        return trainer.fit(self, x, y, batch_size, epochs, verbose, callbacks,
                           validation_split, validation_data, shuffle, class_weight,
                           sample_weight, initial_epoch, steps_per_epoch, validation_steps,
                           validation_batch_size, validation_freq)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False, **kwargs):
        """The loss and metrics over the data, batch by batch in one
        kiln.function: the loss alone when there are no metrics, else the list
        [loss, metric, ...] (metrics_names order), or a dict if return_dict."""
        if kwargs:
            raise TypeError(f"evaluate() got unexpected keyword arguments {sorted(kwargs)}")
        return trainer.evaluate(self, x, y, batch_size, verbose, sample_weight, steps,
                                callbacks, return_dict)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       reset_metrics=True, return_dict=False):
        """One training step on x as a single batch; returns the loss (and
        metrics) as evaluate does. reset_metrics=False accumulates them."""
        if class_weight is not None:
            raise NotImplementedError("train_on_batch: class_weight is not supported yet")
        return trainer.on_batch(self, "train", x, y, sample_weight, reset_metrics, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True,
                      return_dict=False):
        """The loss (and metrics) of x as a single batch, without training."""
        return trainer.on_batch(self, "test", x, y, sample_weight, reset_metrics, return_dict)

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

    # kiln.keras.saving (above this module) installs its functions here.
    _kiln_saving = None

    def get_config(self):
        if self._kiln_graph is not None:
            return self._kiln_saving.functional_config(self)
        return {"name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A model from get_config()'s dict (a functional config rebuilds the graph)."""
        with cls._kiln_saving.scope(custom_objects or {}):
            return cls._kiln_saving.model_from_config(cls, config)

    # ---- saving (kiln/keras/saving) ----

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """Writes the model (config, weights, optimizer state) to a ``.keras`` file."""
        self._kiln_saving.save_model(self, filepath, overwrite=overwrite, zipped=zipped,
                                     **kwargs)

    _kiln_export = None  # set by kiln.saved_model, which sits above this module

    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None,
               **kwargs):
        """Writes a SavedModel serving ``self(inputs, training=False)`` as the
        ``serve`` endpoint and the serving_default signature (Keras 3's export)."""
        self._kiln_export(self, filepath, format=format, verbose=verbose,
                          input_signature=input_signature, **kwargs)

    def save_weights(self, filepath, overwrite=True):
        """Writes the weights to a ``.weights.h5`` file (kiln's format) or a
        checkpoint prefix."""
        self._kiln_saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False):
        """Loads weights written by save_weights() or save()."""
        return self._kiln_saving.load_weights(self, filepath, skip_mismatch=skip_mismatch)

    def get_compile_config(self):
        """compile()'s arguments as a config (None before compile)."""
        return self._kiln_saving.compile_config(self) if self.compiled else None

    def compile_from_config(self, config):
        """Compiles the model as get_compile_config() described it."""
        self._kiln_saving.compile_from_config(self, config)

    def to_json(self, **kwargs):
        """The model's config (Keras 3's layout) as a JSON string."""
        return json.dumps(self._kiln_saving.serialize(self), **kwargs)
