"""The `ag__` namespace seen by converted code: the operators and
converted_call."""
from kiln.autograph.api import converted_call  # noqa: F401
from kiln.autograph.operators import *  # noqa: F401,F403
