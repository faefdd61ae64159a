"""scripts/check_deps.py (run by .ci/run after make test) catches what a fresh machine lacks.

Its error paths, on this machine's real build: a setup.sh that forgets a package the build
reads, and a requirements file that forgets a package .venv holds.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "scripts", "check_deps.py")
BUILD = os.path.join(ROOT, "build")


def check(*args):
    return subprocess.run([sys.executable, SCRIPT, BUILD, *args], capture_output=True, text=True,
                          timeout=120)


def test_this_checkout_passes():
    r = check()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Debian ok" in r.stdout and "Python ok" in r.stdout


def test_a_package_setup_forgets_is_named(tmp_path):
    setup = open(os.path.join(ROOT, "scripts", "setup.sh")).read()
    assert " libdnnl-dev" in setup
    (tmp_path / "setup.sh").write_text(setup.replace(" libdnnl-dev", ""))
    r = check("--setup", str(tmp_path / "setup.sh"))
    assert r.returncode == 1
    missing = r.stdout.split("stop depending on it):\n")[1].split()
    assert "libdnnl-dev" in missing


def test_an_unpinned_python_package_is_named(tmp_path):
    req = open(os.path.join(ROOT, "scripts", "requirements.txt")).read()
    (tmp_path / "req.txt").write_text(req.replace("pluggy==", "# pluggy=="))
    r = check("--requirements", str(tmp_path / "req.txt"))
    assert r.returncode == 1
    assert "pluggy==" in r.stdout and "(not pinned)" in r.stdout


def test_a_requirement_without_a_version_is_refused(tmp_path):
    (tmp_path / "req.txt").write_text("numpy\n")
    r = check("--requirements", str(tmp_path / "req.txt"))
    assert r.returncode == 1
    assert "'numpy' in scripts/requirements.txt is not pinned" in r.stdout
