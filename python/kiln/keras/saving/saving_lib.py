"""Keras files: ``model.save("x.keras")`` / ``load_model`` and
``save_weights`` / ``load_weights``.

A ``.keras`` file is a zip: ``metadata.json``, ``config.json`` (Keras 3's
model config, with ``compile_config``) and the weights as a kiln checkpoint
(``model.weights.index`` JSON + ``model.weights.data``; see kiln.train.bundle).
A ``.weights.h5`` file is the same zip without the config (kiln's own format,
not HDF5). Any other ``save_weights`` path is a checkpoint prefix
(``path.index`` + ``path.data-00000-of-00001``), as tf.keras 2 wrote.
"""
import datetime
import io
import json
import os
import types
import warnings
import zipfile

from kiln import _kiln, errors
from kiln.keras import losses, metrics, optimizers
from kiln.keras.engine.training import Model
from kiln.keras.saving import object_registration as reg
from kiln.keras.saving import serialization
from kiln.train import bundle, management
from kiln.train import graph as graph_mod
from kiln.train.checkpoint import check_eager
from kiln.train.restore import CheckpointLoadStatus, Restoration

FORMAT = "kiln.keras"
VERSION = 1
_CONFIG, _METADATA = "config.json", "metadata.json"
_INDEX, _DATA = "model.weights.index", "model.weights.data"
_MAX_JSON_BYTES = 1 << 26


class _WeightsRoot:
    """The root of a model's weights: the model's children, and its optimizer."""

    _kiln_trackable = True

    def __init__(self, model):
        self.model = model
        self.optimizer = model.optimizer

    def _kiln_children(self):
        out = graph_mod.children(self.model)
        if self.optimizer is not None:
            out.append(("optimizer", self.optimizer))
        return out

    def _kiln_owners(self):
        return [self.model]


def _kind(filepath):
    name = os.fspath(filepath)
    if name.endswith(".keras"):
        return "keras"
    if name.endswith(".weights.h5") or name.endswith(".h5") or name.endswith(".hdf5"):
        return "weights" if name.endswith(".weights.h5") else "h5"
    return "prefix"


# ---- writing ----

def _weights_bytes(model):
    saved = graph_mod.SavedGraph(_WeightsRoot(model))
    data = io.BytesIO()
    index = bundle.encode(saved.arrays(bundle.DTYPES), saved.to_json(), data)
    return index, data.getvalue()


def _metadata():
    return {"format": FORMAT, "version": VERSION, "keras_version": "3",
            "kiln_version": _kiln.__version__,
            "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}


def _write_zip(path, members, overwrite):
    path = os.fspath(path)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path} exists and overwrite=False")
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)

    def write(f):
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            for name, data in members:
                z.writestr(name, data)
    bundle.atomic_write(path, write)


def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
    """Writes ``model`` (config, weights, optimizer state) to a ``.keras`` file."""
    if kwargs:
        raise ValueError(f"The following argument(s) are not supported: {sorted(kwargs)}")
    if zipped is False:
        raise NotImplementedError("kiln saves .keras files zipped only (zipped=False)")
    kind = _kind(filepath)
    if kind == "h5":
        raise NotImplementedError("kiln does not write the legacy HDF5 (.h5) format; save to "
                                  "a `.keras` file")
    if kind != "keras":
        raise ValueError("Invalid filepath extension for saving. Please add either a "
                         "`.keras` extension for the native Keras format (recommended) or a "
                         f"`.h5` extension. Received: filepath={filepath}.")
    check_eager("Model.save")
    entry = serialization.serialize_keras_object(model)
    compile_config = model.get_compile_config() if model.compiled else None
    if compile_config is not None:
        entry["compile_config"] = compile_config
    index, data = _weights_bytes(model)
    _write_zip(filepath, [(_METADATA, json.dumps(_metadata())),
                          (_CONFIG, json.dumps(entry)), (_INDEX, index), (_DATA, data)],
               overwrite)


def save_weights(model, filepath, overwrite=True):
    """Writes the weights (and the optimizer's state) to ``filepath``: a
    ``.weights.h5`` file in kiln's format, or a checkpoint prefix."""
    check_eager("Model.save_weights")
    kind = _kind(filepath)
    if kind in ("keras", "h5"):
        raise ValueError("The filename must end in `.weights.h5` (or be a checkpoint "
                         f"prefix without extension). Received: filepath={filepath}")
    if kind == "prefix":
        prefix = os.fspath(filepath)
        if not overwrite and management.checkpoint_exists(prefix):
            raise FileExistsError(f"{prefix} exists and overwrite=False")
        saved = graph_mod.SavedGraph(_WeightsRoot(model))
        bundle.write(prefix, saved.arrays(bundle.DTYPES), saved.to_json())
        management.update_checkpoint_state(os.path.dirname(prefix) or ".", prefix, [prefix])
        return
    index, data = _weights_bytes(model)
    _write_zip(filepath, [(_METADATA, json.dumps(_metadata())), (_INDEX, index),
                          (_DATA, data)], overwrite)


# ---- reading (every member checked before use) ----

class _Archive:
    """The members of a kiln Keras zip file, read with size limits."""

    def __init__(self, path):
        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise FileNotFoundError(f"File not found: filepath={self.path}. Please ensure the "
                                    "file is an accessible `.keras` zip file.")
        with open(self.path, "rb") as f:
            if f.read(8) == b"\x89HDF\r\n\x1a\n":
                raise errors.UnimplementedError(
                    f"{self.path} is an HDF5 file (written by Keras); kiln reads the .keras "
                    "and .weights.h5 files that kiln writes")
        try:
            self.zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError, ValueError) as e:
            raise errors.DataLossError(f"{self.path}: not a kiln Keras file ({e})") from None

    def close(self):
        self.zip.close()

    def read(self, name, size=None, limit=_MAX_JSON_BYTES):
        try:
            info = self.zip.getinfo(name)
        except KeyError:
            raise errors.DataLossError(f"{self.path}: the member {name} is missing") from None
        if (size is not None and info.file_size != size) or info.file_size > limit:
            raise errors.DataLossError(f"{self.path}: the member {name} has {info.file_size} "
                                       "bytes, not the expected size")
        try:
            return self.zip.read(name)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError) as e:
            raise errors.DataLossError(f"{self.path}: cannot read {name} ({e})") from None

    def json(self, name):
        try:
            return json.loads(self.read(name).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise errors.DataLossError(f"{self.path}: {name} is not valid JSON") from None

    def check_metadata(self):
        meta = self.json(_METADATA)
        version = meta.get("version") if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or \
                isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise errors.DataLossError(f"{self.path}: not a kiln Keras file (bad metadata)")
        if version > VERSION:
            raise errors.UnimplementedError(
                f"{self.path}: Keras file format version {version} is newer than this kiln "
                f"reads (up to {VERSION}); upgrade kiln to read it")

    def reader(self):
        raw = self.read(_INDEX)
        try:
            want = json.loads(raw.decode("utf-8")).get("data_nbytes")
        except (UnicodeDecodeError, ValueError, RecursionError, AttributeError):
            want = None  # parse_index reports it
        where = f"{self.path}:{_INDEX}"
        if isinstance(want, bool) or not isinstance(want, int) or want < 0:
            bundle.parse_index(raw, where, -1)  # raises the index's own error
        data = self.read(_DATA, size=want, limit=want)
        return bundle.Reader(bundle.BytesSource(raw, data, where))


def _strict_check(restoration, model, skip_mismatch):
    """Keras 3's load_weights errors: every model weight loaded, every saved
    model weight used (unless layers are not built yet: they load when built)."""
    restored = {id(restoration.live(i)) for i in restoration.matched}
    missing = [w.path if hasattr(w, "path") else w.name for w in model.weights
               if id(w) not in restored]
    optimizer_nodes = _optimizer_nodes(restoration.nodes)
    built = model.built and all(layer.built for layer in model._sublayers())
    unused = [restoration.nodes[i].variable for i in restoration.unmatched_variables()
              if i not in optimizer_nodes] if built else []
    unused = [k for k in unused if k not in restoration.skipped]
    if not missing and not unused:
        return
    message = (f"The weights file does not match the model: {len(missing)} model weights "
               f"were not loaded {missing[:10]}, {len(unused)} saved weights were not used "
               f"{unused[:10]}")
    if not skip_mismatch:
        raise ValueError(message)
    warnings.warn(message + "; skipped (skip_mismatch=True)", stacklevel=3)


def _optimizer_nodes(nodes):
    out = {j for name, j in nodes[0].children if name == "optimizer"}
    stack = list(out)
    while stack:
        for _, j in nodes[stack.pop()].children:
            if j not in out:
                out.add(j)
                stack.append(j)
    for node in nodes:
        out.update(j for _, _, j in node.slots)
    return out


def load_weights(model, filepath, skip_mismatch=False):
    """Loads weights saved by ``save_weights`` or ``save`` (a ``.keras``,
    ``.weights.h5`` or checkpoint prefix). Layers not built yet get their
    values when built; the optimizer's slots when first used."""
    check_eager("Model.load_weights")
    kind = _kind(filepath)
    if kind == "h5":
        raise NotImplementedError("kiln does not read the legacy HDF5 (.h5) format")
    if kind == "prefix":
        reader = bundle.Reader(bundle.FileSource(os.fspath(filepath)))
        root = _WeightsRoot(model)
        return CheckpointLoadStatus(Restoration(reader, root, skip_mismatch), root)
    archive = _Archive(filepath)
    try:
        archive.check_metadata()
        reader = archive.reader()
    finally:
        archive.close()
    restoration = Restoration(reader, _WeightsRoot(model), skip_mismatch)
    _strict_check(restoration, model, skip_mismatch)
    return None


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """The model saved by ``model.save(filepath)``: rebuilt from its config,
    compiled as it was (``compile=True``), with its weights and optimizer state."""
    check_eager("load_model")
    kind = _kind(filepath)
    if kind == "h5":
        raise NotImplementedError("kiln does not read the legacy HDF5 (.h5) format")
    if kind != "keras":
        raise ValueError(f"File format not supported: filepath={filepath}. kiln loads "
                         "`.keras` files written by `model.save()`.")
    archive = _Archive(filepath)
    try:
        archive.check_metadata()
        entry = archive.json(_CONFIG)
        reader = archive.reader()
    finally:
        archive.close()
    if not isinstance(entry, dict):
        raise errors.DataLossError(f"{filepath}: config.json does not describe a model")
    with serialization.SafeModeScope(safe_mode), reg.CustomObjectScope(custom_objects or {}):
        model = serialization.deserialize_layer(entry)
        if compile and entry.get("compile_config"):
            _compile(model, entry["compile_config"])
    restoration = Restoration(reader, _WeightsRoot(model))
    _strict_check(restoration, model, False)
    return model


def _compile(model, config):
    try:
        model.compile_from_config(config)
    except (TypeError, ValueError) as e:
        warnings.warn(f"compile() was not called as part of model loading because the "
                      f"model's compile config could not be restored: {e}", stacklevel=3)


# ---- compile configs ----

def _ser_loss(obj, registry_module):
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, (list, tuple)):
        return [_ser_loss(o, registry_module) for o in obj]
    if isinstance(obj, dict):
        return {k: _ser_loss(v, registry_module) for k, v in obj.items()}
    if isinstance(obj, registry_module._REGISTRY.base):
        return registry_module.serialize(obj)
    for name, fn in registry_module._REGISTRY.functions.items():
        if fn is obj:
            return name
    if callable(obj) and obj in reg._GLOBAL_CUSTOM_NAMES:
        return serialization.serialize_function(obj)
    raise TypeError(f"cannot serialize {obj!r}: register it with "
                    "kiln.keras.saving.register_keras_serializable")


def _de_loss(obj, registry_module):
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, list):
        return [_de_loss(o, registry_module) for o in obj]
    if isinstance(obj, dict) and obj.get("class_name") == "function":
        return serialization.deserialize_function(obj)
    if isinstance(obj, dict) and "class_name" in obj and "config" in obj:
        cls = reg.get_registered_object(obj.get("registered_name") or obj["class_name"])
        if isinstance(cls, type):
            return cls.from_config(dict(obj["config"]))
        return registry_module.deserialize(obj)
    if isinstance(obj, dict):
        return {k: _de_loss(v, registry_module) for k, v in obj.items()}
    raise ValueError(f"Could not interpret {obj!r}")


def compile_config(model):
    """Keras 3's compile config: the optimizer and compile()'s other arguments."""
    args = dict(getattr(model, "_kiln_compile_args", None) or {})
    try:
        return {"optimizer": serialization.serialize_keras_object(model.optimizer),
                "loss": _ser_loss(args.get("loss"), losses),
                "loss_weights": serialization.jsonable(args.get("loss_weights"), "loss_weights"),
                "metrics": _ser_loss(args.get("metrics"), metrics),
                "weighted_metrics": _ser_loss(args.get("weighted_metrics"), metrics),
                "run_eagerly": bool(args.get("run_eagerly")),
                "steps_per_execution": 1, "jit_compile": args.get("jit_compile")}
    except TypeError as e:
        warnings.warn(f"The model's compile() arguments cannot be saved ({e}); the loaded model "
                      "will not be compiled", stacklevel=4)
        return None


def compile_from_config(model, config):
    """Compiles ``model`` as ``compile_config`` describes."""
    opt = config.get("optimizer")
    if isinstance(opt, dict):
        cls = serialization.find_class(opt, builtins_table=optimizers._BY_NAME)
        opt = cls.from_config(dict(opt.get("config") or {}))
    model.compile(optimizer=opt, loss=_de_loss(config.get("loss"), losses),
                  loss_weights=config.get("loss_weights"),
                  metrics=_de_loss(config.get("metrics"), metrics),
                  weighted_metrics=_de_loss(config.get("weighted_metrics"), metrics),
                  run_eagerly=bool(config.get("run_eagerly")),
                  jit_compile=config.get("jit_compile"))


# Model's save / save_weights / load_weights / get_config / from_config call
# these: kiln.keras.engine.training sits below this module.
Model._kiln_saving = types.SimpleNamespace(
    save_model=save_model, save_weights=save_weights, load_weights=load_weights,
    compile_config=compile_config, compile_from_config=compile_from_config,
    functional_config=serialization.functional_config,
    model_from_config=serialization.model_from_config,
    sequential_config=serialization.sequential_config,
    sequential_from_config=serialization.sequential_from_config,
    serialize=serialization.serialize_keras_object, scope=reg.CustomObjectScope)
