"""kiln.keras.optimizers: SGD, Adam, AdamW and RMSprop with Keras 3's API and math,
learning-rate schedules, and ``get`` / ``serialize`` / ``deserialize``.

    opt = kiln.keras.optimizers.Adam(learning_rate=1e-3)
    with kiln.GradientTape() as tape:
        loss = ...
    grads = tape.gradient(loss, variables)
    opt.apply_gradients(zip(grads, variables))

Updates are kiln ops on kiln.Variables, so a train step works eagerly and inside
a kiln.function (slot variables are created on the first call only).
"""
from kiln.keras.optimizers import schedules
from kiln.keras.optimizers.base_optimizer import Optimizer
from kiln.keras.optimizers.sgd import SGD
from kiln.keras.optimizers.adam import Adam
from kiln.keras.optimizers.adamw import AdamW
from kiln.keras.optimizers.rmsprop import RMSprop
from kiln.keras.optimizers.loss_scale_optimizer import LossScaleOptimizer

_CLASSES = (SGD, Adam, AdamW, RMSprop, LossScaleOptimizer)
_BY_NAME = {c.__name__: c for c in _CLASSES}
_BY_NAME.update({c.__name__.lower(): c for c in _CLASSES})


def serialize(optimizer):
    """{'class_name': ..., 'config': ...} (Keras 3's layout) for an optimizer."""
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"serialize expects a kiln.keras optimizer, got {optimizer!r}")
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
            "config": optimizer.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """The optimizer described by ``serialize()``'s dict. Class names match
    case-insensitively ('Adam', 'adam'); ``custom_objects`` maps extra names to
    classes."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret optimizer config: {config!r}")
    name = config["class_name"]
    custom = dict(custom_objects or {})
    cls = custom.get(name) or (isinstance(name, str) and
                               (_BY_NAME.get(name) or _BY_NAME.get(name.lower())))
    if not cls:
        raise ValueError(f"Could not interpret optimizer identifier: {name!r} (known: "
                         f"{sorted(c.__name__.lower() for c in _CLASSES)})")
    return cls.from_config(dict(config.get("config") or {}))


LossScaleOptimizer._kiln_deserialize = staticmethod(deserialize)  # its inner optimizer


def get(identifier):
    """An optimizer from a name ('sgd', 'adam', 'adamw', 'rmsprop', any case),
    a ``serialize()`` dict or an Optimizer instance (returned as is); a name
    gives a new optimizer with default arguments. None gives None."""
    if identifier is None:
        return None
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}})
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "LossScaleOptimizer", "schedules",
           "get", "serialize", "deserialize"]
