"""Dataset transformations: map, filter, batch, take, skip, repeat, enumerate,
shuffle, zip, concatenate, unbatch, prefetch, and the pass-through cache.
prefetch and map's num_parallel_calls use threads when iterated eagerly
(kiln.data.parallel).

The datasets are subclasses of DatasetV2, and the methods that make them
(``dataset.map(f)``, ``Dataset.zip(...)``) are installed on DatasetV2 at the
end of this module: dataset.py, below, knows none of its subclasses.
kiln/data/__init__.py imports this module, so every dataset has the methods."""
import itertools
import os
import random
import warnings

import numpy as np

from kiln import _kiln, errors, nest
from kiln.control_flow import TensorArray, cond
from kiln.data import composite, functions, loops, nested, parallel, structure
from kiln.data.dataset import INFINITE, UNKNOWN, DatasetV2, install_methods

_raw = _kiln.raw
TensorSpec = _kiln.TensorSpec


def count_arg(v, what, who):
    """A Python int from an int or an eager integer scalar tensor."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{who}: {what} must be an integer, got {v!r}")
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (_kiln.Tensor, _kiln.Variable)):
        t = structure.to_tensor(v)
        if t.dtype.is_integer and t.shape.rank == 0 and not t.is_symbolic:
            return int(t.numpy())
    raise TypeError(f"{who}: {what} must be a Python integer or an eager integer scalar "
                    f"tensor, got {v!r}")


def _parallel_calls(num_parallel_calls, deterministic):
    """map's thread count (None: serial). Results always come in order, which
    deterministic=False (or Options.deterministic) allows too."""
    if num_parallel_calls is None:
        if deterministic is not None:
            warnings.warn("The `deterministic` argument has no effect unless the "
                          "`num_parallel_calls` argument is specified.", stacklevel=3)
        return None
    return parallel.parallel_calls(count_arg(num_parallel_calls, "num_parallel_calls", "map"))


class UnaryDataset(DatasetV2):
    """A dataset computed from one input dataset."""

    def __init__(self, parent, spec, card):
        if not isinstance(parent, DatasetV2):
            raise TypeError(f"expected a kiln.data.Dataset, got {parent!r}")
        super().__init__(spec, card, parent._symbolic)
        self._parent = parent


class MapDataset(UnaryDataset):
    _name = "MapDataset"

    def __init__(self, parent, fn, threads=None):
        self._fn = functions.StructuredFunction(fn, parent.element_spec, "map")
        super().__init__(parent, self._fn.output_spec, parent._card)
        self._indexable = parent._indexable
        self._symbolic = self._symbolic or self._fn.inline  # may capture traced tensors
        self._threads = threads  # num_parallel_calls: eager iteration maps on threads
        if threads:
            self._name = "ParallelMapDataset"

    def _num_elements(self):
        return self._parent._num_elements()

    def _element_at(self, i):
        return self._fn(self._parent._element_at(i))

    def _eager_iter(self):
        if self._threads and not self._fn.inline:
            return parallel.ParallelMap(self._parent._eager_iter(), self._fn, self._threads)
        return self._serial_iter()

    def _serial_iter(self):
        for el in self._parent._eager_iter():
            yield self._fn(el)

    def _graph_loop(self, body_fn, init_state, extra_test):
        if self._indexable:
            return loops.index_loop(self, body_fn, init_state, extra_test)
        return self._parent._graph_loop(lambda el, s: body_fn(self._fn(el), s),
                                        init_state, extra_test)


class FilterDataset(UnaryDataset):
    _name = "FilterDataset"

    def __init__(self, parent, predicate):
        self._pred = functions.predicate(predicate, parent.element_spec, "filter")
        super().__init__(parent, parent.element_spec, 0 if parent._card == 0 else UNKNOWN)
        self._symbolic = self._symbolic or self._pred.inline

    def _eager_iter(self):
        for el in self._parent._eager_iter():
            if bool(self._pred(el).numpy()):
                yield el

    def _graph_loop(self, body_fn, init_state, extra_test):
        def body(el, s):
            return tuple(cond(self._pred(el), lambda: tuple(body_fn(el, s)), lambda: s) or ())
        return self._parent._graph_loop(body, init_state, extra_test)


class BatchDataset(UnaryDataset):
    _name = "BatchDataset"

    def __init__(self, parent, batch_size, drop_remainder):
        bs = count_arg(batch_size, "batch_size", "batch")
        if bs <= 0:
            raise errors.InvalidArgumentError("Batch size must be greater than zero.")
        drop = bool(drop_remainder)
        n = parent._card
        card = n if n < 0 else (n // bs if drop else -(-n // bs))
        spec = structure.relax_leading(parent.element_spec, bs if drop else None)
        super().__init__(parent, spec, card)
        self._bs, self._drop = bs, drop
        self._indexable = parent._indexable

    def _num_elements(self):
        if self._card >= 0 or self._card == INFINITE:
            return super()._num_elements()
        n, bs = self._parent._num_elements(), loops.int64(self._bs)
        if self._drop:
            return _raw.FloorDiv(n, bs)
        return _raw.FloorDiv(n + bs - loops.int64(1), bs)

    def _element_at(self, i):
        bs = loops.int64(self._bs)
        start = i * bs
        end = start + bs
        if not self._drop:
            end = _raw.Minimum(end, self._parent._num_elements())
        batch = self._parent._slice(start, end)
        return nest.map_structure(structure.ensure_shape, batch, self._spec)

    def _graph_loop(self, body_fn, init_state, extra_test):
        if self._indexable:
            return loops.index_loop(self, body_fn, init_state, extra_test)
        if not self._parent._symbolic:
            return super()._graph_loop(body_fn, init_state, extra_test)
        return self._accumulating_loop(body_fn, init_state, extra_test)

    def _accumulating_loop(self, body_fn, init_state, extra_test):
        """Batches built in the graph from a parent that is not index-addressable:
        elements gather in TensorArrays; a full batch runs the body."""
        parent_spec = self._parent.element_spec
        composite.check_graph_batch(parent_spec)
        flat_specs = structure.component_specs(parent_spec)
        batch_specs = structure.component_specs(self._spec)
        bs = structure.to_tensor(np.int32(self._bs))

        def fresh():
            return tuple(TensorArray(s.dtype, size=0, dynamic_size=True) for s in flat_specs)

        def emit(tas, s):
            parts = [structure.ensure_shape(ta.stack(), b) for ta, b in zip(tas, batch_specs)]
            return tuple(body_fn(structure.from_components(self._spec, parts), s))

        def body(el, st):
            tas, k, s = st
            tas = tuple(ta.write(k, v)
                        for ta, v in zip(tas, structure.to_components(parent_spec, el)))
            k = k + 1
            out = cond(_raw.Equal(k, bs),
                       lambda: (fresh(), structure.to_tensor(np.int32(0)), emit(tas, s)),
                       lambda: (tas, k, s))
            return tuple(out)

        def test(st):
            return loops.test_value(extra_test, st[2])

        start = (fresh(), structure.to_tensor(np.int32(0)), tuple(init_state))
        tas, k, s = self._parent._graph_loop(body, start, test)
        if self._drop:
            return tuple(s)
        more = loops._continue(_raw.Greater(k, structure.to_tensor(np.int32(0))),
                               extra_test, s)
        return tuple(cond(more, lambda: emit(tas, s), lambda: tuple(s)) or ())

    def _eager_iter(self):
        for items in element_groups(self._parent._eager_iter(), self._bs, self._drop):
            yield nest.map_structure(structure.with_spec, _stack(items, self._parent.element_spec),
                                     self._spec)


def element_groups(it, size, drop_remainder):
    """Lists of `size` consecutive elements of `it` (the last shorter unless
    `drop_remainder`): what batching transforms combine."""
    while True:
        items = list(itertools.islice(it, size))
        if not items or (drop_remainder and len(items) < size):
            return
        yield items


def _stack(items, spec):
    flats = [nest.flatten(x) for x in items]
    out = []
    for k, s in enumerate(nest.flatten(spec)):
        parts = [f[k] for f in flats]
        if composite.is_composite_spec(s):
            out.append(composite.batch(s, parts))
            continue
        first = parts[0].shape
        for j, p in enumerate(parts[1:], 1):
            if p.shape != first:
                raise errors.InvalidArgumentError(
                    f"batch: cannot batch tensors with different shapes in component {k}: "
                    f"the first element has shape {first} and element {j} has shape "
                    f"{p.shape}")
        out.append(_raw.Pack(parts, axis=0))
    return nest.pack_sequence_as(spec, out)


class TakeDataset(UnaryDataset):
    _name = "TakeDataset"

    def __init__(self, parent, count):
        c = count_arg(count, "count", "take")
        n = parent._card
        if c < 0:
            card = n
        elif n == INFINITE:
            card = c
        elif n == UNKNOWN:
            card = UNKNOWN
        else:
            card = min(c, n)
        super().__init__(parent, parent.element_spec, card)
        self._count = c
        self._indexable = parent._indexable

    def _num_elements(self):
        if self._card >= 0:
            return loops.int64(self._card)
        n = self._parent._num_elements()
        return n if self._count < 0 else _raw.Minimum(n, loops.int64(self._count))

    def _element_at(self, i):
        return self._parent._element_at(i)

    def _slice(self, start, end):
        return self._parent._slice(start, end)

    def _eager_iter(self):
        it = self._parent._eager_iter()
        return it if self._count < 0 else itertools.islice(it, self._count)

    def _graph_loop(self, body_fn, init_state, extra_test):
        if self._indexable:
            return loops.index_loop(self, body_fn, init_state, extra_test)
        if self._count < 0:
            return self._parent._graph_loop(body_fn, init_state, extra_test)
        limit = loops.int64(self._count)

        def test(st):
            return loops._continue(_raw.Less(st[0], limit), extra_test, st[1])

        def body(el, st):
            return st[0] + loops.int64(1), tuple(body_fn(el, st[1]))
        out = self._parent._graph_loop(body, (loops.int64(0), tuple(init_state)), test)
        return tuple(out[1])


class SkipDataset(UnaryDataset):
    _name = "SkipDataset"

    def __init__(self, parent, count):
        c = count_arg(count, "count", "skip")
        n = parent._card
        if c < 0:
            card = 0
        elif n < 0:
            card = n
        else:
            card = max(n - c, 0)
        super().__init__(parent, parent.element_spec, card)
        self._count = c
        self._indexable = parent._indexable

    def _num_elements(self):
        if self._card >= 0:
            return loops.int64(self._card)
        if self._card == INFINITE:
            return loops.int64(loops.INT64_MAX)
        return _raw.Maximum(self._parent._num_elements() - loops.int64(self._count),
                            loops.int64(0))

    def _element_at(self, i):
        return self._parent._element_at(i + loops.int64(max(self._count, 0)))

    def _slice(self, start, end):
        c = loops.int64(max(self._count, 0))
        return self._parent._slice(start + c, end + c)

    def _eager_iter(self):
        it = self._parent._eager_iter()
        if self._count < 0:
            for _ in it:
                pass
            return iter(())
        return itertools.islice(it, self._count, None)

    def _graph_loop(self, body_fn, init_state, extra_test):
        if self._indexable:
            return loops.index_loop(self, body_fn, init_state, extra_test)
        skip_all = self._count < 0
        limit = loops.int64(max(self._count, 0))

        def test(st):
            return loops.test_value(extra_test, st[1])

        def body(el, st):
            k, s = st
            if skip_all:
                return k, s
            new = cond(_raw.GreaterEqual(k, limit), lambda: tuple(body_fn(el, s)),
                       lambda: s)
            return k + loops.int64(1), tuple(new or ())
        out = self._parent._graph_loop(body, (loops.int64(0), tuple(init_state)), test)
        return tuple(out[1])


class RepeatDataset(UnaryDataset):
    _name = "RepeatDataset"

    def __init__(self, parent, count):
        c = -1 if count is None else count_arg(count, "count", "repeat")
        n = parent._card
        if c < 0:
            card = 0 if n == 0 else INFINITE
        elif c == 0:
            card = 0
        elif n < 0:
            card = n
        else:
            card = n * c
        super().__init__(parent, parent.element_spec, card)
        self._count = c
        self._indexable = parent._indexable

    def _num_elements(self):
        if self._card >= 0 or self._card == INFINITE:
            return super()._num_elements()
        n = self._parent._num_elements()
        if self._count >= 0:
            return n * loops.int64(self._count)
        return _raw.SelectV2(_raw.Greater(n, loops.int64(0)), loops.int64(loops.INT64_MAX),
                             loops.int64(0))

    def _element_at(self, i):
        return self._parent._element_at(_raw.FloorMod(i, self._parent._num_elements()))

    def _eager_iter(self):
        epoch = 0
        while self._count < 0 or epoch < self._count:
            produced = False
            for el in self._parent._eager_iter():
                produced = True
                yield el
            if not produced:
                return  # an empty input repeats to nothing (never loops forever)
            epoch += 1


class EnumerateDataset(UnaryDataset):
    _name = "EnumerateDataset"

    def __init__(self, parent, start):
        self._start = count_arg(start, "start", "enumerate")
        spec = (TensorSpec([], _kiln.as_dtype("int64")), parent.element_spec)
        super().__init__(parent, spec, parent._card)
        self._indexable = parent._indexable

    def _num_elements(self):
        return self._parent._num_elements()

    def _element_at(self, i):
        return (i + loops.int64(self._start), self._parent._element_at(i))

    def _slice(self, start, end):
        s = loops.int64(self._start)
        return (_raw.Range(start + s, end + s, loops.int64(1)), self._parent._slice(start, end))

    def _eager_iter(self):
        for k, el in enumerate(self._parent._eager_iter(), self._start):
            yield (structure.to_tensor(np.int64(k)), el)

    def _graph_loop(self, body_fn, init_state, extra_test):
        if self._indexable:
            return loops.index_loop(self, body_fn, init_state, extra_test)

        def test(st):
            return loops.test_value(extra_test, st[1])

        def body(el, st):
            k, s = st
            return k + loops.int64(1), tuple(body_fn((k, el), s))
        start = (loops.int64(self._start), tuple(init_state))
        return tuple(self._parent._graph_loop(body, start, test)[1])


class ShuffleDataset(UnaryDataset):
    _name = "ShuffleDataset"

    def __init__(self, parent, buffer_size, seed, reshuffle_each_iteration):
        size = count_arg(buffer_size, "buffer_size", "shuffle")
        if size <= 0:
            raise errors.InvalidArgumentError(f"shuffle: buffer_size must be > 0, got {size}")
        super().__init__(parent, parent.element_spec, parent._card)
        self._size = size
        self._seed = None if seed is None else count_arg(seed, "seed", "shuffle")
        self._reshuffle = bool(reshuffle_each_iteration)
        self._epoch = 0
        if self._seed is None and not self._reshuffle:
            self._seed = int.from_bytes(os.urandom(8), "little")

    def _rng(self):
        if self._seed is None:
            return random.Random(os.urandom(16))
        epoch = self._epoch if self._reshuffle else 0
        self._epoch += 1
        return random.Random(self._seed * 1000003 + epoch)

    def _eager_iter(self):
        rng = self._rng()
        buf = []
        for el in self._parent._eager_iter():
            if len(buf) < self._size:
                buf.append(el)
                continue
            k = rng.randrange(len(buf))
            yield buf[k]
            buf[k] = el
        while buf:
            k = rng.randrange(len(buf))
            buf[k], buf[-1] = buf[-1], buf[k]
            yield buf.pop()


class UnbatchDataset(UnaryDataset):
    _name = "UnbatchDataset"

    def __init__(self, parent):
        def leaf(s):
            if composite.is_composite_spec(s):
                return composite.unbatch_spec(s)
            if s.shape.rank == 0:
                raise errors.InvalidArgumentError(
                    "unbatch: every component needs at least one dimension, got a scalar")
            return TensorSpec(s.shape[1:] if s.shape.rank is not None else s.shape, s.dtype)
        spec = nest.map_structure(leaf, parent.element_spec)
        super().__init__(parent, spec, 0 if parent._card == 0 else UNKNOWN)

    def _eager_iter(self):
        for el in self._parent._eager_iter():
            flat = nest.flatten(el)
            n = composite.nrows(flat[0])
            for t in flat[1:]:
                if composite.nrows(t) != n:
                    raise errors.InvalidArgumentError(
                        f"unbatch: components have different first dimensions ({n} and "
                        f"{composite.nrows(t)})")
            for i in range(n):
                yield nest.pack_sequence_as(self._spec, [composite.row(t, i) for t in flat])


class PassThroughDataset(UnaryDataset):
    """prefetch() and cache(): the same elements."""

    def __init__(self, parent, name):
        super().__init__(parent, parent.element_spec, parent._card)
        self._name = name
        self._indexable = parent._indexable

    def _num_elements(self):
        return self._parent._num_elements()

    def _element_at(self, i):
        return self._parent._element_at(i)

    def _slice(self, start, end):
        return self._parent._slice(start, end)

    def _eager_iter(self):
        return self._parent._eager_iter()

    def _graph_loop(self, body_fn, init_state, extra_test):
        return self._parent._graph_loop(body_fn, init_state, extra_test)


class PrefetchDataset(PassThroughDataset):
    """prefetch(): eager iteration fills a buffer on a background thread
    (kiln.data.parallel); in functions, the parent's loop as it is."""

    def __init__(self, parent, buffer_size):
        super().__init__(parent, "PrefetchDataset")
        self._buffer = parallel.prefetch_size(buffer_size)

    def _eager_iter(self):
        if self._buffer == 0:
            return self._parent._eager_iter()
        return parallel.Prefetcher(self._parent._eager_iter(), self._buffer)


class ZipDataset(DatasetV2):
    _name = "ZipDataset"

    def __init__(self, datasets):
        flat = nest.flatten(datasets)
        if not flat:
            raise ValueError("zip: needs at least one dataset")
        for d in flat:
            if not isinstance(d, DatasetV2):
                raise TypeError(f"zip: expected a structure of datasets, got {d!r}")
        cards = [d._card for d in flat]
        if any(c == UNKNOWN for c in cards):
            card = UNKNOWN
        elif all(c == INFINITE for c in cards):
            card = INFINITE
        else:
            card = min(c for c in cards if c >= 0)
        spec = nest.pack_sequence_as(datasets, [d.element_spec for d in flat])
        super().__init__(spec, card, any(d._symbolic for d in flat))
        self._structure, self._flat = datasets, flat
        self._indexable = all(d._indexable for d in flat)

    def _inputs(self):
        return list(self._flat)

    def _num_elements(self):
        if self._card >= 0 or self._card == INFINITE:
            return super()._num_elements()
        n = self._flat[0]._num_elements()
        for d in self._flat[1:]:
            n = _raw.Minimum(n, d._num_elements())
        return n

    def _element_at(self, i):
        return nest.pack_sequence_as(self._structure, [d._element_at(i) for d in self._flat])

    def _slice(self, start, end):
        return nest.pack_sequence_as(self._structure,
                                     [d._slice(start, end) for d in self._flat])

    def _eager_iter(self):
        for parts in zip(*[d._eager_iter() for d in self._flat]):
            yield nest.pack_sequence_as(self._structure, list(parts))


class ConcatenateDataset(DatasetV2):
    _name = "ConcatenateDataset"

    def __init__(self, first, second):
        if not isinstance(second, DatasetV2):
            raise TypeError(f"concatenate: expected a kiln.data.Dataset, got {second!r}")
        a, b = first.element_spec, second.element_spec
        try:
            nest.assert_same_structure(a, b)
        except ValueError:
            raise TypeError(f"concatenate: the datasets have different structures: {a} and "
                            f"{b}") from None

        def merge(x, y):
            if composite.is_composite_spec(x) or composite.is_composite_spec(y):
                return composite.supertype(x, y)
            if x.dtype != y.dtype:
                raise TypeError(f"concatenate: the datasets have different dtypes: "
                                f"{x.dtype.name} and {y.dtype.name}")
            return TensorSpec(x.shape.most_specific_compatible_shape(y.shape), x.dtype)
        spec = nest.map_structure(merge, a, b)
        n1, n2 = first._card, second._card
        if INFINITE in (n1, n2):
            card = INFINITE
        elif UNKNOWN in (n1, n2):
            card = UNKNOWN
        else:
            card = n1 + n2
        super().__init__(spec, card, first._symbolic or second._symbolic)
        self._first, self._second = first, second

    def _inputs(self):
        return [self._first, self._second]

    def _eager_iter(self):
        return itertools.chain(self._first._eager_iter(), self._second._eager_iter())


class _Transformations:
    """DatasetV2's transformation methods (installed on it below)."""

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """Applies map_func to each element (tuple elements are unpacked into
        arguments). map_func is traced once, like tf.data's. With
        num_parallel_calls (AUTOTUNE: the number of CPUs), eager iteration
        runs map_func on that many threads, results in order."""
        threads = _parallel_calls(num_parallel_calls, deterministic)
        if nested.has_datasets(self.element_spec):
            return nested.NestedMapDataset(self, map_func)
        return MapDataset(self, map_func, threads)

    def filter(self, predicate, name=None):
        """Keeps the elements for which predicate (a scalar bool) is true."""
        return FilterDataset(self, predicate)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None):
        """Stacks consecutive elements into batches of batch_size (the last may be
        smaller unless drop_remainder)."""
        return BatchDataset(self, batch_size, drop_remainder)

    def take(self, count, name=None):
        """The first count elements (all of them if count is -1)."""
        return TakeDataset(self, count)

    def skip(self, count, name=None):
        """All but the first count elements (none if count is -1)."""
        return SkipDataset(self, count)

    def repeat(self, count=None, name=None):
        """The elements count times over (forever for None or -1)."""
        return RepeatDataset(self, count)

    def enumerate(self, start=0, name=None):
        """(index, element) pairs, the index an int64 counting from start."""
        return EnumerateDataset(self, start)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        """Elements in random order through a buffer of buffer_size (as tf.data)."""
        return ShuffleDataset(self, buffer_size, seed, reshuffle_each_iteration)

    def concatenate(self, dataset, name=None):
        """This dataset's elements followed by dataset's."""
        return ConcatenateDataset(self, dataset)

    def unbatch(self, name=None):
        """Splits each element along its first dimension into elements."""
        return UnbatchDataset(self)

    def prefetch(self, buffer_size, name=None):
        """Eager iteration computes up to buffer_size elements ahead on a
        background thread (AUTOTUNE or None: a small buffer)."""
        n = parallel.AUTOTUNE if buffer_size is None else \
            count_arg(buffer_size, "buffer_size", "prefetch")
        return PrefetchDataset(self, n)

    def cache(self, filename="", name=None):
        """Accepted for compatibility; elements are recomputed each iteration."""
        return PassThroughDataset(self, "CacheDataset")

    @staticmethod
    def zip(*datasets, name=None):
        """Elements of several datasets side by side: zip((a, b)) or zip(a, b)."""
        if len(datasets) == 1 and not isinstance(datasets[0], DatasetV2):
            datasets = datasets[0]
        return ZipDataset(datasets)


install_methods(DatasetV2, _Transformations)
