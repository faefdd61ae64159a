"""tf.types.experimental: TraceType and the tracing protocol, and the function types.

A class may define ``__tf_tracing_type__(context)`` returning a TraceType, as in
TensorFlow. kiln's trace cache (C++) keys such objects by identity for now, so
equal trace types of different objects trace again (see docs/PYTHON.md).
"""
import abc
from typing import Protocol, runtime_checkable

from kiln.function import ConcreteFunction, Function


class TraceType(metaclass=abc.ABCMeta):
    """What tracing keys a Python value by (TensorFlow's abstract base)."""

    @abc.abstractmethod
    def is_subtype_of(self, other):
        """Whether every value of this type is also of `other`."""

    @abc.abstractmethod
    def most_specific_common_supertype(self, others):
        """The narrowest type above self and each of `others` (None if none)."""

    @abc.abstractmethod
    def placeholder_value(self, placeholder_context):
        """The value the traced function sees for an argument of this type."""

    def to_tensors(self, value):
        """The tensors `value` contributes to the graph (none by default)."""
        return []

    def from_tensors(self, tensors):
        """The value rebuilt from `to_tensors`' tensors (the placeholder by default)."""
        return self.placeholder_value(None)

    def flatten(self):
        """The TraceTypes of `to_tensors`' tensors."""
        return []

    def cast(self, value, cast_context):
        """`value` as a value of this type (itself by default)."""
        return value

    @abc.abstractmethod
    def __eq__(self, other):
        ...

    @abc.abstractmethod
    def __hash__(self):
        ...


@runtime_checkable
class SupportsTracingProtocol(Protocol):
    """A class whose instances give their own TraceType."""

    @abc.abstractmethod
    def __tf_tracing_type__(self, context):
        ...


class TensorLike(metaclass=abc.ABCMeta):
    """Tensors and the values that convert to them (a marker base, as in TensorFlow)."""


GenericFunction = PolymorphicFunction = Callable = Function
AtomicFunction = ConcreteFunction

__all__ = ["TraceType", "SupportsTracingProtocol", "TensorLike", "GenericFunction",
           "PolymorphicFunction", "Callable", "ConcreteFunction", "AtomicFunction"]
