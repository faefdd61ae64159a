"""kiln.autograph: converts Python control flow on tensors into graph control
flow (tf.autograph). kiln.function applies it when tracing (autograph=True).

    to_graph(f)   the converted function
    to_code(f)    its source, with ag__ operator calls
    experimental.do_not_convert   leave a function as it is
    maybe_convert(f)   for library code calling user code (Layer.__call__)
"""
from kiln.autograph import experimental
from kiln.autograph.api import (convert_for_trace, converted_call, maybe_convert, to_code,
                                to_graph)
from kiln.autograph.errors import AutoGraphWarning, ConversionError, UndefinedVariableError

_verbosity = 0


def set_verbosity(level, alsologtostdout=False):
    """Accepted for compatibility with tf.autograph.set_verbosity."""
    global _verbosity
    _verbosity = int(level)


def get_verbosity():
    """The level given to set_verbosity."""
    return _verbosity


def trace(*args):
    """Prints its arguments at trace time (tf.autograph.trace)."""
    print(*args)


__all__ = ["to_graph", "to_code", "convert_for_trace", "converted_call", "maybe_convert",
           "experimental",
           "AutoGraphWarning", "ConversionError", "UndefinedVariableError", "set_verbosity",
           "get_verbosity", "trace"]
