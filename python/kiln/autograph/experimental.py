"""kiln.autograph.experimental (tf.autograph.experimental)."""
import functools


def do_not_convert(func=None):
    """Decorator: AutoGraph calls `func` as it is and does not convert it (nor
    the functions it calls). Usable as @do_not_convert or @do_not_convert()."""
    if func is None:
        return do_not_convert
    try:
        func.__ag_do_not_convert__ = True
        return func
    except (AttributeError, TypeError):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)
        wrapper.__ag_do_not_convert__ = True
        return wrapper


def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None,
                     shape_invariants=None):
    """Options for the graph loop of the enclosing converted for/while loop:
    maximum_iterations, and shape_invariants as [(variable, shape), ...] for
    loop variables whose shape changes across iterations (None dims).

    The converter lifts this call out of the loop body, so it must be called
    as a statement directly in the body. Called anywhere else it does nothing."""
    return None


class Feature:
    """Optional conversion features (accepted for compatibility; kiln has none)."""
    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"
