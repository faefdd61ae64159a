"""The pure-Python package's imports point down (docs/ARCHITECTURE.md, "Python layers").

Parses every module under python/kiln with ``ast`` (nothing is imported) and fails when
(a) a function or method body imports a kiln module, unless ALLOWED names it with a reason:
    an import hidden in a function is how an import circle is held apart;
(b) the modules' top-level imports among kiln modules form a cycle.

The graph of (b) follows Python's import rules. ``import kiln.a.b`` and
``from kiln.a import b`` (b a module) load kiln.a.b, and first the packages kiln and
kiln.a (their ``__init__``): edges to kiln.a.b and to each of those packages. An edge
into a package that encloses the importing module is left out when it is implicit,
because Python has started that package's ``__init__`` before the module (importing
kiln.data.transforms runs kiln/data/__init__.py first), so a package re-exporting
its children is not a cycle by itself. Naming an enclosing package explicitly
(``import kiln``, ``from kiln.data import INFINITE`` in a child of kiln.data) is an
edge: it asks for a module that may not have finished running.
"""
import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
SRC = os.path.join(REPO, "python")
PACKAGE = "kiln"
# Compiled modules: importable, with no Python source to parse.
EXTENSIONS = {"kiln._kiln"}

# (file relative to the repository, imported module) -> why the import stays inside a
# function, e.g. {("python/kiln/x.py", "kiln.y"): "one line: why kiln.y cannot be imported
# at the top of x.py"}.
# Keep it small: each entry is an upward call that a layer below could not avoid.
ALLOWED = {}


def _modules():
    """{module name: (path, is_package)} for every .py file of the package."""
    mods = {}
    for folder, dirs, files in os.walk(os.path.join(SRC, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            parts = os.path.relpath(path, SRC)[:-3].split(os.sep)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            mods[".".join(parts)] = (path, is_pkg)
    return mods


MODULES = _modules()


def _is_kiln(name):
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _known(name):
    return name in MODULES or name in EXTENSIONS


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree):
    """(import node, enclosing function name or None) for every import statement;
    class bodies run at import time and count as top level; `if TYPE_CHECKING:`
    blocks never run and are skipped."""
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, function))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
            elif isinstance(child, ast.Lambda):
                visit(child, "<lambda>")
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), function)
            else:
                visit(child, function)

    visit(tree, None)
    return found


def _targets(module, is_pkg, node):
    """The modules an import statement names: kiln.a.b for `import kiln.a.b` and for
    `from kiln.a import b` when b is a module, kiln.a for `from kiln.a import name`."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_pkg else module.split(".")[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    out = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        out.append(sub if alias.name != "*" and _known(sub) else base)
    return out


def _ancestors(name):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _module_imports(module, is_pkg, source):
    """What one module imports: (edges {target: line}, function imports
    [(line, function, target)], unknown kiln modules [(line, target)])."""
    edges, local, unknown = {}, [], []
    enclosing = set(_ancestors(module)) | ({module} if is_pkg else set())
    for node, function in _import_nodes(ast.parse(source)):
        for target in _targets(module, is_pkg, node):
            if not _is_kiln(target):
                continue
            if not _known(target):
                unknown.append((node.lineno, target))
            elif function is not None:
                local.append((node.lineno, function, target))
            else:
                implicit = [p for p in _ancestors(target) if p not in enclosing]
                for t in [target] + implicit:
                    if t != module and t in MODULES:
                        edges.setdefault(t, node.lineno)
    return edges, local, unknown


def _scan():
    """(edges {module: {target: line}}, function imports [(module, line, function, target)],
    unknown [(module, line, target)]) of the whole package."""
    edges, local, unknown = {}, set(), set()
    for module, (path, is_pkg) in MODULES.items():
        with open(path, encoding="utf-8") as f:
            edges[module], loc, unk = _module_imports(module, is_pkg, f.read())
        local.update((module,) + x for x in loc)
        unknown.update((module,) + x for x in unk)
    return edges, sorted(local), sorted(unknown)


def _rel(module):
    return os.path.relpath(MODULES[module][0], REPO)


def _cycles(edges):
    """One cycle (a list of modules, first == last) per strongly connected component."""
    index, low, stack, on_stack, comps = {}, {}, [], set(), []

    def strongconnect(v):  # Tarjan, iterative (deep graphs must not hit the recursion limit)
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    comps.append(comp)

    for v in sorted(edges):
        if v not in index:
            strongconnect(v)
    cycles = []
    for comp in comps:  # the shortest path start -> ... -> start inside the component
        start = min(comp)
        prev, queue, last = {start: None}, [start], None
        while last is None:
            v = queue.pop(0)
            for w in sorted(edges.get(v, ())):
                if w == start:
                    last = v
                    break
                if w in comp and w not in prev:
                    prev[w] = v
                    queue.append(w)
        path = [last]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        cycles.append(path[::-1] + [start])
    return cycles


EDGES, LOCAL, UNKNOWN = _scan()


def test_sources_found():
    assert len(MODULES) > 50 and "kiln.ops.math_ops" in MODULES, SRC


def test_no_kiln_imports_inside_functions():
    problems = [f"{_rel(m)}:{line}: {fn}() imports {target}"
                for m, line, fn, target in LOCAL if (_rel(m), target) not in ALLOWED]
    assert not problems, (
        "kiln modules imported inside function bodies (move the import to the top of the "
        "file, or move the code it needs to a lower module; see docs/ARCHITECTURE.md, "
        "'Python layers'):\n  " + "\n  ".join(problems))


def test_allow_list_is_current():
    used = {(_rel(m), target) for m, _, _, target in LOCAL}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"ALLOWED entries that no longer match an import: {stale}"


def test_imports_name_existing_modules():
    assert not UNKNOWN, "imports of kiln modules that do not exist:\n  " + "\n  ".join(
        f"{_rel(m)}:{line}: {target}" for m, line, target in UNKNOWN)


def test_no_import_cycles():
    cycles = _cycles(EDGES)
    text = []
    for cycle in cycles:
        steps = [f"{a} ({_rel(a)}:{EDGES[a][b]} imports {b})" for a, b in zip(cycle, cycle[1:])]
        text.append(" -> ".join(cycle) + "\n      " + "\n      ".join(steps))
    assert not cycles, "import cycles among kiln modules (top-level imports):\n  " + \
        "\n  ".join(text)


def test_cycle_finder_finds_a_cycle():
    # The checker itself: a -> b -> c -> a is found, d -> a is not part of it.
    edges = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert _cycles(edges) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b": 1}, "b": {}}) == []


def test_edges_follow_python_import_rules():
    def edges(source, module="kiln.data.transforms"):
        return set(_module_imports(module, False, source)[0])
    # A sibling module: its package's __init__ has already started, no edge to it.
    assert edges("from kiln.data import loops") == {"kiln.data.loops"}
    assert edges("from . import loops") == {"kiln.data.loops"}
    # A name from the enclosing package's __init__: an edge to it.
    assert edges("from kiln.data import INFINITE") == {"kiln.data"}
    # Another package's module runs that package's __init__ first.
    assert edges("from kiln.ops.array_ops import gather") == {"kiln.ops.array_ops", "kiln.ops"}
    assert edges("import kiln") == {"kiln"}
    assert edges("if TYPE_CHECKING:\n    import kiln.keras") == set()
    local = _module_imports("kiln.data.transforms", False,
                            "class A:\n    def f(self):\n        from .. import ops\n")[1]
    assert local == [(3, "f", "kiln.ops")]
