"""The checkpoint edges of Keras objects, registered with kiln.train.graph.

A layer's children are its weights by name (``kernel``), then its trackable
attributes (sublayers, variables, lists of layers); a Sequential or
functional model adds ``layer_with_weights-N`` and ``layer-N`` edges to its
layers, as tf.keras 2 did. A metric's children are its state variables; an
optimizer's are ``iteration`` and ``learning_rate`` (its slots hang from the
variables they belong to).
"""
from kiln import _kiln
from kiln.keras.engine.sequential import Sequential
from kiln.keras.layers.base import Layer
from kiln.keras.metrics import Metric
from kiln.keras.optimizers import Optimizer
from kiln.train import graph


def _model_layers(layer):
    if getattr(layer, "_kiln_graph", None) is not None:
        return list(layer._kiln_graph.layers)
    if isinstance(layer, Sequential):
        return list(layer._kiln_layers)
    return None


def layer_children(layer):
    out = []
    layers = _model_layers(layer)
    if layers is not None:
        weighted = [sub for sub in layers if sub.weights]
        out += [(f"layer_with_weights-{j}", sub) for j, sub in enumerate(weighted)]
        out += [(f"layer-{i}", sub) for i, sub in enumerate(layers)]
    return out + graph.named(layer._kiln_weights) + graph.attributes(layer)


def metric_children(metric):
    return graph.named(metric._kiln_vars) + graph.attributes(metric)


def optimizer_children(opt):
    out = [("iteration", opt.iterations)]
    if isinstance(opt._learning_rate, _kiln.Variable):
        out.append(("learning_rate", opt._learning_rate))
    ids = {id(v) for _, v in out}
    rest = [v for v in opt.variables
            if id(v) not in ids and getattr(v, "_kiln_slot", None) is None]
    return out + graph.named(rest)


graph.register(Layer, layer_children)
graph.register(Metric, metric_children)
graph.register(Optimizer, optimizer_children, optimizer=True)
