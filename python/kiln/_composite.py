"""The base of kiln's composite tensors (RaggedTensor, SparseTensor).

A composite tensor is a tuple of its component tensors with `_fields`, so the
C++ function layer treats it as a namedtuple: as a `kiln.function` argument it
is keyed by its components' specs and rebuilt (``type(**components)``) around
the traced placeholders, and a returned one is rebuilt around the results.
Everywhere else it is not a sequence: iterating it (which TensorFlow's tensor
conversion would do) is a TypeError, and kiln.nest treats it as a leaf (unless asked to
expand composites: `_kiln_nest_components` / `_kiln_nest_rebuild`).
"""
from kiln import _kiln

_TENSOR = _kiln.Tensor


class CompositeTensor(tuple):
    """A tuple of component tensors that is not a Python sequence."""

    __slots__ = ()
    _fields = ()

    def _components(self):
        """The component tensors, in `_fields` order."""
        return tuple(tuple.__getitem__(self, i) for i in range(len(self._fields)))

    def _kiln_nest_components(self):
        """What kiln.nest expands this into with expand_composites=True: its tensor (and
        composite) components, in `_fields` order."""
        return [c for c in self._components() if isinstance(c, (_TENSOR, CompositeTensor))]

    def _kiln_nest_rebuild(self, components):
        """The same composite over new components (as `_kiln_nest_components` lists them)."""
        it = iter(components)
        items = [next(it) if isinstance(c, (_TENSOR, CompositeTensor)) else c
                 for c in self._components()]
        return type(self)(*items)

    def _map_values(self, fn):
        """The same structure with fn applied to the (flat) values (tf.cast and friends)."""
        raise NotImplementedError

    def __iter__(self):
        raise TypeError(f"a {type(self).__name__} is not a sequence and cannot be converted to "
                        f"a dense Tensor implicitly ({_HINT.get(type(self).__name__, '')})")

    def __len__(self):
        raise TypeError(f"a {type(self).__name__} has no len(); use its shape")

    def __getnewargs__(self):
        return self._components()

    def __bool__(self):
        raise TypeError(f"the truth value of a {type(self).__name__} is ambiguous")

    def __contains__(self, item):
        raise TypeError(f"a {type(self).__name__} is not a sequence")

    # Not the tuple's operators: concatenation, repetition and ordering (subclasses
    # define the elementwise ones they support); == is identity unless overridden.
    def __add__(self, other):
        return NotImplemented

    __radd__ = __mul__ = __rmul__ = __lt__ = __le__ = __gt__ = __ge__ = __add__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = object.__hash__

    def __reduce__(self):
        return (type(self), self._components())


_HINT = {"RaggedTensor": "use rt.to_tensor(), rt.flat_values or kiln.ragged.map_flat_values",
         "SparseTensor": "use kiln.sparse.to_dense(sp) or sp.values"}
