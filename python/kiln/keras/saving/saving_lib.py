"""Keras files: ``model.save("x.keras")`` / ``load_model`` and
``save_weights`` / ``load_weights``, in Keras 3's formats.

A ``.keras`` file is a zip: ``metadata.json``, ``config.json`` (the model's
Keras 3 config with ``build_config`` and ``compile_config``) and
``model.weights.h5`` (keras_h5). A ``.weights.h5`` file is that HDF5 file
alone. Reading also takes legacy HDF5 model and weights files (legacy_h5)
and kiln's earlier zip files (kiln_format); the content decides, not the
name: a zip starts with ``PK\x03\x04``, HDF5 with ``\x89HDF\r\n\x1a\n``.
Any other ``save_weights`` path is a checkpoint prefix (``path.index`` +
``path.data-00000-of-00001``), as tf.keras 2 wrote.
"""
import datetime
import json
import os
import types
import warnings
import zipfile

from kiln import _kiln, errors
from kiln.keras import losses, metrics, optimizers
from kiln.keras.engine.training import Model
from kiln.keras.saving import keras_config, keras_h5, kiln_format, legacy_h5
from kiln.keras.saving import object_registration as reg
from kiln.keras.saving import serialization
from kiln.train import bundle, management
from kiln.train import graph as graph_mod
from kiln.train.checkpoint import check_eager
from kiln.train.restore import CheckpointLoadStatus, Restoration

KERAS_VERSION = "3.15.1"   # the Keras release whose file layout kiln writes
_CONFIG, _METADATA, _WEIGHTS = "config.json", "metadata.json", "model.weights.h5"
_ZIP_MAGIC, _HDF5_MAGIC = b"PK\x03\x04", b"\x89HDF\r\n\x1a\n"
_MAX_JSON_BYTES = 1 << 26
_MAX_WEIGHTS_BYTES = 1 << 36
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError,
               RuntimeError, NotImplementedError)


def _kind(filepath):
    name = os.fspath(filepath)
    if name.endswith(".keras"):
        return "keras"
    if name.endswith(".weights.h5"):
        return "weights"
    if name.endswith(".h5") or name.endswith(".hdf5"):
        return "h5"
    return "prefix"


def _sniff(path):
    """"zip", "hdf5" or None, from the file's first bytes."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"File not found: filepath={path}. Please ensure the file is "
                                "an accessible `.keras` zip file.")
    with open(path, "rb") as f:
        head = f.read(8)
    if head[:4] == _ZIP_MAGIC:
        return "zip"
    return "hdf5" if head == _HDF5_MAGIC else None


# ---- writing ----

def _metadata():
    return {"keras_version": KERAS_VERSION, "kiln_version": _kiln.__version__,
            "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}


def _atomic_write(path, write, overwrite):
    """Calls ``write(tmp_path)`` and renames the result onto ``path``."""
    path = os.fspath(path)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{path} exists and overwrite=False")
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
    """Writes ``model`` (config, weights, optimizer state) to a ``.keras`` file."""
    if kwargs:
        raise ValueError(f"The following argument(s) are not supported: {sorted(kwargs)}")
    if zipped is False:
        raise NotImplementedError("kiln saves .keras files zipped only (zipped=False)")
    kind = _kind(filepath)
    if kind == "h5":
        raise NotImplementedError("kiln does not write the legacy HDF5 (.h5) format (it reads "
                                  "it); save to a `.keras` file")
    if kind != "keras":
        raise ValueError("Invalid filepath extension for saving. Please add either a "
                         "`.keras` extension for the native Keras format (recommended) or a "
                         f"`.h5` extension. Received: filepath={filepath}.")
    check_eager("Model.save")
    members = [(_METADATA, json.dumps(_metadata())),
               (_CONFIG, json.dumps(keras_config.model_entry(model))),
               (_WEIGHTS, keras_h5.to_bytes(model))]

    def write(tmp):
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as z:
            for name, data in members:
                z.writestr(name, data)
    _atomic_write(filepath, write, overwrite)


def save_weights(model, filepath, overwrite=True):
    """Writes the weights (and the optimizer's state) to ``filepath``: a
    ``.weights.h5`` file in Keras 3's format, or a checkpoint prefix."""
    check_eager("Model.save_weights")
    kind = _kind(filepath)
    if kind in ("keras", "h5"):
        raise ValueError("The filename must end in `.weights.h5` (or be a checkpoint "
                         f"prefix without extension). Received: filepath={filepath}")
    if kind == "prefix":
        prefix = os.fspath(filepath)
        if not overwrite and management.checkpoint_exists(prefix):
            raise FileExistsError(f"{prefix} exists and overwrite=False")
        saved = graph_mod.SavedGraph(kiln_format.WeightsRoot(model))
        bundle.write(prefix, saved.arrays(bundle.DTYPES), saved.to_json())
        management.update_checkpoint_state(os.path.dirname(prefix) or ".", prefix, [prefix])
        return

    def write(tmp):
        with keras_h5.require().File(tmp, "w") as f:
            keras_h5.write(model, f)
    _atomic_write(filepath, write, overwrite)


# ---- reading ----

def _open_zip(path):
    try:
        return zipfile.ZipFile(path)
    except _ZIP_ERRORS as e:
        raise errors.DataLossError(f"{path}: not a Keras zip file ({e})") from None


def _member(zf, path, name, limit):
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise errors.DataLossError(f"{path}: the member {name} is missing") from None
    if info.file_size > limit:
        raise errors.DataLossError(f"{path}: the member {name} has {info.file_size} bytes, "
                                   f"more than kiln reads ({limit})")
    try:
        return zf.read(name)
    except _ZIP_ERRORS as e:
        raise errors.DataLossError(f"{path}: cannot read {name} ({e})") from None


def _json_member(zf, path, name):
    try:
        return json.loads(_member(zf, path, name, _MAX_JSON_BYTES).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise errors.DataLossError(f"{path}: {name} is not valid JSON") from None


def _legacy_h5(f, where):
    try:
        return "layer_names" in f.attrs or "model_config" in f.attrs or "model_weights" in f
    except (OSError, RuntimeError, KeyError, ValueError) as e:
        raise errors.DataLossError(f"{where}: cannot read the file's root ({e})") from None


def load_weights(model, filepath, skip_mismatch=False):
    """Loads weights saved by ``save_weights`` or ``save`` (``.keras``,
    ``.weights.h5``, legacy ``.h5`` or a checkpoint prefix). Layers not built
    yet get their values when built."""
    check_eager("Model.load_weights")
    path = os.fspath(filepath)
    if _kind(path) == "prefix" and not os.path.isfile(path):
        reader = bundle.Reader(bundle.FileSource(path))
        root = kiln_format.WeightsRoot(model)
        return CheckpointLoadStatus(Restoration(reader, root, skip_mismatch), root)
    sniffed = _sniff(path)
    if sniffed == "zip":
        with _open_zip(path) as zf:
            if kiln_format.is_kiln_zip(zf):
                kiln_format.load_weights(model, kiln_format.Archive(path, zf), skip_mismatch)
                return None
            data = _member(zf, path, _WEIGHTS, _MAX_WEIGHTS_BYTES)
        keras_h5.load_bytes(model, data, f"{path}:{_WEIGHTS}", skip_mismatch)
    elif sniffed == "hdf5":
        with keras_h5.open_file(path, path) as f:
            if _legacy_h5(f, path):
                legacy_h5.load_weights(model, f, path, skip_mismatch)
            else:
                keras_h5.load(model, f, path, skip_mismatch)
    else:
        raise errors.DataLossError(f"{path}: not a Keras file (neither a zip nor HDF5)")
    return None


def _model_from_entry(entry, where, custom_objects, compile, safe_mode):
    if not isinstance(entry, dict):
        raise errors.DataLossError(f"{where}: config.json does not describe a model")
    with serialization.SafeModeScope(safe_mode), reg.CustomObjectScope(custom_objects or {}):
        entry = keras_config.from_keras(entry)
        model = serialization.deserialize_layer(entry)
        _build(model, entry.get("build_config"))
        if compile and entry.get("compile_config"):
            _compile(model, entry["compile_config"])
    return model


def _build(model, build_config):
    """Keras 3's build_from_config: builds a model saved built."""
    shape = build_config.get("input_shape") if isinstance(build_config, dict) else None
    if not model.built and shape is not None:
        model.build(shape)


def _load_zip(path, custom_objects, compile, safe_mode):
    with _open_zip(path) as zf:
        if kiln_format.is_kiln_zip(zf):
            archive = kiln_format.Archive(path, zf)
            model = _model_from_entry(kiln_format.read_config(archive), path, custom_objects,
                                      compile, safe_mode)
            kiln_format.load_weights(model, archive)
            return model
        entry = _json_member(zf, path, _CONFIG)
        data = _member(zf, path, _WEIGHTS, _MAX_WEIGHTS_BYTES)
    model = _model_from_entry(entry, path, custom_objects, compile, safe_mode)
    keras_h5.load_bytes(model, data, f"{path}:{_WEIGHTS}")
    return model


def _load_legacy(path, custom_objects, compile, safe_mode):
    with keras_h5.open_file(path, path) as f:
        config = legacy_h5.json_attr(f, "model_config", path)
        if config is None:
            raise ValueError(f"{path}: No model config found in the file (a weights-only "
                             "HDF5 file: build the model and call load_weights)")
        entry = legacy_h5.modernize(config)
        model = _model_from_entry(entry, path, custom_objects, False, safe_mode)
        legacy_h5.load_weights(model, f, path)
        training = legacy_h5.json_attr(f, "training_config", path) if compile else None
        if training is not None:
            _compile(model, legacy_h5.compile_config(training))
            if model.compiled:
                legacy_h5.load_optimizer(model, f, path)
    return model


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """The model saved by ``model.save(filepath)`` (a ``.keras`` zip, or a
    legacy ``.h5`` file): rebuilt from its config, compiled as it was
    (``compile=True``), with its weights and optimizer state."""
    check_eager("load_model")
    path = os.fspath(filepath)
    if _kind(path) not in ("keras", "h5"):
        raise ValueError(f"File format not supported: filepath={filepath}. kiln loads "
                         "`.keras` files and legacy `.h5` files.")
    sniffed = _sniff(path)
    if sniffed == "zip":
        return _load_zip(path, custom_objects, compile, safe_mode)
    if sniffed == "hdf5":
        return _load_legacy(path, custom_objects, compile, safe_mode)
    raise errors.DataLossError(f"{path}: not a Keras file (neither a zip nor HDF5)")


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
        optimizer = args.get("optimizer") or model.optimizer  # before compile's LossScale
        return {"optimizer": serialization.serialize_keras_object(optimizer),
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
