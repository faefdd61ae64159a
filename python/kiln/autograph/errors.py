"""Errors and warnings of the AutoGraph converter, with user-code locations."""
import sys
import threading
import warnings

from kiln import _frames


class AutoGraphWarning(UserWarning):
    """A construct was left as plain Python although it may depend on a tensor."""


class ConversionError(ValueError):
    """A function or statement cannot be converted to graph control flow."""


class UndefinedVariableError(UnboundLocalError):
    """A variable was read on a path where it was never assigned."""


_warned = set()
_warned_lock = threading.Lock()


def location(filename, lineno):
    """'file.py:12' (the short form used in every message)."""
    if lineno is None:
        return filename or "<unknown>"
    return f"{filename}:{lineno}"


def warn_once(message, filename, lineno):
    """Emits an AutoGraphWarning attributed to filename:lineno, once per text."""
    key = (filename, lineno, message)
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn_explicit(message, AutoGraphWarning, filename or "<unknown>", lineno or 0)


def user_location(skip=1):
    """(filename, lineno) of the innermost converted-code frame calling in.

    Converted code is compiled under the user's file name with the user's
    line numbers, so this is the line of the statement being run."""
    frame = sys._getframe(skip + 1)
    while frame is not None:
        if _frames.is_converted_code(frame.f_code):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None, None


def where(skip=1):
    """'file.py:12' for the converted statement calling in (see user_location)."""
    filename, lineno = user_location(skip + 1)
    return location(filename, lineno)
