"""init_scope: run code eagerly, outside the function being traced."""
import contextlib

from kiln import _kiln


@contextlib.contextmanager
def init_scope():
    """Code inside runs eagerly once at trace time, outside any graph (tf.init_scope)."""
    token = _kiln._enter_init_scope()
    try:
        yield
    finally:
        _kiln._exit_init_scope(token)
