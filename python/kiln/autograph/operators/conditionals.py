"""`if` statements and conditional expressions: kiln.cond when the condition
is a tensor being traced, plain Python otherwise."""
from kiln.autograph.errors import location, user_location
from kiln.autograph.operators import backend as be
from kiln.autograph.operators import state as st
from kiln.autograph.operators.variables import Undefined, UndefinedReturnValue
from kiln.control_flow import cond as kiln_cond
from kiln.ops.math_ops import logical_not

_BRANCH = {"if": "if branch", "else": "else branch"}


def if_stmt(cond, body, orelse, get_state, set_state, symbol_names, opts=None):
    """Runs body() if cond else orelse(); a traced tensor cond runs both into a
    kiln.cond whose outputs are the variables named in symbol_names."""
    if be.is_graph_tensor(cond):
        filename, lineno = user_location()
        tensor_if(cond, body, orelse, get_state, set_state, symbol_names, opts,
                  "if statement", filename, lineno)
    elif be.truth(cond):
        body()
    else:
        orelse()


def if_exp(cond, if_true, if_false):
    """`a if cond else b` with if_true/if_false as thunks."""
    if be.is_graph_tensor(cond):
        return kiln_cond(cond, if_true, if_false)
    return if_true() if be.truth(cond) else if_false()


class _Swap(Exception):
    """The branch traced first left the return value undefined; trace the
    other branch first so it can give the placeholder's dtype and shape."""


def tensor_if(cond, body, orelse, get_state, set_state, names, opts, kind, filename,
              lineno):
    """Stages `if cond: body() else: orelse()` as one kiln.cond."""
    where = location(filename, lineno)
    st.warn_unsupported(opts, kind, filename, lineno)
    init = tuple(get_state())
    try:
        raw, out = _stage(cond, body, orelse, init, set_state, get_state, names, where,
                          swapped=False)
    except _Swap:
        raw, out = _stage(logical_not(cond), orelse, body, init, set_state, get_state,
                          names, where, swapped=True)
    set_state(_merge(raw, out, names))


def _stage(cond, first, second, init, set_state, get_state, names, where, swapped):
    keys = ("else", "if") if swapped else ("if", "else")
    raw, staged = {}, {}
    missing = (_NOT_TRACED,) * len(names)

    def branch(fn, key, other):
        def run():
            set_state(init)
            fn()
            values = tuple(get_state())
            raw[key] = values
            out = tuple(_output(names[i], v, raw.get(other, missing)[i],
                                staged.get(other, missing)[i], key, other, where, swapped)
                        for i, v in enumerate(values))
            staged[key] = out
            return out
        return run

    out = kiln_cond(cond, branch(first, keys[0], keys[1]),
                    branch(second, keys[1], keys[0]))
    return raw, tuple(out) if out is not None else ()


_DUMMY = 0  # stands in for a variable undefined (or a Python object) in a branch
_NOT_TRACED = object()  # the other branch's value before it was traced


def _output(name, value, other, other_out, key, other_key, where, swapped):
    """What branch `key` hands to kiln.cond for one variable; `other` is the
    other branch's raw value (other_out what it handed to kiln.cond), or
    _NOT_TRACED when that branch has not been traced yet."""
    here, there = _BRANCH[key], _BRANCH[other_key]
    traced = other is not _NOT_TRACED
    if isinstance(value, Undefined):
        if not traced or isinstance(other, Undefined):
            return _DUMMY
        raise _undefined_error(name, there, here, where)
    if isinstance(value, UndefinedReturnValue):
        if not traced or isinstance(other, UndefinedReturnValue):
            return _DUMMY
        return _output(name, st.zeros_like_static(name, other, where), other, other_out,
                       key, other_key, where, swapped)
    if isinstance(other, Undefined):
        raise _undefined_error(name, here, there, where)
    if isinstance(other, UndefinedReturnValue):
        if swapped:
            raise ValueError(f"{where}: the {there} must also return a value")
        raise _Swap()
    if not traced:
        return _stage_new(name, value, where, here)
    if st.is_return_name(name) and (value is None) != (other is None):
        returns, nothing = (here, there) if other is None else (there, here)
        raise ValueError(
            f"{where}: the {returns} of this tensor-dependent if returns "
            f"{be.describe(value if other is None else other)} but the {nothing} returns "
            "None; return a value of the same structure in both branches")
    st.same_structure_or_raise(name, other, value, where, there, here)
    out = []
    for x, o, so in zip(be.flatten(value), be.flatten(other), be.flatten(other_out)):
        if be.is_tensor(x) or be.is_tensor_array(x):
            if not (be.is_tensor(o) or be.is_tensor_array(o) or st.is_python_scalar(o)):
                raise _mixed_error(name, x, o, here, there, where)
            st.check_dtypes(name, so, x, where, there, here)
            out.append(x)
        elif st.is_python_scalar(x):
            if not st.carriable(o):
                raise _mixed_error(name, x, o, here, there, where)
            t = st.scalar_to_tensor(x, so)
            if be.is_tensor(so) and so.dtype != t.dtype:
                raise TypeError(
                    f"{where}: {st.display_name(name)} is the Python {type(x).__name__} "
                    f"{x!r} in the {here} but a tensor of dtype {be.dtype_name(so.dtype)} in "
                    f"the {there}; give both the same dtype")
            out.append(t)
        else:
            if not (o is x or _py_equal(o, x)):
                raise _mixed_error(name, x, o, here, there, where)
            out.append(_DUMMY)
    return be.pack_as(value, out)


def _stage_new(name, value, where, here):
    """Outputs of the branch traced first: numbers become tensors, other
    Python objects a dummy (they must then be equal in the other branch)."""
    out = []
    for x in be.flatten(value):
        if be.is_tensor(x) or be.is_tensor_array(x):
            out.append(x)
        elif st.is_python_scalar(x):
            out.append(st.scalar_to_tensor(x))
        else:
            out.append(_DUMMY)
    return be.pack_as(value, out)


def _mixed_error(name, x, o, here, there, where):
    return TypeError(
        f"{where}: {st.display_name(name)} is {be.describe(x)} in the {here} and "
        f"{be.describe(o)} in the {there}; a tensor-dependent if can only choose between "
        "tensors (or Python numbers), not other Python objects")


def _py_equal(a, b):
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 -- arbitrary user objects
        return False


def _undefined_error(name, defined_in, missing_in, where):
    if st.is_return_name(name):
        return ValueError(
            f"{where}: the {defined_in} of this tensor-dependent if returns a value, so the "
            f"{missing_in} must also return one (or the code after the if must)")
    return ValueError(
        f"{where}: '{name}' is defined in the {defined_in} of a tensor-dependent if but not "
        f"in the {missing_in}, and it is used after the if; define it in both branches or "
        "before the if")


def _merge(raw, out, names):
    """Final values: cond outputs, except where both branches agree on a
    non-tensor value (a Python flag, None, an object) or left it undefined."""
    a, b = raw.get("if"), raw.get("else")
    result = []
    for i, name in enumerate(names):
        va, vb = a[i], b[i]
        if st.is_undefined_value(va) and st.is_undefined_value(vb):
            result.append(va)
            continue
        if st.is_undefined_value(va) or st.is_undefined_value(vb):
            result.append(out[i])  # a return value filled with a placeholder
            continue
        la, lb, lo = be.flatten(va), be.flatten(vb), be.flatten(out[i])
        merged = []
        for x, y, o in zip(la, lb, lo):
            if not be.is_tensor(x) and not be.is_tensor(y) and \
                    not be.is_tensor_array(x) and (x is y or _py_equal(x, y)):
                merged.append(x)
            else:
                merged.append(o)
        result.append(be.pack_as(va, merged))
    return tuple(result)
