"""tf.types: the tracing protocol's types (``kiln.types.experimental``)."""
from kiln.types import experimental

__all__ = ["experimental"]
