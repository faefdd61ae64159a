"""Loops over datasets: eager Python loops, and graph loops whose size does not
depend on the data.

Index-addressable datasets loop with kiln.while_loop over an int64 index
(element i computed in the body). Others pull elements from a Python iterator
at run time through PyFunction ops: an `open` op registers a fresh iterator
under a token, a `next` op per iteration returns (has_value, element...), and
a `close` op drops it. The token threads through the loop, which orders them.
"""
import collections
import itertools

import numpy as np

from kiln import _kiln, errors, nest
from kiln.control_flow import cond, while_loop
from kiln.data import py_func, structure
from kiln.tensor_shape import TensorShape

_raw = _kiln.raw
INT64_MAX = 2**63 - 1
_BOOL = _kiln.as_dtype("bool")
_INT64 = _kiln.as_dtype("int64")

# token -> Python iterator. Loops close theirs; iterators made inside a traced
# function cannot know when the graph run ends, so the oldest entries are
# dropped past _MAX_LIVE (a bound, not a lifetime).
_live = collections.OrderedDict()
_tokens = itertools.count(1)
_MAX_LIVE = 4096


def int64(v):
    """v (Python int or integer tensor) as an int64 scalar tensor."""
    if isinstance(v, (_kiln.Tensor, _kiln.Variable)):
        v = structure.to_tensor(v)
        return v if v.dtype == _INT64 else _raw.Cast(v, DstT=_INT64)
    return structure.to_tensor(np.int64(v))


def _bool(v):
    if isinstance(v, (_kiln.Tensor, _kiln.Variable)):
        v = structure.to_tensor(v)
        if v.dtype != _BOOL:
            raise TypeError(f"a loop's extra test must be a bool tensor, got {v.dtype.name}")
        return v
    return structure.to_tensor(np.bool_(bool(v)))


def _truth(v):
    if isinstance(v, (_kiln.Tensor, _kiln.Variable)):
        return bool(structure.to_tensor(v).numpy())
    return bool(v)


def test_value(extra_test, state):
    """extra_test(state) as a bool tensor, or None when there is no test (no
    extra_test, or it returned None)."""
    if extra_test is None:
        return None
    t = extra_test(state)
    return None if t is None else _bool(t)


def _continue(more, extra_test, state):
    t = test_value(extra_test, state)
    return more if t is None else _raw.LogicalAnd(more, t)


def _as_state(new_state, who):
    if isinstance(new_state, list):
        return tuple(new_state)
    if not isinstance(new_state, tuple):
        raise TypeError(f"{who}: the loop body must return the loop state as a tuple, got "
                        f"{type(new_state).__name__}")
    return new_state


def eager_loop(iterable, body_fn, init_state, extra_test):
    """The Python loop: extra_test is checked before each element is taken."""
    state = tuple(init_state)
    it = iter(iterable)
    while True:
        if extra_test is not None:
            t = extra_test(state)
            if t is not None and not _truth(t):
                break
        try:
            element = next(it)
        except StopIteration:
            break
        state = _as_state(body_fn(element, state), "for loop")
    return state


def _shape(x):
    if isinstance(x, (_kiln.Tensor, _kiln.Variable)):
        return x.shape
    handle = getattr(x, "handle", None)  # TensorArray
    if handle is not None:
        return handle.shape
    return TensorShape([])


def relaxing_while(c, b, loop_vars):
    """while_loop that, like tf.data's loops, relaxes the static shape of a
    loop variable the body changes (e.g. a sum of elements of unknown shape)
    and traces again, instead of failing."""
    invariants = None
    for _ in range(8):
        seen = []

        def body(*vals):
            out = b(*vals)
            seen.append(out)
            return out
        try:
            return while_loop(c, body, loop_vars, shape_invariants=invariants)
        except errors.InvalidArgumentError:
            if not seen:
                raise
            before = invariants or [_shape(x) for x in nest.flatten(loop_vars)]
            after = [_shape(x) for x in nest.flatten(seen[-1])]
            if len(after) != len(before):
                raise
            relaxed = [TensorShape(a).most_specific_compatible_shape(o)
                       for a, o in zip(before, after)]
            if relaxed == before:
                raise
            invariants = relaxed
    return while_loop(c, b, loop_vars, shape_invariants=invariants)


def index_loop(dataset, body_fn, init_state, extra_test):
    """while i < n (and extra_test): state = body_fn(element_at(i), state)."""
    n = dataset._num_elements()

    def c(i, state):
        return _continue(_raw.Less(i, n), extra_test, state)

    def b(i, state):
        element = dataset._element_at(i)
        return i + int64(1), _as_state(body_fn(element, state), "for loop")

    _, state = relaxing_while(c, b, (int64(0), tuple(init_state)))
    return tuple(state)


# ---- run-time pulls from Python iterators ----

def open_token(make_iterator, who):
    """A PyFunction op that starts a new Python iterator each time it runs and
    returns its token (int64 scalar)."""
    def run():
        token = next(_tokens)
        _live[token] = iter(make_iterator())
        while len(_live) > _MAX_LIVE:
            _live.popitem(last=False)
        return [int64(token)]
    return py_func.call_op(run, [], [_INT64], [TensorShape([])], True, who)[0]


def close_token(token, who):
    def run(tok):
        _live.pop(int(tok.numpy()), None)
        return []
    py_func.call_op(run, [token], [], [], True, who)


def _token_iterator(tok, who):
    it = _live.get(int(tok.numpy()))
    if it is None:
        raise errors.FailedPreconditionError(
            f"{who}: the dataset iterator is closed (more than {_MAX_LIVE} iterators were "
            "open at once)")
    return it


def pull(get_iterator, inputs, spec, who, at_end="flag"):
    """A PyFunction op taking the next element of get_iterator(*inputs).
    at_end="flag": returns (has_value, element), a dummy element at the end;
    at_end="raise": returns the element; the end raises OutOfRangeError."""
    flat_specs = structure.component_specs(spec)
    touts = [s.dtype for s in flat_specs]
    shapes = [s.shape for s in flat_specs]
    flagged = at_end == "flag"
    if flagged:
        touts, shapes = [_BOOL] + touts, [TensorShape([])] + shapes

    def run(*args):
        it = get_iterator(*args)
        try:
            value = next(it)
        except StopIteration:
            if not flagged:
                raise errors.OutOfRangeError(f"{who}: End of sequence") from None
            return [structure.to_tensor(np.bool_(False))] + \
                [structure.dummy_value(s) for s in flat_specs]
        flat = structure.to_components(spec, value)
        if len(flat) != len(flat_specs):
            raise errors.InternalError(f"{who}: element has {len(flat)} components, the "
                                       f"dataset's element_spec {len(flat_specs)}")
        return ([structure.to_tensor(np.bool_(True))] if flagged else []) + flat

    outs = py_func.call_op(run, list(inputs), touts, shapes, True, who)
    if flagged:
        return outs[0], structure.from_components(spec, outs[1:])
    return structure.from_components(spec, outs)


def stream_loop(spec, body_fn, init_state, extra_test, who, make_iterator=None,
                source=None):
    """A graph loop over elements pulled at run time from a Python iterator: a
    fresh one from make_iterator() per run (opened and closed around the loop),
    or source = (get_iterator, inputs) with inputs [] or [token]."""
    if make_iterator is not None:
        token = open_token(make_iterator, who)

        def get(tok):
            return _token_iterator(tok, who)
        has_token = True
    else:
        get, inputs = source
        has_token = bool(inputs)
        token = inputs[0] if has_token else int64(0)

    def c(tok, more, state):
        return _continue(more, extra_test, state)

    def b(tok, more, state):
        has, element = pull(get, [tok] if has_token else [], spec, who)
        new_state = cond(has, lambda: _as_state(body_fn(element, state), "for loop"),
                         lambda: state)
        return tok, has, tuple(new_state) if new_state is not None else ()

    tok, _, state = relaxing_while(c, b, (token, structure.to_tensor(np.bool_(True)),
                                      tuple(init_state)))
    if make_iterator is not None:
        close_token(tok, who)
    return tuple(state)
