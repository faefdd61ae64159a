"""The runtime half of AutoGraph: what converted code calls as ag__.*"""
from kiln.autograph.operators.conditionals import if_exp, if_stmt
from kiln.autograph.operators.exceptions import assert_stmt
from kiln.autograph.operators.logical import and_, not_, not_any, or_
from kiln.autograph.operators.loops import (for_stmt, unconverted_iter, unconverted_test,
                                            while_stmt)
from kiln.autograph.operators.variables import (Undefined, UndefinedReturnValue, ldu,
                                                retval)

__all__ = [
    "if_exp", "if_stmt", "assert_stmt", "and_", "not_", "not_any", "or_", "for_stmt",
    "unconverted_iter", "unconverted_test", "while_stmt", "Undefined", "UndefinedReturnValue",
    "ldu", "retval",
]
