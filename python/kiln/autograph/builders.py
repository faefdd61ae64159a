"""Small constructors for the AST nodes the converters generate, and a namer
that picks names not used by the user's code."""
import ast

AG = "ag__"


class Namer:
    """Fresh names that do not clash with any name in the converted source."""

    def __init__(self, tree):
        self.used = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                self.used.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.used.add(n.name)
            elif isinstance(n, ast.arg):
                self.used.add(n.arg)
            elif isinstance(n, ast.alias):
                self.used.add(n.asname or n.name.split(".")[0])
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                self.used.update(n.names)

    def new(self, base):
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name


def name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def const(value):
    return ast.Constant(value=value)


def ag(attr):
    """`ag__.attr`"""
    return ast.Attribute(value=name(AG), attr=attr, ctx=ast.Load())


def call(func, args=(), keywords=()):
    if isinstance(func, str):
        func = name(func)
    return ast.Call(func=func, args=list(args), keywords=list(keywords))


def ag_call(attr, *args):
    return call(ag(attr), args)


def tuple_(elts, store=False):
    return ast.Tuple(elts=list(elts), ctx=ast.Store() if store else ast.Load())


def str_tuple(strings):
    return tuple_([const(s) for s in strings])


def assign(target, value):
    if isinstance(target, str):
        target = name(target, store=True)
    return ast.Assign(targets=[target], value=value)


def expr(value):
    return ast.Expr(value=value)


def lambda_(body, params=()):
    return ast.Lambda(args=arguments(params), body=body)


def arguments(params=()):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                         vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])


def function_def(fname, params, body):
    return ast.FunctionDef(name=fname, args=arguments(params), body=body or [ast.Pass()],
                           decorator_list=[], returns=None, type_comment=None)


def declarations(nonlocals=(), globals_=()):
    out = []
    if globals_:
        out.append(ast.Global(names=sorted(globals_)))
    if nonlocals:
        out.append(ast.Nonlocal(names=sorted(nonlocals)))
    return out


def not_(value):
    return ag_call("not_", value)


def located(nodes, src):
    """Gives generated nodes (a node or list) the location of `src`."""
    items = nodes if isinstance(nodes, list) else [nodes]
    for n in items:
        for m in ast.walk(n):
            if "lineno" in m._attributes:
                # Generated code spans the first line of its statement only
                # (3.11 places method calls at their attribute's end).
                if getattr(m, "lineno", None) is None:
                    m.lineno = src.lineno
                    m.col_offset = getattr(src, "col_offset", 0)
                    m.end_lineno = m.lineno
                    m.end_col_offset = m.col_offset
                elif getattr(m, "end_lineno", None) is None:
                    m.end_lineno = m.lineno
                    m.end_col_offset = m.col_offset
    return nodes
