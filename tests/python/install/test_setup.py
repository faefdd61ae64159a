"""scripts/setup.sh names what is missing and how to get it (never a CMake stack trace).

Each case runs a copy of setup.sh (so the checkout's .venv is untouched) with a PATH of
stand-ins: dpkg-query reporting a package missing, an apt-get that fails, no compiler, no
root and no sudo.
"""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def fake_bin(tmp_path, drop=(), fakes=None):
    """A folder with every command of /usr/bin except `drop`, and the scripts in `fakes`."""
    d = tmp_path / "bin"
    d.mkdir()
    for name in os.listdir("/usr/bin"):
        if name not in drop and name not in (fakes or {}):
            os.symlink(os.path.join("/usr/bin", name), d / name)
    for name, body in (fakes or {}).items():
        (d / name).write_text("#!/bin/bash\n" + body + "\n")
        (d / name).chmod(0o755)
    return d


def run_setup(tmp_path, bin_dir):
    (tmp_path / "proj" / "scripts").mkdir(parents=True)
    for f in ("setup.sh", "requirements.txt"):
        src = os.path.join(ROOT, "scripts", f)
        (tmp_path / "proj" / "scripts" / f).write_text(open(src).read())
    (tmp_path / "proj" / "scripts" / "setup.sh").chmod(0o755)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    return subprocess.run(["/bin/bash", str(tmp_path / "proj" / "scripts" / "setup.sh")],
                          capture_output=True, text=True, env=env, timeout=60)


DPKG_MISSING_DNNL = '[ "$3" = libdnnl-dev ] && exit 1; exec /usr/bin/dpkg-query "$@"'
DPKG_ALL_INSTALLED = 'echo -n "install ok installed"'


def test_failed_apt_install_names_the_packages_and_the_command(tmp_path):
    bin_dir = fake_bin(tmp_path, fakes={"dpkg-query": DPKG_MISSING_DNNL,
                                        "apt-get": "echo 'E: no network' >&2; exit 100"})
    r = run_setup(tmp_path, bin_dir)
    assert r.returncode == 1
    assert "setup: apt-get update failed" in r.stderr
    assert "missing: libdnnl-dev" in r.stderr
    assert "apt-get install --no-install-recommends libdnnl-dev" in r.stderr
    assert not (tmp_path / "proj" / ".venv").exists()


def test_no_root_and_no_sudo_says_to_install_as_root(tmp_path):
    bin_dir = fake_bin(tmp_path, drop={"sudo"},
                       fakes={"dpkg-query": DPKG_MISSING_DNNL, "id": "echo 1000"})
    r = run_setup(tmp_path, bin_dir)
    assert r.returncode == 1
    assert "missing Debian packages: libdnnl-dev. Install them as root" in r.stderr


@pytest.mark.parametrize("tool,package", [("c++", "g++"), ("cmake", "cmake"), ("ninja", "ninja-build")])
def test_missing_tool_names_its_package(tmp_path, tool, package):
    bin_dir = fake_bin(tmp_path, drop={tool}, fakes={"dpkg-query": DPKG_ALL_INSTALLED})
    r = run_setup(tmp_path, bin_dir)
    assert r.returncode == 1
    assert f"'{tool}' is not on PATH" in r.stderr
    assert f"apt-get install --reinstall {package}" in r.stderr
    assert not (tmp_path / "proj" / ".venv").exists()
