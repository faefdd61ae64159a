"""Source-to-source conversion of one Python function, compiled once per code
object and instantiated per function object (its own globals, closure cells
and defaults).

The converted function is compiled inside a factory

    def ag__create(ag__, <free variables of the original>):
        def ag__f(...): <converted body>
        return ag__f

so that its code object has the original's free variables (plus ag__) as
free variables; instantiating binds the original function's own cells, and
closures keep working (including `nonlocal` writes). The code is compiled
under the user's file name with the user's line numbers, so tracebacks and
warnings point at the user's source.
"""
import __future__
import ast
import threading
import types
import weakref

from kiln import _frames
from kiln.autograph import analysis, lowering, parsing
from kiln.autograph import builders as b
from kiln.autograph.control_flow import ControlFlowConverter, bind_declared, convertible
from kiln.autograph.errors import ConversionError
from kiln.autograph.expressions import ExpressionConverter

_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag

_cache = weakref.WeakKeyDictionary()  # original code -> Converted, or the error text
_lock = threading.RLock()

# True for code objects produced by the converter (any nesting level); the
# registry lives in kiln._frames, which error locations read too.
is_converted_code = _frames.is_converted_code


class Converted:
    """The result of converting one code object."""

    __slots__ = ("source", "code", "name")

    def __init__(self, source, code, name):
        self.source, self.code, self.name = source, code, name


def convert_function_node(node, namer, self_name=None, class_cell=False):
    """Converts one FunctionDef in place (its nested functions first)."""
    for nested in _nested_defs(node):
        convert_function_node(nested, namer)
    generator = analysis.contains(node.body, (ast.Yield, ast.YieldFrom))
    lowering.lower(node, namer, generator)
    for s in analysis.own_nodes(node.body):
        if isinstance(s, analysis.CONTROL):
            s._ag_convert = convertible(s)
    fn_globals, fn_nonlocals = analysis.scope_declarations(node)
    analysis.analyze(node, fn_globals, fn_nonlocals)
    ExpressionConverter(self_name, class_cell).convert_body(node)
    cf = ControlFlowConverter(namer, fn_globals, fn_nonlocals)
    cf.convert_body(node)
    bind_declared(node, cf.declared, fn_globals, fn_nonlocals)


def _nested_defs(node):
    for n in analysis.own_nodes(node.body):
        if isinstance(n, ast.FunctionDef) and not n.decorator_list:
            yield n


def _class_name(qualname):
    parts = qualname.split(".")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] != "<locals>" and parts[i + 1] != "<locals>":
            return parts[i]
    return None


def _mangle(tree, cls):
    """Private names (__x) as Python mangles them inside class `cls`."""
    prefix = "_" + cls.lstrip("_")

    def m(n):
        if n.startswith("__") and not n.endswith("__") and prefix != "_":
            return prefix + n
        return n

    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            n.id = m(n.id)
        elif isinstance(n, ast.Attribute):
            n.attr = m(n.attr)
        elif isinstance(n, ast.arg):
            n.arg = m(n.arg)


def _first_param(node):
    params = node.args.posonlyargs + node.args.args
    return params[0].arg if params else None


def _compile(fn, node, freevars):
    factory = b.function_def("ag__create", ("ag__",) + tuple(freevars),
                             [node, ast.Return(value=b.name(node.name))])
    module = ast.Module(body=[b.located(factory, node)], type_ignores=[])
    ast.fix_missing_locations(module)
    code = fn.__code__
    try:
        module_code = compile(module, code.co_filename, "exec",
                              flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except SyntaxError as e:
        raise ConversionError(
            f"internal error: the converted code of {fn.__qualname__!r} does not compile "
            f"({e}); please report it with the function's source") from None
    factory_code = _find_code(module_code, "ag__create")
    inner = _find_code(factory_code, node.name)
    _register(inner)
    return inner


def _find_code(code, name):
    for c in code.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    raise ConversionError(f"internal error: no code object {name!r} after compiling")


def _register(code):
    _frames.mark_converted(code)
    for c in code.co_consts:
        # Lambdas are left unconverted in the converted source: they are
        # converted from their own source when called (our own thunks are
        # lambdas too, which is harmless).
        if isinstance(c, types.CodeType) and c.co_name != "<lambda>":
            _register(c)


def _convert_def(fn):
    node = parsing.parse_function(fn)
    if isinstance(node, ast.AsyncFunctionDef):
        raise ConversionError("async functions are not converted")
    node.decorator_list = []
    original_name = node.name
    node.name = "ag__" + original_name
    namer = b.Namer(node)
    namer.used.update(("ag__", "ag__create") + fn.__code__.co_freevars)
    class_cell = "__class__" in fn.__code__.co_freevars
    convert_function_node(node, namer, _first_param(node), class_cell)
    cls = _class_name(fn.__qualname__)
    if cls:
        _mangle(node, cls)
    source = ast.unparse(node)
    return Converted(source, _compile(fn, node, fn.__code__.co_freevars), original_name)


def _convert_lambda(fn):
    lam = parsing.parse_lambda(fn)
    if lam is None:
        return None
    node = ast.FunctionDef(name="ag__lambda", args=lam.args, body=[ast.Return(value=lam.body)],
                           decorator_list=[], returns=None, type_comment=None)
    b.located(node, lam)
    ast.copy_location(node, lam)
    namer = b.Namer(node)
    namer.used.update(("ag__", "ag__create") + fn.__code__.co_freevars)
    ExpressionConverter().convert_body(node)
    source = ast.unparse(node)
    return Converted(source, _compile(fn, node, fn.__code__.co_freevars), "<lambda>")


def convert(fn):
    """The Converted record for a Python function (cached per code object).

    Raises ConversionError (cached too) when it cannot be converted; returns
    None for lambdas that cannot be isolated in their source line."""
    code = fn.__code__
    with _lock:
        hit = _cache.get(code)
        if hit is not None:
            if isinstance(hit, str):
                raise ConversionError(hit)
            return hit if hit is not _NO_LAMBDA else None
        try:
            if code.co_name == "<lambda>":
                result = _convert_lambda(fn)
            else:
                result = _convert_def(fn)
        except ConversionError as e:
            _cache[code] = str(e)  # the text only: a traceback would keep fn alive
            raise
        _cache[code] = result if result is not None else _NO_LAMBDA
        return result


_NO_LAMBDA = Converted(None, None, None)


def instantiate(converted, fn, ag):
    """A function running converted.code with fn's globals, cells, defaults;
    its free variable ag__ is `ag` (kiln.autograph.api.AG: the operators and
    converted_call, which calls back into this converter from above)."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells["ag__"] = types.CellType(ag)
    closure = tuple(cells[n] for n in converted.code.co_freevars)
    new = types.FunctionType(converted.code, fn.__globals__, fn.__name__, fn.__defaults__,
                             closure)
    new.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__annotations__ = dict(getattr(fn, "__annotations__", {}) or {})
    new.__dict__.update(fn.__dict__)
    new.__wrapped__ = fn
    new.__ag_converted__ = True
    return new
