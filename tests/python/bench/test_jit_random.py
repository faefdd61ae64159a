"""bench/jit_random.py: the programs it draws are valid and reproducible, and a short run
writes its summary (timings themselves are not checked: that is the benchmark's job)."""
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import jit_random  # noqa: E402


def test_programs_are_reproducible_and_cover_the_ranges():
    descs = []
    for seed in (40, 40):
        rng = np.random.default_rng(seed)
        descs.append([jit_random.make_program(rng, i)[2] for i in range(30)])
    assert descs[0] == descs[1]
    depths = [d["depth"] for d in descs[0]]
    assert min(depths) >= 1 and max(depths) <= 40
    assert any(d["reductions"] for d in descs[0]) and any(not d["reductions"] for d in descs[0])
    assert {tuple(d["shape"]) for d in descs[0]} <= set(jit_random.SHAPES)


def test_a_short_run_writes_its_summary(tmp_path):
    out = tmp_path / "r.json"
    summary = jit_random.main(["--programs", "2", "--rounds", "1", "--quiet", "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["summary"]["programs"] == 2 and len(data["programs"]) == 2
    assert summary["worst_ratio"] == max(p["ratio"] for p in data["programs"]) > 0
    for p in data["programs"]:
        assert p["graph_s"] > 0 and p["jit_s"] > 0 and p["first_jit_call_s"] > 0
