"""kiln-serve end to end: the real binary (build/kiln-serve, built by make build; KILN_SERVE_BIN
overrides) on a loopback port, serving tiny kiln exports laid out as TensorFlow Serving's
base/1, base/2: status, metadata, predict in both formats against the in-process result, every
bad-input case's status and error body, a new version picked up with no failed request, a
damaged version that leaves the previous one serving, SIGTERM with a request in flight, the
per-request deadline and a client that sends one byte a second."""
import base64
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import grpc
import numpy as np
import pytest

import kiln as tf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools", "serve"))
import serve_client  # noqa: E402 (tools/serve/serve_client.py)
BIN = os.environ.get("KILN_SERVE_BIN", os.path.join(ROOT, "build", "kiln-serve"))
MATRIX = 160  # the slow signature multiplies MATRIX x MATRIX matrices n times


def export(path, v):
    """Version v: serving_default y = 2x + v; multi (named inputs, strings); stats (scalar
    outputs); slow (n matrix products, for the deadline and shutdown tests)."""
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
    def double(x):
        return {"y": x * 2.0 + float(v)}

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="a"),
                                  tf.TensorSpec([None], tf.string, name="s")])
    def multi(a, s):
        return {"total": tf.reduce_sum(a, axis=1), "echo_bytes": tf.strings.join([s, s])}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def stats(x):
        return {"count": tf.shape(x)[0], "mean": tf.reduce_mean(x)}

    @tf.function(input_signature=[tf.TensorSpec([], tf.int32, name="n")])
    def slow(n):
        m = tf.ones([MATRIX, MATRIX]) / float(MATRIX)
        i, _ = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tf.matmul(a, m)),
                             [tf.constant(0), m])
        return {"done": i}

    tf.saved_model.save(tf.Module(), path, signatures={
        "serving_default": double, "multi": multi, "stats": stats, "slow": slow})


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Version directories made once: 1, 2 and the in-process models."""
    d = tmp_path_factory.mktemp("exports")
    for v in (1, 2):
        export(str(d / f"v{v}"), v)
    return d


STARTED = []  # every server process, killed after its test if still running


@pytest.fixture(autouse=True)
def _no_leftover_servers():
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


class Server:
    """kiln-serve on a free loopback port; its stderr (JSON lines) collected."""

    def __init__(self, base, *flags, module_scoped=False):
        """Serves `base` as model m (base None: the flags name the models). A server is killed
        after the test that started it unless module_scoped."""
        assert os.access(BIN, os.X_OK), f"{BIN} is missing: run make build first"
        model = [f"--model_base_path={base}", "--model_name=m"] if base else []
        started = serve_client.start(BIN, [*model, *flags])
        self.proc, self.port, self.grpc_port, self.lines = (
            started.proc, started.port, started.grpc_port, started.lines)
        if not module_scoped:
            STARTED.append(self.proc)

    def request(self, method, path, body=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read().decode()
        c.close()
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, data

    def predict(self, body, path="/v1/models/m:predict", **kw):
        return self.request("POST", path, body, **kw)

    def events(self, name):
        return [json.loads(x) for x in self.lines if f'"event":"{name}"' in x]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            return self.proc.wait(30)
        return self.proc.returncode


@pytest.fixture(scope="module")
def server(exports, tmp_path_factory):
    base = tmp_path_factory.mktemp("base")
    shutil.copytree(exports / "v1", base / "1")
    s = Server(base, "--max_body_bytes=200000", "--file_system_poll_wait_seconds=0",
               module_scoped=True)
    try:
        yield s
        assert s.stop() == 0
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def test_status_and_metadata(server):
    status, body = server.request("GET", "/v1/models/m")
    assert status == 200
    assert body == {"model_version_status": [{"version": "1", "state": "AVAILABLE", "status": {
        "error_code": "OK", "error_message": ""}}]}
    assert server.request("GET", "/v1/models/m/versions/1")[1] == body
    status, meta = server.request("GET", "/v1/models/m/metadata")
    assert status == 200 and meta["model_spec"] == {"name": "m", "signature_name": "",
                                                    "version": "1"}
    sigs = meta["metadata"]["signature_def"]["signature_def"]
    assert sorted(sigs) == ["multi", "serving_default", "slow", "stats"]
    x = sigs["serving_default"]["inputs"]["x"]
    assert x["dtype"] == "DT_FLOAT"
    assert x["tensor_shape"] == {"dim": [{"size": "-1", "name": ""}, {"size": "2", "name": ""}],
                                 "unknown_rank": False}
    assert sigs["serving_default"]["method_name"] == "tensorflow/serving/predict"
    assert sigs["multi"]["inputs"]["s"]["dtype"] == "DT_STRING"
    assert sigs["stats"]["outputs"]["count"]["tensor_shape"]["dim"] == []


def test_predict_matches_in_process(server, exports):
    local = tf.saved_model.load(str(exports / "v1"))
    x = np.array([[1.5, -2.0], [0.1, 3e-8]], np.float32)
    want = local.signatures["serving_default"](x=tf.constant(x))["y"].numpy()
    status, body = server.predict({"instances": x.tolist()})
    assert status == 200
    np.testing.assert_array_equal(np.array(body["predictions"], np.float32), want)
    status, body = server.predict({"inputs": {"x": x.tolist()}})
    assert status == 200
    np.testing.assert_array_equal(np.array(body["outputs"], np.float32), want)
    # Several named inputs and outputs, bytes as {"b64": ...}.
    raw = b"\x00\xffkiln"
    status, body = server.predict({"signature_name": "multi", "instances": [
        {"a": [1, 2], "s": {"b64": base64.b64encode(raw).decode()}}, {"a": [3, 4], "s": "hi"}]})
    assert status == 200, body
    assert body["predictions"][0] == {"total": 3.0, "echo_bytes": {
        "b64": base64.b64encode(raw + raw).decode()}}
    assert body["predictions"][1]["total"] == 7.0
    status, body = server.predict({"signature_name": "stats", "inputs": [1.0, 2.0, 4.5]})
    assert status == 200 and body == {"outputs": {"count": 3, "mean": 2.5}}
    status, body = server.predict({"instances": [[1, 2]]}, "/v1/models/m/versions/1:predict")
    assert status == 200 and body == {"predictions": [[3.0, 5.0]]}


def test_grpc_predict_metadata_and_status(server, exports):
    """TensorFlow Serving's gRPC API beside REST on the same server."""
    c = serve_client.GrpcClient(server.grpc_port)
    local = tf.saved_model.load(str(exports / "v1"))
    x = np.array([[1.5, -2.0], [0.1, 3e-8]], np.float32)
    want = local.signatures["serving_default"](x=tf.constant(x))["y"].numpy()
    np.testing.assert_array_equal(c.predict("m", {"x": x})["y"], want)
    resp = c.predict("m", {"x": x}, full=True)
    assert (resp.model_spec.name, resp.model_spec.version.value,
            resp.model_spec.signature_name) == ("m", 1, "serving_default")
    raw = b"\x00\xffkiln"
    inputs = {"a": np.array([[1, 2], [3, 4]], np.float32), "s": np.array([raw, b"hi"], object)}
    out = c.predict("m", inputs, signature="multi")
    assert out["echo_bytes"].tolist() == [raw + raw, b"hihi"]
    np.testing.assert_array_equal(out["total"], [3.0, 7.0])
    assert set(c.predict("m", inputs, signature="multi", output_filter=["total"])) == {"total"}
    out = c.predict("m", {"x": np.array([1.0, 2.0, 4.5], np.float32)}, signature="stats")
    assert out["count"].shape == () and out["count"] == 3 and out["mean"] == 2.5
    version, sigs = c.metadata("m")
    assert version == 1 and sorted(sigs.signature_def) == ["multi", "serving_default", "slow",
                                                           "stats"]
    xi = sigs.signature_def["serving_default"].inputs["x"]
    assert xi.name == "serving_default_x:0" and xi.dtype == 1  # DT_FLOAT
    assert [d.size for d in xi.tensor_shape.dim] == [-1, 2]
    assert c.status("m") == [(1, "AVAILABLE", 0, "")]
    for call, code, part in (
            (lambda: c.predict("nope", {"x": x}), grpc.StatusCode.NOT_FOUND, "Latest(nope)"),
            (lambda: c.predict("m", {"x": x}, version=9), grpc.StatusCode.NOT_FOUND, "9"),
            (lambda: c.predict("m", {"x": x.astype(np.int64)}), grpc.StatusCode.INVALID_ARGUMENT,
             "expects DT_FLOAT but DT_INT64 is provided"),
            (lambda: c.predict("m", {"w": x}), grpc.StatusCode.INVALID_ARGUMENT,
             "input tensor alias not found in signature: w"),
            (lambda: c.predict("m", {"x": np.zeros((30000, 2), np.float32)}),
             grpc.StatusCode.RESOURCE_EXHAUSTED, ""),  # over --max_body_bytes
            (lambda: c.status("nope"), grpc.StatusCode.NOT_FOUND, "nope"),
            (lambda: c.metadata("m", fields=["bogus"]), grpc.StatusCode.INVALID_ARGUMENT,
             "Metadata field bogus is not supported"),
            (lambda: c.channel.unary_unary("/tensorflow.serving.PredictionService/Classify")(
                b"", timeout=10), grpc.StatusCode.UNIMPLEMENTED, "")):
        with pytest.raises(grpc.RpcError) as e:
            call()
        assert e.value.code() == code and part in e.value.details(), e.value
    c.close()
    text = server.request("GET", "/monitoring/prometheus/metrics")[1]
    assert 'request_latency_count{model_name="m",API="predict",entrypoint="GRPC"}' in text


def test_grpc_concurrent_clients_all_answered(server):
    """32 gRPC clients at once, each call waiting for one of the few model threads: every
    call is answered (none refused for want of a gRPC thread)."""
    n = slow_n(0.03)
    failures, done = [], []

    def client():
        c = serve_client.GrpcClient(server.grpc_port)
        for _ in range(2):
            try:
                done.append(int(c.predict("m", {"n": np.int32(n)}, signature="slow",
                                          timeout=120)["done"]))
            except grpc.RpcError as e:
                failures.append((e.code(), e.details()))
        c.close()

    threads = [threading.Thread(target=client) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert failures == [] and done == [n] * 64


def test_keep_alive_latency(server):
    """Sequential predicts on one connection: no 40 ms Nagle/delayed-ACK stalls."""
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        c.request("POST", "/v1/models/m:predict", body='{"instances": [[1, 2]]}')
        r = c.getresponse()
        assert r.status == 200 and json.loads(r.read()) == {"predictions": [[3.0, 5.0]]}
        times.append(time.perf_counter() - t0)
    c.close()
    assert sorted(times)[15] < 0.02, times


BAD = [
    # (path, body, status, part of the error)
    ("/v1/models/m:predict", "{not json", 400, "malformed JSON"),
    ("/v1/models/m:predict", '{"instances": ' + "[" * 50000 + "]" * 50000 + "}", 400,
     "nested deeper"),
    ("/v1/models/m:predict", {"instances": [[1, 2], [3]]}, 400, "ragged"),
    ("/v1/models/m:predict", {"instances": [[1, "two"]]}, 400, "expected numbers"),
    ("/v1/models/m:predict", {"instances": [[1, 2, 3]]}, 400, ""),
    ("/v1/models/m:predict", {"inputs": {"z": [[1, 2]]}}, 400, "not an input"),
    ("/v1/models/m:predict", {"instances": [[1, 2]], "inputs": [[1, 2]]}, 400, "not both"),
    ("/v1/models/m:predict", {"instances": []}, 400, "empty"),
    ("/v1/models/m:predict", {"signature_name": "nope", "instances": [[1, 2]]}, 400,
     "not found in signature def"),
    ("/v1/models/m:predict", {"signature_name": "multi", "inputs": {"a": [[1, 2]], "s": {
        "b64": "@@@"}}}, 400, "invalid base64"),
    ("/v1/models/m:predict", {"signature_name": "slow", "inputs": 1e40}, 400, "integers"),
    ("/v1/models/nope:predict", {"instances": [[1, 2]]}, 404, "Servable not found"),
    ("/v1/models/m/versions/9:predict", {"instances": [[1, 2]]}, 404, "Specific(m, 9)"),
    ("/v1/models/m/labels/x:predict", {"instances": [[1, 2]]}, 400, "version label"),
    ("/v1/models/m:classify", {"examples": []}, 501, "not implemented"),
    ("/v1/models/m:frobnicate", {}, 404, "Malformed request"),
    ("/v1/models/m:predict", "x" * 300000, 413, "max_body_bytes"),
    ("/v1/models/" + "m" * 3000 + ":predict", {}, 414, "too long"),
]


@pytest.mark.parametrize("path,body,status,error", BAD, ids=[f"{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_bad_requests(server, path, body, status, error):
    got, reply = server.predict(body, path)
    assert got == status, reply
    assert isinstance(reply, dict) and list(reply) == ["error"] and error in reply["error"], reply
    assert server.request("GET", "/v1/models/m")[0] == 200  # still serving


def mutations(seed, count):
    """Damaged copies of valid predict bodies: bytes flipped, cut, repeated, brackets added."""
    rnd = random.Random(seed)
    bases = [json.dumps(b).encode() for b in (
        {"instances": [[1, 2], [3, 4]]}, {"inputs": {"x": [[1.5, -2e10]]}},
        {"signature_name": "multi", "instances": [{"a": [1, 2], "s": {"b64": "AAE="}}]},
        {"signature_name": "stats", "inputs": [1, 2, 3]})]
    for _ in range(count):
        b = bytearray(rnd.choice(bases))
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(b))
            op = rnd.randrange(4)
            if op == 0:
                b[i] = rnd.randrange(256)
            elif op == 1:
                del b[i:i + rnd.randint(1, 8)]
            elif op == 2:
                b[i:i] = b[i:i + rnd.randint(1, 16)] * rnd.randint(1, 50)
            else:
                b[i:i] = rnd.choice([b"[", b"]", b"{", b"}", b'"', b",", b"-", b"1e999"])
        yield bytes(b)


def test_damaged_bodies_never_crash(server):
    for body in mutations(0, 300):
        status, reply = server.predict(body)
        assert status in (200, 400), (body, status, reply)
        assert isinstance(reply, dict) and ("error" in reply) == (status != 200), (body, reply)
    assert server.request("GET", "/v1/models/m")[0] == 200


def recv_all(sock):
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_get_errors_and_declared_sizes(server):
    assert server.request("GET", "/v1/models/nope")[0] == 404
    assert server.request("GET", "/v1/models/m/versions/5")[0] == 404
    assert server.request("GET", "/elsewhere")[0] == 404
    # Bodies refused before they are read: a huge declared length, a chunked or length-less one.
    for head, status in ((b"Content-Length: 1000000000000", b"413"),
                         (b"Content-Length: 99999999999999999999999", b"413"),
                         (b"Content-Length: 12x", b"400"),
                         (b"Transfer-Encoding: chunked", b"411"), (b"X-No-Length: 1", b"411")):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\n" + head +
                      b"\r\n\r\n{}")
            reply = recv_all(s)
            assert reply.split(b" ")[1] == status, reply
            assert b'{"error":' in reply


def test_metrics(server):
    server.predict({"instances": [[1, 2]]})
    status, text = server.request("GET", "/monitoring/prometheus/metrics")
    assert status == 200
    assert ':tensorflow:serving:request_count{model_name="m",status="OK"}' in text
    assert ':tensorflow:serving:request_count{model_name="m",status="INVALID_ARGUMENT"}' in text
    assert 'request_latency_bucket{model_name="m",API="predict",entrypoint="REST",le="+Inf"}' in text
    assert 'kiln_serve_versions_loaded{model_name="m"} 1' in text


def test_new_version_and_a_damaged_one(exports, tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    shutil.copytree(exports / "v1", base / "1")
    s = Server(base, "--file_system_poll_wait_seconds=1")
    failures, seen, stop = [], set(), threading.Event()

    def hammer():
        while not stop.is_set():
            status, body = s.predict({"instances": [[1, 2]]})
            if status != 200:
                failures.append((status, body))
            else:
                seen.add(body["predictions"][0][0])

    def hammer_grpc():
        c = serve_client.GrpcClient(s.grpc_port)
        while not stop.is_set():
            try:
                seen.add(float(c.predict("m", {"x": np.array([[1, 2]], np.float32)})["y"][0, 0]))
            except grpc.RpcError as e:
                failures.append((e.code(), e.details()))
        c.close()

    threads = [threading.Thread(target=hammer), threading.Thread(target=hammer_grpc)]
    for t in threads:
        t.start()
    try:
        shutil.copytree(exports / "v2", tmp_path / "staging")
        os.rename(tmp_path / "staging", base / "2")  # appears whole
        deadline = time.time() + 20
        while 4.0 not in seen and time.time() < deadline:
            time.sleep(0.05)
        assert 4.0 in seen, s.lines  # 2 * 1 + 2
        (base / "3").mkdir()
        (base / "3" / "saved_model.pb").write_bytes(b"\x08garbage")
        deadline = time.time() + 20
        while not s.events("version_load_failed") and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert failures == []
    assert seen <= {3.0, 4.0}
    status, body = s.request("GET", "/v1/models/m")
    states = {v["version"]: v for v in body["model_version_status"]}
    assert states["2"]["state"] == "AVAILABLE" and states["1"]["state"] == "END"
    assert states["3"]["state"] == "END" and states["3"]["status"]["error_code"] != "OK"
    assert states["3"]["status"]["error_message"]
    assert s.predict({"instances": [[1, 2]]})[1] == {"predictions": [[4.0, 6.0]]}
    assert [e["version"] for e in s.events("version_loaded")] == [1, 2]
    assert s.events("version_unloaded")[0]["version"] == 1
    assert s.stop() == 0


def slow_n(seconds):
    """The n for which the slow signature takes about `seconds` here."""
    m = tf.ones([MATRIX, MATRIX])

    @tf.function
    def run(n):
        return tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tf.matmul(a, m)),
                             [tf.constant(0), m])[0]

    run(tf.constant(5))
    t0 = time.perf_counter()
    run(tf.constant(200))
    return max(10, int(200 * seconds / (time.perf_counter() - t0)))


def test_sigterm_finishes_the_request_in_flight(exports, tmp_path):
    shutil.copytree(exports / "v1", tmp_path / "1")
    s = Server(tmp_path)
    n = slow_n(2)
    result = {}

    def call():
        result["reply"] = s.predict({"signature_name": "slow", "inputs": n}, timeout=60)

    def call_grpc():
        c = serve_client.GrpcClient(s.grpc_port)
        result["grpc"] = c.predict("m", {"n": np.int32(n)}, signature="slow", timeout=60)
        c.close()

    threads = [threading.Thread(target=call), threading.Thread(target=call_grpc)]
    for t in threads:
        t.start()
    time.sleep(0.4)
    assert all(t.is_alive() for t in threads)  # both requests are in flight
    s.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(60)
    assert result["reply"] == (200, {"outputs": n})  # one output: its value alone
    assert result["grpc"]["done"] == n
    assert s.proc.wait(30) == 0
    assert s.events("shutdown") and s.events("stopped")


def test_deadline_and_slow_clients(exports, tmp_path):
    shutil.copytree(exports / "v1", tmp_path / "1")
    s = Server(tmp_path, "--rest_api_timeout_in_ms=700")
    t0 = time.time()
    status, body = s.predict({"signature_name": "slow", "inputs": slow_n(3)})
    assert status == 504 and "Deadline exceeded" in body["error"]
    assert time.time() - t0 < 2.5
    # One byte a second: the connection is closed at the request's deadline.
    for head in (b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 50\r\n\r\n", b""):
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
            c.sendall(head)
            t0, closed = time.time(), False
            try:
                for _ in range(8):
                    c.sendall(b"{")
                    time.sleep(0.5)
                    c.setblocking(False)
                    try:
                        if c.recv(4096) == b"":
                            closed = True
                            break
                    except BlockingIOError:
                        pass
                    finally:
                        c.setblocking(True)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
            assert closed and time.time() - t0 < 3.5
    # A client that disconnects mid-body frees its worker: the server still answers.
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(b"POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: 5000\r\n\r\n{\"in")
    assert s.predict({"instances": [[1, 2]]})[0] == 200
    assert s.stop() == 0


def test_flags_and_model_config_file(exports, tmp_path):
    r = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "--model_config_file" in r.stdout
    for args, why in ((["--model_base_path=/x", "--bogus=1"], "unknown flag --bogus"),
                      ([], "exactly one of"),
                      (["--model_base_path=/x", "--rest_api_port=http"], "not an integer"),
                      (["--model_config_file=" + str(tmp_path / "none")], "cannot read")):
        r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and why in r.stderr, r.stderr
    for v in (1, 2):
        shutil.copytree(exports / f"v{v}", tmp_path / "a" / str(v))
    shutil.copytree(exports / "v1", tmp_path / "b" / "1")
    cfg = tmp_path / "models.config"
    cfg.write_text(f"""model_config_list {{
      config {{ name: "a" base_path: "{tmp_path / 'a'}"
               model_version_policy {{ all {{}} }} version_labels {{ key: "old" value: 1 }} }}
      config {{ name: "b" base_path: "{tmp_path / 'b'}" }}
    }}""")
    s = Server(tmp_path / "unused")  # gRPC on its own port; a second server cannot share it
    assert s.events("grpc_listening")[0]["port"] == s.grpc_port != s.port
    r = subprocess.run([BIN, f"--model_base_path={tmp_path / 'unused'}", "--rest_api_port=0",
                        "--rest_api_host=127.0.0.1", f"--port={s.grpc_port}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and '"event":"bind_failed"' in r.stderr, r.stderr
    assert '"api":"grpc"' in r.stderr
    assert s.stop() == 0
    bad = tmp_path / "bad.config"
    bad.write_text("model_config_list { config { name: 'a' } }")
    r = subprocess.run([BIN, f"--model_config_file={bad}"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "needs name and base_path" in r.stderr
    s = Server(None, f"--model_config_file={cfg}")
    body = {"instances": [[1, 2]]}
    assert s.predict(body, "/v1/models/a:predict")[1] == {"predictions": [[4.0, 6.0]]}
    assert s.predict(body, "/v1/models/a/labels/old:predict")[1] == {"predictions": [[3.0, 5.0]]}
    assert s.predict(body, "/v1/models/b:predict")[1] == {"predictions": [[3.0, 5.0]]}
    assert len(s.request("GET", "/v1/models/a")[1]["model_version_status"]) == 2
    assert s.stop() == 0


def test_batching_flags_and_concurrent_predicts(exports, tmp_path):
    params = tmp_path / "batching.config"
    params.write_text("max_batch_size { value: 4 }\nbatch_timeout_micros { value: 100000 }\n")
    bad = tmp_path / "bad_batching.config"
    bad.write_text("max_batch_size { value: 0 }\n")
    base = ["--model_base_path=/x"]
    for args, why in (([f"--batching_parameters_file={params}"], "needs --enable_batching"),
                      (["--enable_batching=yes"], "not true or false"),
                      (["--enable_batching=true", f"--batching_parameters_file={bad}"],
                       "out of range"),
                      (["--enable_batching=true", f"--batching_parameters_file={tmp_path}/no"],
                       "cannot read")):
        r = subprocess.run([BIN, *base, *args], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and why in r.stderr, r.stderr
    shutil.copytree(exports / "v1", tmp_path / "m" / "1")
    s = Server(tmp_path / "m", "--enable_batching=true", f"--batching_parameters_file={params}")
    assert s.events("batching")[0]["max_batch_size"] == 4
    results = {}

    def call(i):
        results[i] = s.predict({"instances": [[i, i]]})

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    # y = x + x + 1 on each row, whichever batch it ran in.
    assert results == {i: (200, {"predictions": [[2.0 * i + 1, 2.0 * i + 1]]}) for i in range(8)}
    assert s.stop() == 0


def wrk(port, seconds, connections=8):
    """wrk (Debian's, installed by scripts/setup.sh) posting predicts for `seconds`:
    (requests done, failed = socket errors + non-2xx answers, wrk's text)."""
    script = f"""wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{json.dumps({"instances": [[1, 2]]})}'
"""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        r = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "-s", f.name,
                            f"http://127.0.0.1:{port}/v1/models/m:predict"],
                           capture_output=True, text=True, timeout=seconds + 60)
    finally:
        os.unlink(f.name)
    done = int(re.search(r"(\d+) requests in", r.stdout).group(1))
    failed = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", r.stdout))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
    return done, failed + (int(non2xx.group(1)) if non2xx else 0), r.stdout


def test_versions_swapped_and_damaged_under_load(exports, tmp_path):
    """12 s of wrk load (8 connections) while version 2 appears and a damaged version 3
    follows: no failed request, version 2 serves after it loads, version 3's error shows."""
    assert shutil.which("wrk"), "wrk is missing: scripts/setup.sh installs it"
    base = tmp_path / "base"
    shutil.copytree(exports / "v1", base / "1")
    s = Server(base, "--file_system_poll_wait_seconds=1")

    def faults():
        time.sleep(3)
        shutil.copytree(exports / "v2", tmp_path / "staging")
        os.rename(tmp_path / "staging", base / "2")
        time.sleep(3)
        (base / "3").mkdir()
        (base / "3" / "saved_model.pb").write_bytes(b"\x08garbage")

    t = threading.Thread(target=faults)
    t.start()
    done, failed, text = wrk(s.port, 12)
    t.join()
    assert failed == 0 and done > 1000, text
    states = {v["version"]: v for v in s.request("GET", "/v1/models/m")[1]["model_version_status"]}
    assert states["2"]["state"] == "AVAILABLE" and states["3"]["state"] == "END", states
    assert states["3"]["status"]["error_message"]
    assert s.predict({"instances": [[1, 2]]})[1] == {"predictions": [[4.0, 6.0]]}
    assert s.stop() == 0


def test_sigterm_under_load_finishes_every_request_in_flight(exports, tmp_path):
    shutil.copytree(exports / "v1", tmp_path / "1")
    s = Server(tmp_path)
    n = slow_n(1)
    replies = []

    def call():
        replies.append(s.predict({"signature_name": "slow", "inputs": n}, timeout=120))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    assert all(t.is_alive() for t in threads)  # four requests in flight
    s.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(120)
    assert replies == [(200, {"outputs": n})] * 4
    assert s.proc.wait(60) == 0
