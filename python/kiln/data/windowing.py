"""Dataset.window, group_by_window and bucket_by_sequence_length: elements
gathered into windows, each handed on as a dataset (iterated eagerly).

window(size, shift, stride): window k holds the input elements at
k * shift + j * stride for j < size (fewer at the end unless drop_remainder).
group_by_window: elements gather per key (key_func) until their group holds
window_size of them; reduce_func(key, group) then gives the output elements.
At the end of the input the groups left are reduced in increasing key order."""
import collections

import numpy as np

from kiln import _kiln, errors, nest
from kiln.data import extension, functions, loops, nested, padding, structure
from kiln.data.dataset import UNKNOWN, DatasetV2, install_methods
from kiln.data.transforms import count_arg, UnaryDataset
from kiln.ops import math_ops
from kiln.tensor_shape import as_shape

TensorSpec = _kiln.TensorSpec
_raw = _kiln.raw
_INT64 = _kiln.as_dtype("int64")
_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1


def _positive(value, what, who):
    n = count_arg(value, what.lower().replace("window ", ""), who)
    if n <= 0:
        raise errors.InvalidArgumentError(f"{what} must be greater than zero.")
    return n


def _window_count(n, size, shift, stride, drop):
    if n < 0:
        return n
    if not drop:
        return -(-n // shift)
    span = (size - 1) * stride + 1
    return 0 if n < span else (n - span) // shift + 1


class WindowDataset(UnaryDataset):
    _name = "WindowDataset"

    def __init__(self, parent, size, shift, stride, drop_remainder):
        size = _positive(size, "Window size", "window")
        shift = size if shift is None else _positive(shift, "Window shift", "window")
        stride = _positive(stride, "Window stride", "window")
        drop = bool(drop_remainder)
        extension.check_shape_property(parent.element_spec)
        spec = nest.map_structure(nested.DatasetSpec, parent.element_spec)
        card = _window_count(parent._card, size, shift, stride, drop)
        super().__init__(parent, spec, card)
        self._size, self._shift, self._stride, self._drop = size, shift, stride, drop

    def _eager_iter(self):
        span = (self._size - 1) * self._stride + 1
        it = self._parent._eager_iter()
        buf, base, start, done = collections.deque(), 0, 0, False
        while True:
            while not done and base + len(buf) < start + span:
                element = next(it, _END)
                if element is _END:
                    done = True
                else:
                    buf.append(element)
            end = min(start + span, base + len(buf))
            if end <= start or (self._drop and end - start < span):
                return
            yield self._window([buf[i - base] for i in range(start, end, self._stride)])
            start += self._shift
            while buf and base < start:
                buf.popleft()
                base += 1

    def _window(self, items):
        specs = nest.flatten(self._parent.element_spec)
        flats = [nest.flatten(x) for x in items]
        parts = [nested.ListDataset([f[k] for f in flats], s) for k, s in enumerate(specs)]
        return nest.pack_sequence_as(self._parent.element_spec, parts)


_END = object()


def _int64_result(fn, who):
    """fn with its result converted to an int64 tensor, as tf.data does."""
    def wrapper(*args):
        value = fn(*args)
        if isinstance(value, (_kiln.Tensor, _kiln.Variable)):
            t = structure.to_tensor(value)
            if t.dtype != _INT64:
                raise ValueError(f"Tensor conversion requested dtype int64 for Tensor with "
                                 f"dtype {t.dtype.name}: {t!r}")
            return t
        return structure.to_tensor(value, _INT64)
    wrapper.__name__ = getattr(fn, "__name__", who).replace("<lambda>", "lambda")
    return wrapper


def _scalar_int64_fn(fn, spec, who, arg):
    f = functions.StructuredFunction(_int64_result(fn, who), spec, who)
    out = f.output_spec
    if nest.is_nested(out) or not out.is_compatible_with(TensorSpec([], _INT64)):
        raise ValueError(f"Invalid `{arg}`. `{arg}` must return a single `tf.int64` scalar "
                         f"tensor but its return type is {out}.")
    return f


class GroupByWindowDataset(UnaryDataset):
    """Windows of elements grouped by key. key_of(element) -> int,
    size_of(key) -> int and reduce(key, window dataset) -> dataset are
    Python callables; spec is the element_spec of what reduce returns."""

    _name = "GroupByWindowDataset"

    def __init__(self, parent, key_of, size_of, reduce, spec):
        super().__init__(parent, spec, UNKNOWN)
        self._key_of, self._size_of, self._reduce = key_of, size_of, reduce

    def _eager_iter(self):
        groups, sizes = {}, {}
        for element in self._parent._eager_iter():
            key = self._key_of(element)
            if key not in groups:
                groups[key], sizes[key] = [], self._window_size(key)
            groups[key].append(element)
            if len(groups[key]) >= sizes[key]:
                yield from self._emit(key, groups.pop(key))
                del sizes[key]
        for key in sorted(groups):
            yield from self._emit(key, groups[key])

    def _window_size(self, key):
        n = self._size_of(key)
        if n <= 0:
            raise errors.InvalidArgumentError(
                f"Window size must be greater than zero, but got {n}.")
        return n

    def _emit(self, key, items):
        window = nested.ListDataset(items, self._parent.element_spec)
        return self._reduce(key, window)._eager_iter()


def group_by_window(parent, key_func, reduce_func, window_size, window_size_func):
    if (window_size is not None and window_size_func) or \
            not (window_size is not None or window_size_func):
        raise ValueError("Either the `window_size` argument or the `window_size_func` "
                         "argument must be specified.")
    who = "Dataset.group_by_window()"
    key_fn = _scalar_int64_fn(key_func, parent.element_spec, who, "key_func")
    if window_size is not None:
        n = count_arg(window_size, "window_size", "group_by_window")

        def size_of(key):
            return n
    else:
        size_fn = _scalar_int64_fn(window_size_func, TensorSpec([], _INT64), who,
                                   "window_size_func")

        def size_of(key):
            return int(size_fn(loops.int64(key)).numpy())
    key_spec = TensorSpec([], _INT64)
    out = nested.probe(reduce_func, (key_spec, nested.DatasetSpec(parent.element_spec)), who)
    if not isinstance(out, DatasetV2):
        raise TypeError("Invalid `reduce_func`. `reduce_func` must return a single "
                        "`tf.data.Dataset` object but its return type is "
                        f"{nested.type_of(out)}.")

    def reduce(key, window):
        result = reduce_func(loops.int64(key), window)
        if not isinstance(result, DatasetV2):
            raise TypeError(f"{who}: reduce_func returned {type(result).__name__}, not a "
                            "Dataset")
        return result

    return GroupByWindowDataset(parent, lambda el: int(key_fn(el).numpy()), size_of, reduce,
                                out.element_spec)


def _bucket_key_fn(element_length_func, boundaries):
    """element -> the index of the bucket [b[i-1], b[i]) holding its length."""
    lo = np.asarray([_INT32_MIN] + boundaries, dtype=np.int64)
    hi = np.asarray(boundaries + [_INT32_MAX], dtype=np.int64)

    def bucket(*args):
        length = structure.to_tensor(element_length_func(*args))
        if not length.dtype.is_integer:
            raise TypeError(f"bucket_by_sequence_length: element_length_func must return an "
                            f"integer scalar, got {length.dtype.name}")
        length = loops.int64(length)
        inside = _raw.LogicalAnd(_raw.LessEqual(structure.to_tensor(lo), length),
                                 _raw.Less(length, structure.to_tensor(hi)))
        ids = structure.to_tensor(np.arange(len(lo), dtype=np.int64))
        never = structure.to_tensor(np.full(len(lo), 2**63 - 1, dtype=np.int64))
        return math_ops.reduce_min(_raw.SelectV2(inside, ids, never))
    return bucket


def _fill_none(shape, filler):
    if shape.rank is None:
        return shape
    return as_shape([filler if d is None else d for d in shape.as_list()])


def bucket_by_sequence_length(parent, element_length_func, bucket_boundaries,
                              bucket_batch_sizes, padded_shapes, padding_values,
                              pad_to_bucket_boundary, no_padding, drop_remainder):
    if len(bucket_batch_sizes) != len(bucket_boundaries) + 1:
        raise ValueError(
            "`len(bucket_batch_sizes)` must equal `len(bucket_boundaries) + 1` but "
            f"`len(bucket_batch_sizes)={len(bucket_batch_sizes)}` and "
            f"`len(bucket_boundaries)={len(bucket_boundaries)}`.")
    boundaries = [int(b) for b in bucket_boundaries]
    sizes = [int(b) for b in bucket_batch_sizes]
    who = "Dataset.group_by_window()"
    key_fn = _scalar_int64_fn(_bucket_key_fn(element_length_func, boundaries),
                              parent.element_spec, who, "key_func")
    spec = parent.element_spec
    shapes = [s.shape for s in nest.flatten(spec)] if padded_shapes is None else \
        [padding.as_padded_shape(s) for s in padding.flat_up_to(spec, padded_shapes)]

    def reduce(key, window):
        if no_padding:
            return window.batch(sizes[key], drop_remainder=drop_remainder)
        filled = shapes
        if pad_to_bucket_boundary:
            if key >= len(boundaries):
                raise errors.InvalidArgumentError(
                    "When pad_to_bucket_boundary=True, elements must have length < "
                    "max(bucket_boundaries).")
            filled = [_fill_none(s, boundaries[key] - 1) for s in shapes]
        return window.padded_batch(sizes[key], nest.pack_sequence_as(spec, filled),
                                   padding_values, drop_remainder)

    if no_padding:
        out = structure.relax_leading(spec)
    else:
        out = nested.ListDataset([], spec).padded_batch(
            1, nest.pack_sequence_as(spec, shapes), padding_values).element_spec
    def size_of(key):
        if not 0 <= key < len(sizes):  # a length in no bucket (unsorted boundaries)
            raise errors.InvalidArgumentError(f"indices = {key} is not in [0, {len(sizes)})")
        return sizes[key]

    return GroupByWindowDataset(parent, lambda el: int(key_fn(el).numpy()), size_of, reduce,
                                out)


class _Methods:
    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """Windows of size elements (a structure of datasets like the element),
        starting every shift (default size) elements, taking every stride-th."""
        return WindowDataset(self, size, shift, stride, drop_remainder)

    def group_by_window(self, key_func, reduce_func, window_size=None,
                        window_size_func=None, name=None):
        """Groups elements by key_func (an int64 scalar); each full window
        (window_size, or window_size_func(key)) of a key, and at the end each
        group left, becomes reduce_func(key, window_dataset)'s elements."""
        return group_by_window(self, key_func, reduce_func, window_size, window_size_func)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                  bucket_batch_sizes, padded_shapes=None, padding_values=None,
                                  pad_to_bucket_boundary=False, no_padding=False,
                                  drop_remainder=False, name=None):
        """Batches elements of similar length (element_length_func) together:
        bucket i holds lengths in [bucket_boundaries[i-1], bucket_boundaries[i])
        and is padded_batch'ed by bucket_batch_sizes[i]."""
        return bucket_by_sequence_length(
            self, element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
            padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)


install_methods(DatasetV2, _Methods)
