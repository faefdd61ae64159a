"""Model configs in ``config.json``: kiln's to Keras 3's, and Keras' to kiln's.

Writing adds what Keras 3 puts beside a model's config (``build_config``,
``compile_config``). Reading a config Keras wrote drops what kiln has no use
for: ``shared_object_id``, dtype policies (their dtype name is kept), call
kwargs ``training`` and ``mask=None`` of functional nodes, and config keys a
kiln class does not take when they hold an inactive value (None, False, an
empty list, or Keras' default); any other unknown key is an error naming it.
"""
import inspect
import re

from kiln.keras import initializers, optimizers
from kiln.keras.engine.sequential import Sequential
from kiln.keras.engine.training import Model
from kiln.keras.layers import base as layer_base
from kiln.keras.saving import serialization

# Keras keys kiln does not take, with the value that means "off".
_KERAS_DEFAULTS = {"renorm_momentum": 0.99, "gain": 1.0, "zero_output_for_mask": None}
_INACTIVE = (None, False, [], {}, ())


# ---- writing ----

def build_config(model):
    """Keras 3's ``build_config`` of a model (``get_build_config``); none for
    a functional model (built from its config)."""
    if getattr(model, "_kiln_graph", None) is not None:
        return None
    config = model.get_build_config()
    return None if config is None else serialization.jsonable(config, "the build config")


def _module_for(name):
    if name in serialization.BUILTINS:
        return "keras.layers"
    if name in initializers._BY_NAME:
        return "keras.initializers"
    return "keras.optimizers" if name in optimizers._BY_NAME else None


def with_modules(x, depth=0):
    """Nested objects ``{"class_name", "config"}`` get Keras 3's ``module`` and
    ``registered_name`` (Keras 3 looks built-in classes up by module)."""
    if depth > 200:
        raise ValueError("The model config is nested too deeply")
    if isinstance(x, list):
        return [with_modules(e, depth + 1) for e in x]
    if not isinstance(x, dict):
        return x
    out = {k: with_modules(v, depth + 1) for k, v in x.items()}
    name = out.get("class_name")
    if isinstance(name, str) and isinstance(out.get("config"), dict) and "module" not in out:
        module = _module_for(name)
        if module is not None:
            out = {"module": module, **out, "registered_name": out.get("registered_name")}
    return out


def model_entry(model):
    """The ``config.json`` object of ``model``."""
    entry = with_modules(serialization.serialize_keras_object(model))
    build = build_config(model)
    if build is not None:
        entry["build_config"] = build
    compile_config = model.get_compile_config() if model.compiled else None
    if compile_config is not None:
        entry["compile_config"] = compile_config
    return entry


# ---- reading ----

_REJECTED = (re.compile(r"Keyword argument not understood: '(\w+)'"),
             re.compile(r"unexpected keyword argument '(\w+)'"))
_FITS = {}   # kiln class -> config keys it took before (no probe needed)


def _signature_keys(cls):
    """Keyword names ``cls(**config)`` takes (an initializer or optimizer)."""
    try:
        params = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def _kiln_class(entry):
    name, module = entry.get("class_name"), entry.get("module") or ""
    if entry.get("registered_name") not in (None, name):
        return None  # a custom class: its from_config decides
    if module.startswith("keras.optimizers"):
        found = optimizers._BY_NAME.get(name)
    elif module.startswith("keras.initializers") or name not in serialization.BUILTINS:
        found = initializers._BY_NAME.get(name)
    else:
        found = serialization.BUILTINS.get(name)
    return found if found is not None and found.__module__.startswith("kiln.") else None


def _inactive(key, value):
    if key in _KERAS_DEFAULTS:
        default = _KERAS_DEFAULTS[key]
        return default is None or value is None or value == default
    return any(value is v or (type(value) is type(v) and value == v) for v in _INACTIVE)


def _drop(cls, config, key, entry):
    if not _inactive(key, config[key]):
        raise ValueError(f"kiln's {cls.__name__} does not support the Keras config key "
                         f"{key}={config[key]!r} (in {config.get('name', entry['class_name'])!r})")
    return {k: v for k, v in config.items() if k != key}


def _probe(cls, config, entry):
    """``config`` without the inactive keys ``cls.from_config`` rejects (found
    by trying it: kiln layers pass keyword arguments on to cells and bases)."""
    for _ in range(len(config) + 1):
        if set(config) <= _FITS.get(cls, set()):
            return config
        try:
            cls.from_config(dict(config))
        except TypeError as e:
            found = [m.group(1) for r in _REJECTED for m in [r.search(str(e))] if m]
            if not found or found[0] not in config:
                return config  # another problem: the real load reports it
            config = _drop(cls, config, found[0], entry)
            continue
        except Exception:  # noqa: BLE001 (any other problem: the real load reports it)
            return config
        _FITS.setdefault(cls, set()).update(config)
        return config
    return config


def _fit(entry):
    config = entry["config"]
    cls = _kiln_class(entry)
    if cls is None or issubclass(cls, Model):
        return config
    if issubclass(cls, layer_base.Layer):
        return _probe(cls, config, entry)
    keys = _signature_keys(cls)
    if keys is None:
        return config
    for key in [k for k in config if k not in keys]:
        config = _drop(cls, config, key, entry)
    return config


def _node_kwargs(kwargs):
    return {k: v for k, v in kwargs.items() if k != "training" and v is not None}


def from_keras(x, depth=0):
    """A config Keras 3 (or kiln) wrote, as kiln's from_config takes it."""
    if depth > 200:
        raise ValueError("The model config is nested too deeply")
    if isinstance(x, list):
        return [from_keras(e, depth + 1) for e in x]
    if not isinstance(x, dict):
        return x
    if x.get("class_name") in ("DTypePolicy", "FloatDTypePolicy", "Policy") and \
            isinstance(x.get("config"), dict):
        return x["config"].get("name")
    out = {k: from_keras(v, depth + 1) for k, v in x.items() if k != "shared_object_id"}
    if isinstance(out.get("class_name"), str) and isinstance(out.get("config"), dict):
        out["config"] = _fit(out)
    if isinstance(out.get("inbound_nodes"), list):
        for node in out["inbound_nodes"]:
            if isinstance(node, dict) and isinstance(node.get("kwargs"), dict):
                node["kwargs"] = _node_kwargs(node["kwargs"])
    return out
