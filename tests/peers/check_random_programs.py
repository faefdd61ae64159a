"""Generated programs through SavedModels, both ways (run in .venv-peers):
kiln exports random programs (tests/peers/random_programs.py) that TensorFlow
2.21 loads and runs, and TensorFlow exports ones kiln loads and runs; each
output (the restored function's and the serving signature's, a dict in both)
must equal the exporter's within 1e-5 of its scale.

    .venv-peers/bin/python tests/peers/check_random_programs.py [--programs N] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KILN_PY = os.path.join(HERE, "..", "..", ".venv", "bin", "python")
SCRIPT = os.path.join(HERE, "random_programs.py")


def run(python, framework, what, out, seeds):
    r = subprocess.run([python, SCRIPT, framework, what, out] + [str(s) for s in seeds],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{framework} {what} failed:\n{r.stderr[-3000:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def report(direction, rows):
    bad = [r for r in rows if "error" in r or r["max_diff"] > 1e-5 * r["scale"]]
    worst = max((r["max_diff"] / r["scale"] for r in rows if "error" not in r), default=0.0)
    print(f"{direction}: {len(rows) - len(bad)}/{len(rows)} programs match "
          f"(worst relative difference {worst:.1e})")
    for r in bad:
        print(f"  FAIL program {r['seed']}: {r.get('error') or r['max_diff']}")
    return len(bad)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--programs", type=int, default=40)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="kiln-random-programs-")
    seeds = list(range(a.programs))
    run(KILN_PY, "kiln", "export", os.path.join(out, "kiln"), seeds)
    bad = report("kiln -> TensorFlow",
                 run(sys.executable, "tensorflow", "check", os.path.join(out, "kiln"), seeds))
    run(sys.executable, "tensorflow", "export", os.path.join(out, "tf"), seeds)
    bad += report("TensorFlow -> kiln",
                  run(KILN_PY, "kiln", "check", os.path.join(out, "tf"), seeds))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
