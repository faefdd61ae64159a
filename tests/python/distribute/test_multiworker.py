"""kiln.distribute on 2 MPI workers: three mpirun launches of mpi_worker.py.

"main" checks the API (reduce, all_reduce in a function, gather, broadcast,
dataset sharding, mirrored variables, a custom loop and Keras fit against one
process on the full batches, uneven batches that retrace on one worker only,
mismatched graphs) in one launch; "raise" and
"die" check that a failing worker ends the run quickly with a clear error.
Skipped when mpirun is not on PATH (scripts/setup.sh installs Open MPI).
"""
import os
import shutil
import subprocess
import sys
import time

import pytest

MPIRUN = shutil.which("mpirun")
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_worker.py")

pytestmark = pytest.mark.skipif(MPIRUN is None, reason="mpirun is not on PATH (Open MPI is "
                                "not installed; scripts/setup.sh installs it)")


def _mpirun(scenario, timeout):
    """(exit code, output, seconds) of a 2-worker run of mpi_worker.py."""
    cmd = [MPIRUN, "-np", "2", "--oversubscribe", "--allow-run-as-root", "--bind-to", "none",
           "-x", "KILN_COLLECTIVE_TIMEOUT=60", sys.executable, WORKER, scenario]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"mpirun {scenario} did not end within {timeout} s:\n{out}")
    return proc.returncode, proc.stdout, time.monotonic() - start


def test_two_workers():
    rc, out, _ = _mpirun("main", timeout=240)
    assert rc == 0, out
    for rank in (0, 1):
        assert f"rank {rank}: all ok" in out, out


def test_an_exception_on_one_worker_reaches_the_other():
    rc, out, seconds = _mpirun("raise", timeout=120)
    assert rc != 0, out
    assert "ValueError: worker 1 gives up" in out, out  # worker 1's own traceback
    assert "rank 0 got UnavailableError" in out, out
    line = next(ln for ln in out.splitlines() if "rank 0 got UnavailableError" in ln)
    assert "worker 1" in line and "ValueError: worker 1 gives up" in line, line
    assert seconds < 60, f"the run took {seconds:.0f} s"


def test_a_dead_worker_ends_the_run():
    rc, out, seconds = _mpirun("die", timeout=120)
    assert rc != 0, out
    assert "a collective completed without worker 1" not in out, out
    assert seconds < 60, f"the run took {seconds:.0f} s"
