"""Keras 3's weights file (``model.weights.h5``, ``x.weights.h5``) with h5py.

Each saveable object (keras_paths.walk) has a group ``<path>/vars`` (the
root's is ``vars``) with a ``name`` attribute and datasets ``"0".."N-1"``.
Reading checks every group and dataset before use: hard links only, no
external or virtual data, numeric dtypes, declared sizes bounded, shapes and
counts equal to the model's.
"""
import io
import math
import warnings

import numpy as np

try:  # pinned in .venv; a kiln installed without h5py imports, but reads no Keras file
    import h5py
except ImportError:
    h5py = None
try:  # bfloat16 arrays only
    import ml_dtypes
    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    ml_dtypes, _BF16 = None, None

from kiln import _kiln, _restore_hooks, errors
from kiln.keras.optimizers import Optimizer
from kiln.keras.saving import keras_paths
from kiln.scopes import init_scope

_MAX_DATASET_BYTES = 1 << 34       # 16 GiB declared for one variable
_MAX_EXPANSION = 1000              # declared bytes per stored byte, above 4 GiB
_NUMERIC = "biuf"


def require():
    """The h5py module, or an ImportError saying what needs it."""
    if h5py is None:
        raise ImportError("Keras files (.keras, .weights.h5, .h5) need the h5py package: "
                          "pip install h5py")
    return h5py


def vars_path(path):
    return f"{path}/vars" if path else "vars"


# ---- writing ----

def write(model, f):
    """Writes every saveable object of ``model`` into the open h5py file ``f``."""
    for entry in keras_paths.walk(model):
        group = f.create_group(vars_path(entry.path))
        if isinstance(entry.name, str):
            group.attrs["name"] = entry.name
        for i, v in enumerate(entry.variables):
            arr = np.asarray(v.numpy())
            if _BF16 is not None and arr.dtype == _BF16:
                group.create_dataset(str(i), data=arr.astype(np.float32))
                group[str(i)].attrs["dtype"] = "bfloat16"
            else:
                group.create_dataset(str(i), data=arr)


def to_bytes(model):
    """The weights file of ``model`` as bytes (for a ``.keras`` zip)."""
    buf = io.BytesIO()
    with require().File(buf, "w") as f:
        write(model, f)
    return buf.getvalue()


# ---- reading ----

def open_file(source, where):
    """``h5py.File`` of a path or file object, or kiln's DataLossError."""
    require()
    try:
        return h5py.File(source, "r")
    except (OSError, ValueError, TypeError, RuntimeError) as e:
        raise errors.DataLossError(f"{where}: not a readable HDF5 file ({e})") from None


class Store:
    """Checked access to the groups and datasets of an open weights file."""

    def __init__(self, f, where):
        self.f, self.where = f, where
        # tf.keras 2.13-2.15 wrote `_layer_checkpoint_dependencies` for `layers`.
        self.legacy = self._has("_layer_checkpoint_dependencies")

    def _fail(self, message):
        raise errors.DataLossError(f"{self.where}: {message}")

    def _has(self, name):
        try:
            return name in self.f
        except (OSError, RuntimeError, KeyError, ValueError) as e:
            self._fail(f"cannot read the file's groups ({e})")

    def _child(self, group, name, path):
        try:
            if name not in group:
                return None
            link = group.get(name, getlink=True)
            if not isinstance(link, h5py.HardLink):
                self._fail(f"{path} is a {type(link).__name__}; only plain groups and "
                           "datasets are read")
            return group[name]
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
            self._fail(f"cannot read {path} ({e})")

    def group(self, path):
        """The group at ``path`` (None when absent)."""
        cur = self.f
        done = []
        for part in path.split("/"):
            done.append(part)
            cur = self._child(cur, part, "/".join(done))
            if cur is None:
                return None
            if not isinstance(cur, h5py.Group):
                self._fail(f"{'/'.join(done)} is not a group")
        return cur

    def vars(self, path):
        """The ``vars`` group of the object at ``path`` (None when absent)."""
        group = self.group(vars_path(path))
        if group is None and self.legacy and path.startswith("layers"):
            group = self.group(vars_path("_layer_checkpoint_dependencies" + path[6:]))
        return group

    def count(self, group, path):
        """How many datasets ``0..N-1`` the group holds (checked)."""
        if group is None:
            return 0
        try:
            keys = sorted(group.keys())
        except (OSError, RuntimeError) as e:
            self._fail(f"cannot list {path} ({e})")
        if sorted(keys) != sorted(str(i) for i in range(len(keys))):
            self._fail(f"{path} holds {keys[:8]}, not variables named 0..N-1")
        return len(keys)

    def value(self, group, i, path):
        """Dataset ``i`` of ``group`` as a NumPy array, checked."""
        name = f"{path}/{i}"
        ds = self._child(group, str(i), name)
        if ds is None:
            self._fail(f"{name} is missing")
        if not isinstance(ds, h5py.Dataset):
            self._fail(f"{name} is not a dataset")
        try:
            if ds.external or ds.is_virtual:
                self._fail(f"{name} refers to data outside the file")
            shape, dtype = tuple(ds.shape), ds.dtype
            stored = ds.id.get_storage_size()
            bf16 = ds.attrs.get("dtype") in ("bfloat16", b"bfloat16")
        except (OSError, RuntimeError, ValueError, TypeError) as e:
            self._fail(f"cannot read {name} ({e})")
        if dtype.kind not in _NUMERIC or dtype.fields is not None:
            raise ValueError(f"{self.where}: {name} has the dtype {dtype}, not a number type")
        declared = math.prod(shape) * dtype.itemsize
        if declared > _MAX_DATASET_BYTES or (declared > 1 << 32 and
                                             declared > _MAX_EXPANSION * stored):
            self._fail(f"{name} declares {declared} bytes but stores {stored}")
        try:
            arr = np.asarray(ds[()])
        except (OSError, RuntimeError, ValueError, TypeError) as e:
            self._fail(f"cannot read {name} ({e})")
        return arr.astype(_BF16) if bf16 and _BF16 is not None else arr


def _cast(value, var, where):
    """``value`` as ``var``'s dtype: floats to floats, integers to integers."""
    target = np.dtype(var.dtype.as_numpy_dtype)
    kinds = {"f": "f", "V": "f"}
    have, want = kinds.get(value.dtype.kind, value.dtype.kind), kinds.get(target.kind,
                                                                          target.kind)
    if _BF16 is not None and value.dtype == _BF16:
        have = "f"
    if _BF16 is not None and target == _BF16:
        want = "f"
    if have != want and not (have in "iu" and want in "iu"):
        raise ValueError(f"{where} holds {value.dtype} values for the {var.dtype.name} "
                         f"variable {var.name}")
    return value.astype(target)


def assign(variables, values, where):
    """Assigns checked values (same count and shapes) to variables."""
    if len(values) != len(variables):
        raise ValueError(f"{where}: expected {len(variables)} variables, the file has "
                         f"{len(values)}")
    for i, (var, value) in enumerate(zip(variables, values)):
        if tuple(value.shape) != tuple(var.shape.as_list()):
            raise ValueError(f"{where}/{i}: the variable {var.name} has shape "
                             f"{tuple(var.shape.as_list())}, the file's value has shape "
                             f"{tuple(value.shape)}")
    cast = [_cast(value, var, f"{where}/{i}") for i, (var, value) in
            enumerate(zip(variables, values))]
    with init_scope():
        for var, value in zip(variables, cast):
            var.assign(_kiln.convert_to_tensor(value))


class _Loader:
    def __init__(self, model, store, skip_mismatch):
        self.model, self.store, self.skip = model, store, skip_mismatch
        self.problems = []

    def values(self, group, path):
        return [self.store.value(group, i, path) for i in range(self.store.count(group, path))]

    def entry(self, e):
        path = vars_path(e.path)
        group = self.store.vars(e.path)
        if isinstance(e.obj, Optimizer):
            return self.optimizer(e.obj, group, path)
        values = self.values(group, path)
        if not e.variables and values and not e.obj.built:
            return defer(e.obj, values, f"{self.store.where}:{path}")
        try:
            assign(e.variables, values, f"layer '{e.name}' ({path})")
        except ValueError as err:
            self.problems.append(str(err))

    def optimizer(self, opt, group, path):
        count = self.store.count(group, path)
        if count == 0:
            return
        if not opt.built and self.model.built and all(
                layer.built for layer in self.model._sublayers()):
            opt.build(self.model.trainable_variables)
        variables = keras_paths.optimizer_variables(opt)
        if count != len(variables):
            warnings.warn(f"Skipping variable loading for optimizer '{opt.name}', because it "
                          f"has {len(variables)} variables whereas the saved optimizer has "
                          f"{count} variables.", stacklevel=5)
            return
        try:
            assign(variables, self.values(group, path), f"optimizer '{opt.name}' ({path})")
        except ValueError as err:
            self.problems.append(str(err))

    def report(self):
        if not self.problems:
            return
        more = f" (and {len(self.problems) - 4} more)" if len(self.problems) > 4 else ""
        message = (f"{self.store.where}: the weights file does not match the model: " +
                   "; ".join(self.problems[:4]) + more)
        if not self.skip:
            raise ValueError(message)
        warnings.warn(message + "; skipped (skip_mismatch=True)", stacklevel=4)


def load(model, f, where, skip_mismatch=False):
    """Assigns the weights in the open file ``f`` to ``model`` (and its optimizer)."""
    loader = _Loader(model, Store(f, where), skip_mismatch)
    for e in keras_paths.walk(model):
        loader.entry(e)
    loader.report()


def load_bytes(model, data, where, skip_mismatch=False):
    with open_file(io.BytesIO(data), where) as f:
        load(model, f, where, skip_mismatch)


def defer(layer, values, where):
    """Assigns ``values`` when the unbuilt ``layer`` has created its weights."""
    def on_child(owner, name, value):
        own = keras_paths.own_variables(owner)
        if len(own) < len(values) or not isinstance(value, _kiln.Variable):
            return
        _restore_hooks.unregister(owner, on_child)
        assign(own, values, where)
    _restore_hooks.register(layer, on_child)
