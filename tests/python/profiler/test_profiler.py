"""kiln.profiler.experimental: the trace file, its events, Trace annotations, the table, errors."""
import glob
import gzip
import json
import os
import socket
import threading

import numpy as np
import pytest

import kiln
from kiln.distribute.distribute_lib import Strategy
from kiln.profiler import experimental as prof

# kiln's MatMul row has TensorFlow's op type; traced nodes are named "MatMul".
MATMUL = "BatchMatMulV2"


@pytest.fixture(autouse=True)
def _no_profile_left():
    yield
    try:
        prof.stop(save=False)
    except kiln.errors.UnavailableError:
        pass


def _trace_file(logdir):
    files = glob.glob(os.path.join(str(logdir), "plugins", "profile", "*", "*.trace.json.gz"))
    assert len(files) == 1, files
    return files[0]


def _load(logdir):
    with gzip.open(_trace_file(logdir), "rt", encoding="utf-8") as f:
        return json.load(f)


def _complete(doc):
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def _encloses(outer, inner):
    return (outer["tid"] == inner["tid"] and outer["ts"] <= inner["ts"] + 2e-3
            and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 2e-3)


# The Chrome trace format: the keys each phase needs.
REQUIRED = {"X": {"name", "cat", "ph", "ts", "dur", "pid", "tid"},
            "C": {"name", "ph", "ts", "pid", "args"},
            "M": {"name", "ph", "pid", "args"}}


def _check_schema(doc):
    assert isinstance(doc["traceEvents"], list) and doc["traceEvents"]
    for e in doc["traceEvents"]:
        assert e["ph"] in REQUIRED, e
        missing = REQUIRED[e["ph"]] - set(e)
        assert not missing, (missing, e)
        assert isinstance(e["pid"], int)
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
            assert isinstance(e["tid"], int) and isinstance(e["args"], dict)
        elif e["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values())
        else:
            assert e["name"] in ("process_name", "thread_name")
            assert isinstance(e["args"]["name"], str)


@kiln.function
def _step(x, w):
    return kiln.nn.relu(kiln.matmul(x, w) + 1.0)


def test_profile_of_a_function_loop_writes_the_trace(tmp_path):
    x = kiln.constant(np.ones((8, 16), np.float32))
    w = kiln.constant(np.ones((16, 4), np.float32))
    _step(x, w)  # traced before the profile
    with prof.Profile(str(tmp_path)):
        for _ in range(5):
            _step(x, w)
    path = _trace_file(tmp_path)
    assert os.path.basename(path) == socket.gethostname() + ".trace.json.gz"
    doc = _load(tmp_path)
    _check_schema(doc)
    kernels = [e for e in _complete(doc) if e["cat"] == "kernel"]
    mm = [e for e in kernels if e["args"]["op"] == MATMUL]
    assert len(mm) == 5
    for e in mm:
        assert "MatMul" in e["name"]  # the node's name
        assert e["args"]["shapes"] == "[8,4]"
        assert e["args"]["dtype"] == "float32"
        assert e["args"]["bytes"] == 8 * 4 * 4
        assert e["tid"] == threading.get_native_id()
        assert e["pid"] == os.getpid()
    runs = [e for e in _complete(doc) if e["cat"] == "function"]
    assert len(runs) == 5
    assert all(any(_encloses(r, k) for r in runs) for k in kernels)
    threads = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    assert threading.get_native_id() in {e["tid"] for e in threads}


def test_the_xspace_for_tensorboards_profile_plugin_is_written_beside(tmp_path):
    x = kiln.constant(np.ones((8, 16), np.float32))
    w = kiln.constant(np.ones((16, 4), np.float32))
    _step(x, w)
    with prof.Profile(str(tmp_path)):
        _step(x, w)
    result = prof.last_profile()
    path = _trace_file(tmp_path).replace(".trace.json.gz", ".xplane.pb")
    with open(path, "rb") as f:
        data = f.read()
    assert data == result.xspace()
    # The host plane, and the kernel under TensorFlow's op event name "<node>:<op type>".
    assert b"/host:CPU" in data
    assert f":{MATMUL}".encode() in data
    assert socket.gethostname().encode() in data


def test_tracing_and_passes_are_recorded(tmp_path):
    @kiln.function
    def f(x):
        return kiln.tanh(x) * 2.0

    with prof.Profile(str(tmp_path)):
        f(kiln.constant([1.0, 2.0]))
    names = {(e["cat"], e["name"]) for e in _complete(_load(tmp_path))}
    assert any(c == "tracing" and n.startswith("trace ") for c, n in names), names
    assert any(c == "compile" and n.startswith("compile ") for c, n in names), names
    assert ("optimize", "cse") in names


def test_trace_annotations_enclose_ops(tmp_path):
    x = kiln.constant(np.ones((4, 4), np.float32))
    with prof.Profile(str(tmp_path)):
        for step in range(3):
            with prof.Trace("train", step_num=step, _r=1) as t:
                t.set_metadata(lr=0.1)
                kiln.matmul(x, x)
    events = _complete(_load(tmp_path))
    trains = [e for e in events if e["name"] == "train"]
    assert [e["args"]["step_num"] for e in trains] == ["0", "1", "2"]
    assert all(e["cat"] == "user" and e["args"]["lr"] == "0.1" for e in trains)
    mm = [e for e in events if e.get("args", {}).get("op") == MATMUL]
    assert len(mm) == 3 and all(e["cat"] == "eager" for e in mm)
    for t, m in zip(trains, mm):
        assert _encloses(t, m)


def test_trace_is_free_and_silent_without_a_profile():
    with prof.Trace("nothing", a=1):
        kiln.add(1.0, 2.0)
    assert not kiln._kiln.profiler_enabled()


def test_events_carry_their_threads_id(tmp_path):
    x = kiln.constant(np.ones((4, 4), np.float32))
    tids = []

    def work():
        tids.append(threading.get_native_id())
        kiln.matmul(x, x)

    with prof.Profile(str(tmp_path)):
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    mm = [e for e in prof.last_profile().events() if e.get("op") == MATMUL]
    assert sorted(e["tid"] for e in mm) == sorted(tids)


def test_table_lists_top_ops():
    x = kiln.constant(np.ones((64, 64), np.float32))
    with pytest.raises(kiln.errors.FailedPreconditionError, match="is not a directory"):
        prof.start(os.devnull)  # a file, not a folder
    prof.start("/tmp/kiln-profiler-unused")
    for _ in range(4):
        kiln.nn.relu(kiln.matmul(x, x))
    prof.stop(save=False)
    assert prof.last_profile().trace_path is None
    table = prof.last_profile_table()
    lines = table.splitlines()
    assert "Name" in lines[1] and "Calls" in lines[1] and "Total ms" in lines[1]
    assert "Avg us" in lines[1] and "%" in lines[1]
    rows = [line.split() for line in lines[3:-2]]
    assert {r[0] for r in rows} == {MATMUL, "Relu"}
    assert all(r[1] == "4" for r in rows)
    assert abs(sum(float(r[-1]) for r in rows) - 100.0) < 0.1
    assert "8 calls of 2 ops" in lines[-1]
    assert len(prof.last_profile_table(row_limit=1).splitlines()) == len(lines) - 1
    stats = prof.last_profile().op_stats()
    assert stats[0][2] >= stats[1][2]


def test_errors_are_tensorflows():
    with pytest.raises(kiln.errors.UnavailableError,
                       match="^Cannot export profiling results. No profiler is running.$"):
        prof.stop()
    prof.start("/tmp/kiln-profiler-unused")
    with pytest.raises(kiln.errors.AlreadyExistsError, match="^Another profiler is running.$"):
        prof.start("/tmp/kiln-profiler-unused")
    prof.stop(save=False)
    with pytest.raises(kiln.errors.UnavailableError):
        prof.stop()


def test_logdir_that_is_a_file_is_a_clear_error(tmp_path):
    f = tmp_path / "log"
    f.write_text("not a folder")
    with pytest.raises(kiln.errors.FailedPreconditionError, match="log is not a directory"):
        with prof.Profile(str(f)):
            pass
    (tmp_path / "d" / "plugins").mkdir(parents=True)
    (tmp_path / "d" / "plugins" / "profile").write_text("")
    with pytest.raises(kiln.errors.FailedPreconditionError, match="profile is not a directory"):
        prof.start(str(tmp_path / "d"))
    assert not kiln._kiln.profiler_enabled()


def test_options_levels_and_delay(tmp_path):
    x = kiln.constant(np.ones((4, 4), np.float32))
    assert prof.ProfilerOptions() == (2, 0, 1, None)
    with prof.Profile(str(tmp_path / "a"), prof.ProfilerOptions(host_tracer_level=1)):
        with prof.Trace("only"):
            kiln.matmul(x, x)
    assert [e["name"] for e in prof.last_profile().events()] == ["only"]
    with prof.Profile(str(tmp_path / "b"), prof.ProfilerOptions(host_tracer_level=3)):
        kiln.matmul(x, x)
    doc = _load(tmp_path / "b")
    _check_schema(doc)
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    assert counters and counters[0]["name"] == "Memory"
    assert counters[0]["args"]["bytes_in_use"] >= 64
    with pytest.raises(kiln.errors.InvalidArgumentError, match="host_tracer_level"):
        prof.start(str(tmp_path), prof.ProfilerOptions(host_tracer_level=9))


def test_namespace_matches_tensorflows():
    for name in ("Profile", "ProfilerOptions", "Trace", "start", "stop"):
        assert hasattr(kiln.profiler.experimental, name)


def test_a_multi_worker_strategy_labels_the_profile_with_its_rank(tmp_path):
    # kiln.distribute's workers (one process per MPI rank) write one file each.
    try:
        Strategy(rank=0, size=2)  # one worker's share of a 2-replica batch, no peers: no label
        with prof.Profile(str(tmp_path / "single")):
            kiln.constant(1.0) + 1.0
        assert prof.last_profile().trace_path.endswith(f"{socket.gethostname()}.trace.json.gz")
        Strategy(rank=1, size=2, collective=True)
        with prof.Profile(str(tmp_path)):
            kiln.constant(1.0) + 1.0
        path = prof.last_profile().trace_path
        assert path.endswith("_worker1.trace.json.gz")
        assert '"kiln worker 1"' in prof.last_profile().chrome_trace()
    finally:
        prof._set_worker(-1)
