"""Where Keras 3 keeps each object's state in a weights file.

Keras 3 walks a model's attributes (Sequential and functional models list
``layers`` first; a subclassed model's ``layers`` property is an attribute
like the others), public names before private ones, each object once. A
layer's own variables go to ``<path>/vars/0..N-1`` (trainable ones first);
lists of layers name their items by snake-cased class name, made unique
(``dense``, ``dense_1``), and nested lists ``container``, ``container_1``.
The optimizer's variables go to ``optimizer/vars``: iterations, the
learning rate, then the slots in Keras' order.
"""
from kiln.keras.engine.sequential import Sequential
from kiln.keras.engine.training import Model
from kiln.keras.layers.base import Layer, _snake
from kiln.keras.optimizers import Optimizer

# Slot names created together by one add_optimizer_variables call in Keras
# (interleaved per variable); other slot names come one name at a time.
_SLOT_GROUPS = {"Adam": [("momentum", "velocity")], "AdamW": [("momentum", "velocity")]}


class Entry:
    """One saveable object: its path, the object, its variables in Keras' order."""

    def __init__(self, path, obj, variables):
        self.path, self.obj, self.variables = path, obj, variables

    @property
    def name(self):
        return getattr(self.obj, "name", None)


def _saveable(v):
    return isinstance(v, (Layer, Optimizer))


def class_name(obj):
    """The class name Keras would give ``obj`` (kiln's functional Model is
    Keras' ``Functional``)."""
    cls = type(obj)
    if isinstance(obj, Model) and getattr(obj, "_kiln_graph", None) is not None and \
            cls.__module__.startswith("kiln."):
        return "Functional"
    return cls.__name__


def _holds_saveable(v, depth=0):
    if _saveable(v):
        return True
    if depth > 16:
        return False
    if isinstance(v, (list, tuple)):
        return any(_holds_saveable(e, depth + 1) for e in v)
    if isinstance(v, dict):
        return any(_holds_saveable(e, depth + 1) for e in v.values())
    return False


def _public_name(obj, key):
    """``_x`` is reached first through a public property ``x`` when one exists."""
    if key.startswith("_") and not key.startswith("__"):
        prop = getattr(type(obj), key[1:], None)
        if isinstance(prop, property):
            return key[1:]
    return key


def _sort_key(name):
    return "~" + name if name.startswith("_") else name


def _children(obj):
    """(attribute name, saveable or container) in Keras' visiting order."""
    if isinstance(obj, Optimizer):
        return []
    first, named = [], {}
    functional = getattr(obj, "_kiln_graph", None) is not None
    if isinstance(obj, Sequential) or functional:
        first.append(("layers", obj.layers))
    elif isinstance(obj, Model):
        named["layers"] = obj.layers
    for key, value in vars(obj).items():
        if key.startswith("_kiln_") or value is obj or not _holds_saveable(value):
            continue
        named.setdefault(_public_name(obj, key), value)
    if isinstance(obj, Model) and obj.optimizer is not None:
        named["optimizer"] = obj.optimizer
    return first + sorted(named.items(), key=lambda kv: _sort_key(kv[0]))


def _unique(name, used):
    if name in used:
        used[name] += 1
        return f"{name}_{used[name]}"
    used[name] = 0
    return name


def _join(path, name):
    return f"{path}/{name}" if path else name


class _Walk:
    def __init__(self):
        self.entries, self.seen = [], set()

    def visit(self, obj, path):
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        self.entries.append(Entry(path, obj, own_variables(obj)))
        for name, child in _children(obj):
            if _saveable(child):
                self.visit(child, _join(path, name))
            else:
                self.container(child, _join(path, name), set())

    def container(self, items, path, done):
        if id(items) in done:
            return
        done.add(id(items))
        used = {}
        for v in list(items.values()) if isinstance(items, dict) else list(items):
            if _saveable(v):
                self.visit(v, _join(path, _unique(_snake(class_name(v)), used)))
            elif isinstance(v, (list, tuple, dict)):
                self.container(v, _join(path, _unique("container", used)), done)


def walk(model):
    """Every saveable object of ``model`` (the model first, at path ``""``)."""
    w = _Walk()
    w.visit(model, "")
    return w.entries


def own_variables(obj):
    """The variables Keras stores under the object's own ``vars`` group."""
    if isinstance(obj, Optimizer):
        return optimizer_variables(obj)
    own = list(obj._kiln_weights)
    ids = {id(v) for v in own}
    own += [v for v in obj._direct_children()[1] if id(v) not in ids]
    return [v for v in own if v.trainable] + [v for v in own if not v.trainable]


def optimizer_variables(opt):
    """Iterations, the learning rate (a variable), other plain variables, then
    the slots: per group of names, per variable, per name (Keras' order)."""
    plain = [v for v in opt.variables if getattr(v, "_kiln_slot", None) is None]
    slots = {}
    names = []
    for v in opt.variables:
        key = getattr(v, "_kiln_slot", None)
        if key is not None:
            slots[key] = v
            if key[1] not in names:
                names.append(key[1])
    kind = type(getattr(opt, "inner_optimizer", opt)).__name__  # a LossScaleOptimizer's inner
    groups = [g for g in _SLOT_GROUPS.get(kind, []) if g[0] in names]
    grouped = {n for g in groups for n in g}
    groups += [(n,) for n in names if n not in grouped]
    groups.sort(key=lambda g: names.index(g[0]))
    refs = [v._id for v in getattr(opt, "_trainable_variables", [])]
    out = list(plain)
    for group in groups:
        for ref in refs:
            out += [slots[(ref, n)] for n in group if (ref, n) in slots]
    return out
