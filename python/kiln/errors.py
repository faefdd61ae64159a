"""kiln's exceptions (tf.errors): every runtime error is an OpError subclass.

InvalidArgumentError also derives from ValueError, and the graph-misuse error
from TypeError, so code written for plain Python exceptions keeps working.
"""
from kiln import _frames


class OpError(Exception):
    """Base class of the errors raised by kiln ops and functions."""

    def __init__(self, message="", *args):
        super().__init__(message, *args)
        self.message = message

    def __str__(self):
        return self.message


class InvalidArgumentError(OpError, ValueError):
    """An op received an argument it cannot accept (bad shape, dtype, value)."""


class NotFoundError(OpError):
    """Something referenced does not exist."""


class FailedPreconditionError(OpError):
    """The system is not in a state where the operation can run."""


class OutOfRangeError(OpError):
    """An index or iteration went past the end."""


class ResourceExhaustedError(OpError):
    """Out of memory or past a configured limit."""


class UnimplementedError(OpError):
    """The operation is not implemented for these inputs."""


class InternalError(OpError):
    """A bug in kiln: please report it."""


class UnknownError(OpError):
    """An error of unknown kind."""


class DataLossError(OpError):
    """Unrecoverable data loss or corruption (a truncated or damaged file)."""


class UnavailableError(OpError):
    """Another worker failed or cannot be reached (a collective was abandoned)."""


class DeadlineExceededError(OpError):
    """An operation waited longer than its limit (a collective's timeout)."""


class AlreadyExistsError(OpError):
    """What an operation tried to create already exists (a file, a directory)."""


class PermissionDeniedError(OpError):
    """The caller may not run the operation (file permissions, a read-only handle)."""


class AbortedError(OpError):
    """The operation was aborted (a deadlock was avoided, a stale handle)."""


class CancelledError(OpError):
    """The operation was cancelled."""


class OperatorNotAllowedInGraphError(TypeError):
    """A symbolic tensor was used where a Python value is needed (bool, int, iteration)."""


__all__ = [
    "OpError", "InvalidArgumentError", "NotFoundError", "FailedPreconditionError",
    "OutOfRangeError", "ResourceExhaustedError", "UnimplementedError", "InternalError",
    "UnknownError", "DataLossError", "UnavailableError", "DeadlineExceededError",
    "AlreadyExistsError", "PermissionDeniedError", "AbortedError", "CancelledError",
    "OperatorNotAllowedInGraphError",
]


class LeakedTensorError(InvalidArgumentError, TypeError):
    """A symbolic tensor of one function's graph was used outside it."""


__all__.append("LeakedTensorError")


def _in_user_code(message, error_name="ValueError"):
    """message prefixed with the innermost frame of user code calling in
    (TensorFlow's "in user code:" block), skipping kiln's and installed
    packages' frames. Converted (AutoGraph) code keeps the user's file and line
    and shows as TensorFlow marks converted frames: the function's name and "*"."""
    import linecache  # here, not at the top: kiln.errors (tf.errors) lists only errors
    import os
    import sys
    kiln_dir = os.path.dirname(os.path.realpath(__file__)) + os.sep

    def library(filename):
        return os.path.realpath(filename).startswith(kiln_dir) or \
            _frames.library_file(filename)
    frame = sys._getframe(1)
    while frame is not None and library(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return message
    code = frame.f_code
    line = linecache.getline(code.co_filename, frame.f_lineno).strip()
    name = code.co_name
    if name.startswith("ag__"):  # kiln.autograph's converted function
        name = name[len("ag__"):] + "  *"
    return (f"in user code:\n\n    File \"{code.co_filename}\", line {frame.f_lineno}, in "
            f"{name}\n        {line}\n\n    {error_name}: {message}\n")
