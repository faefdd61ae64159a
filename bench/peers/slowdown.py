"""make bench-peers-busy: how much each framework slows down on a busy machine.

Reads the idle and busy runs of kiln (bench/results/demo.json, demo-busy.json) and of
the peers (peers.json, peers-busy.json), prints per workload and mode each framework's
median idle, busy (N processes spinning on the cores) and the slowdown busy/idle, and
writes bench/results/slowdown.json. Standard library only (runs in either venv).

    python bench/peers/slowdown.py [--results DIR]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare as cp  # noqa: E402


def _read(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _frameworks(kiln_doc, peers_doc):
    """{framework: {(name, mode): median seconds}} of one run (idle or busy)."""
    out = {}
    if kiln_doc:
        out["kiln"] = cp.index(kiln_doc["results"])
    for d in (peers_doc or {}).get("frameworks", []):
        if d.get("results"):
            out[d["framework"]] = cp.index(d["results"])
    return out


def slowdowns(idle, busy):
    """Rows {name, mode, framework: {idle, busy, slowdown}} for keys measured both ways."""
    keys = cp._keys(list(idle.values()))
    rows = []
    for name, mode in keys:
        row = {"name": name, "mode": mode}
        for fw in idle:
            a, b = idle[fw].get((name, mode)), busy.get(fw, {}).get((name, mode))
            if a is not None and b is not None:
                row[fw] = {"idle_s": a, "busy_s": b, "slowdown": cp.ratio(b, a)}
        if len(row) > 2:
            rows.append(row)
    return rows


def table(rows, frameworks):
    head = ["workload", "mode"] + [f"{fw} idle / busy / x" for fw in frameworks]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in rows:
        cells = [r["name"], r["mode"]]
        for fw in frameworks:
            c = r.get(fw)
            cells.append(f"{cp.fmt(c['idle_s'])} / {cp.fmt(c['busy_s'])} / {c['slowdown']:.2f}x"
                         if c else cp.MISSING)
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default=cp.RESULTS)
    args = p.parse_args(argv)
    r = lambda f: _read(os.path.join(args.results, f))  # noqa: E731
    idle = _frameworks(r("demo.json"), r("peers.json"))
    busy_kiln, busy_peers = r("demo-busy.json"), r("peers-busy.json")
    busy = _frameworks(busy_kiln, busy_peers)
    if not idle or not busy:
        print("slowdown: run make bench-peers-busy (idle and busy results needed)", file=sys.stderr)
        return 1
    spinners = (busy_kiln or busy_peers or {}).get("busy_processes")
    rows = slowdowns(idle, busy)
    frameworks = list(idle)
    print(f"busy machine: {spinners} processes spinning on the cores; "
          "median idle / busy / slowdown busy/idle")
    print(table(rows, frameworks))
    out = os.path.join(args.results, "slowdown.json")
    with open(out, "w") as f:
        json.dump({"busy_processes": spinners, "rows": rows}, f, indent=1)
    print(f"\nwrote {os.path.relpath(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
