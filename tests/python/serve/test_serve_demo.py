"""examples/serve_demo.py (the end of `make demo`) on a small digits-like export: it
starts build/kiln-serve, gets the status, signature and both predict formats right over
REST and gRPC, and stops it cleanly."""
import os
import sys

import numpy as np

import kiln as tf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import export_model  # noqa: E402
import serve_demo  # noqa: E402

BIN = os.environ.get("KILN_SERVE_BIN", os.path.join(ROOT, "build", "kiln-serve"))


def test_serve_demo_runs_against_the_server(tmp_path, capsys):
    model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(10)])
    x = np.random.default_rng(0).random((6, 64), np.float32)
    export_model.export_digits(model, x, str(tmp_path))
    assert serve_demo.main([str(tmp_path), "--bin", BIN]) == 0
    out = capsys.readouterr().out
    assert 'status: "AVAILABLE"' in out
    assert "serving_default: {'features': 'DT_FLOAT'} -> {'logits': 'DT_FLOAT'}" in out
    want = np.asarray(model(x)).argmax(1)[:4].tolist()
    assert f"classes {want} (expected {want})" in out
    assert "column format, 6 digits" in out
    assert "p50" in out and "SIGTERM: kiln-serve exited with 0" in out
    assert "status AVAILABLE, signatures ['serving_default']" in out
    assert f"gRPC Predict, 6 digits: classes {want}..." in out
    assert "(gRPC, one channel): p50" in out
