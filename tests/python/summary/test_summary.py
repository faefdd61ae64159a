"""kiln.summary (tf.summary): event files in TensorFlow's format, read back with kiln's
reader (the real TensorBoard reader checks the same files in tests/peers). Expected
tensors, plugin names and errors are TensorFlow 2.21's (with TensorBoard 2.21),
observed by running the same calls."""
import glob
import os
import struct

import numpy as np
import pytest

import kiln as tf
from kiln.summary.experimental import summary_iterator


def _events(logdir):
    files = sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))
    assert files, os.listdir(str(logdir))
    out = []
    for f in files:
        out += list(summary_iterator(f))
    return out


def _values(logdir):
    return [(e["step"], v) for e in _events(logdir) for v in e.get("summary", [])]


def test_file_name_version_event_and_scalars(tmp_path):
    w = tf.summary.create_file_writer(str(tmp_path))
    with w.as_default(step=3):
        assert bool(tf.summary.scalar("x", 1.0).numpy())
        with tf.name_scope("outer"):
            tf.summary.scalar("y", np.float64(2.5))
        tf.summary.scalar("z", 7, step=9)
    name = os.path.basename(w._path)
    assert name.startswith("events.out.tfevents.") and name.endswith(".v2")
    events = _events(tmp_path)
    assert events[0]["file_version"] == "brain.Event:2"
    got = [(s, v["tag"], v["metadata"]["plugin_name"], v["tensor"].dtype.name,
            float(v["tensor"].numpy())) for s, v in _values(tmp_path)]
    assert got == [(3, "x", "scalars", "float32", 1.0), (3, "outer/y", "scalars", "float32", 2.5),
                   (9, "z", "scalars", "float32", 7.0)]


def test_without_a_writer_nothing_is_written_and_false_returned(tmp_path):
    assert not bool(tf.summary.scalar("x", 1.0, step=1).numpy())
    with pytest.raises(ValueError, match="No step set"):
        with tf.summary.create_file_writer(str(tmp_path)).as_default():
            tf.summary.scalar("x", 1.0)
    with tf.summary.create_noop_writer().as_default(step=1):
        assert not bool(tf.summary.scalar("x", 1.0).numpy())


def test_histograms_as_tensorflow_buckets_them(tmp_path):
    with tf.summary.create_file_writer(str(tmp_path)).as_default(step=3):
        tf.summary.histogram("h", [1.0, 2.0, 2.0, 5.0], buckets=3)
        tf.summary.histogram("h1", [4.0], buckets=3)
        tf.summary.histogram("h0", tf.zeros([0]), buckets=3)
        tf.summary.histogram("default", tf.range(100.0))
    v = {x["tag"]: x for _, x in _values(tmp_path)}
    third = 1.0 + 4.0 / 3
    np.testing.assert_allclose(v["h"]["tensor"].numpy(),
                               [[1.0, third, 3.0], [third, 1.0 + 8.0 / 3, 0.0],
                                [1.0 + 8.0 / 3, 5.0, 1.0]])
    assert v["h1"]["tensor"].numpy().tolist() == [[4.0, 4.0, 0.0], [4.0, 4.0, 0.0],
                                                  [4.0, 4.0, 1.0]]
    assert v["h0"]["tensor"].numpy().tolist() == [[0.0] * 3] * 3
    d = v["default"]["tensor"].numpy()
    assert d.shape == (30, 3) and d[:, 2].sum() == 100 and v["h"]["tensor"].dtype.name == "float64"
    assert {x["metadata"]["plugin_name"] for x in v.values()} == {"histograms"}


def test_images_are_png_with_width_and_height(tmp_path):
    img = np.zeros([2, 4, 5, 3], np.float32)
    img[0, 1, 2] = [1.0, 0.5, 0.0]
    with tf.summary.create_file_writer(str(tmp_path)).as_default(step=1):
        tf.summary.image("im", img, max_outputs=1)
        with pytest.raises(ValueError, match="must have rank 4"):
            tf.summary.image("bad", tf.zeros([4, 5, 3]))
    (_, v), = _values(tmp_path)
    t = v["tensor"].numpy()
    assert v["metadata"]["plugin_name"] == "images" and t.shape == (3,)
    assert t[0] == b"5" and t[1] == b"4" and t[2].startswith(b"\x89PNG")
    decoded = tf.io.decode_png(t[2]).numpy()
    assert decoded.shape == (4, 5, 3) and decoded[1, 2].tolist() == [255, 127, 0]  # convert_image_dtype: x * 255.5, truncated


def test_text_and_audio(tmp_path):
    with tf.summary.create_file_writer(str(tmp_path)).as_default(step=2):
        tf.summary.text("t", "hello")
        tf.summary.audio("a", tf.zeros([1, 8, 1]), sample_rate=8000)
        with pytest.raises(ValueError, match="string tensor"):
            tf.summary.text("n", 3)
    v = {x["tag"]: x for _, x in _values(tmp_path)}
    assert v["t"]["tensor"].numpy() == b"hello" and v["t"]["metadata"]["plugin_name"] == "text"
    wav = v["a"]["tensor"].numpy()[0, 0]
    assert wav[:4] == b"RIFF" and struct.unpack("<I", wav[24:28])[0] == 8000


def test_writes_inside_a_function_run_on_every_call(tmp_path):
    w = tf.summary.create_file_writer(str(tmp_path))
    step = tf.Variable(0, dtype=tf.int64)

    @tf.function
    def train(x):
        with w.as_default(step=step):
            tf.summary.scalar("loss", x * 2.0)
            tf.summary.histogram("xs", tf.fill([3], x), buckets=2)
        step.assign_add(1)
        return x

    for i in range(3):
        train(tf.constant(float(i)))
    w.flush()
    got = [(s, v["tag"], v["tensor"].numpy().tolist()) for s, v in _values(tmp_path)
           if v["tag"] == "loss"]
    assert got == [(0, "loss", 0.0), (1, "loss", 2.0), (2, "loss", 4.0)]
    assert train.experimental_get_tracing_count() == 1


def test_record_if_with_python_and_tensor_conditions(tmp_path):
    w = tf.summary.create_file_writer(str(tmp_path))

    @tf.function
    def f(i):
        with tf.summary.record_if(tf.equal(i % 2, 0)):
            return tf.summary.scalar("even", tf.cast(i, tf.float32), step=tf.cast(i, tf.int64))

    with w.as_default():
        assert [bool(f(tf.constant(i)).numpy()) for i in range(4)] == [True, False, True, False]
        with tf.summary.record_if(False):
            assert not bool(tf.summary.scalar("never", 1.0, step=0).numpy())
        with tf.summary.record_if(lambda: True):
            tf.summary.scalar("always", 1.0, step=0)
    assert [(s, v["tag"]) for s, v in _values(tmp_path)] == [(0, "even"), (2, "even"),
                                                             (0, "always")]


def test_write_and_write_raw_pb(tmp_path):
    meta = tf._kiln._summary_metadata("custom", b"\x01", "Shown", "desc")
    with tf.summary.create_file_writer(str(tmp_path)).as_default(step=5):
        tf.summary.write("t", tf.constant([[1, 2]]), metadata=meta)
        # A Summary{value{tag: "raw", simple_value: 0.5}} by hand.
        raw = b"\x0a\x0a\x0a\x03raw\x15" + struct.pack("<f", 0.5)
        tf.summary.experimental.write_raw_pb(raw)
        with pytest.raises(tf.errors.InvalidArgumentError, match="not a serialized Summary"):
            tf.summary.experimental.write_raw_pb(b"\xff\xff")
    vals = [v for _, v in _values(tmp_path)]
    assert vals[0]["tensor"].numpy().tolist() == [[1, 2]]
    assert vals[0]["metadata"]["display_name"] == "Shown"
    assert vals[0]["metadata"]["summary_description"] == "desc"
    assert vals[0]["metadata"]["plugin_content"] == b"\x01"
    assert vals[1] == {"tag": "raw", "simple_value": 0.5}


def test_queue_and_flush(tmp_path):
    w = tf.summary.create_file_writer(str(tmp_path), max_queue=100, flush_millis=10 ** 9)
    with w.as_default(step=0):
        for i in range(5):
            tf.summary.scalar("q", float(i))
        assert len(_values(tmp_path)) == 0  # still queued
        tf.summary.flush()
        assert len(_values(tmp_path)) == 5
    w.close()
    with pytest.raises(tf.errors.FailedPreconditionError, match="closed"):
        with w.as_default(step=0):
            tf.summary.scalar("late", 1.0)


def test_hostile_input(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(tf.errors.FailedPreconditionError, match="not a directory"):
        tf.summary.create_file_writer(str(afile))
    with pytest.raises(ValueError, match="cannot be None"):
        tf.summary.create_file_writer(None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_queue"):
        tf.summary.create_file_writer(str(tmp_path), max_queue=-1)
    # A directory that cannot be made (root may write anywhere else: /proc refuses it too).
    with pytest.raises(tf.errors.FailedPreconditionError, match="cannot create logdir"):
        tf.summary.create_file_writer("/proc/self/kiln_logs")
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        with pytest.raises(tf.errors.FailedPreconditionError):
            tf.summary.create_file_writer(str(ro / "sub"))
    odd = "tag \x00\xff\u00e9/\n"
    with tf.summary.create_file_writer(str(tmp_path / "odd")).as_default(step=0):
        tf.summary.scalar(odd, float("nan"))
        tf.summary.scalar("inf", float("inf"))
        with pytest.raises(ValueError, match="non-empty"):
            tf.summary.scalar("", 1.0)
        # A large image (12 MB of pixels) is written whole; a bad rank is refused before
        # anything is written.
        assert bool(tf.summary.image("big", np.zeros([1, 2048, 2048, 3], np.uint8)).numpy())
        with pytest.raises(ValueError, match="rank 4"):
            tf.summary.image("flat", np.zeros([2048 * 2048], np.uint8))
    v = {x["tag"]: x for _, x in _values(tmp_path / "odd")}
    assert np.isnan(v[odd]["tensor"].numpy()) and np.isinf(v["inf"]["tensor"].numpy())
    assert v["big"]["tensor"].numpy()[:2].tolist() == [b"2048", b"2048"]
    assert set(v) == {odd, "inf", "big"}


def test_a_damaged_file_is_a_clear_error(tmp_path):
    with tf.summary.create_file_writer(str(tmp_path)).as_default(step=0):
        tf.summary.scalar("x", 1.0)
    (path,) = glob.glob(str(tmp_path / "events*"))
    data = bytearray(open(path, "rb").read())
    data[-6] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(summary_iterator(path))


def test_graph_of_a_traced_function(tmp_path):
    @tf.function
    def f(x):
        return tf.nn.relu(tf.matmul(x, x) + 1.0)

    cf = f.get_concrete_function(tf.TensorSpec([2, 2], tf.float32))
    with tf.summary.create_file_writer(str(tmp_path)).as_default():
        assert bool(tf.summary.graph(cf).numpy())
        tf.summary.graph(cf.optimized_graph)
        with pytest.raises(TypeError, match="graph_data"):
            tf.summary.graph(3)

        @tf.function
        def inside():
            tf.summary.graph(cf)
        with pytest.raises(ValueError, match="graph context"):
            inside()
    graphs = [e for e in _events(tmp_path) if "graph_def" in e]
    assert len(graphs) == 2 and graphs[0]["step"] == 0
    # The GraphDef's node names and ops (field 1: NodeDef, its fields 1 name and 2 op).
    raw = graphs[0]["graph_def"]
    for name in (b"MatMul", b"Relu", b"AddV2", b"Placeholder"):
        assert name in raw


def test_trace_on_and_export_record_the_functions_that_ran(tmp_path):
    @tf.function
    def square(x):
        return x * x

    @tf.function
    def relu(x):
        return tf.nn.relu(x)

    square(tf.constant(1.0))  # traced before trace_on: its cached calls count too
    not_run = tf.function(lambda x: tf.exp(x))
    not_run.get_concrete_function(tf.TensorSpec([], tf.float32))
    with tf.summary.create_file_writer(str(tmp_path)).as_default():
        tf.summary.trace_on(graph=True)
        square(tf.constant(2.0))
        relu(tf.constant(-1.0))
        square(tf.constant(3.0))
        tf.summary.trace_export("t", step=4)
        with pytest.warns(UserWarning, match="tracing was not enabled"):
            tf.summary.trace_export("again", step=5)
        with pytest.warns(UserWarning, match="profiler_outdir"):
            tf.summary.trace_on(profiler=True)
        tf.summary.trace_off()
        tf.summary.trace_on(profiler=True, profiler_outdir=str(tmp_path / "prof"))
        square(tf.constant(4.0))
        tf.summary.trace_export("p", step=6)
    assert glob.glob(str(tmp_path / "prof" / "plugins" / "profile" / "*" / "*.trace.json.gz"))
    g, g2 = [e for e in _events(tmp_path) if "graph_def" in e]
    assert g["step"] == 4 and g2["step"] == 6
    assert b"square/" in g["graph_def"] and b"relu/" in g["graph_def"]
    assert b"Exp" not in g["graph_def"]
