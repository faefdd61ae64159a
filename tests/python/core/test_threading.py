"""One thread budget (kiln.config.threading): the pool's size is every thread kiln
adds, oneDNN's convolutions (forward and backward) and OpenBLAS's products included;
OMP_NUM_THREADS is the default budget; functions called from several Python threads stay
correct.

The thread counts are read in fresh processes (the pool's size is fixed once it starts).
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import kiln as tf

WORK = r"""
import os, sys
import numpy as np
import kiln as tf
budget = int(sys.argv[1])
if budget:
    tf.config.threading.set_intra_op_parallelism_threads(budget)
def threads():
    return len(os.listdir("/proc/self/task"))
x = tf.constant(np.random.default_rng(0).random((1, 64, 64, 32), dtype=np.float32))
f = tf.constant(np.random.default_rng(1).random((3, 3, 32, 32), dtype=np.float32))
a = tf.constant(np.random.default_rng(2).random((512, 256), dtype=np.float32))
before = threads()
for _ in range(3):
    tf.nn.conv2d(x, f, 1, "SAME").numpy()
    tf.nn.depthwise_conv2d(x, tf.ones([3, 3, 32, 1]), [1, 1, 1, 1], "SAME").numpy()
    tf.matmul(a, a, transpose_b=True).numpy()
    tf.nn.softmax(a).numpy()
    with tf.GradientTape() as tape:  # the convolutions' backward kernels
        tape.watch([x, f])
        y = tf.nn.conv2d(x, f, 1, "SAME")
        y += tf.nn.depthwise_conv2d(x, f[:, :, :, :1], [1, 1, 1, 1], "SAME")
    [g.numpy() for g in tape.gradient(y, [x, f])]
print(tf.config.threading.get_intra_op_parallelism_threads(), tf._kiln._pool_threads(),
      threads() - before)
"""


def run_work(budget, env=None):
    e = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    e.update(env or {})
    out = subprocess.run([sys.executable, "-c", WORK, str(budget)], capture_output=True, text=True,
                         env=e, timeout=120)
    assert out.returncode == 0, out.stderr
    return [int(v) for v in out.stdout.split()]


@pytest.mark.parametrize("budget", [1, 3])
def test_the_budget_is_every_thread_kiln_adds(budget):
    asked, pool, added = run_work(budget)
    assert asked == budget and pool == budget
    # The pool's workers alone: no OpenMP team, no OpenBLAS threads at work.
    assert added == budget - 1


def test_omp_num_threads_is_the_default_budget():
    asked, pool, added = run_work(0, {"OMP_NUM_THREADS": "3"})
    assert (asked, pool, added) == (0, 3, 2)


def test_the_default_budget_is_the_cpus_this_process_may_use():
    asked, pool, _ = run_work(0)
    assert asked == 0 and pool == len(os.sched_getaffinity(0))


def test_functions_called_from_several_threads_stay_correct():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 40, 40, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 24)).astype(np.float32) * 0.1
    d = rng.standard_normal((24 * 40 * 40, 64)).astype(np.float32) * 0.05

    @tf.function
    def step(x, w, d):
        y = tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME"))
        return tf.nn.softmax(tf.matmul(tf.reshape(y, [2, -1]), d))

    want = step(x, w, d).numpy()
    results, errors = [], []

    def worker():
        try:
            for _ in range(10):
                results.append(step(x, w, d).numpy())
        except Exception as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=worker) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert len(results) == 40
    for r in results:
        np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-6)


def test_small_kernels_leave_the_budget_settable():
    # Small products and convolutions never start the pool, so the budget can still be
    # set after them (as before any large kernel ran).
    code = ("import kiln as tf\n"
            "tf.matmul(tf.ones([8, 8]), tf.ones([8, 8])).numpy()\n"
            "tf.nn.conv2d(tf.ones([1, 6, 6, 2]), tf.ones([3, 3, 2, 2]), 1, 'SAME').numpy()\n"
            "tf.config.threading.set_intra_op_parallelism_threads(3)\n"
            "print(tf._kiln._pool_threads())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3"]
