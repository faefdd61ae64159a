"""make bench-eager-pair: kiln and PyTorch eager, alternated in one process.

Separate runs of bench/demo.py and run_peers.py on a shared VM can differ by
2x from minute to minute, which swamps microsecond workloads. Here both run in
the peers' Python: kiln is imported from the main .venv through a directory of
links (its Python files and its built extension), then rounds of N calls
alternate kiln, PyTorch, kiln, ... The ratio is taken per round, so load that
comes and goes hits both sides of a ratio alike.

    .venv-peers/bin/python bench/peers/eager_pair.py [--only dynamic_rnn ...]
        [--rounds 30] [--calls 1000] [--kiln-python .venv/bin/python]
"""
import argparse
import atexit
import json
import os
import shutil
import statistics as st
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

NAMES = ("dynamic_rnn", "while_tanh", "chain100", "eager_add_overhead")

_WHERE = ("import os, kiln, kiln._kiln as k; "
          "print(os.path.dirname(kiln.__file__)); print(os.path.dirname(k.__file__))")


def import_kiln(kiln_python):
    """Imports kiln as installed for `kiln_python` (an editable install keeps its
    Python files and its extension in two places: both are linked into one
    temporary package)."""
    out = subprocess.run([kiln_python, "-c", _WHERE], check=True, capture_output=True,
                         text=True).stdout.split()
    src, ext = out[0], out[1]
    root = tempfile.mkdtemp(prefix="kiln-pair-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    pkg = os.path.join(root, "kiln")
    os.mkdir(pkg)
    for d in dict.fromkeys((src, ext)):
        for name in os.listdir(d):
            if name != "__pycache__" and not os.path.exists(os.path.join(pkg, name)):
                os.symlink(os.path.join(d, name), os.path.join(pkg, name))
    sys.path.insert(0, root)
    import kiln
    return kiln


def pairs(names):
    """{name: (kiln (fn, args), torch (fn, args))} for the eager workloads."""
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import torch_workloads as tw
    import workloads as kw
    tw.configure(1)
    peers = {c.name: c for c in tw.cases() if getattr(c, "mode", None) == "eager"
             and hasattr(c, "build")}
    ours = {w.name: w for w in kw.WORKLOADS + kw.MICRO}
    out = {}
    for n in names:
        if n not in ours or n not in peers:
            raise SystemExit(f"eager_pair: no eager '{n}' in both kiln's and PyTorch's workloads")
        out[n] = (ours[n].build()["eager"], peers[n].build())
    return out


def per_call(fn, args, calls):
    t = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - t) / calls


def quartiles(v):
    q = st.quantiles(v, n=4)
    return q[0], q[2]


def measure(kiln_case, torch_case, rounds, calls):
    for fn, args in (kiln_case, torch_case):  # warm-up
        per_call(fn, args, max(1, calls // 2))
    k, t = [], []
    for _ in range(rounds):
        k.append(per_call(*kiln_case, calls))
        t.append(per_call(*torch_case, calls))
    r = [a / b for a, b in zip(k, t)]
    row = lambda v: {"median": st.median(v), "q1": quartiles(v)[0], "q3": quartiles(v)[1],
                     "min": min(v)}
    return {"kiln": row(k), "torch": row(t), "kiln_over_torch": row(r)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=["dynamic_rnn", "eager_add_overhead"],
                    choices=NAMES)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--kiln-python", default=os.path.join(REPO, ".venv", "bin", "python"))
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results", "eager_pair.json"))
    a = ap.parse_args()
    if a.rounds < 2 or a.calls < 1:
        ap.error("--rounds must be >= 2 and --calls >= 1")
    kiln = import_kiln(a.kiln_python)
    import torch
    doc = {"kiln": kiln.__version__, "torch": torch.__version__, "rounds": a.rounds,
           "calls": a.calls, "load_before": os.getloadavg()[0], "results": {}}
    for name, (kc, tc) in pairs(a.only).items():
        res = measure(kc, tc, a.rounds, a.calls)
        doc["results"][name] = res
        us = lambda s: f"{s * 1e6:.2f} us"
        print(f"{name:20s} kiln {us(res['kiln']['median'])}  torch {us(res['torch']['median'])}"
              f"  kiln/torch {res['kiln_over_torch']['median']:.2f} "
              f"[{res['kiln_over_torch']['q1']:.2f}-{res['kiln_over_torch']['q3']:.2f}]")
    doc["load_after"] = os.getloadavg()[0]
    if max(doc["load_before"], doc["load_after"]) > 1.5:
        print(f"warning: the machine was busy (load {doc['load_before']:.1f} -> "
              f"{doc['load_after']:.1f}); the per-round ratios hold better than the times")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(a.out)}")


if __name__ == "__main__":
    main()
