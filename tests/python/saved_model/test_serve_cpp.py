"""Python save -> C++ load: the exports of examples/export_model.py (the digits
classifier, seed 000's CharUnpack layer) and a control-flow module, served by
examples/serve.cpp and tools/kiln-run (built by make build) with no Python."""
import os
import subprocess
import sys

import numpy as np

import kiln as tf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
BUILD = os.path.join(ROOT, "build")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz"))
import export_model  # noqa: E402
from make_seeds import Loops  # noqa: E402  (a variable, while, cond, TensorArray, strings)


def run(*args):
    exe = os.path.join(BUILD, args[0])
    assert os.access(exe, os.X_OK), f"{exe} is missing: run make build first"
    return subprocess.run([exe, *args[1:]], capture_output=True, text=True, timeout=300)


def _small_digits_model():
    tf.keras.utils.set_random_seed(1)
    model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(32),
                                 tf.keras.layers.BatchNormalization(),
                                 tf.keras.layers.Dense(10)])
    x = np.random.default_rng(1).random((40, 64), np.float32)
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    model.fit(x, np.arange(40) % 10, epochs=2, verbose=0)
    return model, x[:16]


def test_cpp_serves_python_exports(tmp_path):
    model, x = _small_digits_model()
    export_model.export_all(model, x, str(tmp_path))
    r = run("serve", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "C++ serving matches Python" in r.stdout
    assert "max |C++ - Python| = 0" in r.stdout


def test_kiln_run_on_a_python_export(tmp_path):
    m = Loops()
    x = np.array([1, -2, 3], np.float32)
    tf.saved_model.save(m, str(tmp_path / "m"))
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out" / "new"  # created by kiln-run, parents too
    r = run("kiln-run", str(tmp_path / "m"))
    assert r.returncode == 0 and "serving_default(x: float32(None,)) -> (names: string(), " \
        "sums: float32(None,))" in r.stdout, r.stdout + r.stderr
    r = run("kiln-run", str(tmp_path / "m"), "--signature", "serving_default", "--input",
            f"x={tmp_path / 'x.npy'}", "--output-dir", str(out))
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(out / "sums.npy"), m(x)["sums"].numpy())
    assert np.load(out / "names.npy") == m(x)["names"].numpy()  # strings as NumPy's |S<n>
    r = run("kiln-run", str(tmp_path / "m"), "--signature", "serving_default", "--input",
            f"y={tmp_path / 'x.npy'}")
    assert r.returncode == 1 and "missing input 'x'" in r.stderr


def test_kiln_run_help_and_output_dir_errors(tmp_path):
    for flag in ("--help", "-h"):
        r = run("kiln-run", flag)
        assert r.returncode == 0 and r.stdout.startswith("usage: kiln-run DIR"), r.stderr
    r = run("kiln-run", str(tmp_path / "m"), "--help")
    assert r.returncode == 0 and "usage" in r.stdout
    m = Loops()
    tf.saved_model.save(m, str(tmp_path / "m"))
    np.save(tmp_path / "x.npy", np.array([1, 2], np.float32))
    (tmp_path / "file").write_text("")
    for out, why in ((tmp_path / "file", "not a directory"),
                     (tmp_path / "file" / "sub", "Not a directory")):
        r = run("kiln-run", str(tmp_path / "m"), "--signature", "serving_default", "--input",
                f"x={tmp_path / 'x.npy'}", "--output-dir", str(out))
        assert r.returncode == 1, r.stdout
        assert f"cannot create the output directory {out}: " in r.stderr, r.stderr
        assert why.lower() in r.stderr.lower(), r.stderr
    blocked = tmp_path / "blocked"
    (blocked / "sums.npy").mkdir(parents=True)  # an output's file name taken by a directory
    r = run("kiln-run", str(tmp_path / "m"), "--signature", "serving_default", "--input",
            f"x={tmp_path / 'x.npy'}", "--output-dir", str(blocked))
    assert r.returncode == 1, r.stdout
    assert f"{blocked / 'sums.npy'}: cannot write: Is a directory" in r.stderr, r.stderr
