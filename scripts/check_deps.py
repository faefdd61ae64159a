#!/usr/bin/env python3
"""Checks that a fresh machine has everything the build and the tests used.

A machine that built kiln before may hold packages a fresh one lacks; a green run there
proves little. Two checks, both run by .ci/run after `make test` (`make check-deps`):

- Debian: every file the build read (compiler header dependencies, libraries named in
  CMakeCache.txt, the shared libraries each built program loads) and every file the test
  processes mapped (build/deps/*.maps, written by the test suites) belongs to a package that
  scripts/setup.sh installs, to one they depend on (Depends/Pre-Depends, followed the way apt
  follows them with --no-install-recommends), or to an essential package.
- Python: every distribution installed in .venv is pinned, at that version, in
  scripts/requirements.txt. The .venv has no system site-packages, so nothing else can be
  imported by `make test` or `make demo`.

Usage: scripts/check_deps.py [BUILD_DIR]    (exit 1 and a list when something is missing)
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP = os.path.join(ROOT, "scripts", "setup.sh")
REQUIREMENTS = os.path.join(ROOT, "scripts", "requirements.txt")
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
# Installed by the venv itself or by the project's own editable install.
VENV_OWN = {"pip", "setuptools", "kiln"}
CACHE_KEY_SUFFIXES = ("_LIBRARY", "_LIBRARIES", "_INCLUDE_DIR", "_INCLUDE_DIRS", "_LIB")


def run(args):
    return subprocess.run(args, capture_output=True, text=True, check=False).stdout


def setup_packages(setup):
    m = re.search(r"DEB_PACKAGES=\(([^)]*)\)", open(setup).read(), re.S)
    if not m:
        sys.exit("check_deps: no DEB_PACKAGES=(...) in scripts/setup.sh")
    return m.group(1).split()


def is_elf(path):
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def cache_files(build):
    """Libraries and include folders CMake found (CMakeCache.txt)."""
    out = set()
    cache = os.path.join(build, "CMakeCache.txt")
    if not os.path.exists(cache):
        return out
    for line in open(cache):
        if line.startswith(("#", "//")) or "=" not in line:
            continue
        key, value = line.split("=", 1)
        if key.split(":")[0].endswith(CACHE_KEY_SUFFIXES):
            out.update(v for v in value.strip().split(";") if v.startswith("/"))
    return out


def build_files(build):
    """Headers the compiler read and shared libraries the built programs load."""
    files = set()
    for ninja_file in glob.glob(os.path.join(build, "**", "build.ninja"), recursive=True):
        deps = run(["ninja", "-C", os.path.dirname(ninja_file), "-t", "deps"])
        files.update(l.strip() for l in deps.splitlines() if l.startswith("    /"))
        files |= cache_files(os.path.dirname(ninja_file))
    for root, _, names in os.walk(build):
        for n in names:
            p = os.path.join(root, n)
            if os.path.isfile(p) and (".so" in n or os.access(p, os.X_OK)) and is_elf(p):
                for line in run(["ldd", p]).splitlines():
                    if "=> /" in line:
                        files.add(line.split("=> ")[1].split()[0])
    for maps in glob.glob(os.path.join(build, "deps", "*.maps")):
        files.update(l.strip() for l in open(maps) if l.startswith("/"))
    return files


def owners(files):
    """Debian packages owning the files (symlinks resolved too); files no package owns are
    the project's own or pip's."""
    paths = set()
    for f in files:
        if f.startswith(("/usr/", "/lib", "/etc/")) and os.path.isfile(f):
            paths.update((f, os.path.realpath(f)))
    found = set()
    paths = sorted(paths)
    for i in range(0, len(paths), 200):
        for line in run(["dpkg", "-S"] + paths[i:i + 200]).splitlines():
            if ": " in line and not line.startswith("diversion"):
                found.update(p.split(":")[0] for p in line.split(": ", 1)[0].split(", "))
    return found


def installed_packages():
    fmt = "${Package}\t${Status}\t${Essential}\t${Priority}\t${Provides}\t${Pre-Depends}, ${Depends}\n"
    pkgs = {}
    for line in run(["dpkg-query", "-W", "-f", fmt]).splitlines():
        name, status, essential, priority, provides, depends = line.split("\t")
        if status.endswith(" installed"):
            pkgs[name] = (essential == "yes" or priority == "required", provides, depends)
    return pkgs


def bare_name(dep):
    return re.sub(r"\(.*?\)", "", dep).strip().split(":")[0]


def closure(wanted, pkgs):
    """What apt installs for `wanted` on a fresh machine: each Depends group brings its
    first alternative (a virtual name: every installed package providing it)."""
    providers = {}
    for name, (_, provides, _) in pkgs.items():
        for p in filter(None, (bare_name(x) for x in provides.split(","))):
            providers.setdefault(p, set()).add(name)
    seen = {name for name, (essential, _, _) in pkgs.items() if essential}
    todo = list(wanted)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in pkgs:
            todo.extend(providers.get(name, ()))
            continue
        for group in pkgs[name][2].split(","):
            first = bare_name(group.split("|")[0]) if group.strip() else ""
            if first:
                todo.append(first)
    return seen


def check_debian(build, setup):
    used = owners(build_files(build))
    missing = sorted(used - closure(setup_packages(setup), installed_packages()))
    if missing:
        print("check_deps: the build or the tests used files from Debian packages that "
              "scripts/setup.sh does not install\n(a fresh machine lacks them: add each to "
              "DEB_PACKAGES, or stop depending on it):")
        print("".join(f"  {p}\n" for p in missing), end="")
        return False
    print(f"check_deps: Debian ok ({len(used)} packages used, all installed by scripts/setup.sh)")
    return True


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def check_python(requirements):
    pins = {}
    for line in open(requirements):
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            if not version:
                print(f"check_deps: '{line}' in scripts/requirements.txt is not pinned (name==version)")
                return False
            pins[norm(name)] = version.strip()
    if not os.path.exists(VENV_PYTHON):
        print("check_deps: no .venv (run scripts/setup.sh)")
        return False
    listing = run([VENV_PYTHON, "-c", "import importlib.metadata as m\n"
                   "for d in m.distributions(): print(d.metadata['Name'], d.version)"])
    bad = []
    for line in listing.splitlines():
        name, version = line.split()
        if norm(name) in VENV_OWN:
            continue
        if pins.get(norm(name)) != version:
            pin = pins.get(norm(name))
            bad.append(f"  {name}=={version}" + (f" (pinned {pin})" if pin else " (not pinned)"))
    if bad:
        print("check_deps: .venv holds Python packages that scripts/requirements.txt does not pin "
              "at that version\n(a fresh .venv lacks them: pin them, or stop depending on them):")
        print("\n".join(bad))
        return False
    print(f"check_deps: Python ok ({len(pins)} pinned packages, nothing else in .venv)")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--setup", default=SETUP, help="the script whose DEB_PACKAGES count")
    ap.add_argument("--requirements", default=REQUIREMENTS, help="the pinned Python packages")
    args = ap.parse_args()
    if not os.path.isdir(args.build):
        sys.exit(f"check_deps: no build folder {args.build} (run make build first)")
    ok = check_debian(args.build, args.setup)
    ok = check_python(args.requirements) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
