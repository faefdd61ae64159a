#!/usr/bin/env bash
# Idempotent set-up of .venv-peers: CPU builds of TensorFlow, JAX and PyTorch for
# `make bench-peers`, pinned in scripts/requirements-peers.txt. Fast when in place.
#
# PyTorch: PyPI's Linux wheel is the CUDA build and depends on ~4 GB of nvidia-*
# packages. Its CPU code needs none of them, but its CUDA half (libtorch_cuda.so)
# is linked in and loads at `import torch`. So torch is installed with --no-deps,
# plus its pure-Python dependencies, and then only the CUDA libraries that the
# import still reports missing (or too old) on this machine are installed, one
# package each (the `#torch-lib` table in the requirements file). On a machine
# with a CUDA toolkit that is a few hundred MB; on a bare one, the runtime
# libraries alone (no triton, cuSOLVER, CUPTI or cuda-bindings). If no working
# torch results, .venv-peers/torch-unavailable.txt says why and the peers run
# skips PyTorch with that message.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=/usr/bin/python3
VENV=.venv-peers
REQ=scripts/requirements-peers.txt
STAMP=$VENV/.requirements.stamp
UNAVAILABLE=$VENV/torch-unavailable.txt

# Debian's Chromium: the headless browser tests/peers/check_tensorboard_browser.py
# opens TensorBoard in (checked first: the venv's stamp does not cover it).
if ! command -v chromium >/dev/null; then
  echo "setup_peers: installing Debian's chromium (headless TensorBoard check)"
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
if [ -f "$STAMP" ] && cmp -s "$REQ" "$STAMP" && [ -x "$VENV/bin/python" ]; then
  exit 0
fi
start=$(date +%s)
if [ ! -x "$PY" ]; then
  echo "setup_peers: $PY not found (run scripts/setup.sh first)" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup_peers: creating $VENV"
  "$PY" -m venv "$VENV"
fi
VPY=$VENV/bin/python
export TF_CPP_MIN_LOG_LEVEL=2
"$VPY" -m pip install -q --upgrade pip >/dev/null

echo "setup_peers: installing TensorFlow, JAX and PyTorch's Python dependencies"
"$VPY" -m pip install -q -r "$REQ"

rm -f "$UNAVAILABLE"
for spec in $(sed -n 's/^#no-deps[[:space:]]\+//p' "$REQ"); do
  echo "setup_peers: installing $spec without its dependencies"
  "$VPY" -m pip install -q --no-deps "$spec"
done

# Which package would let `import torch` go further? Prints OK, NEED <spec> or FAIL <why>.
probe_torch() {
  "$VPY" - "$REQ" <<'EOF'
import re, subprocess, sys
libs = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 3 and parts[0] == "#torch-lib":
        libs[parts[1]] = parts[2]
r = subprocess.run([sys.executable, "-c", "import torch; torch.ones(2).add_(1)"],
                   capture_output=True, text=True)
if r.returncode == 0:
    print("OK")
    sys.exit()
err = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
lib = None
sym = re.search(r"undefined symbol: (\w+)", err)
if sym:  # a library that is present but older than torch's: match the symbol's prefix
    for prefix, name in [("cusparseLt", "libcusparseLt"), ("cublasLt", "libcublasLt"),
                         ("nccl", "libnccl"), ("cudnn", "libcudnn"), ("cublas", "libcublas"),
                         ("cusparse", "libcusparse"), ("cufft", "libcufft"),
                         ("cuFile", "libcufile"), ("cusolver", "libcusolver"),
                         ("curand", "libcurand"), ("nvrtc", "libnvrtc"),
                         ("nvJitLink", "libnvJitLink"), ("nvshmem", "libnvshmem_host"),
                         ("cupti", "libcupti"), ("cuda", "libcudart")]:
        if sym.group(1).startswith(prefix):
            lib = name
            break
else:
    m = re.search(r"(lib[A-Za-z0-9_]+)\.so", err)
    lib = m.group(1) if m else None
if lib in libs:
    print("NEED", libs[lib])
else:
    print("FAIL", err)
EOF
}

installed=()
torch_ok=0
for _ in $(seq 1 16); do
  verdict=$(probe_torch)
  case "$verdict" in
    OK) torch_ok=1; break ;;
    NEED\ *)
      spec=${verdict#NEED }
      if [[ " ${installed[*]-} " == *" $spec "* ]]; then
        echo "$verdict (already installed, import still fails)" > "$UNAVAILABLE"; break
      fi
      echo "setup_peers: torch needs $spec (installing it without dependencies)"
      "$VPY" -m pip install -q --no-deps "$spec"
      installed+=("$spec") ;;
    *) echo "import torch fails: ${verdict#FAIL }" > "$UNAVAILABLE"; break ;;
  esac
done
if [ "$torch_ok" = 1 ]; then
  echo "setup_peers: checking torch.compile on the CPU (needs g++ and Python headers)"
  if ! "$VPY" - <<'EOF'
import torch
f = torch.compile(lambda x: x * 2 + 1)
x = torch.arange(4.0)
assert torch.equal(f(x), x * 2 + 1)
EOF
  then
    echo "setup_peers: WARNING: torch.compile failed on the CPU; PyTorch's compiled rows will" \
         "record the error" >&2
  fi
else
  [ -f "$UNAVAILABLE" ] || echo "import torch still fails after installing: ${installed[*]-}" \
    > "$UNAVAILABLE"
  echo "setup_peers: PyTorch is skipped: $(cat "$UNAVAILABLE")" >&2
fi

"$VPY" - <<'EOF'
import tensorflow as tf, jax
print(f"setup_peers: tensorflow {tf.__version__}, jax {jax.__version__}", end="")
try:
    import torch
    print(f", torch {torch.__version__}")
except Exception as e:  # noqa: BLE001
    print(f", torch unavailable ({type(e).__name__})")
EOF
cp "$REQ" "$STAMP"
echo "setup_peers: done in $(( $(date +%s) - start )) s"
