"""Dataset.save, Dataset.load and Dataset.snapshot: datasets on disk.

kiln's format, readable with NumPy alone (not TensorFlow's):

    PATH/kiln_dataset.json    {"format": "kiln.data", "version": 1,
                               "element_spec": ..., "cardinality": N,
                               "compression": null or "GZIP",
                               "shards": {"0": count, ...}}
    PATH/shard_00000000.npz   a zip of .npy files: "e{i}_c{k}.npy" holds component k
                              (nest.flatten order) of element i of the shard; a string
                              component is its bytes (uint8) there, with the byte
                              length of each string in "e{i}_c{k}.len.npy".

The JSON file is written last, so a directory without it is not a dataset.
GZIP deflates the zip's entries. save() writes one shard unless shard_func
says otherwise; load() hands the shards, as a dataset of datasets in shard
order, to reader_func (default: interleave them, a cycle of one per CPU).
snapshot(path) writes PATH/<fingerprint of the element_spec>/ in this format
while the first full iteration runs, and later iterations read it back; the
pipeline itself is not fingerprinted (a snapshot of another pipeline with the
same element_spec in the same path is reused)."""
import collections.abc
import hashlib
import itertools
import json
import os
import shutil
import time
import warnings
import zipfile

import numpy as np

from kiln import _kiln, errors, nest
from kiln.data import functions, nested, structure
from kiln.data.dataset import DatasetV2, install_methods
from kiln.data.interleave import AUTOTUNE, cpu_count
from kiln.data.transforms import UnaryDataset
from kiln.tensor_shape import TensorShape

TensorSpec = _kiln.TensorSpec
METADATA = "kiln_dataset.json"
_STRING = _kiln.as_dtype("string")
_tmp_ids = itertools.count()


# ---- element specs as JSON ----

def encode_spec(spec):
    if isinstance(spec, TensorSpec):
        shape = None if spec.shape.rank is None else spec.shape.as_list()
        return {"tensor": {"shape": shape, "dtype": spec.dtype.name}}
    if isinstance(spec, tuple) and hasattr(type(spec), "_fields"):
        return {"namedtuple": {"name": type(spec).__name__, "fields": list(spec._fields),
                               "items": [encode_spec(s) for s in spec]}}
    if isinstance(spec, tuple):
        return {"tuple": [encode_spec(s) for s in spec]}
    if isinstance(spec, collections.abc.Mapping):
        return {"dict": [[k, encode_spec(v)] for k, v in spec.items()]}
    raise TypeError(f"save: elements of spec {spec!r} cannot be saved (only tensors, in "
                    "tuples, namedtuples and dicts)")


def decode_spec(data):
    (kind, body), = data.items()
    if kind == "tensor":
        shape = TensorShape(body["shape"])
        return TensorSpec(shape, _kiln.as_dtype(body["dtype"]))
    if kind == "namedtuple":
        cls = collections.namedtuple(body["name"], body["fields"])
        return cls(*[decode_spec(s) for s in body["items"]])
    if kind == "tuple":
        return tuple(decode_spec(s) for s in body)
    return {k: decode_spec(v) for k, v in body}


def _compression(value):
    if value in (None, "", "NONE", "AUTO"):
        return None
    if value in ("GZIP", "SNAPPY", "ZLIB"):
        return "GZIP"
    warnings.warn(f"Unsupported compression_type:{value}. No compression will be used.",
                  stacklevel=3)
    return None


# ---- writing ----

class _Shard:
    def __init__(self, filename, compression):
        method = zipfile.ZIP_DEFLATED if compression else zipfile.ZIP_STORED
        self._zip = zipfile.ZipFile(filename, "w", compression=method, allowZip64=True)
        self.count = 0

    def write(self, flat):
        for k, t in enumerate(flat):
            arr = np.asarray(t.numpy())
            name = f"e{self.count}_c{k}"
            if t.dtype == _STRING:
                items = [x.encode() if isinstance(x, str) else bytes(x) for x in arr.reshape(-1)]
                self._put(name + ".len", np.asarray([len(b) for b in items],
                                                    dtype=np.int64).reshape(arr.shape))
                arr = np.frombuffer(b"".join(items), dtype=np.uint8)
            elif arr.dtype.kind == "V":  # bfloat16 and other NumPy extension types
                arr = arr.view(f"u{arr.dtype.itemsize}")
            self._put(name, arr)
        self.count += 1

    def _put(self, name, arr):
        with self._zip.open(name + ".npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, np.require(arr, requirements="C"), allow_pickle=False)

    def close(self):
        self._zip.close()


class _Writer:
    """Elements into shard files of `path`; finish() writes the metadata."""

    def __init__(self, path, spec, compression, shard_of):
        for s in nest.flatten(spec):
            if not isinstance(s, TensorSpec):
                raise TypeError(f"save: elements of spec {spec!r} cannot be saved")
        self._meta = {"format": "kiln.data", "version": 1, "element_spec": encode_spec(spec),
                      "compression": compression}
        self._path, self._compression, self._shard_of = path, compression, shard_of
        os.makedirs(path, exist_ok=True)
        for name in os.listdir(path):
            if name == METADATA or (name.startswith("shard_") and name.endswith(".npz")):
                os.remove(os.path.join(path, name))
        self._shards, self._count = {}, 0

    def add(self, element):
        k = self._shard_of(element, self._count)
        if k < 0:
            raise errors.InvalidArgumentError(f"shard_func returned {k}; shard indices must "
                                              "be non-negative")
        if k not in self._shards:
            filename = os.path.join(self._path, f"shard_{k:08d}.npz")
            self._shards[k] = _Shard(filename, self._compression)
        self._shards[k].write(nest.flatten(element))
        self._count += 1

    def close(self):
        for shard in self._shards.values():
            shard.close()

    def finish(self):
        self.close()
        meta = dict(self._meta, cardinality=self._count,
                    shards={str(k): s.count for k, s in sorted(self._shards.items())})
        tmp = os.path.join(self._path, METADATA + ".tmp")
        with open(tmp, "w") as f:
            json.dump(meta, f)
        os.replace(tmp, os.path.join(self._path, METADATA))


def _shard_fn(shard_func, spec, who, default):
    """(element, index) -> shard index."""
    if shard_func is None:
        return default
    fn = functions.StructuredFunction(shard_func, spec, who)
    out = fn.output_spec
    if nest.is_nested(out) or out.dtype.name not in ("int32", "int64") or \
            not out.shape.is_compatible_with(TensorShape([])):
        raise TypeError(f"Invalid `shard_func`. `shard_func` must return `tf.int64` scalar "
                        f"tensor but its return type is {out}.")
    return lambda element, index: int(fn(element).numpy())


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    if checkpoint_args:
        if "checkpoint" in checkpoint_args:
            raise ValueError("'Invalid `checkpoint_args`. `checkpoint_args` are not allowed "
                             "to include 'checkpoint'.")
        raise NotImplementedError("Dataset.save: checkpoint_args is not supported by kiln")
    if not _kiln.executing_eagerly():
        raise NotImplementedError("Dataset.save is supported eagerly only, not inside a "
                                  "kiln.function")
    path = os.fspath(path)
    shard_of = _shard_fn(shard_func, dataset.element_spec, "save()", lambda el, i: 0)
    writer = _Writer(path, dataset.element_spec, _compression(compression), shard_of)
    try:
        for element in dataset._eager_iter():
            writer.add(element)
    finally:
        writer.close()
    writer.finish()


# ---- reading ----

class ShardDataset(DatasetV2):
    _name = "ShardDataset"

    def __init__(self, filename, count, saved_spec, spec):
        super().__init__(spec, count)
        self._filename, self._saved = filename, nest.flatten(saved_spec)

    def _eager_iter(self):
        flat_specs = nest.flatten(self._spec)
        try:
            z = zipfile.ZipFile(self._filename)
        except (OSError, zipfile.BadZipFile) as e:
            raise errors.DataLossError(f"{self._filename}: not a readable shard ({e})") from None
        with z:
            for i in range(self._card):
                parts = [self._read(z, f"e{i}_c{k}", k, saved, want)
                         for k, (saved, want) in enumerate(zip(self._saved, flat_specs))]
                yield nest.pack_sequence_as(self._spec, parts)

    def _read(self, z, name, k, saved, want):
        if saved.dtype != want.dtype:
            raise errors.InvalidArgumentError(
                f"Data type mismatch at component {k}: expected {want.dtype.name} but got "
                f"{saved.dtype.name}.")
        arr = _get(z, name, self._filename)
        if saved.dtype == _STRING:
            lengths = _get(z, name + ".len", self._filename)
            data, out, pos = arr.tobytes(), [], 0
            if (lengths.dtype.kind not in "iu" or (lengths < 0).any()
                    or int(lengths.sum()) != len(data)):
                raise errors.DataLossError(f"{self._filename}: {name}'s string lengths do not "
                                           "match its bytes")
            for n in lengths.reshape(-1):
                out.append(data[pos:pos + n])
                pos += n
            arr = np.empty(len(out), dtype=object)
            arr[:] = out
            arr = arr.reshape(lengths.shape)
        elif arr.dtype != np.dtype(saved.dtype.as_numpy_dtype):
            arr = arr.view(saved.dtype.as_numpy_dtype)
        if not want.shape.is_compatible_with(TensorShape(arr.shape)):
            raise errors.InvalidArgumentError(
                f"Shape mismatch at component {k}: expected {want.shape} but got "
                f"{TensorShape(arr.shape)}.")
        return structure.to_tensor(arr, want.dtype)


def _get(z, name, filename):
    """Array `name` of the shard; DataLossError when missing or damaged."""
    try:
        with z.open(name + ".npy") as f:
            return np.lib.format.read_array(f, allow_pickle=False)
    except (KeyError, ValueError, EOFError, OSError, zipfile.BadZipFile) as e:
        raise errors.DataLossError(f"{filename}: {name} is missing or damaged ({e})") from None


def _default_reader(datasets):
    return datasets.interleave(lambda x: x, cycle_length=cpu_count(),
                               num_parallel_calls=AUTOTUNE)


class LoadDataset(DatasetV2):
    _name = "LoadDataset"

    def __init__(self, inner, spec, cardinality):
        super().__init__(spec, cardinality)
        self._parent = inner

    def _eager_iter(self):
        return self._parent._eager_iter()


def _read_metadata(path, wait):
    filename = os.path.join(path, METADATA)
    while not os.path.exists(filename):
        if not wait:
            raise errors.NotFoundError(
                f"kiln.data saved dataset metadata file not found: {filename}.")
        time.sleep(5)
    try:
        with open(filename) as f:
            meta = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise errors.DataLossError(f"{filename}: not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != "kiln.data":
        raise errors.DataLossError(f"{filename} is not a kiln.data saved dataset")
    shards = meta.get("shards")
    if (not isinstance(shards, dict) or not isinstance(meta.get("cardinality"), int)
            or "element_spec" not in meta
            or not all(isinstance(n, int) and n >= 0 and str(k).isdigit()
                       for k, n in shards.items())):
        raise errors.DataLossError(f"{filename}: its shards, cardinality or element_spec "
                                   "are missing or malformed")
    return meta


def load(path, element_spec=None, compression=None, reader_func=None, wait=False):
    path = os.fspath(path)
    meta = _read_metadata(path, wait)
    saved = decode_spec(meta["element_spec"])
    spec = saved if element_spec is None else element_spec
    try:
        nest.assert_same_structure(saved, spec)
    except (TypeError, ValueError):
        raise ValueError(f"load: element_spec {spec!r} does not match the saved dataset's "
                         f"{saved!r}") from None
    shards = [ShardDataset(os.path.join(path, f"shard_{int(k):08d}.npz"), n, saved, spec)
              for k, n in sorted(meta["shards"].items(), key=lambda kv: int(kv[0]))]
    datasets = nested.ListDataset(shards, nested.DatasetSpec(spec))
    out = (reader_func or _default_reader)(datasets)
    if not isinstance(out, DatasetV2):
        raise TypeError(f"load: reader_func must return a Dataset, got {out!r}")
    return LoadDataset(out, spec, meta["cardinality"])


# ---- snapshot ----

class SnapshotDataset(UnaryDataset):
    _name = "SnapshotDataset"

    def __init__(self, parent, path, compression, reader_func, shard_func):
        spec = parent.element_spec
        n = cpu_count()
        self._shard_of = _shard_fn(shard_func, spec, "Dataset.snapshot().shard_func",
                                   lambda el, i: i % n)
        super().__init__(parent, spec, parent._card)
        self._compression = _compression(compression)
        self._reader = reader_func
        text = json.dumps(encode_spec(spec), sort_keys=True).encode()
        fingerprint = int(hashlib.sha256(text).hexdigest()[:16], 16)
        self._dir = os.path.join(os.fspath(path), str(fingerprint))

    def _eager_iter(self):
        if os.path.exists(os.path.join(self._dir, METADATA)):
            return load(self._dir, self._spec, reader_func=self._reader)._eager_iter()
        return self._write()

    def _write(self):
        tmp = f"{self._dir}.tmp-{os.getpid()}-{next(_tmp_ids)}"
        writer = _Writer(tmp, self._spec, self._compression, self._shard_of)
        done = False
        try:
            for element in self._parent._eager_iter():
                writer.add(element)
                yield element
            writer.finish()
            done = True
        finally:
            writer.close()
            if done and not os.path.exists(self._dir):
                os.replace(tmp, self._dir)
            else:
                shutil.rmtree(tmp, ignore_errors=True)


class _Methods:
    def save(self, path, compression=None, shard_func=None, checkpoint_args=None):
        """Writes the elements under the directory path (kiln's format), to
        read back with Dataset.load(path)."""
        return save(self, path, compression, shard_func, checkpoint_args)

    @staticmethod
    def load(path, element_spec=None, compression=None, reader_func=None, wait=False):
        """The dataset saved in path by Dataset.save (element_spec: read from
        the files unless given; wait: until it appears)."""
        return load(path, element_spec, compression, reader_func, wait)

    def snapshot(self, path, compression="AUTO", reader_func=None, shard_func=None,
                 name=None):
        """The same elements, written under path by the first full iteration
        and read back from there afterwards."""
        return SnapshotDataset(self, path, compression, reader_func, shard_func)


install_methods(DatasetV2, _Methods)
