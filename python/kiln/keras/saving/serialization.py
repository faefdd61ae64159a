"""Keras 3 configs: layers and models to JSON-ready dicts and back.

A layer is ``{"module", "class_name", "config", "registered_name"}``; a
functional model lists its layers with their ``inbound_nodes`` (call
arguments, Keras tensors as ``{"class_name": "__keras_tensor__", "config":
{"keras_history": [layer name, node index, tensor index]}}``) and its
``input_layers`` / ``output_layers``, as Keras 3 writes them.
"""
import base64
import builtins
import inspect
import marshal
import re
import sys
import threading
import types

import numpy as np

from kiln import _kiln, nest
from kiln.keras import activations, dtype_policies, layers as layers_mod, optimizers
from kiln.keras.engine.keras_tensor import KerasTensor
from kiln.keras.engine.sequential import Sequential
from kiln.keras.engine.training import Model
from kiln.keras.layers import base as layer_base
from kiln.keras.layers.base import Layer
from kiln.keras.layers.core import Lambda, _OpLambda
from kiln.keras.layers.input_layer import InputLayer
from kiln.keras.saving import object_registration as reg

_STATE = threading.local()   # safe_mode of the load in progress
_OP_FUNCTIONS = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b, "truediv": lambda a, b: a / b, "negative": lambda a: -a,
}
_OP_NAME = re.compile(r"^tf\.math\.(add|subtract|multiply|truediv|negative)(_\d+)?$")


# Built-in classes by the names configs use ("Functional": Keras 3's functional model).
BUILTINS = {n: getattr(layers_mod, n) for n in layers_mod.__all__
            if isinstance(getattr(layers_mod, n), type)}
BUILTINS.update({"Model": Model, "Functional": Model, "Sequential": Sequential})


def safe_mode():
    return getattr(_STATE, "safe_mode", True)


class SafeModeScope:
    """``with SafeModeScope(False):`` allows loading Python lambdas."""

    def __init__(self, safe_mode=True):
        self.safe_mode = safe_mode

    def __enter__(self):
        self._outer = safe_mode()
        _STATE.safe_mode = bool(self.safe_mode)

    def __exit__(self, *exc):
        _STATE.safe_mode = self._outer


# ---- plain values ----

def jsonable(v, where):
    """``v`` as JSON types (tuples become lists, dtypes names)."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [jsonable(x, where) for x in v]
    if isinstance(v, dict):
        return {_key(k, where): jsonable(x, where) for k, x in v.items()}
    if isinstance(v, _kiln.DType):
        return v.name
    if isinstance(v, dtype_policies.DTypePolicy):
        return dtype_policies.serialize(v)
    if hasattr(v, "as_list") and hasattr(v, "rank"):
        return None if v.rank is None else v.as_list()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if hasattr(v, "get_config"):
        return serialize_keras_object(v)
    if callable(v):
        return serialize_function(v)
    raise TypeError(f"Unable to serialize {v!r} to JSON ({where})")


def _key(k, where):
    if not isinstance(k, str):
        raise TypeError(f"Unable to serialize a dict with the non-string key {k!r} ({where})")
    return k


# ---- functions ----

def serialize_function(fn):
    """A registered or importable function by name; a lambda as its code."""
    for name, f in activations._ALL.items():
        if f is fn:
            return name
    registered = reg._GLOBAL_CUSTOM_NAMES.get(fn)
    if registered is None and getattr(fn, "__name__", None) == "<lambda>":
        return _serialize_lambda(fn)
    return {"module": getattr(fn, "__module__", None), "class_name": "function",
            "config": getattr(fn, "__name__", repr(fn)),
            "registered_name": registered or getattr(fn, "__name__", None)}


def _serialize_lambda(fn):
    closure = [jsonable(c.cell_contents, "a lambda's closure") for c in fn.__closure__ or ()]
    return {"class_name": "__lambda__", "config": {
        "code": base64.b64encode(marshal.dumps(fn.__code__)).decode("ascii"),
        "module": getattr(fn, "__module__", None),
        "defaults": jsonable(fn.__defaults__, "a lambda's defaults"), "closure": closure}}


def deserialize_function(entry, custom_objects=None):
    """The function an entry of serialize_function names."""
    if isinstance(entry, str):
        found = reg.get_registered_object(entry, custom_objects) or activations._ALL.get(entry)
        if found is None:
            found = _by_short_name(entry)
        if found is None:
            raise ValueError(f"Could not interpret function identifier: {entry!r}")
        return found
    if not isinstance(entry, dict):
        raise ValueError(f"Could not interpret function identifier: {entry!r}")
    if entry.get("class_name") == "__lambda__":
        return _load_lambda(entry.get("config") or {})
    for name in (entry.get("registered_name"), entry.get("config")):
        if isinstance(name, str):
            found = reg.get_registered_object(name, custom_objects) or \
                activations._ALL.get(name) or _by_short_name(name)
            if found is not None:
                return found
    raise ValueError(f"Could not locate function {entry.get('config')!r}. Make sure custom "
                     "functions are decorated with "
                     "`@kiln.keras.saving.register_keras_serializable()`.")


def _by_short_name(name):
    for registered, obj in list(reg._GLOBAL_CUSTOM_OBJECTS.items()):
        if registered.split(">")[-1] == name:
            return obj
    return None


def _lambda_globals(module):
    """The globals a loaded lambda sees: its module's when that module is
    loaded (a script's ``tf``), else builtins, NumPy and kiln (as ``tf``)."""
    loaded = sys.modules.get(module) if isinstance(module, str) else None
    if loaded is not None:
        return loaded.__dict__
    kiln = sys.modules.get("kiln")  # the package above this module: loaded already
    return {"__builtins__": builtins, "np": np, "kiln": kiln, "tf": kiln,
            "keras": getattr(kiln, "keras", None)}


def _load_lambda(config):
    if safe_mode():
        raise ValueError(
            "Requested the deserialization of a Lambda layer with a Python `lambda` inside "
            "it. This carries a potential risk of arbitrary code execution and thus it is "
            "disallowed by default. If you trust the source of the saved model, you can pass "
            "`safe_mode=False` to the loading function in order to allow Lambda layer "
            "loading.")
    code = marshal.loads(base64.b64decode(config["code"]))
    scope = _lambda_globals(config.get("module"))
    closure = tuple(types.CellType(v) for v in config.get("closure") or ())
    defaults = config.get("defaults")
    return types.FunctionType(code, scope, code.co_name, tuple(defaults) if defaults else None,
                              closure or None)


# ---- layers ----

def _module_of(cls):
    if cls.__module__.startswith("kiln.keras.layers"):
        return "keras.layers"
    return "keras" if cls.__module__.startswith("kiln.keras") else cls.__module__


def layer_config(layer):
    """The layer's get_config(), completed for kiln layers that do not say
    everything (Lambda) and with functions serialized."""
    config = dict(layer.get_config())
    if isinstance(layer, Lambda):
        config.update(function=serialize_function(layer.function), arguments=layer.arguments,
                      output_shape=layer._output_shape)
    for key in [k for k in config if k.endswith("activation")]:
        attr = getattr(layer, key, None)
        if callable(attr) and attr in reg._GLOBAL_CUSTOM_NAMES:
            config[key] = reg._GLOBAL_CUSTOM_NAMES[attr]
    return jsonable(config, f"the config of layer {layer.name!r}")


def serialize_keras_object(obj):
    """Keras 3's dict for a layer, model, optimizer, loss or metric; a function
    by name; plain values as they are."""
    if isinstance(obj, _OpLambda):
        m = _OP_NAME.match(obj.name)
        if m is None:
            raise TypeError(f"Unable to serialize the operation layer {obj.name!r}")
        return {"module": "keras.layers", "class_name": "TFOpLambda", "registered_name": None,
                "config": {"name": obj.name, "function": m.group(1), "trainable": obj.trainable,
                           "dtype": obj.dtype}}
    if isinstance(obj, optimizers.Optimizer):
        return jsonable(optimizers.serialize(obj), "the optimizer")
    if isinstance(obj, Layer):
        cls = type(obj)
        functional = getattr(obj, "_kiln_graph", None) is not None
        class_name = "Functional" if functional and cls.__module__.startswith("kiln.") \
            else cls.__name__
        builtin = cls.__module__.startswith("kiln.keras")
        module = "keras.src.models.functional" if class_name == "Functional" else _module_of(cls)
        return {"module": module, "class_name": class_name, "config": layer_config(obj),
                "registered_name": None if builtin else reg.get_registered_name(cls)}
    if hasattr(obj, "get_config"):
        cls = type(obj)
        return {"module": cls.__module__, "class_name": cls.__name__,
                "config": jsonable(obj.get_config(), cls.__name__),
                "registered_name": reg._GLOBAL_CUSTOM_NAMES.get(cls)}
    if callable(obj):
        return serialize_function(obj)
    return jsonable(obj, "a value")


def find_class(entry, custom_objects=None, builtins_table=None):
    """The class an entry names: custom objects and registered classes first,
    then kiln's built-in layers and models."""
    for name in (entry.get("registered_name"), entry.get("class_name")):
        if isinstance(name, str):
            found = reg.get_registered_object(name, custom_objects)
            if isinstance(found, type):
                return found
    found = (builtins_table or BUILTINS).get(entry.get("class_name"))
    if found is None:
        raise TypeError(f"Could not locate class '{entry.get('class_name')}'. Make sure custom "
                        "classes are decorated with "
                        "`@kiln.keras.saving.register_keras_serializable()`. Full object "
                        f"config: {entry}")
    return found


def deserialize_keras_object(entry, custom_objects=None, safe_mode=True):
    """The layer or model of a Keras 3 config dict (see serialize_keras_object)."""
    with SafeModeScope(safe_mode), reg.CustomObjectScope(custom_objects or {}):
        return deserialize_layer(entry)


def deserialize_layer(entry):
    if not isinstance(entry, dict) or not isinstance(entry.get("class_name"), str) or \
            not isinstance(entry.get("config", {}), dict):
        raise ValueError(f"Could not interpret a layer config: {entry!r}")
    config = dict(entry.get("config") or {})
    if entry["class_name"] == "TFOpLambda":
        return _op_layer(config)
    cls = find_class(entry)
    _resolve_functions(cls, config)
    try:
        return cls.from_config(config)
    except TypeError as e:
        raise TypeError(f"Error when deserializing class '{entry['class_name']}' using "
                        f"config={config}.\n\nException encountered: {e}") from e


def _deserialize_nested(entry, custom_objects=None):
    with reg.CustomObjectScope(custom_objects or {}):
        return deserialize_layer(entry)


# Wrappers' nested layers, in Keras 3's form and through the registry.
layer_base.NESTED.update(serialize=serialize_keras_object, deserialize=_deserialize_nested)


def _resolve_functions(cls, config):
    for key, value in list(config.items()):
        if key.endswith("activation") and (isinstance(value, dict) or (
                isinstance(value, str) and value not in activations._ALL)):
            config[key] = deserialize_function(value)
    if issubclass(cls, Lambda) and "function" in config:
        config["function"] = deserialize_function(config["function"])


def _op_layer(config):
    fn = config.get("function")
    if fn not in _OP_FUNCTIONS:
        raise ValueError(f"Unknown operation layer function {fn!r}")
    layer = _OpLambda(_OP_FUNCTIONS[fn], fn)
    if isinstance(config.get("name"), str):
        layer._name = config["name"]
    return layer


# ---- functional models ----

def _history_table(graph):
    index = {}
    for layer in graph.layers:
        nodes = graph.layer_nodes.get(id(layer)) or layer._kiln_nodes[:1]
        for i, node in enumerate(nodes):
            index[id(node)] = i

    def history(t):
        node = t._node
        if node is None or id(node) not in index:
            raise NotImplementedError("Saving a functional model whose inputs are not "
                                      "kiln.keras.Input tensors is not supported")
        return [node.layer.name, index[id(node)], t._index]
    return history


def _ser_arg(x, history):
    if isinstance(x, KerasTensor):
        return {"class_name": "__keras_tensor__", "config": {
            "shape": jsonable(x.shape, "a Keras tensor"), "dtype": x.dtype.name,
            "keras_history": history(x)}}
    if isinstance(x, tuple):
        return {"class_name": "__tuple__", "config": {"value": [_ser_arg(e, history)
                                                                for e in x]}}
    if isinstance(x, list):
        return [_ser_arg(e, history) for e in x]
    if isinstance(x, dict):
        return {_key(k, "a layer call"): _ser_arg(v, history) for k, v in x.items()}
    if isinstance(x, (_kiln.Tensor, np.ndarray)):
        arr = np.asarray(x.numpy() if isinstance(x, _kiln.Tensor) else x)
        return {"class_name": "__tensor__", "config": {"value": arr.tolist(),
                                                       "dtype": arr.dtype.name}}
    return jsonable(x, "a layer call argument")


def functional_config(model):
    """Keras 3's config of a functional model."""
    graph = model._kiln_graph
    history = _history_table(graph)
    layers = []
    for layer in graph.layers:
        entry = serialize_keras_object(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [
            {"args": [_ser_arg(a, history) for a in node.call_args],
             "kwargs": {k: _ser_arg(v, history) for k, v in node.call_kwargs.items()}}
            for node in graph.layer_nodes.get(id(layer), [])]
        layers.append(entry)

    def ends(structure):
        if isinstance(structure, KerasTensor):
            return [history(structure)]
        return nest.map_structure(history, structure)
    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": ends(graph.input_structure),
            "output_layers": ends(graph.output_structure)}


def _is_history(x):
    return isinstance(x, list) and len(x) == 3 and isinstance(x[0], str) and \
        all(isinstance(i, int) and not isinstance(i, bool) for i in x[1:])


def _tensor_at(history, created):
    name, node_index, tensor_index = history
    nodes = created.get(name)
    if nodes is None or node_index >= len(nodes):
        return None
    outs = nodes[node_index]
    if not 0 <= tensor_index < len(outs):
        raise ValueError(f"The saved model refers to output {tensor_index} of layer {name!r}, "
                         f"which has {len(outs)} outputs")
    return outs[tensor_index]


class _NotReady(Exception):
    pass


def _de_arg(x, created):
    if isinstance(x, list):
        return [_de_arg(e, created) for e in x]
    if not isinstance(x, dict):
        return x
    kind, config = x.get("class_name"), x.get("config")
    if kind == "__keras_tensor__" and isinstance(config, dict) and \
            _is_history(config.get("keras_history")):
        t = _tensor_at(config["keras_history"], created)
        if t is None:
            raise _NotReady()
        return t
    if kind == "__tuple__" and isinstance(config, dict):
        return tuple(_de_arg(e, created) for e in config.get("value", []))
    if kind == "__tensor__" and isinstance(config, dict):
        return _kiln.convert_to_tensor(np.asarray(config.get("value"),
                                                  dtype=config.get("dtype")))
    return {k: _de_arg(v, created) for k, v in x.items()}


def _replay(order, layers, created):
    waiting = {name: list(nodes) for name, nodes in order}
    progress = True
    while progress:
        progress = False
        for name, _ in order:
            while waiting[name]:
                node = waiting[name][0]
                try:
                    args = _de_arg(list(node.get("args", [])), created)
                    kwargs = _de_arg(dict(node.get("kwargs", {})), created)
                except _NotReady:
                    break
                layer = layers[name]
                layer(*args, **kwargs)
                created.setdefault(name, []).append(list(layer._kiln_nodes[-1].output_tensors))
                waiting[name].pop(0)
                progress = True
    left = [name for name, nodes in waiting.items() if nodes]
    if left:
        raise ValueError(f"The saved functional model cannot be rebuilt: the calls of layers "
                         f"{left} read tensors that no layer produces")


def _ends(spec, created, what):
    if _is_history(spec):
        t = _tensor_at(spec, created)
        if t is None:
            raise ValueError(f"The saved model's {what} refer to a missing tensor {spec}")
        return t
    if isinstance(spec, list):
        out = [_ends(s, created, what) for s in spec]
        return out[0] if len(out) == 1 and _is_history(spec[0]) else out
    if isinstance(spec, dict):
        return {k: _ends(v, created, what) for k, v in spec.items()}
    raise ValueError(f"The saved model's {what} are malformed: {spec!r}")


def functional_from_config(cls, config):
    """Rebuilds a functional model: the layers, then their calls in order."""
    layers, order, created = {}, [], {}
    for entry in config.get("layers") or []:
        layer = deserialize_layer(entry)
        name = entry.get("name") or layer.name
        layers[name] = layer
        nodes = entry.get("inbound_nodes") or []
        if not isinstance(nodes, list):
            raise ValueError(f"Layer {name!r}: inbound_nodes must be a list")
        order.append((name, nodes))
        if isinstance(layer, InputLayer):
            created[name] = [[layer.output]]
    _replay(order, layers, created)
    inputs = _ends(config.get("input_layers"), created, "input_layers")
    outputs = _ends(config.get("output_layers"), created, "output_layers")
    return cls(inputs=inputs, outputs=outputs, name=config.get("name"),
               trainable=config.get("trainable", True))


def model_from_config(cls, config):
    """``Model.from_config``: functional configs rebuild the graph; other
    models are ``cls(**config)``."""
    if "layers" in config and "input_layers" in config:
        return functional_from_config(cls, config)
    try:
        return cls(**_accepted(cls, config))
    except TypeError as e:
        raise TypeError(f"Unable to revive model from config. When overriding the "
                        f"`get_config()` method, make sure that the returned config contains "
                        f"all items used as arguments in the constructor to {cls}, which is "
                        f"the default behavior. You can override this default behavior by "
                        f"defining a `from_config(cls, config)` class method to specify how "
                        f"to create an instance of {cls.__name__} from its config.\n\n"
                        f"Received config={config}\n\nError encountered during "
                        f"deserialization: {e}") from e


def _accepted(cls, config):
    """``config`` without the base keys (name, trainable) that ``cls.__init__``
    does not take, as Keras 3 drops them for subclassed models."""
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return config
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return config
    return {k: v for k, v in config.items()
            if k in params or k not in ("name", "trainable", "dtype")}


# ---- Sequential ----

def sequential_config(model):
    """Keras 3's config of a Sequential model (its InputLayer first when known)."""
    layers = []
    if model._kiln_input is not None:
        layers.append(serialize_keras_object(model._kiln_input._node.layer))
    layers += [serialize_keras_object(layer) for layer in model._kiln_layers]
    config = {"name": model.name, "trainable": model.trainable,
              "dtype": dtype_policies.serialize(model.dtype_policy), "layers": layers}
    if model._kiln_input is not None:
        config["build_input_shape"] = jsonable(model._kiln_input.shape, "the input shape")
    return config


def sequential_from_config(cls, config):
    model = cls(name=config.get("name"), trainable=config.get("trainable", True))
    for entry in config.get("layers") or []:
        model.add(deserialize_layer(entry))
    shape = config.get("build_input_shape")
    if model._kiln_input is None and isinstance(shape, list) and model._kiln_layers:
        model.build(shape)
    return model
