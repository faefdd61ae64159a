"""Expression-level conversions inside one function scope:

  f(a, *b, k=c)   -> ag__.converted_call(f, (a, *b), {'k': c})
  a and b         -> ag__.and_(a, lambda: b)     (or_ likewise)
  not a           -> ag__.not_(a)
  a if c else b   -> ag__.if_exp(c, lambda: a, lambda: b)
  a < b < c       -> ag__.and_(a < b, lambda: b < c)   (simple middle operands)
  assert c, m     -> ag__.assert_stmt(c, lambda: m)
  super()         -> super(__class__, self)   (the zero-argument form needs
                     the class cell, which the converted code gets as a free
                     variable)

Lambdas are left alone; nested functions were converted on their own.
"""
import ast

from kiln.autograph import builders as b

# Calls that depend on the calling frame, or are ours: never wrapped.
_FRAME_BUILTINS = {"super", "locals", "globals", "vars", "eval", "exec", "dir"}
_NO_THUNK = (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)


def _has(node, types):
    return any(isinstance(n, types) for n in ast.walk(node))


def _is_ag_call(node):
    f = node.func
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
        f.value.id == b.AG


class ExpressionConverter(ast.NodeTransformer):
    """Rewrites the expressions of one function body (see module doc)."""

    def __init__(self, self_name=None, class_cell=False):
        self.self_name = self_name
        self.class_cell = class_cell

    def convert_body(self, fn_node):
        module = ast.Module(body=fn_node.body, type_ignores=[])
        self.generic_visit(module)
        fn_node.body = module.body or [ast.Pass()]

    # Scopes that are not ours.
    def visit_FunctionDef(self, node):
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self._visit_defaults(node.args)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def _visit_defaults(self, args):
        args.defaults = [self.visit(d) for d in args.defaults]
        args.kw_defaults = [self.visit(d) if d is not None else None for d in args.kw_defaults]
        return args

    def visit_Lambda(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if _is_ag_call(node):
            return node
        if isinstance(node.func, ast.Name) and node.func.id in _FRAME_BUILTINS:
            if node.func.id == "super" and not node.args and not node.keywords and \
                    self.class_cell and self.self_name:
                node.args = [b.name("__class__"), b.name(self.self_name)]
            return node
        args = b.tuple_(node.args)
        if node.keywords:
            kwargs = ast.Dict(keys=[b.const(k.arg) if k.arg is not None else None
                                    for k in node.keywords],
                              values=[k.value for k in node.keywords])
        else:
            kwargs = b.const(None)
        new = ast.Call(func=b.ag("converted_call"), args=[node.func, args, kwargs],
                       keywords=[])
        return b.located(ast.copy_location(new, node), node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(_has(v, _NO_THUNK) for v in node.values[1:]):
            return node
        op = "and_" if isinstance(node.op, ast.And) else "or_"
        new = b.ag_call(op, node.values[0], *[b.lambda_(v) for v in node.values[1:]])
        return b.located(ast.copy_location(new, node), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return b.located(ast.copy_location(b.not_(node.operand), node), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if _has(node.body, _NO_THUNK) or _has(node.orelse, _NO_THUNK):
            return node
        new = b.ag_call("if_exp", node.test, b.lambda_(node.body), b.lambda_(node.orelse))
        return b.located(ast.copy_location(new, node), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) < 2 or not all(isinstance(c, (ast.Name, ast.Constant))
                                        for c in node.comparators[:-1]):
            return node
        operands = [node.left] + node.comparators
        parts = [ast.Compare(left=operands[i], ops=[op], comparators=[operands[i + 1]])
                 for i, op in enumerate(node.ops)]
        new = b.ag_call("and_", parts[0], *[b.lambda_(p) for p in parts[1:]])
        return b.located(ast.copy_location(new, node), node)

    def visit_Assert(self, node):
        if not __debug__:
            return None  # `python -O` drops asserts
        self.generic_visit(node)
        msg = b.lambda_(node.msg) if node.msg is not None else b.const(None)
        new = b.expr(b.ag_call("assert_stmt", node.test, msg))
        return b.located(ast.copy_location(new, node), node)
