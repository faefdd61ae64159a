import atexit
import os
import shutil
import tempfile

import pytest

# jit_compile's kernels: one cache directory for the run (each kernel is compiled once per
# run, and nothing is left in ~/.cache); child processes inherit it.
if "KILN_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="kiln-test-cache-")
    os.environ["KILN_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, True)

import kiln

BUILD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build")


@pytest.fixture(autouse=True)
def _eager_functions_off():
    kiln.config.run_functions_eagerly(False)
    yield
    kiln.config.run_functions_eagerly(False)


def pytest_sessionfinish(session, exitstatus):
    """Records the files this test process mapped (shared libraries, extension modules):
    scripts/check_deps.py checks that each Debian file among them is installed by setup."""
    if not os.path.isdir(BUILD):
        return
    with open("/proc/self/maps") as f:
        paths = sorted({line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6})
    os.makedirs(os.path.join(BUILD, "deps"), exist_ok=True)
    with open(os.path.join(BUILD, "deps", "pytest.maps"), "w") as f:
        f.write("".join(p + "\n" for p in paths if p.startswith("/")))
