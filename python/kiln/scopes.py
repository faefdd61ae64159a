"""init_scope (run code eagerly, outside the function being traced) and
name_scope (prefix the names of the ops a trace records)."""
import contextlib
import threading

from kiln import _kiln


class _Names(threading.local):
    def __init__(self):
        self.stack = []


_names = _Names()


def current_scope_names():
    """The names of the name_scopes entered on this thread, outermost first (the
    prefix of tf.summary tags)."""
    return [n for n in _names.stack if n]


@contextlib.contextmanager
def init_scope():
    """Code inside runs eagerly once at trace time, outside any graph (tf.init_scope)."""
    token = _kiln._enter_init_scope()
    try:
        yield
    finally:
        _kiln._exit_init_scope(token)


class name_scope:
    """tf.name_scope: while a function is traced, ops created inside are named
    ``<scope>/<op>`` (``scope`` made unique in the graph: ``dense``,
    ``dense_1``; nested scopes join). Entering returns the full scope with a
    trailing ``/``. Eagerly ops have no names and the scope only nests."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"name_scope: name must be a str, got {type(name).__name__}")
        self._name = name
        self._token = None

    @property
    def name(self):
        return self._name

    def __enter__(self):
        if self._token is not None:
            raise RuntimeError(f"name_scope '{self._name}' is already entered")
        self._token, scope = _kiln._enter_name_scope(self._name)
        _names.stack.append(self._name)
        return scope or (self._name + "/" if self._name else "")

    def __exit__(self, *exc):
        token, self._token = self._token, None
        _names.stack.pop()
        _kiln._exit_name_scope(token)
        return False
