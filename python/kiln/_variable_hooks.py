"""What runs after each kiln.Variable is constructed (kiln.Variable, Keras
variables, metric and optimizer state alike).

A leaf module: ``kiln.Variable`` is the binding's class, and lower layers must
not know kiln.distribute. kiln.distribute sets ``on_create`` (a callable taking
the new variable) once; it mirrors the variables created in a strategy's scope.
"""
import functools

from kiln import _kiln

on_create = None  # callable(variable) or None; set from above (kiln.distribute)

_construct = _kiln.Variable.__init__


@functools.wraps(_construct)
def _init(self, *args, **kwargs):
    _construct(self, *args, **kwargs)
    if on_create is not None:
        on_create(self)


if not getattr(_construct, "_kiln_hooked", False):
    _init._kiln_hooked = True
    _kiln.Variable.__init__ = _init
