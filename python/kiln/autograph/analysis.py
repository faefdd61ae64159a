"""Static analysis of one function body: which names a piece of code reads and
writes, which are live after each control-flow statement, and which are
(possibly / definitely) defined before it.

Runs after break/continue/return were lowered to flags, so the code has no
jumps and the analysis is structural. Results are stored on the If/While/For
nodes as `_ag_*` attributes read by the control-flow converter:
  _ag_live_out   names live after the statement
  _ag_live_head  (loops) names live at the loop head, i.e. loop-carried reads
  _ag_may_in     names with some definition reaching the statement
  _ag_must_in    names defined on every path reaching the statement
"""
import ast

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = _FUNCTIONS + (ast.Lambda, ast.ClassDef)
CONTROL = (ast.If, ast.While, ast.For)


def arg_names(args):
    """All parameter names of an ast.arguments node."""
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if args.vararg:
        names.append(args.vararg.arg)
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


class _Collector(ast.NodeVisitor):
    """Names read and written in the current scope by the visited code.

    Nested functions, lambdas, classes and comprehensions contribute the free
    names they read (closures read at definition) and the names they write
    through `nonlocal`; their own locals stay out."""

    def __init__(self, propagate=True):
        self.reads = set()
        self.writes = set()
        self.globals = set()
        self.nonlocals = set()
        self.propagate = propagate  # count writes nested scopes make via nonlocal

    def visit_Name(self, node):
        (self.reads if isinstance(node.ctx, ast.Load) else self.writes).add(node.id)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self.reads.add(node.target.id)
        self.visit(node.target)
        self.visit(node.value)

    def visit_Global(self, node):
        self.globals.update(node.names)

    def visit_Nonlocal(self, node):
        self.nonlocals.update(node.names)

    def visit_Import(self, node):
        for a in node.names:
            self.writes.add(a.asname or a.name.split(".")[0])

    def visit_ImportFrom(self, node):
        for a in node.names:
            if a.name != "*":
                self.writes.add(a.asname or a.name)

    def visit_ExceptHandler(self, node):
        if node.name:
            self.writes.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name:
            self.writes.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node):
        if node.name:
            self.writes.add(node.name)

    def visit_MatchMapping(self, node):
        if node.rest:
            self.writes.add(node.rest)
        self.generic_visit(node)

    def _arguments_outer(self, args):
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(d)
        for a in args.posonlyargs + args.args + args.kwonlyargs + \
                [x for x in (args.vararg, args.kwarg) if x]:
            if a.annotation is not None:
                self.visit(a.annotation)

    def _inner_scope(self, body_nodes, params):
        inner = _Collector()
        for n in body_nodes:
            inner.visit(n)
        local = (inner.writes | set(params)) - inner.globals - inner.nonlocals
        self.reads |= inner.reads - local
        if self.propagate:
            self.writes |= inner.writes & inner.nonlocals

    def visit_FunctionDef(self, node):
        self.writes.add(node.name)
        for d in node.decorator_list:
            self.visit(d)
        self._arguments_outer(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        self._inner_scope(node.body, arg_names(node.args))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._arguments_outer(node.args)
        self._inner_scope([node.body], arg_names(node.args))

    def visit_ClassDef(self, node):
        self.writes.add(node.name)
        for n in node.decorator_list + node.bases + node.keywords:
            self.visit(n)
        self._inner_scope(node.body, ())

    def _comprehension(self, node, elements):
        gens = node.generators
        self.visit(gens[0].iter)  # evaluated in the enclosing scope
        inner = _Collector()
        targets = set()
        for i, g in enumerate(gens):
            t = _Collector()
            t.visit(g.target)
            targets |= t.writes
            if i:
                inner.visit(g.iter)
            for c in g.ifs:
                inner.visit(c)
        for e in elements:
            inner.visit(e)
        self.reads |= inner.reads - targets
        self.writes |= inner.writes - targets  # walrus targets bind outside

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])


def collect(*nodes):
    """A _Collector over the given nodes (statements, expressions or lists)."""
    c = _Collector()
    for n in nodes:
        if n is None:
            continue
        if isinstance(n, list):
            for m in n:
                c.visit(m)
        else:
            c.visit(n)
    return c


def direct_bindings(fn_node):
    """Names the function's own code binds (parameters included), not
    counting assignments that nested functions make through nonlocal."""
    c = _Collector(propagate=False)
    for s in fn_node.body:
        c.visit(s)
    return (c.writes | set(arg_names(fn_node.args))) - c.globals - c.nonlocals


def reads(*nodes):
    """Names the nodes read (in this scope, closures included)."""
    return collect(*nodes).reads


def writes(*nodes):
    """Names the nodes bind in this scope (nonlocal writes of nested scopes included)."""
    return collect(*nodes).writes


def own_nodes(node_or_list, skip_loops=False):
    """Nodes of this function scope: nested functions, lambdas and classes are
    yielded but not entered (nor nested loops when skip_loops)."""
    stack = list(node_or_list) if isinstance(node_or_list, list) else [node_or_list]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES):
            continue
        if skip_loops and isinstance(n, (ast.While, ast.For, ast.AsyncFor)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def contains(node_or_list, types, skip_loops=False):
    """True if a node of `types` occurs in this scope (see own_nodes)."""
    return any(isinstance(n, types) for n in own_nodes(node_or_list, skip_loops))


def scope_declarations(fn_node):
    """(globals, nonlocals) declared in the function itself."""
    g, nl = set(), set()
    for n in own_nodes(fn_node.body):
        if isinstance(n, ast.Global):
            g.update(n.names)
        elif isinstance(n, ast.Nonlocal):
            nl.update(n.names)
    return g, nl


class Liveness:
    """Backward liveness over structured code (no jumps after lowering).
    exit_live: names live whenever the function exits (its nonlocals)."""

    def __init__(self, exit_live=()):
        self.exit_live = set(exit_live)

    def block(self, stmts, live_out):
        live = set(live_out)
        for s in reversed(stmts):
            live = self.stmt(s, live)
        return live

    def stmt(self, s, live_out):
        method = getattr(self, "_" + type(s).__name__, None)
        if method is not None:
            return method(s, live_out)
        c = collect(s)
        return (live_out - c.writes) | c.reads

    def _If(self, s, live_out):
        s._ag_live_out = set(live_out)
        return reads(s.test) | self.block(s.body, live_out) | self.block(s.orelse, live_out)

    def _loop(self, s, live_out, head_reads, iteration_kills):
        s._ag_live_out = set(live_out)
        orelse_in = self.block(s.orelse, live_out)
        base = set(head_reads) | live_out | orelse_in
        head = set(base)
        while True:
            body_in = self.block(s.body, head)
            new_head = base | (body_in - iteration_kills)
            if new_head == head:
                break
            head = new_head
        s._ag_live_head = head
        return head

    def _While(self, s, live_out):
        extra = set(getattr(s, "_ag_extra_tests", ()))
        return self._loop(s, live_out, reads(s.test) | extra, set())

    def _For(self, s, live_out):
        extra = set(getattr(s, "_ag_extra_tests", ()))
        t = collect(s.target)
        head = self._loop(s, live_out, extra | t.reads, t.writes)
        return head | reads(s.iter)

    _AsyncFor = _For

    def _With(self, s, live_out):
        items = collect([i.context_expr for i in s.items])
        targets = collect([i.optional_vars for i in s.items if i.optional_vars is not None])
        return items.reads | targets.reads | (self.block(s.body, live_out) - targets.writes)

    _AsyncWith = _With

    def _Try(self, s, live_out):
        final_in = self.block(s.finalbody, live_out)
        orelse_in = self.block(s.orelse, final_in)
        handlers_in = set()
        for h in s.handlers:
            h_in = self.block(h.body, final_in)
            if h.name:
                h_in.discard(h.name)
            handlers_in |= h_in | reads(h.type)
        body_in = self.block(s.body, orelse_in | handlers_in | final_in)
        return body_in | handlers_in | final_in

    _TryStar = _Try

    def _Match(self, s, live_out):
        live = reads(s.subject)
        for case in s.cases:
            c = collect(case.pattern, case.guard)
            live |= c.reads | (self.block(case.body, live_out) - c.writes)
        return live

    def _Return(self, s, live_out):
        return reads(s.value) | self.exit_live

    def _Raise(self, s, live_out):
        return reads(s.exc, s.cause) | self.exit_live


class Definedness:
    """Forward may/must-defined names. Converted statements start by binding
    every name they modify (to Undefined when unbound), which this models."""

    def __init__(self, excluded):
        self.excluded = excluded  # globals / nonlocals of the function

    def modified(self, s):
        return writes(s) - self.excluded

    def block(self, stmts, may, must):
        for s in stmts:
            may, must = self.stmt(s, may, must)
        return may, must

    def stmt(self, s, may, must):
        method = getattr(self, "_" + type(s).__name__, None)
        if method is not None:
            return method(s, set(may), set(must))
        w = writes(s)
        return may | w, must | w

    def _annotate(self, s, may, must):
        s._ag_may_in, s._ag_must_in = set(may), set(must)
        if getattr(s, "_ag_convert", False):
            return self.modified(s) - may
        return set()

    def _If(self, s, may, must):
        init = self._annotate(s, may, must)
        m1, M1 = self.block(s.body, may | init, must | init)
        m2, M2 = self.block(s.orelse, may | init, must | init)
        return m1 | m2, (M1 & M2) | must | init

    def _While(self, s, may, must, target=frozenset()):
        init = self._annotate(s, may, must)
        mod = writes(s)
        self.block(s.body, may | mod | init, must | init | target)
        self.block(s.orelse, may | mod | init, must | init)
        return may | mod, must | init

    def _For(self, s, may, must):
        return self._While(s, may, must, writes(s.target))

    _AsyncFor = _For

    def _With(self, s, may, must):
        w = writes([i.optional_vars for i in s.items if i.optional_vars is not None])
        return self.block(s.body, may | w, must | w)

    _AsyncWith = _With

    def _Try(self, s, may, must):
        mb, Mb = self.block(s.body, may, must)
        all_may = may | mb
        musts = []
        for h in s.handlers:
            name = {h.name} if h.name else set()
            mh, Mh = self.block(h.body, may | mb | name, must | name)
            all_may |= mh
            musts.append(Mh)
        mo, Mo = self.block(s.orelse, mb, Mb)
        all_may |= mo
        musts.append(Mo)
        after = set.intersection(*musts) if musts else must
        mf, Mf = self.block(s.finalbody, all_may, after)
        return mf, Mf

    _TryStar = _Try

    def _Match(self, s, may, must):
        for case in s.cases:
            w = writes(case.pattern)
            self.block(case.body, may | w, must | w)
        return may | writes(s), must

    def _Delete(self, s, may, must):
        w = writes(s)
        return may, must - w


def analyze(fn_node, fn_globals, fn_nonlocals):
    """Annotates the function's control-flow statements (see module doc).

    Globals are never state; nonlocals are, and are live when the function
    ends (the enclosing function may read them)."""
    Liveness(fn_nonlocals).block(fn_node.body, set(fn_nonlocals))
    entry = set(arg_names(fn_node.args)) | set(fn_nonlocals)
    Definedness(set(fn_globals)).block(fn_node.body, entry, entry)
