"""`while` and `for` statements: one kiln.while_loop when the condition (or
the iterated value) is a tensor being traced, a Dataset's own loop for kiln
datasets, plain Python otherwise."""
import functools

from kiln import _kiln
from kiln.autograph.errors import ConversionError, location, user_location, warn_once
from kiln.autograph.operators import backend as be
from kiln.autograph.operators import state as st
from kiln.autograph.operators.conditionals import tensor_if
from kiln.control_flow import while_loop
from kiln.ops.array_ops import shape as kiln_shape
from kiln.ops.math_ops import logical_and
from kiln.tensor_shape import TensorShape


class Enumerate:
    """enumerate(x) of a tensor or dataset, iterated by for_stmt as a graph loop."""

    __slots__ = ("iterable", "start")

    def __init__(self, iterable, start=0):
        self.iterable, self.start = iterable, start

    def __iter__(self):  # eager use outside a for statement
        return iter(enumerate(_eager_elements(self.iterable), self.start))


def while_stmt(test, body, get_state, set_state, symbol_names, opts=None, extra_test=None):
    """Runs `while test(): body()` (and stops when extra_test() is false).

    The loop runs as Python until the condition is a traced tensor; from then
    on the remaining iterations are one kiln.while_loop over the variables
    named in symbol_names."""
    while True:
        if extra_test is not None:
            more = extra_test()
            if be.is_graph_tensor(more):
                break
            if not be.truth(more):
                return
        cond = test()
        if be.is_graph_tensor(cond):
            break
        if not be.truth(cond):
            return
        body()
    filename, lineno = user_location()
    tensor_loop("while loop", lambda index: test(), lambda index: body(), extra_test,
                get_state, set_state, symbol_names, opts, filename, lineno)


def for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts=None):
    """Runs `for x in iter_: body(x)` (stopping when extra_test() is false):
    a graph loop over a traced tensor's first dimension, the dataset's own
    loop for objects with `_kiln_for_loop`, a Python loop otherwise."""
    inner, start = (iter_.iterable, iter_.start) if isinstance(iter_, Enumerate) else \
        (iter_, None)
    if be.tracing():
        if hasattr(inner, "_kiln_for_loop"):
            filename, lineno = user_location()
            return _dataset_for(inner, start, extra_test, body, get_state, set_state,
                                symbol_names, opts, filename, lineno)
        if be.is_tensor(inner):
            filename, lineno = user_location()
            return _tensor_for(inner, start, extra_test, body, get_state, set_state,
                               symbol_names, opts, filename, lineno)
    if isinstance(iter_, Enumerate):
        iter_ = enumerate(_eager_elements(inner), start)
    elif be.is_tensor(iter_):
        iter_ = _eager_elements(iter_)
    _py_for(iter_, extra_test, body, get_state, set_state, symbol_names, opts)


def _eager_elements(t):
    if not be.is_tensor(t):
        return t
    shape = be.static_shape(t)
    if not shape:
        raise TypeError(f"cannot iterate over a scalar tensor ({be.describe(t)})")
    return (t[j] for j in range(shape[0]))


def _py_for(iterable, extra_test, body, get_state, set_state, names, opts):
    for elem in iterable:
        if extra_test is not None:
            more = extra_test()
            if be.is_graph_tensor(more):
                # A break/return under a tensor condition: the remaining
                # (unrolled) iterations each run under a kiln.cond.
                filename, lineno = user_location()
                tensor_if(more, functools.partial(body, elem), _noop, get_state, set_state,
                          names, opts, "for loop", filename, lineno)
                continue
            if not be.truth(more):
                break
        body(elem)


def _noop():
    pass


def _static_len(t):
    shape = be.static_shape(t)
    if shape is not None and len(shape) == 0:
        raise TypeError(f"cannot iterate over a scalar tensor ({be.describe(t)})")
    return shape[0] if shape else None


def _tensor_for(t, start, extra_test, body, get_state, set_state, names, opts, filename,
                lineno):
    n = _static_len(t)
    if n is None:
        n = kiln_shape(t)[0]

    def step(index):
        element = t[index]
        body(element if start is None else (index + start, element))

    tensor_loop("for loop", lambda index: index < n, step, extra_test, get_state, set_state,
                names, opts, filename, lineno, counted=True)


class _Discovered(Exception):
    """A variable undefined before the loop got a value in the body: its dtype
    and shape are known now, so the loop is staged again with zeros for it."""

    def __init__(self, values):
        super().__init__("internal: loop variable discovery")
        self.values = values


def tensor_loop(kind, test, body, extra_test, get_state, set_state, names, opts, filename,
                lineno, counted=False):
    """Stages a loop as one kiln.while_loop. test(index) and body(index) get
    the iteration counter (a loop variable only when counted)."""
    where = location(filename, lineno)
    st.warn_unsupported(opts, kind, filename, lineno)
    values = list(get_state())
    for name, v in zip(names, values):
        if not st.is_undefined_value(v):
            st.check_leaf_types(name, v, where, f"a tensor-dependent {kind}")
    carried = [i for i, v in enumerate(values) if not st.is_undefined_value(v)]
    undefined = [i for i, v in enumerate(values) if st.is_undefined_value(v)]
    if undefined:
        try:
            _stage_loop(kind, test, body, extra_test, set_state, get_state, names, values,
                        carried, undefined, counted, where, opts)
            return  # none of them was assigned: they stay undefined
        except _Discovered as d:
            for i, v in d.values.items():
                values[i] = st.zeros_like_static(names[i], v, where)
            carried = sorted(carried + list(d.values))
    _stage_loop(kind, test, body, extra_test, set_state, get_state, names, values, carried,
                (), counted, where, opts)


def _stage_loop(kind, test, body, extra_test, set_state, get_state, names, values, carried,
                discover, counted, where, opts):
    init = [st.to_tensors(values[i]) for i in carried]
    lead = 1 if counted or not init else 0  # a counter, or a dummy so the loop has a var
    loop_vars = ([_kiln.constant(0)] if lead else []) + init

    def state_from(loop_values):
        full = list(values)
        for j, i in enumerate(carried):
            full[i] = loop_values[lead + j]
        return full

    def cond_fn(*loop_values):
        set_state(state_from(loop_values))
        index = loop_values[0] if lead else None
        more = extra_test() if extra_test is not None else True
        if not be.is_tensor(more) and not be.truth(more):
            return _kiln.constant(False)
        cond = test(index)
        if not be.is_tensor(cond):
            cond = _kiln.constant(bool(cond))
        if be.is_tensor(more):
            cond = logical_and(more, cond)
        return cond

    def body_fn(*loop_values):
        set_state(state_from(loop_values))
        index = loop_values[0] if lead else None
        body(index)
        new = list(get_state())
        found = {i: new[i] for i in discover if not st.is_undefined_value(new[i])}
        if found:
            raise _Discovered(found)
        out = [_next_value(names[i], loop_values[lead + j], new[i], kind, where)
               for j, i in enumerate(carried)]
        if lead:
            out.insert(0, index + 1)
        return tuple(out)

    opts = opts or {}
    invariants = _shape_invariants(opts.get("shape_invariants"), loop_vars, values, carried,
                                   lead, names, where)
    maximum = opts.get("maximum_iterations")
    final = while_loop(cond_fn, body_fn, tuple(loop_vars), shape_invariants=invariants,
                       maximum_iterations=maximum)
    final = tuple(final) if isinstance(final, (list, tuple)) else (final,)
    set_state(state_from(final))


def _shape_invariants(pairs, loop_vars, values, carried, lead, names, where):
    """Flat shape invariants for kiln.while_loop from set_loop_options'
    [(variable, shape), ...], matched to loop variables by identity."""
    if not pairs:
        return None
    wanted = []
    for pair in pairs:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
            raise ValueError(f"{where}: shape_invariants must be a list of (variable, shape) "
                             f"pairs, got {pair!r}")
        wanted.append((pair[0], TensorShape(pair[1])))
    flat, used = [], set()
    for pos, var in enumerate(loop_vars):
        originals = be.flatten(values[carried[pos - lead]]) if pos >= lead else [None]
        for leaf, orig in zip(be.flatten(var), originals):
            spec = None
            for j, (target, shape) in enumerate(wanted):
                if orig is not None and (target is orig or target is leaf):
                    spec = shape
                    used.add(j)
            if spec is None and be.is_tensor(leaf):
                spec = leaf.shape
            flat.append(spec)
    for j, (target, _) in enumerate(wanted):
        if j not in used:
            raise ValueError(
                f"{where}: shape_invariants names {be.describe(target)}, which is not a "
                f"variable of this loop (loop variables: {', '.join(names) or 'none'})")
    return flat


def _next_value(name, before, after, kind, where):
    """The value of a loop variable after one iteration, checked against before."""
    if st.is_undefined_value(after):
        raise ValueError(
            f"{where}: {st.display_name(name)} is not defined at the end of the loop body "
            f"of this tensor-dependent {kind}")
    st.same_structure_or_raise(name, before, after, where, "value before the loop",
                               "value after one iteration")
    st.check_leaf_types(name, after, where, f"a tensor-dependent {kind}")
    after = st.to_tensors(after, before)
    st.check_dtypes(name, before, after, where, "value before the loop",
                    "value after one iteration")
    return after


def _dataset_for(ds, start, extra_test, body, get_state, set_state, names, opts, filename,
                 lineno):
    kind = "for loop over a dataset"
    where = location(filename, lineno)
    st.warn_unsupported(opts, kind, filename, lineno)
    values = list(get_state())
    for name, v in zip(names, values):
        if not st.is_undefined_value(v):
            st.check_leaf_types(name, v, where, f"a {kind}")
    carried = [i for i, v in enumerate(values) if not st.is_undefined_value(v)]
    undefined = [i for i, v in enumerate(values) if st.is_undefined_value(v)]
    args = (ds, start, extra_test, body, get_state, set_state, names, where)
    if undefined:
        try:
            _stage_dataset(*args, values, carried, undefined)
            return
        except _Discovered as d:
            for i, v in d.values.items():
                values[i] = st.zeros_like_static(names[i], v, where)
            carried = sorted(carried + list(d.values))
    _stage_dataset(*args, values, carried, ())


def _stage_dataset(ds, start, extra_test, body, get_state, set_state, names, where, values,
                   carried, discover):
    """One call of the dataset's loop (see tensor_loop for `discover`)."""
    init = tuple(st.to_tensors(values[i]) for i in carried)
    counting = start is not None
    if counting:
        init = init + (_kiln.constant(start),)

    def state_from(loop_state):
        full = list(values)
        for j, i in enumerate(carried):
            full[i] = loop_state[j]
        return full

    def ds_body(element, loop_state):
        loop_state = tuple(loop_state)
        if counting:
            index, loop_state = loop_state[-1], loop_state[:-1]
            element = (index, element)
        set_state(state_from(loop_state))
        body(element)
        new = list(get_state())
        found = {i: new[i] for i in discover if not st.is_undefined_value(new[i])}
        if found:
            raise _Discovered(found)
        out = tuple(_next_value(names[i], loop_state[j], new[i], "for loop over a dataset",
                                where) for j, i in enumerate(carried))
        return out + (index + 1,) if counting else out

    def ds_extra(loop_state):
        if extra_test is None:
            return None
        loop_state = tuple(loop_state)
        set_state(state_from(loop_state[:-1] if counting else loop_state))
        more = extra_test()
        return more if be.is_tensor(more) else _kiln.constant(bool(more))

    final = tuple(ds._kiln_for_loop(ds_body, init, ds_extra))
    set_state(state_from(final[:-1] if counting else final))


def unconverted_test(value, what):
    """The condition of an if/while the converter had to leave as Python."""
    if be.is_graph_tensor(value):
        _unconvertible(what)
    return value


def unconverted_iter(value, what):
    """The iterated value of a for loop the converter had to leave as Python."""
    if be.is_graph_tensor(value):
        _unconvertible(what)
    return value


def _unconvertible(what):
    filename, lineno = user_location(2)
    msg = (f"{location(filename, lineno)}: {what} cannot be converted to graph control "
           "flow, but it depends on a traced tensor")
    warn_once(msg, filename, lineno)
    raise ConversionError(msg)
