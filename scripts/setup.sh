#!/usr/bin/env bash
# Idempotent set-up: Debian packages (when missing) and the pinned .venv.
# Fast when everything is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."

DEB_PACKAGES=(g++ cmake ninja-build make pkg-config libopenblas-dev libdnnl-dev
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-venv python3-dev clang-format)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python environment: Debian's interpreter, so a fresh machine needs nothing else.
PY=/usr/bin/python3
REQ=scripts/requirements.txt
STAMP=.venv/.requirements.stamp
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
if [ ! -f "$STAMP" ] || ! cmp -s "$REQ" "$STAMP"; then
  echo "setup: installing pinned Python packages"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -r "$REQ"
  cp "$REQ" "$STAMP"
fi
