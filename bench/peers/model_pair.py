"""kiln beside TensorFlow, PyTorch and JAX on the model workloads (issue 41),
alternated in one process.

Separate runs of bench/demo.py --models and run_peers.py --models on a shared
2-core VM see different load. Here every framework runs in the peers' Python
(kiln imported from .venv as bench/peers/eager_pair.py does), and each round
times every side in turn (kiln function, kiln jit, TF graph, TF XLA, PyTorch,
JAX), so load that comes and goes hits both sides of a ratio alike. Ratios are
taken per round; the table gives their median and [min-max].

    .venv-peers/bin/python bench/peers/model_pair.py [--only lstm2 ...] [--rounds 5]
        [--round-time 0.5] [--frameworks tensorflow torch jax]
"""
import argparse
import datetime
import importlib
import json
import os
import statistics as st
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common as cm  # noqa: E402
import eager_pair  # noqa: E402
import model_common as mc  # noqa: E402

PEERS = {"tensorflow": "tf_workloads", "torch": "torch_workloads", "jax": "jax_workloads"}
LABEL = {"tensorflow": "tf", "torch": "torch", "jax": "jax"}
GOALS = [("kiln function", "tf function", 1.0), ("kiln jit", "tf function", 1.0),
         ("kiln function", "torch eager", 1.5), ("kiln jit", "torch eager", 1.5)]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def kiln_sides(name):
    """[(label, build)] of kiln's function and jit for `name`."""
    sys.path.insert(0, os.path.join(cm.REPO, "bench"))
    import model_workloads as kmw
    tf = kmw.tf
    w = next(w for w in kmw.MODELS if w.name == name)

    def build(mode):
        fn, args = w.build()["function"]
        return (fn if mode == "function" else
                tf.function(fn._python_function, jit_compile=True)), args
    return [("kiln function", lambda: build("function")), ("kiln jit", lambda: build("jit"))]


def peer_sides(name, mods):
    """[(label, build)] of every peer case of `name` (copies in also_as left out)."""
    return [(f"{LABEL[fw]} {c.mode}", c.build) for fw, mod in mods.items()
            for c in mod.model_cases() if c.name == name and isinstance(c, cm.Case)]


def prepare(label, build):
    """(fn, args, first call s, host output) or None when the side cannot run."""
    try:
        fn, args = build()
        t = time.perf_counter()
        out = cm.kb.to_host(fn(*args))
        return fn, args, time.perf_counter() - t, out
    except Exception as e:  # noqa: BLE001 - a side that cannot run is reported
        log(f"  {label}: not run: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        traceback.print_exc(limit=2)
        return None


def per_call(fn, args, calls):
    t = time.perf_counter()
    for _ in range(calls):
        cm.kb.materialize(fn(*args))
    return (time.perf_counter() - t) / calls


def agreement(name, outs):
    """{label: relative error} against NumPy (lstm2, transformer4) or kiln function."""
    if name in ("lstm2", "transformer4"):
        ref = mc.reference(name)[1]
    else:
        ref = outs["kiln function"][0]
    return {k: mc.max_error(v[0], ref) for k, v in outs.items()}


def measure(ready, rounds, round_time, pause=0.1):
    """Per-round per-call seconds of every side, alternating sides each round."""
    calls = {}
    for label, (fn, args, _, _) in ready.items():
        per_call(fn, args, 2)  # warm-up beyond the first call
        calls[label] = max(1, round(round_time / per_call(fn, args, 1)))
    times = {label: [] for label in ready}
    for _ in range(rounds):
        for label, (fn, args, _, _) in ready.items():
            time.sleep(pause)  # other frameworks' spinning threads go idle
            times[label].append(per_call(fn, args, calls[label]))
    return times, calls


def summarize(times):
    def row(v):
        return {"median": st.median(v), "min": min(v), "max": max(v)}
    ratios = {}
    for a, b, target in GOALS:
        if a in times and b in times:
            r = [x / y for x, y in zip(times[a], times[b])]
            ratios[f"{a} / {b}"] = dict(row(r), target=target, met=st.median(r) < target)
    return {k: row(v) for k, v in times.items()}, ratios


def run_model(name, mods, rounds, round_time):
    log(f"== {name}: {mc.TITLES[name]}")
    ready = {}
    for label, build in kiln_sides(name) + peer_sides(name, mods):
        got = prepare(label, build)
        if got is not None:
            ready[label] = got
            log(f"  {label}: first call {cm.kb.format_seconds(got[2])}")
    errors = agreement(name, {k: v[3] for k, v in ready.items()})
    times, calls = measure(ready, rounds, round_time)
    sides, ratios = summarize(times)
    for label in sides:
        sides[label].update(first_call=ready[label][2], calls_per_round=calls[label],
                            rel_error=errors[label])
    return {"sides": sides, "ratios": ratios}


def print_model(name, res):
    f = cm.kb.format_seconds
    print(f"\n{name}: {mc.TITLES[name]}")
    for label, s in res["sides"].items():
        print(f"  {label:15s} {f(s['median']):>9s} [{f(s['min'])}-{f(s['max'])}]  "
              f"first call {f(s['first_call']):>9s}  {s['calls_per_round']} calls/round  "
              f"rel. error {s['rel_error']:.1g}")
    for k, r in res["ratios"].items():
        print(f"  {k:30s} {r['median']:.2f} [{r['min']:.2f}-{r['max']:.2f}]  "
              f"goal < {r['target']:g}: {'met' if r['met'] else 'NOT met'}")


def configure(frameworks, threads):
    mods = {}
    for fw in frameworks:
        mod = importlib.import_module(PEERS[fw])
        version, _ = mod.configure(threads)
        log(f"{fw} {version}")
        mods[fw] = mod
    return mods


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=mc.NAMES, choices=mc.NAMES)
    ap.add_argument("--frameworks", nargs="*", default=list(PEERS), choices=list(PEERS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--round-time", type=float, default=0.5, help="seconds per side per round")
    ap.add_argument("--kiln-python", default=os.path.join(cm.REPO, ".venv", "bin", "python"))
    ap.add_argument("--out", default=os.path.join(cm.REPO, "bench", "results",
                                                  "model_pair.json"))
    a = ap.parse_args(argv)
    kiln = eager_pair.import_kiln(a.kiln_python)
    mods = configure(a.frameworks, cm.cores())
    doc = {"kiln": kiln.__version__, "date": datetime.datetime.now().isoformat(timespec="seconds"),
           "command": " ".join([os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
           "machine": cm.machine(), "load_start": cm.kb.machine_load(), "results": {}}
    for name in a.only:
        doc["results"][name] = run_model(name, mods, a.rounds, a.round_time)
        print_model(name, doc["results"][name])
    doc["load_end"] = cm.kb.machine_load()
    print(f"\nload (1, 5, 15 min): start {doc['load_start']}, end {doc['load_end']}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(doc, fh, indent=1)
    print(f"wrote {os.path.relpath(a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
