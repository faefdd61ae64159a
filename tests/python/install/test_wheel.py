"""The wheel a user builds from a clean checkout works on its own.

Builds it with `python -m build --wheel` from a copy of the checkout's files (what a fresh
clone holds), checks its contents and metadata, installs it into a new virtual environment
that cannot see the checkout, and runs a smoke program there (a traced function, a Keras
layer, a gradient). Takes a few minutes: the wheel compiles libkiln from source.
"""
import email.parser
import os
import re
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VERSION = open(os.path.join(ROOT, "VERSION")).read().strip()
SONAME = "libkiln.so." + ".".join(VERSION.split(".")[:2])

SMOKE = r"""
import os, sys
import numpy as np
import kiln as tf

print("version", tf.__version__)
print("location", os.path.dirname(tf.__file__))

traces = []
@tf.function
def f(x):
    traces.append(1)
    return tf.reduce_sum(x * x + 1.0)
print("function", f(tf.constant([1.0, 2.0])).numpy(), f(tf.constant([3.0, 4.0])).numpy(), len(traces))

layer = tf.keras.layers.Dense(3, kernel_initializer="ones", bias_initializer="zeros")
print("dense", layer(tf.ones([2, 4])).numpy().tolist())

v = tf.Variable(3.0)
with tf.GradientTape() as tape:
    y = v * v
print("gradient", tape.gradient(y, v).numpy())
"""


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, args))} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def pinned(name):
    for line in open(os.path.join(ROOT, "scripts", "requirements.txt")):
        if line.lower().startswith(name + "=="):
            return line.split("#")[0].strip()
    raise AssertionError(f"{name} is not pinned")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    files = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT).split("\0")
    for rel in filter(None, files):
        if os.path.isfile(os.path.join(ROOT, rel)):
            os.makedirs(src / os.path.dirname(rel), exist_ok=True)
            with open(os.path.join(ROOT, rel), "rb") as a, open(src / rel, "wb") as b:
                b.write(a.read())
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", str(tmp / "dist"), str(src)],
        timeout=1800)
    (path,) = (tmp / "dist").glob("kiln-*.whl")
    return path


def test_wheel_contents_and_metadata(wheel, tmp_path):
    assert re.match(rf"kiln-{re.escape(VERSION)}-cp\d+-cp\d+-linux_x86_64\.whl", wheel.name)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = email.parser.Parser().parsestr(z.read(f"kiln-{VERSION}.dist-info/METADATA").decode())
        z.extract(f"kiln/{SONAME}", tmp_path)
        ext = next(n for n in names if re.match(r"kiln/_kiln\..*\.so$", n))
        z.extract(ext, tmp_path)
    for expected in ("kiln/__init__.py", "kiln/keras/__init__.py", "kiln/autograph/__init__.py",
                     f"kiln/{SONAME}"):
        assert expected in names
    assert not [n for n in names if n.startswith(("tests/", "src/", "bench/"))]
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert meta["Name"] == "kiln" and meta["Version"] == VERSION
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["Requires-Python"] == ">=3.11"
    assert any(d.startswith("numpy") for d in meta.get_all("Requires-Dist"))
    # The extension finds libkiln beside it, wherever the package is installed.
    dyn = run(["readelf", "-d", str(tmp_path / ext)])
    assert "[$ORIGIN]" in dyn and f"[{SONAME}]" in dyn
    assert "Library soname: [%s]" % SONAME in run(["readelf", "-d", str(tmp_path / "kiln" / SONAME)])


def test_wheel_installs_and_runs_in_a_fresh_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    run(["/usr/bin/python3", "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    run([py, "-m", "pip", "install", "-q", str(wheel), pinned("numpy")], timeout=900)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    work = tmp_path / "work"
    work.mkdir()
    out = run([py, "-c", SMOKE], cwd=work, env=env, timeout=300)
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines["version"] == VERSION
    assert lines["location"].startswith(str(venv))
    assert lines["function"] == "7.0 27.0 1"
    assert lines["dense"] == "[[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]]"
    assert lines["gradient"] == "6.0"
