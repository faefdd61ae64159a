"""Delayed restores (kiln.train.Checkpoint): objects waiting for values of
children they do not have yet.

A leaf module, so kiln.module, Keras layers and optimizers can import it:
they call ``notify(owner, name, value)`` when ``owner`` gains an attribute
(``name`` a str), a weight (its name) or an optimizer slot (``name`` a tuple
``(reference variable id, slot name)``). kiln.train registers the callbacks.
"""
import weakref

# id(owner) -> (weak reference to owner, callback(owner, name, value))
PENDING = {}


def register(owner, callback):
    """Calls ``callback`` when ``owner`` gains children (replaces an earlier one)."""
    key = id(owner)

    def forget(_ref, key=key):
        entry = PENDING.get(key)
        if entry is not None and entry[0] is _ref:
            del PENDING[key]
    PENDING[key] = (weakref.ref(owner, forget), callback)


def unregister(owner, callback=None):
    """Stops calling ``callback`` (any callback if None) for ``owner``."""
    entry = PENDING.get(id(owner))
    if entry is not None and entry[0]() is owner and callback in (None, entry[1]):
        del PENDING[id(owner)]


def notify(owner, name, value):
    """``owner`` gained ``value`` under ``name``: restores a waiting value."""
    entry = PENDING.get(id(owner))
    if entry is not None and entry[0]() is owner:
        entry[1](owner, name, value)
