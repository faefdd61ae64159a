"""Finding and parsing the source of a Python function."""
import ast
import inspect
import textwrap

from kiln.autograph.errors import ConversionError, location


def _code_location(fn):
    code = getattr(fn, "__code__", None)
    if code is None:
        return location(None, None)
    return location(code.co_filename, code.co_firstlineno)


def _parse_lines(lines):
    """Parses source lines that may be indented; returns (module, line_shift)."""
    source = "".join(lines)
    try:
        return ast.parse(textwrap.dedent(source)), 0
    except SyntaxError:
        pass
    # Dedent fails when a string literal in the body starts at column 0; an
    # enclosing `if 1:` block accepts any consistent indentation instead.
    try:
        module = ast.parse("if 1:\n" + source)
    except SyntaxError as e:
        raise ConversionError(f"cannot parse the source: {e}") from None
    return ast.Module(body=module.body[0].body, type_ignores=[]), -1


def _source_lines(fn):
    try:
        return inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise ConversionError(
            f"the source code of {getattr(fn, '__qualname__', fn)!r} "
            f"({_code_location(fn)}) is not available ({e})") from None


def parse_function(fn):
    """The FunctionDef of `fn`, with line numbers of its source file.

    Raises ConversionError when the source cannot be found or parsed."""
    lines, first = _source_lines(fn)
    module, shift = _parse_lines(lines)
    ast.increment_lineno(module, first - 1 + shift)
    code = fn.__code__
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name == code.co_name:
            return node
    raise ConversionError(
        f"could not find the definition of {fn.__qualname__!r} in its source "
        f"({_code_location(fn)})")


def _arg_names(args):
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def parse_lambda(fn):
    """The ast.Lambda of a lambda function, or None when it cannot be isolated
    (several lambdas with the same arguments on one line, unparsable line)."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    try:
        module, shift = _parse_lines(lines)
    except ConversionError:
        # A lambda inside a multi-line expression: try its first line alone.
        try:
            module, shift = _parse_lines(lines[:1])
        except ConversionError:
            return None
    ast.increment_lineno(module, first - 1 + shift)
    code = fn.__code__
    wanted = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    flags = code.co_flags
    if flags & inspect.CO_VARARGS:
        wanted.append(code.co_varnames[len(wanted)])
    if flags & inspect.CO_VARKEYWORDS:
        wanted.append(code.co_varnames[len(wanted)])
    found = [n for n in ast.walk(module) if isinstance(n, ast.Lambda)
             and n.lineno == code.co_firstlineno and _arg_names(n.args) == wanted]
    return found[0] if len(found) == 1 else None
