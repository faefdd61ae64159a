"""Restoring a checkpoint into live objects, now or when they are created.

A Restoration walks the saved object graph from the root alongside the live
objects, matching nodes by edge name. A node whose object does not exist yet
(a Keras layer not built, an attribute assigned later, an optimizer slot made
by the first ``apply_gradients``) waits: kiln._restore_hooks calls back when
the object appears, and its value is assigned then, as TensorFlow does.
Matched objects are held weakly, so waiting keeps nothing alive.

An edge the live object lacks is looked up among its legacy edges (older
kiln checkpoints). Slots are bound to their variables: TF's slot variables,
and a Keras 3 optimizer's slot lists (``_momentums/N`` belongs to
``_trainable_variables/N``), so slots made after the restore are assigned too.
"""
import warnings
import weakref

from kiln import _kiln, _restore_hooks, errors
from kiln.scopes import init_scope
from kiln.train import graph as graph_mod


def _gone():
    return None


def _ref(obj):
    try:
        return weakref.ref(obj)
    except TypeError:  # plain lists and dicts: not held (they could keep waiting owners alive)
        return _gone


class Restoration:
    """Matches the nodes of ``reader`` to objects reachable from ``root``."""

    def __init__(self, reader, root, skip_mismatch=False):
        self.reader = reader
        self.nodes = reader.nodes
        self.skip_mismatch = skip_mismatch
        self.matched = {}       # node id -> weak reference to the live object
        self.waiting = {}       # id(owner) -> (weak ref, {edge name: node id})
        self.slot_waiting = {}  # id(optimizer) -> (weak ref, {(variable id, slot): node id})
        self.skipped = []       # keys not restored because of a shape or dtype mismatch
        self.valued = _valued(self.nodes)
        self.var_slots = {}     # variable node id -> [(optimizer node, slot name, slot node)]
        self.opt_slots = {}     # optimizer node id -> [(variable node, slot name, slot node)]
        slots = [(oi, vi, name, si) for vi, node in enumerate(self.nodes)
                 for oi, name, si in node.slots] + keras_slots(self.nodes)
        for oi, vi, name, si in slots:
            self.var_slots.setdefault(vi, []).append((oi, name, si))
            self.opt_slots.setdefault(oi, []).append((vi, name, si))
        with init_scope():
            self.match(0, root)

    def live(self, node_id):
        ref = self.matched.get(node_id)
        return None if ref is None else ref()

    # ---- matching ----

    def match(self, node_id, obj):
        """Binds node ``node_id`` to ``obj``; True when they fit."""
        if node_id in self.matched:
            return self.live(node_id) is obj
        node = self.nodes[node_id]
        if node.variable is not None:
            if not isinstance(obj, _kiln.Variable) or not self._assign(node.variable, obj):
                return False
            self.matched[node_id] = _ref(obj)
            self._variable_slots(node_id, obj)
            return True
        if isinstance(obj, _kiln.Variable) or not graph_mod.is_trackable(obj):
            return False
        self.matched[node_id] = _ref(obj)
        if graph_mod.is_optimizer(obj):  # slots by their variables before list positions
            self._optimizer_slots(node_id, obj)
        self._match_children(node, obj)
        return True

    def _match_children(self, node, obj):
        live, legacy, later = dict(graph_mod.children(obj)), None, {}
        for name, child_id in node.children:
            child = live.get(name)
            if child is None:  # an older checkpoint's edge name
                legacy = dict(graph_mod.legacy_children(obj)) if legacy is None else legacy
                child = legacy.get(name)
            if child is not None:
                self.match(child_id, child)
            elif child_id in self.valued:
                later[name] = child_id
        if later:
            self._wait(obj, later)

    def _assign(self, key, var):
        entry = self.reader.index.tensors[key]
        problem = None
        if entry.dtype != var.dtype.name:
            problem = f"dtype {entry.dtype} into a variable of dtype {var.dtype.name}"
        elif tuple(entry.shape) != tuple(var.shape.as_list()):
            problem = (f"a tensor of shape {tuple(entry.shape)} into a variable of shape "
                       f"{tuple(var.shape.as_list())}")
        if problem is not None:
            message = f"Cannot restore {key} ({var.name}): {problem}"
            if not self.skip_mismatch:
                raise errors.InvalidArgumentError(message)
            warnings.warn(message + "; skipped", stacklevel=5)
            self.skipped.append(key)
            return False
        value = self.reader.tensor(key)
        var.assign(_kiln.convert_to_tensor(value))
        return True

    def _wait(self, owner, names):
        owners = getattr(owner, "_kiln_owners", None)
        for o in owners() if owners else [owner]:
            try:
                _restore_hooks.register(o, self._on_new_child)
            except TypeError:  # not weakly referable: it cannot call back
                continue
            _waits(self.waiting, o).update(names)

    # ---- optimizer slots ----

    def _variable_slots(self, var_node, var):
        for oi, slot_name, si in self.var_slots.get(var_node, ()):
            opt = self.live(oi)
            if graph_mod.is_optimizer(opt):
                self._slot(opt, var, slot_name, si)

    def _optimizer_slots(self, opt_node, opt):
        for vi, slot_name, si in self.opt_slots.get(opt_node, ()):
            var = self.live(vi)
            if isinstance(var, _kiln.Variable):
                self._slot(opt, var, slot_name, si)

    def _slot(self, opt, var, slot_name, slot_node):
        key = (var._id, slot_name)
        for v in opt.variables:
            if getattr(v, "_kiln_slot", None) == key:
                self.match(slot_node, v)
                return
        _restore_hooks.register(opt, self._on_new_child)
        _waits(self.slot_waiting, opt)[key] = slot_node

    # ---- callbacks ----

    def _on_new_child(self, owner, name, value):
        names = _waits(self.slot_waiting if isinstance(name, tuple) else self.waiting, owner)
        if name not in names and not isinstance(name, tuple):
            name = _edge_to(owner, value, names)
        node_id = names.get(name)
        if node_id is None:
            return
        with init_scope():
            ok = self.match(node_id, value)
        if ok:
            del names[name]
            if not _waits(self.waiting, owner) and not _waits(self.slot_waiting, owner):
                _restore_hooks.unregister(owner, self._on_new_child)

    # ---- reports ----

    def unmatched_variables(self):
        """Node ids of saved variables (slots included) not restored yet."""
        return [i for i, n in enumerate(self.nodes)
                if n.variable is not None and self.live(i) is None]

    def waiting_slots(self):
        return sum(len(names) for ref, names in self.slot_waiting.values() if ref() is not None)


def _edge_to(owner, value, names):
    """The waited-for edge of ``owner`` that leads to ``value`` (a Keras weight
    is notified by its own name, its edge may differ: ``_kernel``)."""
    if not graph_mod.is_trackable(value):
        return None
    for name, child in graph_mod.children(owner) + graph_mod.legacy_children(owner):
        if child is value and name in names:
            return name
    return None


def _valued(nodes):
    """Ids of the nodes with a saved value at or below them."""
    parents = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        for _, j in node.children:
            parents[j].append(i)
    out = {i for i, n in enumerate(nodes) if n.variable is not None or n.slots}
    stack = list(out)
    while stack:
        for p in parents[stack.pop()]:
            if p not in out:
                out.add(p)
                stack.append(p)
    return out


# Edges of a Keras 3 optimizer that are not slot lists.
_OPTIMIZER_EDGES = ("_variables", "_trainable_variables", "_trainable_variables_indices",
                    "_iterations", "_learning_rate")


def keras_slots(nodes):
    """(optimizer node, variable node, slot name, slot node) of the Keras 3
    optimizers in ``nodes``: an optimizer with ``_iterations`` and
    ``_trainable_variables`` keeps each slot kind in a list parallel to
    ``_trainable_variables`` (``_momentums`` holds slot ``momentum``)."""
    out = []
    for oi, node in enumerate(nodes):
        edges = dict(node.children)
        if "_iterations" not in edges or "_trainable_variables" not in edges:
            continue
        owners = dict(nodes[edges["_trainable_variables"]].children)
        for name, li in node.children:
            if name in _OPTIMIZER_EDGES or nodes[li].variable is not None:
                continue
            for index, si in nodes[li].children:
                vi = owners.get(index)
                if vi is not None and nodes[vi].variable is not None and \
                        nodes[si].variable is not None:
                    out.append((oi, vi, _singular(name.lstrip("_")), si))
    return out


def _singular(name):
    if name.endswith("ies"):
        return name[:-3] + "y"
    return name[:-1] if name.endswith("s") else name


def _waits(table, owner):
    """The {name: node id} that ``owner`` waits for in ``table`` (id-keyed, so
    an entry of a dead object whose id was reused is dropped)."""
    entry = table.get(id(owner))
    if entry is None or entry[0]() is not owner:
        entry = table[id(owner)] = (weakref.ref(owner), {})
    return entry[1]


def live_variables(root):
    """Every variable reachable from ``root`` now, with its readable path."""
    saved = graph_mod.SavedGraph(root, warn=False)
    return [(o, saved.paths[i] or "(root)") for i, o in enumerate(saved.objects)
            if isinstance(o, _kiln.Variable)]


class CheckpointLoadStatus:
    """What ``Checkpoint.restore`` returns: checks of how the checkpoint and
    the program matched (they look at the current state, so they pass once
    delayed restores have happened)."""

    def __init__(self, restoration, root):
        self._restoration = restoration
        self._root = root

    def _paths(self):
        return graph_mod.node_paths(self._restoration.nodes)

    def assert_existing_objects_matched(self):
        """Every variable reachable from the root now was restored."""
        r = self._restoration
        restored = {id(r.live(i)) for i in r.matched}
        saved_counter = any(name == "save_counter" for name, _ in r.nodes[0].children)
        missing = [path for v, path in live_variables(self._root) if id(v) not in restored
                   and (saved_counter or path != "save_counter")]  # write() saves none
        if missing:
            shown = missing[:10]
            raise AssertionError(
                f"Found {len(missing)} Python objects that were not bound to checkpointed "
                f"values, likely due to changes in the Python program. Showing "
                f"{len(shown)} of {len(missing)} unmatched objects: {shown}")
        return self

    def assert_consumed(self):
        """Every value in the checkpoint was restored and every variable of the
        program was restored from it."""
        self.assert_existing_objects_matched()
        r = self._restoration
        unused = r.unmatched_variables()
        if unused:
            paths = self._paths()
            names = [paths.get(i, r.nodes[i].variable) for i in unused[:10]]
            raise AssertionError(f"Unresolved object in checkpoint: {len(unused)} saved "
                                 f"values were not restored, e.g. {names}")
        if r.waiting_slots():
            raise AssertionError(f"Unresolved slot restorations: {r.waiting_slots()} optimizer "
                                 "slot variables were not created yet")
        return self

    def assert_nontrivial_match(self):
        """Something besides the root (and the save counter) was matched."""
        r = self._restoration
        names = {name for name, _ in r.nodes[0].children}
        trivial = {0} | {j for name, j in r.nodes[0].children if name == "save_counter"}
        if not (set(r.matched) - trivial) and names - {"save_counter"}:
            raise AssertionError("Nothing except the root object matched a checkpointed value. "
                                 "Typically this means that the checkpoint does not match the "
                                 "Python program.")
        return self

    def expect_partial(self):
        """Marks the restore as knowingly partial (kiln never warns about it)."""
        return self

    def run_restore_ops(self, session=None):
        """Nothing to run: values are assigned eagerly."""

    def initialize_or_restore(self, session=None):
        """Nothing to run: values are assigned eagerly."""


class InitializationOnlyStatus:
    """What ``restore(None)`` returns: nothing was restored."""

    def _fail(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being "
                             "restored.")

    def assert_consumed(self):
        self._fail()

    def assert_existing_objects_matched(self):
        self._fail()

    def assert_nontrivial_match(self):
        self._fail()

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        """Nothing to run."""

    def initialize_or_restore(self, session=None):
        """Nothing to run."""
