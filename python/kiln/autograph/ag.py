"""The `ag__` namespace seen by converted code: the operators and
converted_call. Converted functions get kiln.autograph.api.AG, which holds
the same names (the converter cannot import this module: it imports api)."""
from kiln.autograph.api import converted_call  # noqa: F401
from kiln.autograph.operators import *  # noqa: F401,F403
