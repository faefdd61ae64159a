"""The object graph of a checkpoint: objects linked by named edges.

An edge is an attribute name (``self.l1 = Dense(5)`` gives ``l1``), a
Checkpoint keyword, a list index or dict key, or what a registered type names
(Keras objects: the attributes Keras 3 keeps them in, see
kiln.keras.saving.trackable). Variables are the leaves. A registered type may
also name legacy edges, which a restore matches when a checkpoint uses them.
An optimizer's slot variables that are not children already hang from the
variable they belong to, as in TensorFlow.
"""
import warnings

from kiln import _kiln, errors
from kiln.data.iterator import DatasetIterator
from kiln.module import Module

VALUE_SUFFIX = ".ATTRIBUTES/VARIABLE_VALUE"
_SKIPPED = ("_name", "_scope_name")


# (class, children function, is an optimizer, legacy children function) for
# classes that kiln.keras teaches this module (kiln.keras.saving.trackable
# registers Keras layers, metrics and optimizers: they sit above kiln.train).
_TYPES = []


def register(cls, children_fn, optimizer=False, legacy=None):
    """Makes instances of ``cls`` trackable, with edges ``children_fn(obj)``;
    an optimizer's slot variables (``_kiln_slot``) hang from their variables
    unless they are children. ``legacy(obj)``: edges of older checkpoints."""
    _TYPES.insert(0, (cls, children_fn, optimizer, legacy))


def _registered(obj):
    for cls, fn, optimizer, legacy in _TYPES:
        if isinstance(obj, cls):
            return fn, optimizer, legacy
    return None


def legacy_children(obj):
    """The (edge name, child) pairs older checkpoints used for ``obj`` (a
    registered type's legacy edges, those of the objects a checkpoint's root
    stands for, none for other objects)."""
    entry = _registered(obj)
    if entry is not None:
        return entry[2](obj) if entry[2] is not None else []
    owners = getattr(obj, "_kiln_owners", None)
    if owners is None:
        return []
    return [e for o in owners() if o is not obj for e in legacy_children(o)]


def is_optimizer(obj):
    entry = _registered(obj)
    return entry is not None and entry[1]


def is_trackable(value, depth=0):
    """True for objects a checkpoint holds: variables, modules (Keras layers
    included), optimizers, checkpoints, dataset iterators, and lists / dicts
    holding one of those."""
    if isinstance(value, (_kiln.Variable, Module, DatasetIterator)) or \
            getattr(value, "_kiln_trackable", False):
        return True
    if isinstance(value, (list, tuple)) and depth < 32:
        return any(is_trackable(v, depth + 1) for v in value)
    if isinstance(value, dict) and depth < 32:
        return any(is_trackable(v, depth + 1) for v in value.values())
    return _registered(value) is not None


def short_name(v):
    """A variable's own name: a Keras weight's name, else the last part of its name."""
    name = v.name
    name = name[:-2] if name.endswith(":0") else name
    return name.rsplit("/", 1)[-1]


def attributes(obj):
    """(attribute name, value) of ``obj``'s trackable attributes, in assignment order."""
    out = []
    for k, v in vars(obj).items():
        if k.startswith("_kiln_") or k in _SKIPPED or not is_trackable(v):
            continue
        out.append((k, v))
    return out


def named(variables):
    """(name, variable) with repeated names made unique (name, name_1, ...)."""
    out, used = [], set()
    for v in variables:
        base = name = short_name(v)
        n = 0
        while name in used:
            n += 1
            name = f"{base}_{n}"
        used.add(name)
        out.append((name, v))
    return out


def children(obj):
    """The (edge name, child) pairs of ``obj``, in a fixed order (one per name)."""
    out, names = [], set()
    for name, child in _children(obj):
        if name not in names:
            names.add(name)
            out.append((name, child))
    return out


def _children(obj):
    if isinstance(obj, (_kiln.Variable, DatasetIterator)):
        return []
    if hasattr(obj, "_kiln_children"):          # Checkpoint and its list / dict wrappers
        return obj._kiln_children()
    entry = _registered(obj)
    if entry is not None:
        return entry[0](obj)
    if isinstance(obj, Module):
        return attributes(obj)
    return container_children(obj)


def container_children(obj):
    """Children of a plain list, tuple or dict (string keys only)."""
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj) if is_trackable(v)]
    if isinstance(obj, dict):
        out = []
        for k, v in obj.items():
            if not is_trackable(v):
                continue
            if not isinstance(k, str):
                raise ValueError(f"Unable to save a dict holding {v!r} under the non-string "
                                 f"key {k!r}: checkpointed dicts need string keys")
            out.append((k, v))
        return out
    return []


def escape(name):
    """An edge name in a checkpoint key ('.' -> '..', '/' -> '.S'), as TensorFlow does."""
    return name.replace(".", "..").replace("/", ".S")


class SavedGraph:
    """The object graph reachable from ``root`` (breadth first): ``nodes``
    (objects), their JSON description, and ``values`` {key: variable}."""

    def __init__(self, root, warn=True):
        self.objects, self.paths, self.edges = [root], [""], [[]]
        ids = {id(root): 0}
        i = 0
        while i < len(self.objects):
            for name, child in children(self.objects[i]):
                j = ids.get(id(child))
                if j is None:
                    j = ids[id(child)] = len(self.objects)
                    self.objects.append(child)
                    self.paths.append(_join(self.paths[i], escape(name)))
                    self.edges.append([])
                self.edges[i].append((name, j))
            i += 1
        self.slots = [[] for _ in self.objects]
        self._add_slots()
        if warn:
            self._warn_iterators()

    def _add_slots(self):
        by_var = {o._id: i for i, o in enumerate(self.objects) if isinstance(o, _kiln.Variable)}
        saved = {id(o) for o in self.objects}
        for oi, opt in enumerate(list(self.objects)):
            if not is_optimizer(opt):
                continue
            for v in opt.variables:
                slot = getattr(v, "_kiln_slot", None)
                if slot is None or slot[0] not in by_var or id(v) in saved:
                    continue  # a slot is saved only with its variable (TensorFlow's rule)
                vi = by_var[slot[0]]
                self.objects.append(v)
                self.paths.append(f"{self.paths[vi]}/.OPTIMIZER_SLOT/{self.paths[oi]}/"
                                  f"{escape(slot[1])}")
                self.edges.append([])
                self.slots.append([])
                self.slots[vi].append((oi, slot[1], len(self.objects) - 1))

    def _warn_iterators(self):
        if any(isinstance(o, DatasetIterator) for o in self.objects):
            warnings.warn("kiln checkpoints do not save the position of dataset iterators; "
                          "a restored iterator starts from the beginning", stacklevel=4)

    def key(self, i):
        return _join(self.paths[i], VALUE_SUFFIX)

    def values(self):
        """{checkpoint key: variable} for every variable node."""
        return {self.key(i): o for i, o in enumerate(self.objects)
                if isinstance(o, _kiln.Variable)}

    def arrays(self, dtypes):
        """{checkpoint key: NumPy value}; UnimplementedError for a dtype not in ``dtypes``."""
        out = {}
        for key, var in self.values().items():
            if var.dtype.name not in dtypes:
                raise errors.UnimplementedError(
                    f"Cannot save {key}: kiln checkpoints do not hold {var.dtype.name} "
                    "variables")
            out[key] = var.numpy()
        return out

    def to_json(self):
        nodes = []
        for i, obj in enumerate(self.objects):
            node = {"children": [{"name": n, "node": j} for n, j in self.edges[i]]}
            if isinstance(obj, _kiln.Variable):
                node["variable"] = self.key(i)
                node["full_name"] = _full_name(obj)
            if self.slots[i]:
                node["slots"] = [{"optimizer": o, "slot_name": s, "node": j}
                                 for o, s, j in self.slots[i]]
            nodes.append(node)
        return {"nodes": nodes}


def _full_name(var):
    """A Keras variable's path (``dense/kernel``, as Keras 3 writes), else its name."""
    path = getattr(var, "path", None)
    if isinstance(path, str) and path:
        return path
    return var.name[:-2] if var.name.endswith(":0") else var.name


def _join(path, name):
    return f"{path}/{name}" if path else name


def node_paths(nodes):
    """A readable path per node id ("(root).model.l1.kernel"), breadth first."""
    paths = {0: "(root)"}
    order = [0]
    for i in order:
        for name, j in nodes[i].children:
            if j not in paths:
                paths[j] = f"{paths[i]}.{name}"
                order.append(j)
        for _, slot_name, j in nodes[i].slots:
            paths.setdefault(j, f"{paths[i]}'s slot {slot_name}")
    return paths
