"""kiln's own Keras files before it wrote Keras 3's: read only.

Such a ``.keras`` or ``.weights.h5`` file is a zip holding ``metadata.json``
(``{"format": "kiln.keras", "version": 1}``), ``config.json`` (``.keras``
only) and the weights as a kiln checkpoint (``model.weights.index`` JSON +
``model.weights.data``; read by kiln.train.kiln_json). ``WeightsRoot`` is also
the root of ``save_weights("prefix")`` checkpoints.
"""
import json
import os
import warnings
import zipfile

from kiln import errors
from kiln.train import kiln_json
from kiln.train import graph as graph_mod
from kiln.train.restore import Restoration

FORMAT = "kiln.keras"
VERSION = 1
INDEX, DATA = "model.weights.index", "model.weights.data"
_MAX_JSON_BYTES = 1 << 26


class WeightsRoot:
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


def is_kiln_zip(zf):
    """True for kiln's earlier zip layout (a kiln checkpoint inside)."""
    return INDEX in zf.namelist()


class Archive:
    """The members of a zip file, read with size limits."""

    def __init__(self, path, zf):
        self.path, self.zip = os.fspath(path), zf

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
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError,
                NotImplementedError) as e:
            raise errors.DataLossError(f"{self.path}: cannot read {name} ({e})") from None

    def json(self, name):
        try:
            return json.loads(self.read(name).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise errors.DataLossError(f"{self.path}: {name} is not valid JSON") from None

    def check_metadata(self):
        meta = self.json("metadata.json")
        version = meta.get("version") if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT or \
                isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise errors.DataLossError(f"{self.path}: not a kiln Keras file (bad metadata)")
        if version > VERSION:
            raise errors.UnimplementedError(
                f"{self.path}: Keras file format version {version} is newer than this kiln "
                f"reads (up to {VERSION}); upgrade kiln to read it")

    def reader(self):
        raw = self.read(INDEX)
        try:
            want = json.loads(raw.decode("utf-8")).get("data_nbytes")
        except (UnicodeDecodeError, ValueError, RecursionError, AttributeError):
            want = None  # parse_index reports it
        where = f"{self.path}:{INDEX}"
        if isinstance(want, bool) or not isinstance(want, int) or want < 0:
            kiln_json.parse_index(raw, where, -1)  # raises the index's own error
        data = self.read(DATA, size=want, limit=want)
        return kiln_json.Reader(kiln_json.BytesSource(raw, data, where))


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


def _strict_check(restoration, model, skip_mismatch):
    """Every model weight loaded, every saved model weight used (unless layers
    are not built yet: they load when built)."""
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
    warnings.warn(message + "; skipped (skip_mismatch=True)", stacklevel=4)


def read_config(archive):
    """The checked model config of a kiln ``.keras`` zip."""
    archive.check_metadata()
    entry = archive.json("config.json")
    if not isinstance(entry, dict):
        raise errors.DataLossError(f"{archive.path}: config.json does not describe a model")
    return entry


def load_weights(model, archive, skip_mismatch=False):
    """Restores the weights of a kiln zip into ``model``."""
    archive.check_metadata()
    restoration = Restoration(archive.reader(), WeightsRoot(model), skip_mismatch)
    _strict_check(restoration, model, skip_mismatch)
