"""Checkpoints in kiln's earlier JSON format still load, and damaged ones give
clear kiln.errors errors (never a crash or a huge allocation)."""
import json
import os
import zlib

import numpy as np
import pytest

import kiln as tf
from kiln.train import graph as graph_mod
from kiln.train import kiln_json as bundle

DLE = tf.errors.DataLossError
KEY = "v/.ATTRIBUTES/VARIABLE_VALUE"


def write_json(root, prefix):
    """Writes ``root`` as kiln's earlier versions did."""
    saved = graph_mod.SavedGraph(root)
    return bundle.write(prefix, saved.arrays(bundle.DTYPES), saved.to_json())


@pytest.fixture
def prefix(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3)),
                               n=tf.Variable(np.int64(7)))
    return write_json(ckpt, str(tmp_path / "c"))


def test_a_json_checkpoint_restores(prefix):
    v, n = tf.Variable(np.zeros((2, 3), np.float32)), tf.Variable(np.int64(0))
    tf.train.Checkpoint(v=v, n=n).restore(prefix).assert_consumed()
    np.testing.assert_array_equal(v.numpy(), np.arange(6).reshape(2, 3))
    assert int(n.numpy()) == 7
    assert dict(tf.train.list_variables(prefix))[KEY] == [2, 3]


def index_doc(prefix):
    with open(prefix + ".index") as f:
        return json.load(f)


def write_index(prefix, doc):
    with open(prefix + ".index", "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))


def edit(prefix, change):
    doc = index_doc(prefix)
    change(doc)
    write_index(prefix, doc)


def restore_into_fresh(prefix):
    ckpt = tf.train.Checkpoint(v=tf.Variable(np.zeros((2, 3), np.float32)),
                               n=tf.Variable(np.int64(0)))
    return ckpt.restore(prefix)


def every_reader(prefix):
    """Each way of opening a checkpoint: all must fail the same way."""
    return [lambda: restore_into_fresh(prefix), lambda: tf.train.list_variables(prefix),
            lambda: tf.train.load_checkpoint(prefix).get_tensor(KEY)]


def expect(prefix, error, match):
    for read in every_reader(prefix):
        with pytest.raises(error, match=match):
            read()


def test_truncated_data(prefix):
    path = prefix + bundle.DATA_SUFFIX
    os.truncate(path, os.path.getsize(path) - 3)
    expect(prefix, DLE, "data holds .* bytes, the index expects")


def test_flipped_byte_fails_the_checksum(prefix):
    path = prefix + bundle.DATA_SUFFIX
    at = index_doc(prefix)["tensors"][KEY]["offset"] + 5
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x40]))
    with pytest.raises(DLE, match="checksum mismatch"):
        restore_into_fresh(prefix)
    with pytest.raises(DLE, match="checksum mismatch"):
        tf.train.load_checkpoint(prefix).get_tensor(KEY)
    assert tf.train.list_variables(prefix)  # the index alone is fine


@pytest.mark.parametrize("text", ["{not json", "", "[1, 2]", "null", "\xff", "[" * 100000])
def test_bad_json(prefix, text):
    write_index(prefix, text)
    expect(prefix, DLE, "not valid JSON|not a kiln checkpoint|not a checkpoint index")


def test_not_a_kiln_index(prefix):
    edit(prefix, lambda d: d.update(format="tensorflow"))
    expect(prefix, DLE, "not a kiln checkpoint")


def test_newer_version_is_unimplemented(prefix):
    edit(prefix, lambda d: d.update(version=2))
    expect(prefix, tf.errors.UnimplementedError, "version 2 is newer than this kiln reads")


@pytest.mark.parametrize("version", [0, -1, "1", True, None, 1.0])
def test_bad_version(prefix, version):
    edit(prefix, lambda d: d.update(version=version))
    expect(prefix, DLE, "bad format version")


def entry(d):
    return d["tensors"][KEY]


@pytest.mark.parametrize("change, match", [
    (lambda e: e.update(offset=10 ** 6), "past the end of the data"),
    (lambda e: e.update(offset=-4), "bad offset"),
    (lambda e: e.update(nbytes=20), "do not hold a float32 tensor of shape"),
    (lambda e: e.update(shape=[3, 3]), "do not hold a float32 tensor of shape"),
    (lambda e: e.update(shape=[2 ** 40, 2 ** 40], nbytes=4 * 2 ** 80), "past the end"),
    (lambda e: e.update(shape=[2 ** 70]), "bad dimension"),
    (lambda e: e.update(shape=[-2, -3]), "bad dimension"),
    (lambda e: e.update(shape="2x3"), "bad shape"),
    (lambda e: e.update(shape=[1] * 100), "bad shape"),
    (lambda e: e.update(dtype="float128"), "bad entry or dtype"),
    (lambda e: e.update(dtype="string"), "bad entry or dtype"),
    (lambda e: e.update(crc32=2 ** 33), "bad checksum"),
    (lambda e: e.pop("nbytes"), "bad size"),
])
def test_bad_tensor_entries(prefix, change, match):
    edit(prefix, lambda d: change(entry(d)))
    expect(prefix, DLE, match)


@pytest.mark.parametrize("change, match", [
    (lambda d: d.update(data_nbytes=10 ** 9), "the index expects"),
    (lambda d: d.update(tensors=[]), "no tensor table"),
    (lambda d: d.update(object_graph={"nodes": []}), "no object graph"),
    (lambda d: d.pop("object_graph"), "no object graph"),
    (lambda d: d["object_graph"]["nodes"][0]["children"].append({"name": "x", "node": 99}),
     "bad node id"),
    (lambda d: d["object_graph"]["nodes"][0]["children"].append({"node": 1}), "bad child"),
    (lambda d: d["object_graph"]["nodes"][0].update(children="abc"), "bad children list"),
    (lambda d: d["object_graph"]["nodes"][1].update(variable="missing/key"),
     "names a missing tensor"),
    (lambda d: d["object_graph"]["nodes"][1].update(slots=[{"slot_name": "m", "node": 0,
                                                           "optimizer": -1}]), "bad node id"),
    (lambda d: d["object_graph"]["nodes"].append("node"), "is not an object"),
])
def test_bad_index_structure(prefix, change, match):
    edit(prefix, change)
    expect(prefix, DLE, match)


def test_bool_values_must_be_0_or_1(tmp_path):
    path = write_json(tf.train.Checkpoint(b=tf.Variable([True, False])), str(tmp_path / "b"))
    with open(path + bundle.DATA_SUFFIX, "r+b") as f:
        f.write(b"\x02")
    key = "b/.ATTRIBUTES/VARIABLE_VALUE"
    edit(path, lambda d: d["tensors"][key].update(crc32=zlib.crc32(b"\x02\x00")))
    with pytest.raises(DLE, match="bool bytes"):
        tf.train.load_checkpoint(path).get_tensor(key)


def test_missing_files(prefix):
    os.remove(prefix + bundle.DATA_SUFFIX)
    expect(prefix, tf.errors.NotFoundError, "data-00000-of-00001")
    os.remove(prefix + ".index")
    expect(prefix, tf.errors.NotFoundError, r"\.index")


def test_an_oversized_index_is_refused_before_reading(prefix, monkeypatch):
    monkeypatch.setattr(bundle, "MAX_INDEX_BYTES", 16)
    expect(prefix, DLE, "more than any kiln index")


def test_data_deleted_after_a_delayed_restore_started(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    model.build((None, 3))
    path = write_json(tf.train.Checkpoint(m=model), str(tmp_path / "c"))
    fresh = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    tf.train.Checkpoint(m=fresh).read(path)
    os.truncate(path + bundle.DATA_SUFFIX, 4)
    with pytest.raises(DLE, match="read 0 of|read 4 of|checksum"):
        fresh.build((None, 3))  # the delayed restore reads the damaged file now


def test_slots_naming_objects_that_are_not_optimizers_are_ignored(prefix):
    def add_slot(d):
        nodes = d["object_graph"]["nodes"]
        var = next(i for i, n in enumerate(nodes) if n.get("variable") == KEY)
        nodes[var]["slots"] = [{"optimizer": 0, "slot_name": "m", "node": var}]
        nodes[0].setdefault("slots", []).append({"optimizer": var, "slot_name": "m",
                                                 "node": 0})
    edit(prefix, add_slot)
    restore_into_fresh(prefix).assert_existing_objects_matched()
