"""kiln.train.Checkpoint (tf.train.Checkpoint): saves and restores the
variables reachable from the objects it is given, by attribute names."""
import os

import numpy as np

from kiln import _kiln, _restore_hooks, errors
from kiln.scopes import init_scope
from kiln.train import bundle, management
from kiln.train import graph as graph_mod
from kiln.train.restore import CheckpointLoadStatus, InitializationOnlyStatus, Restoration


def check_eager(what):
    if not _kiln.executing_eagerly():
        raise errors.UnimplementedError(
            f"{what} cannot run inside a kiln.function; call it eagerly (outside the function)")


class ListWrapper(list):
    """A list assigned to a Checkpoint attribute: tracked even when empty, and
    an appended variable is restored at once if a restore waits for it."""

    _kiln_trackable = True

    def _kiln_children(self):
        return graph_mod.container_children(self)

    def append(self, value):
        super().append(value)
        _notify(self, str(len(self) - 1), value)

    def extend(self, values):
        start = len(self)
        super().extend(values)
        for i in range(start, len(self)):
            _notify(self, str(i), self[i])

    def __iadd__(self, values):
        self.extend(values)
        return self

    def __setitem__(self, index, value):
        super().__setitem__(index, value)
        if isinstance(index, int):
            _notify(self, str(index % len(self)), value)

    def __repr__(self):
        return f"ListWrapper({list.__repr__(self)})"


class DictWrapper(dict):
    """A dict assigned to a Checkpoint attribute (see ListWrapper)."""

    _kiln_trackable = True

    def _kiln_children(self):
        return graph_mod.container_children(self)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        _notify(self, key, value)

    def update(self, *args, **kwargs):
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def __repr__(self):
        return f"DictWrapper({dict.__repr__(self)})"


def _notify(owner, name, value):
    if _restore_hooks.PENDING:
        _restore_hooks.notify(owner, name, value)


def _wrap(value):
    if type(value) is list:
        return ListWrapper(value)
    if type(value) is dict:
        return DictWrapper(value)
    return value


def _check_trackable(value, what):
    if not graph_mod.is_trackable(value):
        raise ValueError(f"`Checkpoint` was expecting {what} to be a trackable object (an "
                         f"object derived from `Trackable`), got {value!r}.")


class Checkpoint:
    """Saves and restores trackable objects (tf.train.Checkpoint).

    ``Checkpoint(root=None, **kwargs)``: each keyword names an object (a
    kiln.Variable, a kiln.Module or Keras layer / model, an optimizer, another
    Checkpoint, lists and dicts of them); ``root``'s own children sit at the top
    level. Attributes assigned later are tracked too. ``save(prefix)`` writes
    ``prefix-N`` (N = ``save_counter``), ``write(path)`` writes ``path``;
    ``restore`` / ``read`` assign the saved values to the objects matched by
    name, now or when they are created (delayed restore).
    """

    _kiln_trackable = True

    def __init__(self, root=None, **kwargs):
        object.__setattr__(self, "_kiln_root", None)
        object.__setattr__(self, "_kiln_save_counter", None)
        if root is not None:
            _check_trackable(root, "root")
            object.__setattr__(self, "_kiln_root", root)
        for k, v in sorted(kwargs.items()):
            _check_trackable(v, repr(k))
            setattr(self, k, v)

    def __setattr__(self, name, value):
        if name.startswith("_kiln_"):
            object.__setattr__(self, name, value)
            return
        value = _wrap(value)
        object.__setattr__(self, name, value)
        _notify(self, name, value)

    # ---- the object graph ----

    def _kiln_children(self):
        root = self._kiln_root
        out = graph_mod.children(root) if root is not None else []
        out += [(k, v) for k, v in vars(self).items()
                if not k.startswith("_kiln_") and graph_mod.is_trackable(v)]
        if self._kiln_save_counter is not None:
            out.append(("save_counter", self._kiln_save_counter))
        return out

    def _kiln_owners(self):
        """The objects whose new attributes are this checkpoint's children."""
        return [self] if self._kiln_root is None else [self, self._kiln_root]

    @property
    def save_counter(self):
        """The number of ``save()`` calls: an int64 variable, saved with the checkpoint."""
        self._maybe_create_save_counter()
        return self._kiln_save_counter

    def _maybe_create_save_counter(self):
        if self._kiln_save_counter is None:
            with init_scope():
                v = _kiln.Variable(_kiln.convert_to_tensor(np.int64(0)), trainable=False,
                                   name="save_counter")
            object.__setattr__(self, "_kiln_save_counter", v)
            _notify(self, "save_counter", v)

    # ---- saving ----

    def write(self, file_prefix, options=None):
        """Writes the checkpoint files ``file_prefix.index`` and
        ``file_prefix.data-00000-of-00001``; returns ``file_prefix``."""
        check_eager("Checkpoint.write")
        saved = graph_mod.SavedGraph(self)
        return bundle.write(os.fspath(file_prefix), saved.arrays(bundle.DTYPES),
                            saved.to_json())

    def save(self, file_prefix, options=None):
        """Increments ``save_counter``, writes ``file_prefix-<save_counter>`` and
        records it in the directory's ``checkpoint`` file; returns the path."""
        check_eager("Checkpoint.save")
        file_prefix = os.fspath(file_prefix)
        counter = self.save_counter
        counter.assign_add(_kiln.convert_to_tensor(np.int64(1)))
        try:
            path = self.write(f"{file_prefix}-{int(counter.numpy())}", options)
        except BaseException:
            counter.assign_sub(_kiln.convert_to_tensor(np.int64(1)))
            raise
        management.update_checkpoint_state(os.path.dirname(file_prefix) or ".", path, [path])
        return path

    # ---- restoring ----

    def read(self, save_path, options=None):
        """Restores a checkpoint written by ``write`` (see ``restore``)."""
        check_eager("Checkpoint.read")
        if save_path is None:
            return InitializationOnlyStatus()
        reader = bundle.open_reader(save_path)
        return CheckpointLoadStatus(Restoration(reader, self), self)

    def restore(self, save_path, options=None):
        """Assigns the values saved at ``save_path`` to the matching variables,
        and to those created later (delayed restore). ``None`` restores nothing.
        Returns a status with ``assert_consumed()``,
        ``assert_existing_objects_matched()`` and ``expect_partial()``."""
        check_eager("Checkpoint.restore")
        if save_path is None:
            self._maybe_create_save_counter()
            return InitializationOnlyStatus()
        try:
            status = self.read(save_path, options)
        except errors.NotFoundError as e:
            raise errors.NotFoundError(
                f"Error when restoring from checkpoint at {os.fspath(save_path)}: {e.message}\n"
                "Please double-check that the path is correct. You may be missing the "
                "checkpoint suffix (e.g. the '-1' in 'path/to/ckpt-1').") from None
        self._maybe_create_save_counter()
        return status

    def sync(self):
        """Waits for pending writes (kiln writes synchronously: nothing to wait for)."""


class CheckpointOptions:
    """Options of save / restore (tf.train.CheckpointOptions); kiln accepts
    and ignores them."""

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False,
                 experimental_skip_slot_variables=False, experimental_sharding_callback=None):
        self.experimental_io_device = experimental_io_device
        self.enable_async = enable_async or experimental_enable_async_checkpoint
        self.experimental_write_callbacks = experimental_write_callbacks
        self.experimental_skip_slot_variables = experimental_skip_slot_variables
        self.experimental_sharding_callback = experimental_sharding_callback
