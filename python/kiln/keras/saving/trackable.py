"""The checkpoint edges of Keras objects, registered with kiln.train.graph.

Edges follow the object graph TensorFlow's Keras 3 saves, so each side
restores the other's ``tf.train.Checkpoint(model=..., optimizer=...)``:

- a layer: its weights under the attributes Keras 3 keeps them in (``bias``,
  ``_kernel`` for Dense and Conv, ``_embeddings``), then its trackable
  attributes (sublayers, variables, lists; kiln's ``kernel`` attribute is a
  second edge to ``_kernel``'s node); a compiled model adds ``optimizer``;
- a functional model: ``_operations``, its layers (input layers included);
  a Sequential: ``_functional/_operations``, its input layer then its layers;
- an optimizer: ``_variables`` (Keras' order), ``_trainable_variables``,
  ``_iterations``, ``_learning_rate`` and its slot lists (``_momentums``, ...);
- a metric: its state variables.

Checkpoints kiln wrote before name edges as tf.keras 2 did
(``layer_with_weights-N``, ``layer-N``, ``kernel``, ``iteration``, slots
under ``.OPTIMIZER_SLOT``): the legacy edges, which a restore still matches.
"""
from kiln import _kiln
from kiln.keras.engine.sequential import Sequential
from kiln.keras.engine.training import Model
from kiln.keras.layers.base import Layer
from kiln.keras.metrics import Metric
from kiln.keras.optimizers import Optimizer
from kiln.keras.saving import keras_paths
from kiln.train import graph

# Weights Keras 3 keeps in private attributes (``kernel`` is a property).
_PRIVATE_WEIGHTS = {"Dense": ("kernel",), "EinsumDense": ("kernel",), "Conv1D": ("kernel",),
                    "Conv2D": ("kernel",), "Conv3D": ("kernel",),
                    "Embedding": ("embeddings",)}


class _Node:
    """An object Keras 3 has and kiln does not (a Sequential's inner
    functional model, an input layer not made yet): edges only."""

    _kiln_trackable = True

    def __init__(self, children=()):
        self.children = list(children)

    def _kiln_children(self):
        return self.children


def _keras_class(layer):
    """The name of the first kiln.keras class of ``layer``'s type (a user's
    subclass of Dense keeps Dense's edges)."""
    for cls in type(layer).__mro__:
        if cls.__module__.startswith("kiln.keras."):
            return cls.__name__
    return None


def _operations(layer):
    """Keras 3's ``_operations`` of a functional model or Sequential, or None."""
    if getattr(layer, "_kiln_graph", None) is not None:
        return list(layer._kiln_graph.layers)
    if isinstance(layer, Sequential):
        node = getattr(layer._kiln_input, "_node", None)
        first = getattr(node, "layer", None)
        return [first if first is not None else _Node()] + list(layer._kiln_layers)
    return None


def weight_edges(layer):
    """(edge, weight) of ``layer``'s own weights, by Keras 3's attribute names."""
    private = _PRIVATE_WEIGHTS.get(_keras_class(layer), ())
    return [(f"_{name}" if name in private else name, v)
            for name, v in graph.named(layer._kiln_weights)]


def layer_children(layer):
    out = []
    ops = _operations(layer)
    if ops is not None:
        edge = ("_operations", ops)
        out.append(("_functional", _Node([edge])) if isinstance(layer, Sequential) else edge)
    out += weight_edges(layer) + graph.attributes(layer)  # ``kernel``: an alias of ``_kernel``
    opt = layer.optimizer if isinstance(layer, Model) else None
    if isinstance(opt, Optimizer):
        out.append(("optimizer", opt))
    return out


def legacy_layer_children(layer):
    out = []
    layers = _model_layers(layer)
    if layers is not None:
        weighted = [sub for sub in layers if sub.weights]
        out += [(f"layer_with_weights-{j}", sub) for j, sub in enumerate(weighted)]
        out += [(f"layer-{i}", sub) for i, sub in enumerate(layers)]
    return out + graph.named(layer._kiln_weights) + graph.attributes(layer)


def _model_layers(layer):
    if getattr(layer, "_kiln_graph", None) is not None:
        return list(layer._kiln_graph.layers)
    if isinstance(layer, Sequential):
        return list(layer._kiln_layers)
    return None


def metric_children(metric):
    return graph.named(metric._kiln_vars) + graph.attributes(metric)


def optimizer_children(opt):
    out = [("_variables", keras_paths.optimizer_variables(opt)),
           ("_trainable_variables", list(opt._trainable_variables)),
           ("_iterations", opt.iterations)]
    if isinstance(opt._learning_rate, _kiln.Variable):
        out.append(("_learning_rate", opt._learning_rate))
    return out + _slot_lists(opt)


def _slot_lists(opt):
    """The optimizer's lists of slot variables by attribute (``_momentums``)."""
    out = []
    for name, value in vars(opt).items():
        if isinstance(value, (list, tuple)) and value and \
                all(getattr(v, "_kiln_slot", None) is not None for v in value):
            out.append((name, list(value)))
    return out


def legacy_optimizer_children(opt):
    out = [("iteration", opt.iterations)]
    if isinstance(opt._learning_rate, _kiln.Variable):
        out.append(("learning_rate", opt._learning_rate))
    ids = {id(v) for _, v in out}
    rest = [v for v in opt.variables
            if id(v) not in ids and getattr(v, "_kiln_slot", None) is None]
    return out + graph.named(rest)


graph.register(Layer, layer_children, legacy=legacy_layer_children)
graph.register(Metric, metric_children)
graph.register(Optimizer, optimizer_children, optimizer=True,
               legacy=legacy_optimizer_children)
