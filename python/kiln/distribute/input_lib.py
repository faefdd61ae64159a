"""Datasets split between the workers (Strategy.experimental_distribute_dataset).

The dataset yields global batches; each worker keeps its contiguous share of
every batch: rows [rank * n // size, (rank + 1) * n // size) of a batch of n,
for every component of the element. Every worker reads the same batches, so a
shuffled dataset needs a seed (the same shuffle on every worker).
"""
from kiln import _kiln, nest
from kiln.data.dataset import DatasetV2
from kiln.tensor_shape import TensorShape

raw = _kiln.raw
_INT64 = _kiln.as_dtype("int64")


def local_rows(n, rank, size):
    """(start, end) of this worker's rows in a batch of n."""
    return rank * n // size, (rank + 1) * n // size


def _int64(v):
    return _kiln.convert_to_tensor(v, dtype=_INT64)


def shard_batch(batch, rank, size):
    """This worker's rows of every component of batch (eager or traced)."""
    def rows(t):
        t = t if isinstance(t, _kiln.Tensor) else _kiln.convert_to_tensor(t)
        if not t.is_symbolic:
            lo, hi = local_rows(t.shape[0], rank, size)
            return t[lo:hi]
        n = raw.GatherV2(raw.Shape(t, out_type=_INT64), _int64(0), axis=0)
        lo = raw.FloorDiv(n * _int64(rank), _int64(size))
        hi = raw.FloorDiv(n * _int64(rank + 1), _int64(size))
        return raw.GatherV2(t, raw.Range(lo, hi, _int64(1)), axis=0)
    if size == 1:
        return batch
    return nest.map_structure(rows, batch)


def _local_spec(spec, size):
    """The element spec of one worker's share: the batch dimension is known
    only when it splits evenly."""
    def leaf(s):
        if s.shape.rank in (None, 0):
            return s
        dims = s.shape.as_list()
        n = dims[0]
        local = n // size if n is not None and n % size == 0 else None
        return _kiln.TensorSpec(TensorShape([local] + dims[1:]), s.dtype)
    return nest.map_structure(leaf, spec)


class DistributedDataset(DatasetV2):
    """One worker's share of each batch of a dataset of global batches.

    Iterates like any dataset, eagerly or in a kiln.function (``for x in
    dist_dataset``). ``shard=False`` wraps a dataset that is already this
    worker's own (distribute_datasets_from_function)."""

    _name = "DistributedDataset"

    def __init__(self, dataset, rank, size, shard=True):
        if not isinstance(dataset, DatasetV2):
            raise TypeError(f"experimental_distribute_dataset expects a kiln.data.Dataset, "
                            f"got {dataset!r}")
        self._parent = dataset
        self._rank, self._size = rank, size
        self._shard = shard and size > 1
        spec = _local_spec(dataset.element_spec, size) if self._shard else dataset.element_spec
        super().__init__(spec, dataset._card, dataset._symbolic)
        self._indexable = dataset._indexable

    def _local(self, element):
        if not self._shard:
            return element
        return shard_batch(element, self._rank, self._size)

    def _num_elements(self):
        return self._parent._num_elements()

    def _element_at(self, i):
        return self._local(self._parent._element_at(i))

    def _eager_iter(self):
        for element in self._parent._eager_iter():
            yield self._local(element)

    def _graph_loop(self, body_fn, init_state, extra_test):
        if self._indexable:
            return super()._graph_loop(body_fn, init_state, extra_test)
        return self._parent._graph_loop(lambda el, s: body_fn(self._local(el), s),
                                        init_state, extra_test)


class InputContext:
    """What distribute_datasets_from_function tells the dataset function:
    how many input pipelines there are and which one this is."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def num_input_pipelines(self):
        return self._num_input_pipelines

    @property
    def input_pipeline_id(self):
        return self._input_pipeline_id

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size):
        """global_batch_size // num_replicas_in_sync (ValueError unless it divides)."""
        if global_batch_size % self._num_replicas_in_sync:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible "
                             f"by `num_replicas_in_sync` {self._num_replicas_in_sync}")
        return global_batch_size // self._num_replicas_in_sync

    def __repr__(self):
        return (f"InputContext(num_input_pipelines={self._num_input_pipelines}, "
                f"input_pipeline_id={self._input_pipeline_id}, "
                f"num_replicas_in_sync={self._num_replicas_in_sync})")


class ValueContext:
    """What experimental_distribute_values_from_function tells the value function."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self._replica_id = replica_id_in_sync_group
        self._num_replicas = num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id

    @property
    def num_replicas_in_sync(self):
        return self._num_replicas
