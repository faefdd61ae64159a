"""cond, while_loop and TensorArray over nested structures (tf.cond,
tf.while_loop, tf.TensorArray). The C++ side works on flat tensor lists."""
from kiln import _kiln, nest
from kiln.ops.array_ops import gather as _gather
from kiln.ops.core import is_tensor
from kiln.tensor_shape import TensorShape

Tensor, Variable = _kiln.Tensor, _kiln.Variable


class TensorArray(_kiln._TensorArray):
    """A list of same-dtype tensors with value semantics (tf.TensorArray): every
    write returns a new TensorArray. Usable eagerly and inside while_loop.

    With ``infer_shape`` (the default) every element must have the same shape,
    fixed by ``element_shape`` or the first write; the static element shape
    learned from writes inside a loop or cond body carries over to the
    TensorArray the loop returns, so ``stack()`` has the static shape
    ``[size, *element_shape]`` (``size`` when it is a known constant and not
    ``dynamic_size``). Without it, elements may differ in shape (``stack``
    then needs them equal).

    The constructor (TensorFlow's signature), ``write``, ``read``, ``stack``,
    ``unstack``, ``size`` and the properties are C++ (kiln._kiln._TensorArray):
    an eager loop calls them without a Python frame each."""

    __slots__ = ()

    def gather(self, indices, name=None):
        return _gather(self.stack(), indices)

    def scatter(self, indices, value, name=None):
        ta = self
        for i, idx in enumerate(indices):
            ta = ta.write(idx, value[i])
        return ta

    def mark_used(self):
        pass

    def __repr__(self):
        return f"<kiln.TensorArray dtype={self.dtype.name}>"


_kiln._set_tensor_array_class(TensorArray)  # what write/unstack return, subclasses too


def _flatten_vars(structure):
    """Leaves as tensors: TensorArrays become their handles, numbers tensors; composite
    tensors (ragged, sparse, ExtensionType values) stand for their component tensors."""
    flat = nest.flatten(structure, expand_composites=True)
    out = []
    for x in flat:
        if isinstance(x, TensorArray):
            out.append(x.handle)
        elif isinstance(x, Variable):
            out.append(x.read_value())
        elif isinstance(x, Tensor):
            out.append(x)
        else:
            out.append(_kiln.convert_to_tensor(x))
    return flat, out


def _repack(structure, template_flat, tensors):
    leaves = []
    for t, tmpl in zip(tensors, template_flat):
        leaves.append(tmpl._with_handle(t) if isinstance(tmpl, TensorArray) else t)
    return nest.pack_sequence_as(structure, leaves, expand_composites=True)


def _describe(structure):
    def leaf(x):
        if isinstance(x, TensorArray):
            return "TensorArray"
        if is_tensor(x):
            return f"Tensor({x.dtype.name})"
        return repr(x)
    try:
        return repr(nest.map_structure(leaf, structure))
    except Exception:  # noqa: BLE001 -- only for the message
        return repr(structure)


def cond(pred, true_fn=None, false_fn=None, name=None):
    """Runs true_fn() if pred else false_fn() (tf.cond). In a traced function
    both branches are traced into an If node; their results must have the same
    structure and dtypes. A Python bool `pred` simply picks a branch."""
    if true_fn is None or false_fn is None:
        raise TypeError("cond: true_fn and false_fn are required")
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callable")
    if not is_tensor(pred):
        if isinstance(pred, (bool, int)) or pred is None:
            return true_fn() if pred else false_fn()
        pred = _kiln.convert_to_tensor(pred)
    results = {}

    def branch(fn, key):
        def run():
            out = fn()
            flat, tensors = _flatten_vars(out)
            if key == "false" and "true" in results:
                t_out = results["true"][0]
                try:
                    nest.assert_same_structure(t_out, out, expand_composites=True)
                    same = len(results["true"][1]) == len(flat)
                except ValueError:
                    same = False
                if not same:
                    raise ValueError(
                        "cond: true_fn and false_fn must return the same structure; "
                        f"true_fn returned {_describe(t_out)}, false_fn returned "
                        f"{_describe(out)}")
            results[key] = (out, flat)
            return tensors
        return run

    flat = _kiln._cond(pred, branch(true_fn, "true"), branch(false_fn, "false"),
                       name or "cond")
    out, tmpl = results.get("true") or results.get("false")
    if out is None:
        return None
    return _repack(out, tmpl, flat)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeats loop_vars = body(*loop_vars) while cond(*loop_vars) (tf.while_loop).

    loop_vars is a tuple/list (nested structures allowed) of tensors, numbers
    or TensorArrays; body returns the same structure. In a traced function the
    loop becomes one While node. shape_invariants gives shapes (None dims) a
    variable may take across iterations."""
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callable")
    single = not isinstance(loop_vars, (list, tuple))
    structure = (loop_vars,) if single else loop_vars
    tmpl_flat, init = _flatten_vars(structure)
    invariants = None
    if shape_invariants is not None:
        inv = (shape_invariants,) if single else shape_invariants
        invariants = _flatten_shapes(inv, len(init))

    def unpack(tensors):
        return _repack(structure, tmpl_flat, tensors)

    def cond_flat(tensors):
        vals = unpack(tensors)
        return cond(*vals)

    def body_flat(tensors):
        vals = unpack(tensors)
        out = body(*vals)
        if single and not (isinstance(out, (list, tuple)) and len(out) == 1):
            out = (out,)
        if isinstance(out, list) and isinstance(structure, tuple):
            out = tuple(out)
        try:
            nest.assert_same_structure(structure, out, check_types=False,
                                       expand_composites=True)
        except ValueError:
            raise ValueError(
                "while_loop: body must return the same structure as loop_vars; loop_vars is "
                f"{_describe(structure)}, body returned {_describe(out)}") from None
        _, tensors_out = _flatten_vars(out)
        return tensors_out

    flat = _kiln._while_loop(cond_flat, body_flat, init, invariants,
                             -1 if maximum_iterations is None else int(maximum_iterations),
                             name or "while")
    result = unpack(flat)
    return result[0] if single else result


def _is_shape_leaf(x):
    if isinstance(x, TensorShape) or x is None:
        return True
    return isinstance(x, (list, tuple)) and all(d is None or isinstance(d, int) for d in x)


def _flatten_shapes(inv, n):
    out = []

    def rec(x):
        if _is_shape_leaf(x):
            out.append(x)
        else:
            for c in x:
                rec(c)

    rec(inv)
    if len(out) != n:
        raise ValueError(f"while_loop: shape_invariants has {len(out)} shapes for {n} loop "
                         "variables")
    return out
