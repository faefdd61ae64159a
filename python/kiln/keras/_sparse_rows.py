"""Embedding gradients as TensorFlow's Keras applies them.

In TensorFlow an embedding lookup's gradient is an IndexedSlices (one row per
looked-up index, repeats not merged), and Keras 3's optimizers square it row by
row: Adam's and RMSprop's second moments get the *sum of the squares* of a
repeated index's rows, not the square of their sum (linear updates, SGD's, see
the sum either way). kiln's gradients are dense, so during a train step
(``collecting``) Embedding records, for its variable, the dense gradient and
the per-row sum of squares; the optimizer squares a gradient with
``square(gradient, variable)``, which uses that record when the gradient is
unchanged (the same values: no clipping, no other use of the variable).
"""
import threading

from kiln.gradient import custom_gradient
from kiln.ops import array_ops, math_ops

_STATE = threading.local()


class collecting:
    """Records embedding gradients while open (a train step opens it)."""

    def __enter__(self):
        self._outer = getattr(_STATE, "rows", None)
        _STATE.rows = {}
        return self

    def __exit__(self, *exc):
        _STATE.rows = self._outer


def active():
    return getattr(_STATE, "rows", None) is not None


def _record(variable, grad, squares):
    rows = getattr(_STATE, "rows", None)
    if rows is None:
        return
    old = rows.get(variable._id)
    if old is not None:  # looked up twice: TensorFlow concatenates the slices
        grad, squares = old[0] + grad, old[1] + squares
    rows[variable._id] = (grad, squares)


def lookup(variable, ids):
    """``gather(variable, ids)`` whose gradient records its row squares."""
    rows, depth = int(variable.shape[0]), variable.shape[1:]

    @custom_gradient
    def gather(ids_arg):
        out = array_ops.gather(variable, ids_arg, axis=0)

        def grad(dy, variables=None):
            flat_ids = array_ops.reshape(ids_arg, [-1])
            flat_dy = array_ops.reshape(dy, [-1] + list(depth))
            g = math_ops.unsorted_segment_sum(flat_dy, flat_ids, rows)
            sq = math_ops.unsorted_segment_sum(flat_dy * flat_dy, flat_ids, rows)
            _record(variable, g, sq)
            return [None], [g]
        return out, grad
    return gather(ids)


def square(gradient, variable):
    """The gradient's square as TensorFlow's Keras computes it (see above)."""
    rows = getattr(_STATE, "rows", None)
    entry = rows.get(variable._id) if rows else None
    if entry is None:
        return gradient * gradient
    grad, squares = entry
    same = math_ops.reduce_all(math_ops.equal(grad, gradient))
    return array_ops.where(same, squares, gradient * gradient)
