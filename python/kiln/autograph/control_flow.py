"""Rewrites if/while/for statements into calls of the control-flow operators.

    if x > 0:                         def get_state():
        y = 1                             return (y,)
    else:                     ->      def set_state(vars_):
        y = 2                             nonlocal y
                                          (y,) = vars_
                                      def if_body():
                                          nonlocal y
                                          y = 1
                                      def else_body():
                                          nonlocal y
                                          y = 2
                                      y = ag__.Undefined('y')
                                      ag__.if_stmt(x > 0, if_body, else_body,
                                                   get_state, set_state, ('y',), {})

The state of a statement is what a graph version must carry: for an if, the
names modified in a branch and live after it; for a loop, the names modified
in the body and live after the loop or at its head (loop-carried). Names
first bound inside the statement start as ag__.Undefined so that every
`nonlocal` has a binding and undefined values are reported by name.
"""
import ast

from kiln.autograph import analysis
from kiln.autograph import builders as b
from kiln.autograph.analysis import writes

_JUMPS = (ast.Return, ast.Break, ast.Continue)
_STOP = (ast.Yield, ast.YieldFrom, ast.Await)


def convertible(node):
    """Whether an if/while/for can become functions (no yield/await, and no
    jump left that belongs to code outside the statement)."""
    return not analysis.contains(node.body + node.orelse, _STOP + _JUMPS)


def _reason(node):
    for n in analysis.own_nodes(node.body + node.orelse):
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return f"contains yield (line {n.lineno})"
        if isinstance(n, ast.Await):
            return f"contains await (line {n.lineno})"
        if isinstance(n, ast.Return):
            return f"contains return inside a generator (line {n.lineno})"
        if isinstance(n, (ast.Break, ast.Continue)):
            word = "break" if isinstance(n, ast.Break) else "continue"
            return f"contains a {word} of an enclosing loop that is not converted " \
                   f"(line {n.lineno})"
    return "cannot be converted"


class ControlFlowConverter(ast.NodeTransformer):
    """Converts the control flow of one function body, innermost first."""

    def __init__(self, namer, fn_globals, fn_nonlocals):
        self.namer = namer
        self.globals = set(fn_globals)  # never state: a graph cannot set them
        self.nonlocals = set(fn_nonlocals)  # state like locals (closure cells)
        self.declared = set()  # names our helpers declare nonlocal
        self.vars_name = namer.new("vars_")
        self.itr_name = namer.new("itr")

    def convert_body(self, fn_node):
        module = ast.Module(body=fn_node.body, type_ignores=[])
        self.generic_visit(module)
        fn_node.body = module.body

    def visit_FunctionDef(self, node):
        return node  # nested functions are converted on their own

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    # Helpers.

    def _decls(self, written):
        nonlocal_ = set(written) - self.globals
        self.declared |= nonlocal_ - self.nonlocals
        return b.declarations(nonlocal_, set(written) & self.globals)

    def _state_functions(self, names, maybe_unbound):
        get_name, set_name = self.namer.new("get_state"), self.namer.new("set_state")
        elts = [b.ag_call("ldu", b.lambda_(b.name(n)), b.const(n)) if n in maybe_unbound
                else b.name(n) for n in names]
        get_fn = b.function_def(get_name, (), [ast.Return(value=b.tuple_(elts))])
        if names:
            set_body = self._decls(names) + [
                b.assign(b.tuple_([b.name(n, store=True) for n in names], store=True),
                         b.name(self.vars_name))]
        else:
            set_body = [ast.Pass()]
        set_fn = b.function_def(set_name, (self.vars_name,), set_body)
        return [get_fn, set_fn], get_name, set_name

    def _opts(self, node, blocks, state):
        """The statement's options: set_loop_options' maximum_iterations and
        shape_invariants, and 'unsupported': ((line, text, kind), ...) for
        constructs that only run at trace time when it is staged as a graph."""
        found = []
        state = set(state)
        for n in analysis.own_nodes(blocks):
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    for sub in ast.walk(t):
                        if isinstance(sub, (ast.Attribute, ast.Subscript)) and \
                                isinstance(sub.ctx, ast.Store):
                            found.append((n.lineno, f"the assignment to "
                                                    f"'{ast.unparse(sub)}'", "assign"))
                        elif isinstance(sub, ast.Name) and sub.id in self.globals:
                            found.append((n.lineno, f"the assignment to global '{sub.id}'",
                                          "assign"))
            elif isinstance(n, ast.Try):
                changed = sorted(writes(n) & state)
                if changed:
                    names = ", ".join(f"'{c}'" for c in changed)
                    found.append((n.lineno, f"the try/except that changes {names}", "try"))
        keys, values = [], []
        for name, value in sorted(getattr(node, "_ag_loop_options", {}).items()):
            if name in ("maximum_iterations", "shape_invariants"):
                keys.append(b.const(name))
                values.append(value)
        if found:
            items = [b.tuple_([b.const(v) for v in item]) for item in sorted(set(found))]
            keys.append(b.const("unsupported"))
            values.append(b.tuple_(items))
        return ast.Dict(keys=keys, values=values)

    def _inits(self, names):
        return [b.assign(n, b.ag_call("Undefined", b.const(n))) for n in names]

    def _unconverted(self, node, field, op, what):
        text = f"the {what} at line {node.lineno}, which {_reason(node)},"
        setattr(node, field, b.located(b.ag_call(op, getattr(node, field), b.const(text)),
                                       node))
        return node

    # Statements.

    def visit_If(self, node):
        if not getattr(node, "_ag_convert", False):
            self.generic_visit(node)
            return self._unconverted(node, "test", "unconverted_test", "if statement")
        body_w, orelse_w = writes(node.body), writes(node.orelse)
        modified = (body_w | orelse_w) - self.globals
        outputs = sorted(modified & node._ag_live_out)
        init = sorted(modified - node._ag_may_in)
        maybe = set(outputs) - node._ag_must_in - set(init)
        opts = self._opts(node, node.body + node.orelse, outputs)
        fns, get_name, set_name = self._state_functions(outputs, maybe)
        body_name, else_name = self.namer.new("if_body"), self.namer.new("else_body")
        self.generic_visit(node)
        fns.append(b.function_def(body_name, (), self._decls(body_w) + node.body))
        fns.append(b.function_def(else_name, (), self._decls(orelse_w) + node.orelse))
        call = b.ag_call("if_stmt", node.test, b.name(body_name), b.name(else_name),
                         b.name(get_name), b.name(set_name), b.str_tuple(outputs), opts)
        return b.located(fns + self._inits(init) + [b.expr(call)], node)

    def _loop_parts(self, node, body_w):
        modified = body_w - self.globals
        state = sorted(modified & (node._ag_live_out | node._ag_live_head))
        init = sorted(modified - node._ag_may_in)
        maybe = set(state) - node._ag_must_in - set(init)
        return state, init, maybe

    def _extra_test(self, node):
        flags = getattr(node, "_ag_extra_tests", [])
        if not flags:
            return [], None
        name = self.namer.new("extra_test")
        if len(flags) == 1:
            value = b.not_(b.name(flags[0]))
        else:
            value = b.ag_call("not_any", *[b.name(f) for f in flags])
        return [b.function_def(name, (), [ast.Return(value=value)])], name

    def visit_While(self, node):
        if not getattr(node, "_ag_convert", False):
            self.generic_visit(node)
            return self._unconverted(node, "test", "unconverted_test", "while loop")
        body_w, test_w = writes(node.body), writes(node.test)  # test: `:=` targets
        state, init, maybe = self._loop_parts(node, body_w | test_w)
        opts = self._opts(node, node.body, state)
        fns, get_name, set_name = self._state_functions(state, maybe)
        body_name, test_name = self.namer.new("loop_body"), self.namer.new("loop_test")
        extra, extra_name = self._extra_test(node)
        self.generic_visit(node)
        fns.append(b.function_def(body_name, (), self._decls(body_w) + node.body))
        fns.append(b.function_def(test_name, (), self._decls(test_w) +
                                  [ast.Return(value=node.test)]))
        args = [b.name(test_name), b.name(body_name), b.name(get_name), b.name(set_name),
                b.str_tuple(state), opts]
        if extra_name:
            args.append(b.name(extra_name))
        call = b.ag_call("while_stmt", *args)
        return b.located(fns + extra + self._inits(init) + [b.expr(call)], node)

    def visit_For(self, node):
        if not getattr(node, "_ag_convert", False):
            self.generic_visit(node)
            return self._unconverted(node, "iter", "unconverted_iter", "for loop")
        body_w = writes(node.body) | writes(node.target)
        state, init, maybe = self._loop_parts(node, body_w)
        opts = self._opts(node, node.body, state)
        fns, get_name, set_name = self._state_functions(state, maybe)
        body_name = self.namer.new("loop_body")
        extra, extra_name = self._extra_test(node)
        self.generic_visit(node)
        bind = b.assign(node.target, b.name(self.itr_name))
        fns.append(b.function_def(body_name, (self.itr_name,),
                                  self._decls(body_w) + [bind] + node.body))
        call = b.ag_call("for_stmt", node.iter,
                         b.name(extra_name) if extra_name else b.const(None),
                         b.name(body_name), b.name(get_name), b.name(set_name),
                         b.str_tuple(state), opts)
        return b.located(fns + extra + self._inits(init) + [b.expr(call)], node)


def bind_declared(fn_node, declared, fn_globals, fn_nonlocals):
    """Gives every name our helpers declare nonlocal a binding in the function
    itself (`x = ag__.Undefined('x')` at the top) when it has none, e.g. a
    name only ever assigned inside converted branches."""
    missing = sorted(set(declared) - analysis.direct_bindings(fn_node) - set(fn_globals)
                     - set(fn_nonlocals))
    if not missing:
        return
    body = fn_node.body
    at = 1 if body and isinstance(body[0], ast.Expr) and \
        isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str) else 0
    inits = b.located([b.assign(n, b.ag_call("Undefined", b.const(n))) for n in missing],
                      body[at] if at < len(body) else fn_node)
    fn_node.body = body[:at] + inits + body[at:]
