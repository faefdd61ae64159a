"""kiln.keras.Variable: a kiln.Variable named as Keras 3 names its variables.

Keras 3 gives a layer's variable a short `name` ("kernel") and a `path` with the
layer's name ("dense/kernel"); plain kiln.Variable names keep TensorFlow's ":0".
Everything else (ops, functions, tapes, assign) is kiln.Variable's.
"""
from kiln import _kiln

__all__ = ["Variable"]


class Variable(_kiln.Variable):
    """A kiln.Variable with Keras 3's `name` (short) and `path` (owner/name)."""

    def __init__(self, initial_value, name, path=None, trainable=True):
        path = path or name
        super().__init__(initial_value, trainable=bool(trainable), name=path)
        self._kiln_short_name = name
        self._kiln_path = path

    @property
    def name(self):
        return self._kiln_short_name

    @property
    def path(self):
        return self._kiln_path

    def __repr__(self):
        return (f"<KerasVariable shape={tuple(self.shape)}, dtype={self.dtype.name}, "
                f"path={self.path}>")

    __str__ = __repr__
