"""Runtime switches (tf.config)."""
from kiln import _kiln


def run_functions_eagerly(run_eagerly):
    """When True, kiln.function calls run the Python function directly (for
    debugging with print and pdb); nothing is traced."""
    _kiln._set_run_eagerly(bool(run_eagerly))


def functions_run_eagerly():
    return _kiln._run_eagerly()


class _Experimental:
    run_functions_eagerly = staticmethod(run_functions_eagerly)


experimental = _Experimental()
experimental_run_functions_eagerly = run_functions_eagerly
