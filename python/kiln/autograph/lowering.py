"""Lowers `break`, `continue` and `return` to flag variables so that loop and
branch bodies can become functions.

  break    -> break_ = True; later statements of the loop body run under
              `if not break_:`, and the loop gets `not break_` as extra test.
  continue -> continue_ = True (reset at the top of each iteration); later
              statements run under `if not continue_:`.
  return x -> do_return = True; retval_ = x; later statements run under
              `if not do_return:`, loops get `not do_return` as extra test and
              the function ends with `return ag__.retval(retval_)`.

Loops that cannot be converted (they contain `yield`) keep their jumps.
"""
import ast

from kiln.autograph import analysis
from kiln.autograph import builders as b

_LOOPS = (ast.While, ast.For)
_STOP = (ast.Yield, ast.YieldFrom, ast.Await)


def _guard(flag, stmts, src):
    return b.located(ast.If(test=b.not_(b.name(flag)), body=stmts, orelse=[]), src)


def _sets_flag(stmt, jump_types, own_loops_only):
    return analysis.contains(stmt, jump_types, skip_loops=own_loops_only)


def _lower_block(stmts, jump_types, replace, flag, own_loops_only):
    """Replaces jumps in `stmts` (recursively) and guards what follows them."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, jump_types):
            out.extend(b.located(replace(s), s))
            return out  # the rest of this block is dead code
        may_jump = _sets_flag(s, jump_types, own_loops_only)
        if may_jump:
            _lower_children(s, jump_types, replace, flag, own_loops_only)
        out.append(s)
        rest = stmts[i + 1:]
        if may_jump and rest:
            out.append(_guard(flag, _lower_block(rest, jump_types, replace, flag,
                                                 own_loops_only), rest[0]))
            return out
    return out


def _lower_children(s, jump_types, replace, flag, own_loops_only):
    if isinstance(s, _LOOPS) and own_loops_only:
        return
    loop_jumps = isinstance(s, _LOOPS) and analysis.contains(s.body, jump_types)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(s, field, None)
        if block:
            setattr(s, field, _lower_block(block, jump_types, replace, flag, own_loops_only))
    for h in getattr(s, "handlers", ()):
        h.body = _lower_block(h.body, jump_types, replace, flag, own_loops_only)
    for case in getattr(s, "cases", ()):
        case.body = _lower_block(case.body, jump_types, replace, flag, own_loops_only)
    if loop_jumps:
        s._ag_extra_tests = getattr(s, "_ag_extra_tests", []) + [flag]


def convertible_loop(loop, generator):
    """Loops whose body can become a function: no yield/await, and (in
    generators, where returns are not lowered) no return."""
    stop = _STOP + (ast.Return,) if generator else _STOP
    return not analysis.contains(loop.body + loop.orelse, stop)


class _LoopLowering(ast.NodeTransformer):
    """Lowers break/continue of every convertible loop, innermost first."""

    def __init__(self, namer, generator):
        self.namer = namer
        self.generator = generator

    def visit_FunctionDef(self, node):
        return node  # nested functions are converted on their own

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def _visit_loop(self, loop):
        self.generic_visit(loop)
        if not convertible_loop(loop, self.generator):
            return loop
        _extract_loop_options(loop)
        before, after = [], []
        if analysis.contains(loop.body, ast.Continue, skip_loops=True):
            flag = self.namer.new("continue_")
            body = _lower_block(loop.body, ast.Continue,
                                lambda s: [b.assign(flag, b.const(True))], flag, True)
            loop.body = [b.located(b.assign(flag, b.const(False)), loop.body[0])] + body
        if analysis.contains(loop.body, ast.Break, skip_loops=True):
            flag = self.namer.new("break_")
            loop.body = _lower_block(loop.body, ast.Break,
                                     lambda s: [b.assign(flag, b.const(True))], flag, True)
            loop._ag_extra_tests = getattr(loop, "_ag_extra_tests", []) + [flag]
            before.append(b.located(b.assign(flag, b.const(False)), loop))
            if loop.orelse:
                after.append(_guard(flag, loop.orelse, loop.orelse[0]))
        elif loop.orelse:
            after.extend(loop.orelse)
        loop.orelse = []
        return before + [loop] + after

    visit_While = visit_For = _visit_loop


_LOOP_OPTIONS = ("parallel_iterations", "swap_memory", "maximum_iterations",
                 "shape_invariants")


def _is_set_loop_options(stmt):
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    f = stmt.value.func
    return (isinstance(f, ast.Name) and f.id == "set_loop_options") or \
        (isinstance(f, ast.Attribute) and f.attr == "set_loop_options")


def _extract_loop_options(loop):
    """Moves `set_loop_options(...)` calls of the loop body into the loop's
    options (evaluated before the loop, passed to kiln.while_loop)."""
    options = {}
    kept = []
    for s in loop.body:
        if not _is_set_loop_options(s):
            kept.append(s)
            continue
        call = s.value
        for name, arg in zip(_LOOP_OPTIONS, call.args):
            options[name] = arg
        for kw in call.keywords:
            if kw.arg in _LOOP_OPTIONS:
                options[kw.arg] = kw.value
    if options:
        loop.body = kept or [b.located(ast.Pass(), loop)]
        loop._ag_loop_options = options


def _always_returns(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and \
        _always_returns(last.orelse)


def _always_exits(stmts):
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _always_exits(last.body) and \
        _always_exits(last.orelse)


def _move_tails(stmts):
    """`if c: ...return` followed by more code: the code moves into the else
    branch (and symmetrically), so both branches of the if end in a return."""
    out = []
    for i, s in enumerate(stmts):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(s, (ast.If, ast.While, ast.For, ast.With, ast.Try)):
                block = getattr(s, field, None)
                if block:
                    setattr(s, field, _move_tails(block))
        rest = stmts[i + 1:]
        if isinstance(s, ast.If) and rest:
            if _always_returns(s.body):
                s.orelse = _move_tails(s.orelse + rest)
                out.append(s)
                return out
            if _always_returns(s.orelse):
                s.body = _move_tails(s.body + rest)
                out.append(s)
                return out
        out.append(s)
    return out


def _needs_return_lowering(fn_node):
    for s in analysis.own_nodes(fn_node.body):
        if isinstance(s, analysis.CONTROL):
            if analysis.contains(s.body + s.orelse, ast.Return):
                return True
    return False


def lower_returns(fn_node, namer):
    """Lowers the returns of a (non-generator) function when any return sits
    inside an if or a loop."""
    if not _needs_return_lowering(fn_node):
        return
    do_return = namer.new("do_return")
    retval = namer.new("retval_")

    def replace(s):
        value = s.value if s.value is not None else b.const(None)
        return [b.assign(do_return, b.const(True)), b.assign(retval, value)]

    body = fn_node.body
    doc = []
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        doc, body = body[:1], body[1:]
    if not _always_exits(body):
        # Falling off the end returns None: say so, so that a tensor-dependent
        # if returning a value in one branch only is reported.
        end = body[-1] if body else fn_node
        body = body + [b.located(ast.Return(value=b.const(None)), end)]
    body = _lower_block(_move_tails(body), ast.Return, replace, do_return, False)
    first = body[0] if body else fn_node
    head = b.located([b.assign(do_return, b.const(False)),
                      b.assign(retval, b.ag_call("UndefinedReturnValue"))], first)
    last = body[-1] if body else fn_node
    tail = b.located(ast.Return(value=b.ag_call("retval", b.name(retval))), last)
    fn_node.body = doc + head + body + [tail]


def lower(fn_node, namer, generator):
    """Lowers loop jumps (always) and returns (not in generator functions)."""
    module = ast.Module(body=fn_node.body, type_ignores=[])
    fn_node.body = _LoopLowering(namer, generator).visit(module).body
    if not generator:
        lower_returns(fn_node, namer)
        _check_returned_values(fn_node)


def _check_returned_values(fn_node):
    """`return x` -> `return ag__.retval(x)`, which raises for an undefined x."""
    for n in analysis.own_nodes(fn_node.body):
        if isinstance(n, ast.Return) and n.value is not None:
            v = n.value
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and \
                    v.func.attr == "retval" and isinstance(v.func.value, ast.Name) and \
                    v.func.value.id == b.AG:
                continue
            n.value = b.located(b.ag_call("retval", v), v)
