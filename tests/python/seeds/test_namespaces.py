"""`import kiln as tf` alone (no submodule imports) exposes every name the seeds use."""
import subprocess
import sys

SEED_NAMES = [
    # guide 002
    "function", "Tensor", "TensorSpec", "Variable", "Module", "TensorArray", "constant", "ones",
    "zeros", "matmul", "where", "range", "print", "reduce_sum", "tanh", "abs", "transpose",
    "init_scope", "random.uniform", "config.run_functions_eagerly",
    "debugging.enable_check_numerics", "errors.InvalidArgumentError", "autograph.to_code",
    "autograph.experimental.do_not_convert",
    "data.Dataset.from_generator", "data.Dataset.from_tensor_slices", "py_function",
    "int32", "float32", "string",
    # seed 000
    "keras.layers.Layer", "dtypes.cast", "bitwise.bitwise_and", "bitwise.right_shift",
    "expand_dims", "reshape", "uint8", "TensorShape", "NoReturnWarning",
]


def _missing(names):
    code = ("import kiln as tf\nmissing = []\n"
            f"for n in {names!r}:\n"
            "    obj = tf\n"
            "    try:\n"
            "        for part in n.split('.'):\n"
            "            obj = getattr(obj, part)\n"
            "    except AttributeError:\n"
            "        missing.append(n)\n"
            "print(','.join(missing))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [m for m in r.stdout.strip().split(",") if m]


def test_seed_names_after_plain_import():
    missing = _missing(SEED_NAMES)
    assert missing == []
