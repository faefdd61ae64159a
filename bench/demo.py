"""make demo: the seed workloads, eager vs function, timed with kiln.benchmark.

Prints one table (workload, mode, median, spread, speed-up vs eager, first
call), then writes bench/results/demo.json and bench/results/demo.png.

    .venv/bin/python bench/demo.py [--only NAME ...] [--min-time S] [--json-only] [--busy N]
        [--models]

The machine's load is recorded (load_start, load_end) and a busy machine is warned
about. --busy N times everything with N processes spinning on the CPUs (the busy
machine of `make bench-peers-busy`) and writes demo-busy.json instead.
--models times the model workloads (bench/model_workloads.py: lstm2, transformer4,
ResNet50, MobileNetV3Small; function and jit) instead, into demo-models.{json,png}.
"""
import argparse
import datetime
import json
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))  # model_common: the --models names

import kiln as tf  # noqa: E402
from kiln import benchmark as kb  # noqa: E402
import model_common as mc  # noqa: E402
import workloads as wl  # noqa: E402

RESULTS = os.path.join(HERE, "results")
JIT_NOTE = ("jit rows: kiln.function(jit_compile=True) — fused elementwise clusters compiled "
            "to C++, with reductions over the last dims, reductions over leading, middle or all "
            "dims folded in, slices and transposes read in place (inner-dim swaps in tiles), "
            "views of computed values moved onto their inputs, sibling readers of one value in one "
            "kernel, complex values, MatMul products "
            "computed inside their epilogue's kernel, convolution epilogues compiled as kernels "
            "of their own, and cond/while bodies (docs/JIT.md)")


def with_jit(modes):
    """Adds a "jit" mode beside each kiln.function: the same Python function with
    jit_compile=True (first call = trace + compile, or a disk-cache hit)."""
    fn = modes.get("function", (None,))[0]
    if hasattr(fn, "_python_function"):
        jit = tf.function(fn._python_function, jit_compile=True,
                          input_signature=fn.input_signature)
        modes["jit"] = (jit, modes["function"][1])
    return modes


def run_workload(w, min_time, log):
    if w.unavailable:
        log(f"  {w.name}: skipped — {w.unavailable}")
        return [], {"name": w.name, "reason": w.unavailable}
    start = time.perf_counter()
    modes = with_jit(w.build())
    out = []
    for mode, (fn, args) in modes.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", kb.ConstantResultWarning)
            r = kb.benchmark(fn, *args, name=w.name, mode=mode, min_time=min_time,
                             min_runs=w.min_runs, meta={"title": w.title})
        for c in caught:
            if issubclass(c.category, kb.ConstantResultWarning):
                r.meta["warning"] = str(c.message)
        out.append(r)
    log(f"  {w.name}: {time.perf_counter() - start:.1f} s")
    return out, None


def speedups(results):
    eager = {r.name: r.median for r in results if r.mode == "eager"}
    return {(r.name, r.mode): (eager[r.name] / r.median if r.name in eager else None)
            for r in results}


def table(results, skipped):
    f = kb.format_seconds
    sp = speedups(results)
    head = ["workload", "mode", "median", "IQR", "mean ± std", "runs", "vs eager", "first call"]
    rows = []
    for r in results:
        s = sp[(r.name, r.mode)]
        rows.append([r.name, r.mode, f(r.median), f(r.iqr), f"{f(r.mean)} ± {f(r.std)}",
                     f"{r.runs}x{r.number}",
                     "-" if s is None or r.mode == "eager" else f"{s:.2f}x",
                     f(r.first_call_s)])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(head, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    lines += [f"{s['name']}: not run — {s['reason']}" for s in skipped]
    return "\n".join(lines)


def write_png(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for r in results:
        if r.name not in names:
            names.append(r.name)
    modes = ["eager", "function", "jit"]
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(names) + 1.5))
    height = 0.27
    for i, mode in enumerate(modes):
        vals = [next((r.median for r in results if r.name == n and r.mode == mode), 0)
                for n in names]
        errs = [next((r.iqr / 2 for r in results if r.name == n and r.mode == mode), 0)
                for n in names]
        pos = [k + (i - 1) * height for k in range(len(names))]
        ax.barh(pos, vals, height, xerr=errs, label=mode)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("median seconds per call (log scale; error bar = IQR/2)")
    ax.set_title("kiln: eager vs function vs jit_compile (make demo)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def select(args, parser):
    """The workloads to time: the seed ones, or the model ones with --models
    (or an --only naming one); sets args.models."""
    chosen = wl.WORKLOADS + wl.MICRO
    if args.models or any(n in mc.NAMES for n in args.only or []):
        import model_workloads
        chosen, args.models = model_workloads.MODELS, True
        if not args.only:
            chosen = [w for w in chosen if w.name in mc.DEFAULT_NAMES]
    if args.only:
        known = {w.name for w in chosen}
        bad = [n for n in args.only if n not in known]
        if bad:
            parser.error(f"unknown workload(s) {bad}; known: {sorted(known)}")
        chosen = [w for w in chosen if w.name in args.only]
    return chosen


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", help="workload names to run")
    p.add_argument("--min-time", type=float, default=1.0,
                   help="seconds of samples per workload and mode (default 1)")
    p.add_argument("--json-only", action="store_true", help="write the JSON, skip the PNG")
    p.add_argument("--out", default=RESULTS, help="results folder")
    p.add_argument("--models", action="store_true",
                   help="the model workloads instead of the seed ones (minutes; also implied "
                        "by --only with a model name)")
    p.add_argument("--busy", type=int, default=0, metavar="N",
                   help="time with N processes spinning on the CPUs (writes demo-busy.json)")
    args = p.parse_args(argv)

    chosen = select(args, p)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    log(f"kiln {tf.__version__}: timing {len(chosen)} workloads "
        f"(min {args.min_time:g} s of samples each mode)")
    load_start = kb.machine_load()
    note = None if args.busy else kb.busy_note(load_start)
    if note:
        log(f"warning: {note}")
    start = time.perf_counter()
    results, skipped = [], []
    with kb.Spinners(args.busy):
        for w in chosen:
            rs, skip = run_workload(w, args.min_time, log)
            results += rs
            if skip:
                skipped.append(skip)
    total = time.perf_counter() - start

    print()
    print(table(results, skipped))
    print()
    print(JIT_NOTE)
    for r in results:
        if "warning" in r.meta:
            print(f"warning: {r.name} [{r.mode}]: {r.meta['warning']}")
    if note:
        print(f"warning: {note}")
    if args.busy:
        print(f"busy machine: {args.busy} processes spinning on {os.cpu_count()} cores")
    print(f"total {total:.1f} s")

    os.makedirs(args.out, exist_ok=True)
    sp = speedups(results)
    doc = {"framework": "kiln", "version": tf.__version__,
           "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "command": " ".join([os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
           "machine": kb.machine_info(), "jit": JIT_NOTE, "busy_processes": args.busy,
           "load_start": load_start, "load_end": kb.machine_load(), "busy_note": note,
           "results": [dict(r.to_dict(), speedup_vs_eager=sp[(r.name, r.mode)])
                       for r in results],
           "skipped": skipped}
    stem = "demo-models" if args.models else "demo"
    json_path = os.path.join(args.out, f"{stem}-busy.json" if args.busy else f"{stem}.json")
    with open(json_path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(json_path)}")
    if not args.json_only and not args.busy:
        png = os.path.join(args.out, f"{stem}.png")
        shown = {w.name for w in (chosen if args.models else wl.WORKLOADS)}
        write_png([r for r in results if r.name in shown], png)
        print(f"wrote {os.path.relpath(png)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
