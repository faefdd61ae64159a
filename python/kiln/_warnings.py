"""kiln's warning categories, and the bridge from the C++ function layer."""
import logging
import warnings


class KilnWarning(UserWarning):
    """Base class of kiln's warnings (filter them with warnings.filterwarnings)."""


class RetracingWarning(KilnWarning):
    """A function is traced again and again (the reasons are listed)."""


class NoReturnWarning(KilnWarning):
    """A function returns nothing, so the optimizer removed the work it did."""


class AutoGraphWarning(KilnWarning):
    """AutoGraph could not convert a construct and left it as Python."""


_CATEGORIES = {
    "RetracingWarning": RetracingWarning,
    "NoReturnWarning": NoReturnWarning,
}

logger = logging.getLogger("kiln")


def emit(category, message):
    """Called by the C++ layer for each warning or log record."""
    if category.endswith("Log"):
        logger.info("%s", message)
        return
    warnings.warn(message, _CATEGORIES.get(category, KilnWarning), stacklevel=2)
