"""make bench-peers: the demo's workloads in TensorFlow, JAX and PyTorch.

Runs in .venv-peers (scripts/setup_peers.sh). Each framework runs in its own
child process (so thread pools and libraries do not mix, and a crash or a
time-out loses only that framework), timed by kiln's harness loaded by path.
Writes bench/results/peers.json:

    {"frameworks": [{"framework": "tensorflow", "version": ..., "machine": ...,
                     "results": [Result.to_dict(), ...], "skipped": [...]}, ...],
     "date": ..., "command": ..., "machine": ...}

    .venv-peers/bin/python bench/peers/run_peers.py [--frameworks tensorflow jax torch]
        [--only NAME ...] [--min-time S] [--timeout S] [--out FILE] [--busy N] [--models]

--busy N: every framework timed with N processes spinning on the CPUs.
--models: the model workloads (lstm2, transformer4, resnet50_224, mobilenetv3_224;
model_common.py) instead of the seed ones; writes bench/results/peers-models.json.
"""
import argparse
import datetime
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common as cm  # noqa: E402
import model_common as mc  # noqa: E402

MODULES = {"tensorflow": "tf_workloads", "jax": "jax_workloads", "torch": "torch_workloads"}
DEFAULT_OUT = os.path.join(cm.REPO, "bench", "results", "peers.json")
MODELS_OUT = os.path.join(cm.REPO, "bench", "results", "peers-models.json")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def _save(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def worker(framework, partial, only, min_time, models=False):
    """Runs one framework's cases in this process; the record is rewritten to
    `partial` after every case so a time-out keeps what finished."""
    mod = importlib.import_module(MODULES[framework])
    threads = cm.cores()
    doc = {"framework": framework, "version": None, "machine": cm.machine(),
           "load_start": cm.kb.machine_load(), "results": [], "skipped": []}
    try:
        version, notes = mod.configure(threads)
    except Exception as e:  # noqa: BLE001 - an unusable framework is reported, not fatal
        doc["error"] = f"{type(e).__name__}: {e}"
        _save(partial, doc)
        log(f"{framework}: not available: {doc['error']}")
        return 0
    doc["version"] = version
    doc.update(notes)
    _save(partial, doc)
    log(f"{framework} {version} ({notes.get('threads', '')})")
    only = only or (mc.DEFAULT_NAMES if models else None)
    for case in (mod.model_cases() if models else mod.cases()):
        if only and case.name not in only:
            continue
        if isinstance(case, cm.Skip):
            doc["skipped"].append(case.to_dict())
            log(f"  {case.name} [{case.mode}]: not available: {case.reason}")
            _save(partial, doc)
            continue
        start = time.perf_counter()
        try:
            rows = cm.run_case(case, min_time)
        except Exception as e:  # noqa: BLE001 - one failing case must not end the run
            reason = f"failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            doc["skipped"].append({"name": case.name, "mode": case.mode, "reason": reason})
            log(f"  {case.name} [{case.mode}]: {reason}")
            traceback.print_exc(limit=3)
        else:
            doc["results"] += rows
            r = rows[0]
            log(f"  {case.name} [{case.mode}]: median {cm.kb.format_seconds(r['median_s'])}, "
                f"first call {cm.kb.format_seconds(r['first_call_s'])} "
                f"({time.perf_counter() - start:.1f} s)")
        doc["load_end"] = cm.kb.machine_load()
        _save(partial, doc)
    return 0


def run_framework(framework, only, min_time, timeout, models=False):
    """Runs `worker` in a child process; returns its record (with "error" when
    the child failed or ran out of time)."""
    fd, partial = tempfile.mkstemp(prefix=f"peers-{framework}-", suffix=".json")
    os.close(fd)
    os.unlink(partial)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", framework,
           "--partial", partial, "--min-time", str(min_time)]
    if only:
        cmd += ["--only", *only]
    if models:
        cmd.append("--models")
    start = time.perf_counter()
    error = None
    try:
        proc = subprocess.run(cmd, timeout=timeout)
        if proc.returncode != 0:
            error = f"worker exited with status {proc.returncode}"
    except subprocess.TimeoutExpired:
        error = f"timed out after {timeout} s; rows that finished are kept"
    doc = {"framework": framework, "version": None, "results": [], "skipped": []}
    if os.path.exists(partial):
        with open(partial) as f:
            doc = json.load(f)
        os.unlink(partial)
    if error:
        doc["error"] = error if "error" not in doc else f"{doc['error']}; {error}"
    doc["wall_s"] = round(time.perf_counter() - start, 1)
    return doc


def summary(frameworks):
    """A plain table of every framework's medians."""
    f = cm.kb.format_seconds
    head = ["workload", "mode"] + [d["framework"] for d in frameworks]
    keys = []
    for d in frameworks:
        for r in d["results"]:
            if (r["name"], r["mode"]) not in keys:
                keys.append((r["name"], r["mode"]))
    order = {n: i for i, n in enumerate(cm.ORDER)}
    mode_order = {"eager": 0, "function": 1, "jit": 2}
    keys.sort(key=lambda k: (order.get(k[0], len(order)), mode_order.get(k[1], 3)))
    rows = []
    for name, mode in keys:
        row = [name, mode]
        for d in frameworks:
            r = next((r for r in d["results"] if r["name"] == name and r["mode"] == mode), None)
            row.append(f(r["median_s"]) if r else "-")
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(head, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frameworks", nargs="*", default=list(MODULES), choices=list(MODULES))
    p.add_argument("--only", nargs="*", help="workload names to run (default: all)")
    p.add_argument("--min-time", type=float, default=0.5,
                   help="seconds of samples per workload and mode (default 0.5)")
    p.add_argument("--timeout", type=float, default=420,
                   help="seconds allowed to each framework (default 420)")
    p.add_argument("--out", help="JSON file to write (default bench/results/peers.json, "
                                 "peers-models.json with --models)")
    p.add_argument("--models", action="store_true",
                   help="the model workloads instead of the seed ones (also implied by "
                        "--only with a model name)")
    p.add_argument("--busy", type=int, default=0, metavar="N",
                   help="time with N processes spinning on the CPUs (make bench-peers-busy)")
    p.add_argument("--worker", choices=list(MODULES), help=argparse.SUPPRESS)
    p.add_argument("--partial", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.only:
        bad = [n for n in args.only if n not in cm.ORDER]
        if bad:
            p.error(f"unknown workload(s) {bad}; known: {cm.ORDER}")
    args.models = args.models or any(n in mc.NAMES for n in args.only or [])
    args.out = args.out or (MODELS_OUT if args.models else DEFAULT_OUT)
    if args.worker:
        return worker(args.worker, args.partial, args.only, args.min_time, args.models)

    start = time.perf_counter()
    frameworks = []
    for fw in args.frameworks:
        log(f"== {fw}" + (f" (busy: {args.busy} processes spinning)" if args.busy else ""))
        with cm.kb.Spinners(args.busy):
            frameworks.append(run_framework(fw, args.only, args.min_time, args.timeout,
                                            args.models))
    total = time.perf_counter() - start

    print()
    print(summary(frameworks))
    print()
    for d in frameworks:
        for s in d.get("skipped", []):
            print(f"{d['framework']}: {s['name']} [{s['mode']}]: {s['reason']}")
        if d.get("error"):
            print(f"{d['framework']}: {d['error']}")
        for r in d["results"]:
            if "warning" in r["meta"]:
                print(f"warning: {d['framework']}: {r['name']} [{r['mode']}]: "
                      f"{r['meta']['warning']}")
    print(f"total {total:.1f} s")

    doc = {"frameworks": frameworks,
           "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "command": " ".join([os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
           "machine": cm.machine(), "busy_processes": args.busy}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    _save(args.out, doc)
    print(f"wrote {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
