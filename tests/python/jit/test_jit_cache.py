"""jit_compile's disk cache and compiler, tried with hostile and faulty inputs (issue
40): entries across processes, corrupt and foreign entries, a hung compiler, a process
killed during a compile. Each case runs kiln in a fresh Python process."""
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest


def test_no_compiler_warns_and_still_runs(tmp_path):
    script = textwrap.dedent("""
        import warnings, numpy as np, kiln as tf
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            f = tf.function(lambda x: x * 3.0 + 1.0, jit_compile=True)
            out = f(tf.constant([1.0, 2.0])).numpy()
        assert out.tolist() == [4.0, 7.0], out
        msgs = [str(m.message) for m in w]
        assert any("no C++ compiler" in m for m in msgs), msgs
        print("ok")
    """)
    env = dict(os.environ, KILN_CXX=str(tmp_path / "no-such-compiler"),
               KILN_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


PROGRAM = textwrap.dedent("""
    import numpy as np, kiln as tf
    f = tf.function(lambda x: tf.tanh(x) * 2.0 + tf.exp(-x), jit_compile=True)
    x = tf.constant(np.linspace(-1, 1, 50).astype(np.float32))
    assert f.get_concrete_function(x)._cf._jit_kernels == 1
    np.testing.assert_allclose(f(x).numpy(), np.tanh(x.numpy()) * 2 + np.exp(-x.numpy()),
                               rtol=1e-5)
    print("ok")
""")


def logging_compiler(tmp_path):
    """A KILN_CXX that logs each invocation, then runs the real compiler."""
    log = tmp_path / "cxx.log"
    cxx = tmp_path / "cxx"
    cxx.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec c++ "$@"\n')
    cxx.chmod(cxx.stat().st_mode | stat.S_IEXEC)
    return cxx, log


def run_program(env, program=PROGRAM):
    return subprocess.Popen([sys.executable, "-c", program], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def compiles(log):
    if not log.exists():
        return 0
    return sum("kernel.cpp" in line for line in log.read_text().splitlines())


def test_cache_hit_in_a_new_process_and_corrupt_entry_rebuilt(tmp_path):
    cxx, log = logging_compiler(tmp_path)
    cache = tmp_path / "cache"
    env = dict(os.environ, KILN_CXX=str(cxx), KILN_CACHE_DIR=str(cache))
    for expected in (1, 1):  # compiled once, then a hit: no compiler run
        out, err = run_program(env).communicate()
        assert "ok" in out, err
        assert compiles(log) == expected
    entries = list(cache.glob("*.kjit"))
    assert len(entries) == 1
    data = bytearray(entries[0].read_bytes())
    data[-100] ^= 0xFF  # a flipped byte in the shared object
    entries[0].write_bytes(bytes(data))
    out, err = run_program(env).communicate()
    assert "ok" in out, err
    assert compiles(log) == 2  # detected and rebuilt
    out, err = run_program(env).communicate()
    assert "ok" in out and compiles(log) == 2


def test_two_processes_compiling_at_once(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, KILN_CACHE_DIR=str(cache))
    procs = [run_program(env) for _ in range(2)]
    for p in procs:
        out, err = p.communicate()
        assert "ok" in out, err
    assert len(list(cache.glob("*.kjit"))) == 1
    assert not [p for p in cache.iterdir() if ".tmp" in p.name]


def test_cache_size_bound_evicts(tmp_path):
    program = PROGRAM + textwrap.dedent("""
        g = tf.function(lambda x: tf.sigmoid(x) - x * x, jit_compile=True)
        g(x)
    """)
    cache = tmp_path / "cache"
    env = dict(os.environ, KILN_CACHE_DIR=str(cache), KILN_CACHE_MAX_BYTES="1")
    out, err = run_program(env, program).communicate()
    assert "ok" in out, err
    assert len(list(cache.glob("*.kjit"))) == 1  # the newest entry only




def entry_of(cache):
    entries = list(cache.glob("*.kjit"))
    assert len(entries) == 1, entries
    return entries[0]


OTHER = PROGRAM.replace("tf.tanh(x) * 2.0 + tf.exp(-x)", "tf.sigmoid(x) - x * x").replace(
    "np.tanh(x.numpy()) * 2 + np.exp(-x.numpy())", "1 / (1 + np.exp(-x.numpy())) - x.numpy() ** 2")


@pytest.mark.parametrize("how", ["copy", "symlink"])
def test_another_functions_entry_under_this_key_is_a_miss(tmp_path, how):
    """Issue 40: an entry copied over (or linked to) another key's file name
    once made kiln run the other function's code. It is bound to its key now."""
    cxx, log = logging_compiler(tmp_path)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for cache, program in ((ours, OTHER), (theirs, PROGRAM)):
        out, err = run_program(dict(os.environ, KILN_CXX=str(cxx), KILN_CACHE_DIR=str(cache)),
                               program).communicate()
        assert "ok" in out, err
    assert compiles(log) == 2
    target = entry_of(ours)
    target.unlink()
    if how == "copy":
        target.write_bytes(entry_of(theirs).read_bytes())
    else:
        target.symlink_to(entry_of(theirs))
    env = dict(os.environ, KILN_CXX=str(cxx), KILN_CACHE_DIR=str(ours))
    out, err = run_program(env, OTHER).communicate()
    assert "ok" in out, err  # OTHER's own numbers
    assert compiles(log) == 3  # a miss: compiled again, and the entry replaced
    assert not entry_of(ours).is_symlink()
    out, err = run_program(env, OTHER).communicate()
    assert "ok" in out and compiles(log) == 3, err


def hanging_compiler(tmp_path, pids=None):
    """A KILN_CXX that answers --version and then hangs (with a child of its own),
    writing its pid and its child's to `pids`."""
    cxx = tmp_path / "hung-cxx"
    record = f'echo $$ >> {pids}\nsleep 300 &\necho $! >> {pids}\nwait\n' if pids else "sleep 300\n"
    cxx.write_text('#!/bin/sh\nif [ "$1" = --version ]; then exec c++ --version; fi\n' + record)
    cxx.chmod(cxx.stat().st_mode | stat.S_IEXEC)
    return cxx


def test_a_hung_compiler_gives_up_after_the_configured_time(tmp_path):
    """KILN_JIT_COMPILE_TIMEOUT bounds a compile; the call then runs in graph mode,
    and later functions do not wait for the hung compiler again."""
    script = textwrap.dedent("""
        import time, warnings, numpy as np, kiln as tf
        x = tf.constant(np.linspace(-1, 1, 50).astype(np.float32))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            start = time.monotonic()
            f = tf.function(lambda x: tf.tanh(x) * 2.0, jit_compile=True)
            np.testing.assert_allclose(f(x).numpy(), np.tanh(x.numpy()) * 2, rtol=1e-6)
            first = time.monotonic() - start
            start = time.monotonic()
            g = tf.function(lambda x: tf.exp(x) - 1.0, jit_compile=True)
            np.testing.assert_allclose(g(x).numpy(), np.exp(x.numpy()) - 1, rtol=1e-5, atol=1e-6)
            second = time.monotonic() - start
        msgs = [str(m.message) for m in w]
        assert any("timed out after 1 s" in m and "KILN_JIT_COMPILE_TIMEOUT" in m
                   for m in msgs), msgs
        assert any("timed out earlier in this process" in m for m in msgs), msgs
        assert first < 20 and second < 5, (first, second)
        print("ok")
    """)
    env = dict(os.environ, KILN_CXX=str(hanging_compiler(tmp_path)),
               KILN_CACHE_DIR=str(tmp_path / "cache"), KILN_JIT_COMPILE_TIMEOUT="1")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False


def wait_until(cond, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_kill_9_during_a_compile_leaves_no_compiler_and_no_directory(tmp_path):
    """A process killed during a compile takes its compiler (and the compiler's
    children) with it; the next compile removes the temporary directory it left."""
    pids, tmp = tmp_path / "pids", tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, KILN_CXX=str(hanging_compiler(tmp_path, pids)), TMPDIR=str(tmp),
               KILN_CACHE_DIR=str(tmp_path / "cache"))
    victim = run_program(env)
    assert wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 2, 60)
    left = [d for d in tmp.iterdir() if d.name.startswith(f"kiln-jit-{victim.pid}-")]
    assert len(left) == 1, list(tmp.iterdir())
    os.kill(victim.pid, signal.SIGKILL)
    victim.communicate()
    compiler = [int(p) for p in pids.read_text().split()]
    assert wait_until(lambda: not any(alive(p) for p in compiler), 10), compiler
    env["KILN_CXX"] = "c++"
    out, err = run_program(env).communicate()
    assert "ok" in out, err
    assert not left[0].exists()
    assert not list(tmp.iterdir())
