"""kiln's ops under TensorFlow's names. Each wrapper converts its arguments and
calls one op of the C++ table (kiln._kiln.raw.<TypeName>), so it runs eagerly
or is recorded while a function is traced."""
from kiln.ops.core import *  # noqa: F401,F403
