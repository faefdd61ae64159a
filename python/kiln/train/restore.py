"""Restoring a checkpoint into live objects, now or when they are created.

A Restoration walks the saved object graph from the root alongside the live
objects, matching nodes by edge name. A node whose object does not exist yet
(a Keras layer not built, an attribute assigned later, an optimizer slot made
by the first ``apply_gradients``) waits: kiln._restore_hooks calls back when
the object appears, and its value is assigned then, as TensorFlow does.
Matched objects are held weakly, so waiting keeps nothing alive.
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
        self.opt_slots = {}     # optimizer node id -> [(variable node, slot name, slot node)]
        for vi, node in enumerate(self.nodes):
            for oi, slot_name, si in node.slots:
                self.opt_slots.setdefault(oi, []).append((vi, slot_name, si))
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
        live = dict(graph_mod.children(obj))
        later = {}
        for name, child_id in node.children:
            child = live.get(name)
            if child is None:
                later[name] = child_id
            else:
                self.match(child_id, child)
        if later:
            self._wait(obj, later)
        if graph_mod.is_optimizer(obj):
            self._optimizer_slots(node_id, obj)
        return True

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
        for oi, slot_name, si in self.nodes[var_node].slots:
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
