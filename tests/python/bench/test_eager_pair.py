"""bench/peers/eager_pair.py (make bench-eager-pair): kiln imported through the linked
package, and the per-round record. PyTorch itself is only in .venv-peers."""
import os
import subprocess
import sys
import sysconfig

from by_path import REPO, load

ep = load("bench/peers/eager_pair.py", "peers_eager_pair")


def test_kiln_imports_through_the_linked_package():
    # A fresh interpreter imports kiln the way the peers' Python does: from a temporary
    # package of links to this environment's kiln. -S keeps this environment's import
    # hook for kiln (an editable install) out; its site-packages still gives numpy.
    code = ("import sys; sys.path.append(sys.argv[2]); "
            "sys.path.insert(0, 'bench/peers'); import eager_pair as ep; "
            "k = ep.import_kiln(sys.argv[1]); import os; "
            "print(os.path.dirname(os.path.dirname(k.__file__)) == sys.path[0], "
            "os.path.islink(k.__file__), k.add(k.constant([1.]), 2.).numpy())")
    site = sysconfig.get_paths()["purelib"]
    out = subprocess.run([sys.executable, "-S", "-c", code, sys.executable, site], cwd=REPO,
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "[3.]"]


def test_rounds_alternate_and_ratios_are_per_round():
    calls = []
    work = lambda tag: (lambda: calls.append(tag), ())
    res = ep.measure(work("k"), work("t"), rounds=4, calls=3)
    # warm-up (calls // 2 each), then rounds of `calls` alternating kiln, torch
    assert calls == ["k", "t"] + (["k"] * 3 + ["t"] * 3) * 4
    for side in ("kiln", "torch", "kiln_over_torch"):
        r = res[side]
        assert r["min"] <= r["median"] and r["q1"] <= r["median"] <= r["q3"]
        assert r["min"] > 0

