"""Legacy Keras HDF5 files (``model.save("x.h5")`` of tf.keras 2 and Keras 3):
read only.

The root holds the attributes ``model_config`` (JSON) and ``training_config``
and the group ``model_weights`` (a ``save_weights("x.h5")`` file is that
group alone): its attribute ``layer_names`` lists the layers, each layer's
group lists its datasets in ``weight_names``. Weights go to the model's
layers that have weights, in order (trainable weights, then the others);
the optimizer's (``optimizer_weights``) when their count and shapes match.
tf.keras 2's functional ``inbound_nodes`` (``[[[name, node, tensor,
kwargs], ...]]``) are rewritten as Keras 3's.
"""
import json
import warnings

from kiln import errors
from kiln.keras.saving import keras_h5, keras_paths


def _text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    return v if isinstance(v, str) else str(v)


def _attr(obj, name, where):
    try:
        return obj.attrs.get(name)
    except (OSError, RuntimeError, ValueError, TypeError) as e:
        raise errors.DataLossError(f"{where}: cannot read the attribute {name} ({e})") from None


def _names(obj, name, where):
    value = _attr(obj, name, where)
    if value is None:
        return None
    try:
        return [_text(v) for v in list(value)]
    except TypeError:
        raise errors.DataLossError(f"{where}: the attribute {name} is not a list of "
                                   "names") from None


def json_attr(f, name, where):
    """The JSON attribute ``name`` of the file's root, or None."""
    raw = _attr(f, name, where)
    if raw is None:
        return None
    try:
        return json.loads(_text(raw))
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise errors.DataLossError(f"{where}: the attribute {name} is not valid JSON") from None


# ---- configs ----

def _history(item):
    if not isinstance(item, list) or len(item) < 3:
        raise ValueError(f"Malformed tf.keras 2 inbound node entry: {item!r}")
    return {"class_name": "__keras_tensor__",
            "config": {"keras_history": [item[0], item[1], item[2]]}}


def _node(node):
    """A tf.keras 2 node (list of [layer, node, tensor, kwargs]) as Keras 3's."""
    if isinstance(node, dict):
        return node
    if not isinstance(node, list) or not node:
        raise ValueError(f"Malformed tf.keras 2 inbound node: {node!r}")
    tensors = [_history(item) for item in node]
    kwargs = node[0][3] if len(node[0]) > 3 and isinstance(node[0][3], dict) else {}
    return {"args": [tensors[0] if len(tensors) == 1 else tensors], "kwargs": kwargs}


def _layer_entry(entry):
    config = entry.get("config")
    if entry.get("class_name") == "InputLayer" and isinstance(config, dict) and \
            "batch_input_shape" in config:
        config = dict(config)
        config["batch_shape"] = config.pop("batch_input_shape")
        entry = dict(entry, config=config)
    nodes = entry.get("inbound_nodes")
    if isinstance(nodes, list):
        entry = dict(entry, inbound_nodes=[_node(n) for n in nodes])
    return entry


def modernize(config):
    """A tf.keras 2 model config in Keras 3's layout (a Keras 3 one unchanged)."""
    if not isinstance(config, dict):
        raise errors.DataLossError("model_config does not describe a model")
    inner = config.get("config")
    if isinstance(inner, dict) and isinstance(inner.get("layers"), list):
        inner = dict(inner, layers=[_layer_entry(e) if isinstance(e, dict) else e
                                    for e in inner["layers"]])
        config = dict(config, config=inner)
    return config


def compile_config(training_config):
    """A legacy ``training_config`` as Keras 3's compile config."""
    if not isinstance(training_config, dict):
        return None
    out = {k: training_config.get(k) for k in ("loss", "metrics", "weighted_metrics",
                                               "loss_weights")}
    out["optimizer"] = training_config.get("optimizer_config")
    return out


# ---- weights ----

def _layer_values(store, group, layer_name, where):
    names = _names(group, "weight_names", f"{where}:{layer_name}") or []
    values = []
    for name in names:
        parts = [p for p in name.split("/") if p]
        if not parts:
            raise errors.DataLossError(f"{where}: layer {layer_name} lists an empty weight name")
        parent = store.group(group.name.strip("/") + "/" + "/".join(parts[:-1])) \
            if len(parts) > 1 else group
        if parent is None or not isinstance(parent, keras_h5.h5py.Group):
            raise errors.DataLossError(f"{where}: the weight {name} of layer {layer_name} "
                                       "is missing")
        values.append(store.value(parent, parts[-1], f"{layer_name}/{'/'.join(parts[:-1])}"))
    return values


def weights_group(f, where):
    """The group holding ``layer_names`` (the root, or ``model_weights``)."""
    store = keras_h5.Store(f, where)
    if _attr(f, "layer_names", where) is not None:
        return store, f
    group = store.group("model_weights")
    if group is None or _attr(group, "layer_names", where) is None:
        raise errors.DataLossError(f"{where}: not a Keras HDF5 weights file (no layer_names)")
    return store, group


def load_weights(model, f, where, skip_mismatch=False):
    """Assigns the weights of a legacy HDF5 file to ``model``'s layers, in order."""
    store, root = weights_group(f, where)
    saved = []
    for name in _names(root, "layer_names", where) or []:
        group = store._child(root, name, name)
        if not isinstance(group, keras_h5.h5py.Group):
            raise errors.DataLossError(f"{where}: the group of layer {name} is missing")
        values = _layer_values(store, group, name, where)
        if values and name != "top_level_model_weights":
            saved.append((name, values))
    layers = [layer for layer in model.layers if layer.weights]
    if len(layers) != len(saved):
        raise ValueError(f"{where}: Layer count mismatch when loading weights from file. "
                         f"Model expected {len(layers)} layers, found {len(saved)} saved "
                         f"layers.")
    problems = []
    for layer, (name, values) in zip(layers, saved):
        variables = list(layer.trainable_weights) + list(layer.non_trainable_weights)
        try:
            keras_h5.assign(variables, values, f"layer '{layer.name}' (saved as '{name}')")
        except ValueError as e:
            problems.append(str(e))
    if problems:
        message = f"{where}: the weights do not match the model: " + "; ".join(problems[:4])
        if not skip_mismatch:
            raise ValueError(message)
        warnings.warn(message + "; skipped (skip_mismatch=True)", stacklevel=4)


def load_optimizer(model, f, where):
    """The optimizer's state from ``optimizer_weights`` when it fits."""
    store = keras_h5.Store(f, where)
    group = store.group("optimizer_weights")
    opt = model.optimizer
    if group is None or opt is None:
        return
    values = _layer_values(store, group, "optimizer_weights", where)
    if not opt.built:
        opt.build(model.trainable_variables)
    variables = keras_paths.optimizer_variables(opt)
    try:
        keras_h5.assign(variables, values, "optimizer_weights")
    except ValueError as e:
        warnings.warn(f"{where}: the optimizer's saved state was not loaded ({e})",
                      stacklevel=4)
