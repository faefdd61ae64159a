"""Public entry points (to_graph, to_code, convert_for_trace) and the call
policy of converted code (converted_call): which callees get converted."""
import functools
import inspect
import types

from kiln import _frames
from kiln.autograph import operators, transpiler
from kiln.autograph.errors import ConversionError, location, user_location, warn_once
from kiln.autograph.operators import backend
from kiln.autograph.operators.py_builtins import OVERLOADS
from kiln.autograph.operators.variables import Undefined

_LIBRARY_MODULES = frozenset({"kiln", "_kiln", "numpy", "builtins", "pytest", "_pytest"})


def is_library(fn):
    """True for code that is never converted: kiln, numpy, builtins, the
    standard library and installed packages (site-packages)."""
    module = getattr(fn, "__module__", None) or ""
    if module.partition(".")[0] in _LIBRARY_MODULES:
        return True
    code = getattr(fn, "__code__", None)
    return code is None or _frames.library_file(code.co_filename)  # no code: builtin / C


def _is_kiln_function(f):
    return hasattr(f, "python_function") and hasattr(f, "get_concrete_function")


def _skip(fn):
    return getattr(fn, "__ag_converted__", False) or \
        getattr(fn, "__ag_do_not_convert__", False) or \
        transpiler.is_converted_code(fn.__code__) or is_library(fn)


def _convert_function(fn, strict):
    """fn converted, or fn itself when it must not / cannot be converted
    (strict: raise ConversionError instead of warning)."""
    if _skip(fn):
        return fn
    try:
        converted = transpiler.convert(fn)
    except ConversionError as e:
        if strict:
            raise
        code = fn.__code__
        warn_once(
            f"{location(code.co_filename, code.co_firstlineno)}: kiln.autograph could not "
            f"convert {fn.__qualname__!r} ({e}); it runs unconverted, so Python if/while/for "
            "on tensors inside it will fail while tracing",
            code.co_filename, code.co_firstlineno)
        return fn
    if converted is None:  # a lambda that cannot be isolated: left alone
        if strict:
            raise ConversionError(
                f"cannot find the source of the lambda at "
                f"{location(fn.__code__.co_filename, fn.__code__.co_firstlineno)} (several "
                "lambdas with the same arguments on one line?)")
        return fn
    return transpiler.instantiate(converted, fn, AG)


def _target(f, strict=False):
    """What converted code calls for the callee f."""
    if isinstance(f, types.FunctionType):
        return _convert_function(f, strict)
    if isinstance(f, types.MethodType):
        func = f.__func__
        if isinstance(func, types.FunctionType):
            conv = _convert_function(func, strict)
            return f if conv is func else types.MethodType(conv, f.__self__)
        return f
    if isinstance(f, (types.BuiltinFunctionType, type)):
        try:
            return OVERLOADS.get(f, f)
        except TypeError:  # unhashable
            return f
    if isinstance(f, functools.partial):
        inner = _target(f.func, strict)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    if _is_kiln_function(f) or getattr(f, "__ag_do_not_convert__", False):
        return f
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType):
        conv = _convert_function(call, strict)
        if conv is not call:
            return types.MethodType(conv, f)
    return f


def converted_call(f, args, kwargs, options=None):
    """Calls f(*args, **kwargs) from converted code, converting user
    functions first (library code and kiln.function objects run as they are)."""
    for a in args:
        if isinstance(a, Undefined):
            a._fail()
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, Undefined):
                a._fail()
        return _target(f)(*args, **kwargs)
    return _target(f)(*args)


def _ag_namespace():
    """What converted code calls `ag__`: the operators and converted_call (the
    names of kiln.autograph.ag). Built here, beside converted_call, and handed to
    the transpiler, which sits below both."""
    ns = types.ModuleType("ag__", _ag_namespace.__doc__)
    for name in operators.__all__:
        setattr(ns, name, getattr(operators, name))
    ns.converted_call = converted_call
    return ns


AG = _ag_namespace()


def convert_for_trace(fn):
    """The AutoGraph-converted version of fn, called by kiln.function before
    tracing: same signature, or fn itself if it must not or cannot be
    converted (with an AutoGraphWarning in the latter case)."""
    return _target(fn, strict=False)


def maybe_convert(fn):
    """fn converted when called (directly or not) from converted code, i.e.
    with AutoGraph on; fn itself otherwise. For library code that calls user
    code, e.g. a Layer's __call__ running the user's call():

        return kiln.autograph.maybe_convert(self.call)(inputs)
    """
    if not backend.tracing() or user_location(1)[0] is None:
        return fn  # eagerly, Python control flow on tensors just works
    return _target(fn)


def _unwrap(entity):
    while _is_kiln_function(entity):  # kiln.function(kiln.function(f)) wraps twice
        entity = entity.python_function
    if inspect.isclass(entity):
        raise TypeError(f"kiln.autograph converts functions, not classes ({entity!r})")
    if not callable(entity):
        raise TypeError(f"kiln.autograph: expected a function, got {type(entity).__name__}")
    return entity


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """The converted version of a Python function (tf.autograph.to_graph):
    its if/while/for on tensors become kiln.cond / kiln.while_loop calls.

    Raises ConversionError when the source cannot be converted."""
    entity = _unwrap(entity)
    if isinstance(entity, types.FunctionType) and getattr(entity, "__ag_converted__", False):
        return entity
    return _target(entity, strict=True)


def _function_of(entity):
    entity = _unwrap(entity)
    if isinstance(entity, types.MethodType):
        entity = entity.__func__
    if isinstance(entity, functools.partial):
        entity = entity.func
    if not isinstance(entity, types.FunctionType):
        call = getattr(type(entity), "__call__", None)
        if isinstance(call, types.FunctionType):
            entity = call
        else:
            raise TypeError(f"kiln.autograph.to_code: no Python source for {entity!r}")
    return getattr(entity, "__wrapped__", entity) if getattr(entity, "__ag_converted__",
                                                             False) else entity


def to_code(entity, recursive=True, experimental_optional_features=None):
    """The source code of the converted function, as a string
    (tf.autograph.to_code): control flow appears as ag__ operator calls."""
    fn = _function_of(entity)
    converted = transpiler.convert(fn)
    if converted is None:
        raise ConversionError(
            f"cannot find the source of the lambda at "
            f"{location(fn.__code__.co_filename, fn.__code__.co_firstlineno)}")
    return converted.source + "\n"
