"""Dataset.shard, take_while, unique, rebatch, ignore_errors, get_single_element
and tf.data.experimental.assert_cardinality, with tf.data's semantics and
error texts (TensorFlow 2.21).

shard of an index-addressable dataset stays index-addressable; take_while and
shard follow their input's graph loop inside a kiln.function. unique, rebatch,
ignore_errors and assert_cardinality pull their elements from Python at run
time there (their inputs must be built outside the function)."""
import itertools
import logging

import numpy as np

from kiln import _kiln, errors, nest
from kiln.control_flow import cond
from kiln.data import functions, loops, py_func, structure
from kiln.data.dataset import INFINITE, UNKNOWN, DatasetV2, GeneratorDataset, install_methods
from kiln.data.transforms import FilterDataset, MapDataset, UnaryDataset, count_arg, _stack

_raw = _kiln.raw
TensorSpec = _kiln.TensorSpec
_END = object()
_UNIQUE_TYPES = ("int32", "int64", "string")
_log = logging.getLogger("kiln.data")


# ---- shard ----

def _shard_args(num_shards, index):
    n = count_arg(num_shards, "num_shards", "shard")
    i = count_arg(index, "index", "shard")
    if n == -1:  # tf.data.experimental.SHARD_HINT: checked when iterated
        return n, i
    if n <= 0:
        raise errors.InvalidArgumentError(
            f"Number of shards must be greater than zero (currently num_shards = {n}).")
    if not 0 <= i < n:
        raise errors.InvalidArgumentError(
            f"Index must be between 0 and {n - 1} (currently index = {i}).")
    return n, i


class ShardDataset(UnaryDataset):
    _name = "ShardDataset"

    def __init__(self, parent, num_shards, index):
        n, i = _shard_args(num_shards, index)
        card = parent._card
        if card >= 0 and n > 0:
            card = card // n + (1 if i < card % n else 0)
        super().__init__(parent, parent.element_spec, card)
        self._n, self._i = n, i
        self._indexable = parent._indexable and n > 0

    def _check_hint(self):
        if self._n == -1:
            raise errors.FailedPreconditionError(
                "`tf.data.Dataset.shard(SHARD_HINT, ...)` can only be used in "
                "`tf.distribute.Strategy.experimental_distribute_dataset()` with "
                "`tf.data.experimental.AutoShardPolicy.HINT` policy, or tf.data service with "
                "`tf.data.experimental.service.ShardingPolicy.HINT` processing mode.")

    def _num_elements(self):
        if self._card >= 0 or self._card == INFINITE:
            return super()._num_elements()
        left = self._parent._num_elements() - loops.int64(self._i)
        k = loops.int64(self._n)
        return _raw.Maximum(_raw.FloorDiv(left + k - loops.int64(1), k), loops.int64(0))

    def _element_at(self, i):
        return self._parent._element_at(i * loops.int64(self._n) + loops.int64(self._i))

    def _eager_iter(self):
        self._check_hint()
        return itertools.islice(self._parent._eager_iter(), self._i, None, self._n)

    def _graph_loop(self, body_fn, init_state, extra_test):
        self._check_hint()
        if self._indexable:
            return loops.index_loop(self, body_fn, init_state, extra_test)
        n, i = loops.int64(self._n), loops.int64(self._i)

        def test(st):
            return loops.test_value(extra_test, st[1])

        def body(el, st):
            k, s = st
            mine = _raw.Equal(_raw.FloorMod(k, n), i)
            new = cond(mine, lambda: tuple(body_fn(el, s)), lambda: s)
            return k + loops.int64(1), tuple(new or ())
        out = self._parent._graph_loop(body, (loops.int64(0), tuple(init_state)), test)
        return tuple(out[1])


# ---- take_while ----

def _predicate(fn, spec):
    f = functions.StructuredFunction(fn, spec, "take_while")
    out = f.output_spec
    if nest.is_nested(out) or out.dtype != _kiln.as_dtype("bool") or out.shape.rank != 0:
        raise ValueError("Invalid `predicate`. `predicate` must return a `tf.bool` scalar "
                         f"tensor but its return type is{_spec_repr(out)}.")
    return f


def _spec_repr(spec):
    if nest.is_nested(spec):
        return structure.format_structure(spec, repr)
    return repr(spec)


class TakeWhileDataset(UnaryDataset):
    _name = "TakeWhileDataset"

    def __init__(self, parent, predicate):
        self._pred = _predicate(predicate, parent.element_spec)
        super().__init__(parent, parent.element_spec, UNKNOWN)
        self._symbolic = self._symbolic or self._pred.inline

    def _eager_iter(self):
        for el in self._parent._eager_iter():
            if not bool(self._pred(el).numpy()):
                return
            yield el

    def _graph_loop(self, body_fn, init_state, extra_test):
        def test(st):
            return loops._continue(st[0], extra_test, st[1])

        def body(el, st):
            going = self._pred(el)
            new = cond(going, lambda: tuple(body_fn(el, st[1])), lambda: st[1])
            return going, tuple(new or ())
        start = (structure.to_tensor(np.bool_(True)), tuple(init_state))
        return tuple(self._parent._graph_loop(body, start, test)[1])


# ---- unique ----

class UniqueDataset(UnaryDataset):
    _name = "UniqueDataset"

    def __init__(self, parent):
        spec = parent.element_spec
        if nest.is_nested(spec) or not isinstance(spec, TensorSpec):
            raise errors.InvalidArgumentError(
                "UniqueDataset only supports inputs with a single component.")
        if spec.dtype.name not in _UNIQUE_TYPES:
            raise TypeError(f"`tf.data.Dataset.unique` does not support type {spec.dtype} -- "
                            "only `tf.int32`, `tf.int64`, and `tf.string` are supported.")
        super().__init__(parent, spec, UNKNOWN)

    def _eager_iter(self):
        seen = set()
        for el in self._parent._eager_iter():
            value = el.numpy()
            key = value.tobytes() + repr(value.shape).encode() \
                if isinstance(value, np.ndarray) and value.dtype != object else \
                repr(value.tolist() if isinstance(value, np.ndarray) else value)
            if key not in seen:
                seen.add(key)
                yield el


# ---- rebatch ----

def _batch_sizes(batch_size):
    """([sizes], whether batch_size was one int)."""
    if isinstance(batch_size, (_kiln.Tensor, _kiln.Variable)) and \
            structure.to_tensor(batch_size).shape.rank == 1:
        batch_size = structure.to_tensor(batch_size).numpy().tolist()
    scalar = not isinstance(batch_size, (list, tuple, np.ndarray))
    items = [batch_size] if scalar else list(batch_size)
    sizes = [count_arg(s, "batch_size", "rebatch") for s in items]
    if not sizes or any(s <= 0 for s in sizes):
        raise errors.InvalidArgumentError(f"rebatch: batch sizes must be greater than zero, "
                                          f"got {sizes}")
    return sizes, scalar


class RebatchDataset(UnaryDataset):
    _name = "RebatchDatasetV2"

    def __init__(self, parent, batch_size, drop_remainder):
        specs = nest.flatten(parent.element_spec)
        if any(s.shape.rank == 0 for s in specs):
            raise ValueError("Invalid `batch_sizes`. Expected dataset with rank of >= 1 but "
                             "found a dataset with scalar elements. Fix the issue by adding "
                             "the `batch` transformation to the dataset.")
        sizes, scalar = _batch_sizes(batch_size)
        drop = bool(drop_remainder)
        lead = sizes[0] if drop and (scalar or len(set(sizes)) == 1) else None
        rows = nest.map_structure(
            lambda s: TensorSpec(s.shape[1:] if s.shape.rank is not None else s.shape, s.dtype),
            parent.element_spec)
        super().__init__(parent, structure.relax_leading(rows, lead), UNKNOWN)
        self._rows, self._sizes, self._drop = rows, sizes, drop

    def _row_iter(self):
        for el in self._parent._eager_iter():
            flat = nest.flatten(el)
            for i in range(int(flat[0].shape[0])):
                yield nest.pack_sequence_as(self._rows, [t[i] for t in flat])

    def _eager_iter(self):
        rows = self._row_iter()
        for size in itertools.cycle(self._sizes):
            items = list(itertools.islice(rows, size))
            if not items or (self._drop and len(items) < size):
                return
            yield _stack(items, self._rows)


# ---- ignore_errors ----

def _tolerant(ds, log_warning):
    """ds's elements, an element whose computation fails left out (as far
    as kiln can go on: through maps and filters, index-addressable inputs)."""
    if isinstance(ds, MapDataset):
        return _guarded(_tolerant(ds._parent, log_warning), ds._fn, log_warning)
    if isinstance(ds, FilterDataset):
        return (el for el, keep in _guarded_pairs(_tolerant(ds._parent, log_warning),
                                                  ds._pred, log_warning)
                if bool(keep.numpy()))
    if isinstance(ds, GeneratorDataset):  # the generator goes on past a bad value
        return _guarded(_generated(ds), ds._convert, log_warning, (TypeError,))
    if ds._indexable:  # each element computed on its own
        return _guarded(_indices(ds), ds._element_at, log_warning)
    return _until_error(ds._eager_iter(), log_warning)


def _generated(ds):
    return iter(ds._generator(*[a.numpy() for a in ds._args]))


def _indices(ds):
    n = int(ds._num_elements().numpy())
    return (loops.int64(i) for i in range(n))


def _skip(e, log_warning):
    if log_warning:
        _log.warning("Ignoring error: %s", e)


def _guarded(items, fn, log_warning, also=()):
    for x in items:
        try:
            yield fn(x)
        except (errors.OpError,) + also as e:
            _skip(e, log_warning)


def _guarded_pairs(items, fn, log_warning):
    for x in items:
        try:
            yield x, fn(x)
        except errors.OpError as e:
            _skip(e, log_warning)


def _until_error(it, log_warning):
    try:
        yield from it
    except errors.OpError as e:  # the input cannot go on after its error
        _skip(e, log_warning)


class IgnoreErrorsDataset(UnaryDataset):
    _name = "IgnoreErrorsDataset"

    def __init__(self, parent, log_warning):
        super().__init__(parent, parent.element_spec, UNKNOWN)
        self._log = bool(log_warning)

    def _eager_iter(self):
        return _tolerant(self._parent, self._log)


# ---- assert_cardinality ----

def _elements(n):
    """tf.data's ElementString: "an infinite number of elements", "1 element", "3 elements"."""
    if n == INFINITE:
        return "an infinite number of elements"
    return f"{n} element{'' if n == 1 else 's'}"


class AssertCardinalityDataset(UnaryDataset):
    _name = "AssertCardinalityDataset"

    def __init__(self, parent, expected):
        n = count_arg(expected, "expected_cardinality", "assert_cardinality")
        super().__init__(parent, parent.element_spec, n)
        self._expected = n

    def _eager_iter(self):
        want, count = self._expected, 0
        for el in self._parent._eager_iter():
            count += 1
            if want != INFINITE and count > want:
                raise errors.FailedPreconditionError(
                    f"Input dataset was expected to contain {_elements(want)} but contained "
                    f"at least {_elements(count)}.")
            yield el
        if count != want:
            raise errors.FailedPreconditionError(
                f"Input dataset was expected to contain {_elements(want)} but contained only "
                f"{_elements(count)}.")


# ---- get_single_element ----

def single_element(dataset):
    """The only element of an eagerly iterated dataset (InvalidArgumentError
    when it has none or several)."""
    it = dataset._eager_iter()
    first = next(it, _END)
    if first is _END:
        raise errors.InvalidArgumentError("Dataset was empty.")
    if next(it, _END) is not _END:
        raise errors.InvalidArgumentError("Dataset had more than one element.")
    return first


def _traced_single(dataset):
    """get_single_element inside a traced function: pulled at run time."""
    dataset._check_runnable("get_single_element of")
    dataset._check_tensor_elements()
    specs = nest.flatten(dataset.element_spec)
    outs = py_func.call_op(lambda: nest.flatten(single_element(dataset)), [],
                           [s.dtype for s in specs], [s.shape for s in specs], True,
                           "DatasetToSingleElement")
    return nest.pack_sequence_as(dataset.element_spec, outs)


def get_single_element(dataset):
    """dataset's only element (tf.data.experimental.get_single_element)."""
    if not isinstance(dataset, DatasetV2):
        raise TypeError("`dataset` must be a `tf.data.Dataset` object.")
    if _kiln.executing_eagerly():
        return single_element(dataset)
    return _traced_single(dataset)


def assert_cardinality(expected_cardinality):
    """For dataset.apply(): the dataset, reporting ``expected_cardinality``
    and raising FailedPreconditionError when iterating finds another count."""
    return lambda dataset: AssertCardinalityDataset(dataset, expected_cardinality)


class _Methods:
    def shard(self, num_shards, index, name=None):
        """Every num_shards-th element, starting at index (one worker's share)."""
        return ShardDataset(self, num_shards, index)

    def take_while(self, predicate, name=None):
        """The elements up to (not including) the first one predicate rejects."""
        return TakeWhileDataset(self, predicate)

    def unique(self, name=None):
        """Each distinct element once, at its first place (int32, int64, string)."""
        return UniqueDataset(self)

    def rebatch(self, batch_size, drop_remainder=False, name=None):
        """The batched elements batched again by batch_size (an int, or a list of
        sizes used in turn), across the input's batch boundaries."""
        return RebatchDataset(self, batch_size, drop_remainder)

    def ignore_errors(self, log_warning=False, name=None):
        """The elements without those whose computation raised an error."""
        return IgnoreErrorsDataset(self, log_warning)

    def get_single_element(self, name=None):
        """The dataset's only element (InvalidArgumentError when it has none or
        more than one)."""
        return get_single_element(self)


install_methods(DatasetV2, _Methods)
