#!/usr/bin/env bash
# Idempotent set-up: Debian packages (when missing) and the pinned .venv.
# Fast when everything is already in place. What it cannot install is named, with the
# command that installs it, before anything else runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# Everything the build and the tests read from Debian (scripts/check_deps.py checks that
# nothing else is used). Installed without Recommends, as on a minimal machine.
DEB_PACKAGES=(g++ cmake ninja-build make pkg-config libopenblas-dev libdnnl-dev libre2-dev libssl-dev libpng-dev libturbojpeg0-dev zlib1g-dev libicu-dev
  libprotobuf-dev protobuf-compiler libopenmpi-dev openmpi-bin libgtest-dev libgmock-dev libbenchmark-dev python3 python3-venv python3-dev clang-format
  libcpp-httplib-dev libsimdjson-dev libgrpc++-dev protobuf-compiler-grpc wrk)

die() { echo "setup: $*" >&2; exit 1; }

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  how="apt-get install --no-install-recommends ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "missing Debian packages: ${missing[*]}. Install them as root: $how"
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq ||
    die "apt-get update failed (no access to Debian's package mirrors?); missing: ${missing[*]}. Install them: $how"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "could not install the Debian packages ${missing[*]} (see apt-get's message above). Install them: $how"
fi

# The tools the build runs, each with the Debian package that provides it.
for tool in c++:g++ cmake:cmake ninja:ninja-build pkg-config:pkg-config protoc:protobuf-compiler; do
  command -v "${tool%%:*}" >/dev/null ||
    die "'${tool%%:*}' is not on PATH although ${tool#*:} is installed; reinstall it: apt-get install --reinstall ${tool#*:}"
done

# Python environment: Debian's interpreter, so a fresh machine needs nothing else.
PY=/usr/bin/python3
REQ=scripts/requirements.txt
STAMP=.venv/.requirements.stamp
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv || die "could not create .venv with $PY (Debian's python3-venv)"
fi
if [ ! -f "$STAMP" ] || ! cmp -s "$REQ" "$STAMP"; then
  echo "setup: installing pinned Python packages"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -r "$REQ" ||
    die "pip could not install $REQ into .venv (no access to the Python package index?)"
  cp "$REQ" "$STAMP"
fi
