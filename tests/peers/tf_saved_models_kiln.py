"""kiln's side of tests/peers/check_tf_saved_models.py (run in .venv): loads
an export TensorFlow wrote, runs its input, prints JSON with the largest
difference from TensorFlow's output and the load + first call time."""
import json
import sys
import time

t0 = time.perf_counter()
import numpy as np  # noqa: E402

import kiln as tf  # noqa: E402


def main(path):
    start = time.perf_counter()
    m = tf.saved_model.load(path)
    x = np.load(path + ".x.npy")
    y = m.serve(tf.constant(x)).numpy()
    first = time.perf_counter() - start
    want = np.load(path + ".y.npy")
    print(json.dumps({"max_diff": float(np.abs(y - want).max()),
                      "max_abs": float(np.abs(want).max()), "first_call_s": first}))


if __name__ == "__main__":
    main(sys.argv[1])
