"""kiln against TensorFlow, JAX and PyTorch: ratios kiln/peer per workload and mode.

Reads bench/results/demo.json (kiln, written by bench/demo.py) and
bench/results/peers.json (bench/peers/run_peers.py), prints one table of
medians with the ratio kiln/peer beside each peer (below 1: kiln is faster),
then the issue's goals with their measured values, and writes
bench/results/compare.json. Uses the standard library only, so it runs in
either environment.

    python bench/peers/compare.py [--kiln FILE] [--peers FILE] [--out FILE]
"""
import argparse
import datetime
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(REPO, "bench", "results")

ORDER = ["charunpack_64x400", "charunpack_8192x400", "conv2d_seed002", "while_tanh",
         "dynamic_rnn", "chain100", "efficientnetv2s", "eager_add_overhead",
         "function_call_overhead", "trace_1000_ops"]
MODEL_NAMES = ["lstm2", "transformer4", "resnet50_224", "mobilenetv3_224"]  # --models runs
ORDER += MODEL_NAMES
MODES = ["eager", "function", "jit"]
MISSING = "-"


def _format_seconds():
    # The harness's formatter, loaded by path (it imports nothing from kiln).
    path = os.path.join(REPO, "python", "kiln", "benchmark.py")
    spec = importlib.util.spec_from_file_location("kiln_benchmark", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.format_seconds


fmt = _format_seconds()


def index(results):
    """{(name, mode): median seconds} of a framework's result list."""
    return {(r["name"], r["mode"]): r["median_s"] for r in results}


def ratio(a, b):
    """a / b, or None when either is missing or b is not positive."""
    if a is None or b is None or b <= 0:
        return None
    return a / b


def _keys(indexes):
    keys = set()
    for idx in indexes:
        keys.update(idx)
    rank = {n: i for i, n in enumerate(ORDER)}
    mrank = {m: i for i, m in enumerate(MODES)}
    return sorted(keys, key=lambda k: (rank.get(k[0], len(rank)), k[0],
                                       mrank.get(k[1], len(mrank)), k[1]))


def goals(kiln, peers):
    """Issue 5 section 4: each goal with its measured value and whether it is met
    (None when a number is missing). kiln and peers are {framework: index}."""
    tf, jax = peers.get("tensorflow", {}), peers.get("jax", {})
    k = kiln.get

    def speedup(idx, name):
        return ratio(idx.get((name, "eager")), idx.get((name, "function")))

    specs = [
        ("function-call overhead <= 1/10 of TensorFlow's tf.function",
         ratio(k(("function_call_overhead", "function")),
               tf.get(("function_call_overhead", "function"))), "<=", 0.1, "kiln/tf"),
        ("function-call overhead <= 1/2 of jax.jit's",
         ratio(k(("function_call_overhead", "function")),
               jax.get(("function_call_overhead", "jit"))), "<=", 0.5, "kiln/jax"),
        ("eager op overhead <= 1/3 of TensorFlow eager",
         ratio(k(("eager_add_overhead", "eager")), tf.get(("eager_add_overhead", "eager"))),
         "<=", 1 / 3, "kiln/tf"),
        ("CharUnpack [8192, 400] as a function faster than TensorFlow's graph mode",
         ratio(k(("charunpack_8192x400", "function")),
               tf.get(("charunpack_8192x400", "function"))), "<", 1.0, "kiln/tf"),
        ("chain100 graph speed-up over eager >= TensorFlow's",
         ratio(speedup(kiln, "chain100"), speedup(tf, "chain100")), ">=", 1.0,
         "kiln speed-up / tf speed-up"),
    ]
    return _evaluate(specs + model_goals(kiln, peers))


def model_goals(kiln, peers):
    """Issue 41's goals for the model rows kiln has: function and jit faster
    than TensorFlow's graph mode; the LSTM within 1.5x of PyTorch's nn.LSTM."""
    tf, torch = peers.get("tensorflow", {}), peers.get("torch", {})
    specs = []
    for name in MODEL_NAMES:
        for mode in MODES[1:]:
            if (name, mode) in kiln:
                specs.append((f"{name}: kiln {mode} faster than TensorFlow's graph mode "
                              "(issue 41)", ratio(kiln[(name, mode)], tf.get((name, "function"))),
                              "<", 1.0, f"kiln {mode}/tf function"))
    for mode in MODES[1:]:
        if ("lstm2", mode) in kiln:
            specs.append((f"lstm2: kiln {mode} within 1.5x of PyTorch's nn.LSTM (issue 41)",
                          ratio(kiln[("lstm2", mode)], torch.get(("lstm2", "eager"))),
                          "<=", 1.5, f"kiln {mode}/torch eager"))
    return specs


def _evaluate(specs):
    out = []
    for text, value, op, target, measure in specs:
        met = None
        if value is not None:
            met = {"<=": value <= target, "<": value < target, ">=": value >= target}[op]
        out.append({"goal": text, "measure": measure, "value": value,
                    "target": f"{op} {target:.3g}", "met": met})
    return out


# Peers' trace-only timings (in the meta of their trace_1000_ops rows): what
# kiln's row times when it traces without running.
TRACE_ONLY = {"get_concrete_function_median_s": "tf.function(f).get_concrete_function(spec)",
              "lower_median_s": "jax.jit(f).lower(x)"}


def _trace_notes(kiln, frameworks):
    notes = []
    k = kiln.get(("trace_1000_ops", "function"))
    for d in frameworks:
        for r in d.get("results", []):
            if r["name"] != "trace_1000_ops" or r["meta"].get("same_as"):
                continue
            for key, what in TRACE_ONLY.items():
                t = r["meta"].get(key)
                if t is not None:
                    rr = ratio(k, t)
                    notes.append(f"{d['framework']}: trace_1000_ops, {what} alone: {fmt(t)}"
                                 + ("" if rr is None else f" (kiln/{d['framework']} "
                                    f"{_cell_ratio(rr)})"))
    return notes


def _busy(record):
    """A warning when the machine's 1-minute load exceeded its cores during a
    framework's run (other work competed for the CPU), else None."""
    cores = (record.get("machine") or {}).get("cores")
    loads = [x[0] for x in (record.get("load_start"), record.get("load_end")) if x]
    if not cores or not loads or max(loads) <= cores:
        return None
    return (f"the machine was busy (1-minute load up to {max(loads):.1f} on {cores} cores): "
            "its timings may be noisy")


def compare(kiln_doc, peers_doc):
    """The comparison record: rows of medians and ratios, goals, sources."""
    kiln = index(kiln_doc.get("results", [])) if kiln_doc else {}
    frameworks = peers_doc.get("frameworks", []) if peers_doc else []
    peers = {d["framework"]: index(d.get("results", [])) for d in frameworks}
    names = [d["framework"] for d in frameworks]
    rows = []
    for key in _keys([kiln] + [peers[n] for n in names]):
        row = {"name": key[0], "mode": key[1], "kiln_s": kiln.get(key), "peers": {}}
        for n in names:
            p = peers[n].get(key)
            row["peers"][n] = {"median_s": p, "ratio": ratio(kiln.get(key), p)}
        rows.append(row)
    notes = []
    for s in (kiln_doc or {}).get("skipped", []):
        notes.append(f"kiln: {s['name']}" + (f" [{s['mode']}]" if s.get("mode") else "")
                     + f": {s['reason']}")
    if kiln_doc and kiln_doc.get("jit"):
        notes.append(f"kiln: {kiln_doc['jit']}")
    for d in frameworks:
        grouped = {}  # (name, reason) -> modes, so one reason is printed once
        for s in d.get("skipped", []):
            grouped.setdefault((s["name"], s["reason"]), []).append(s["mode"])
        for (name, reason), modes in grouped.items():
            notes.append(f"{d['framework']}: {name} [{', '.join(modes)}]: {reason}")
        if d.get("error"):
            notes.append(f"{d['framework']}: {d['error']}")
        busy = _busy(d)
        if busy:
            notes.append(f"{d['framework']}: {busy}")
    notes += _trace_notes(kiln, frameworks)
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "kiln": {k: (kiln_doc or {}).get(k) for k in ("version", "date", "command", "machine")},
        "peers": {"date": (peers_doc or {}).get("date"),
                  "command": (peers_doc or {}).get("command"),
                  "frameworks": [{"framework": d["framework"], "version": d.get("version"),
                                  "error": d.get("error")} for d in frameworks]},
        "frameworks": names, "rows": rows, "goals": goals(kiln, peers), "notes": notes}


def _cell_ratio(r):
    if r is None:
        return MISSING
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.2g}x"


def _cell_time(t):
    return MISSING if t is None else fmt(t)


def table(doc):
    """The comparison as aligned text."""
    head = ["workload", "mode", "kiln"]
    for n in doc["frameworks"]:
        head += [n, f"kiln/{n}"]
    rows = []
    for r in doc["rows"]:
        row = [r["name"], r["mode"], _cell_time(r["kiln_s"])]
        for n in doc["frameworks"]:
            p = r["peers"][n]
            row += [_cell_time(p["median_s"]), _cell_ratio(p["ratio"])]
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(head, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def goals_text(doc):
    lines = []
    for g in doc["goals"]:
        state = {True: "met", False: "NOT met", None: "not measured"}[g["met"]]
        value = MISSING if g["value"] is None else f"{g['value']:.3g}"
        lines.append(f"  [{state}] {g['goal']}: {g['measure']} = {value} (target {g['target']})")
    return "\n".join(lines)


def _load(path, what):
    if not os.path.exists(path):
        print(f"compare: {what} results not found at {os.path.relpath(path)}", file=sys.stderr)
        return None
    with open(path) as f:
        return json.load(f)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln", default=os.path.join(RESULTS, "demo.json"))
    p.add_argument("--peers", default=os.path.join(RESULTS, "peers.json"))
    p.add_argument("--out", default=os.path.join(RESULTS, "compare.json"))
    args = p.parse_args(argv)
    kiln_doc = _load(args.kiln, "kiln (bench/demo.py)")
    peers_doc = _load(args.peers, "peers (bench/peers/run_peers.py)")
    if kiln_doc is None and peers_doc is None:
        return 1
    doc = compare(kiln_doc, peers_doc)
    versions = ", ".join(f"{d['framework']} {d['version'] or '(not run)'}"
                         for d in doc["peers"]["frameworks"])
    print(f"kiln {doc['kiln']['version'] or '(not run)'} vs {versions or 'no peers'}")
    print("median seconds per call; kiln/peer below 1 means kiln is faster; "
          f"{MISSING} = not measured")
    print()
    print(table(doc))
    print()
    print("goals (issue 5 section 4; issue 41 for the model rows):")
    print(goals_text(doc))
    if doc["notes"]:
        print()
        print("notes:")
        for n in doc["notes"]:
            print(f"  {n}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nwrote {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
