"""Strategy, ReplicaContext and the current-strategy stack (tf.distribute's core).

kiln runs one replica per process: a worker. ``strategy.scope()`` enters the
cross-replica context (variables created there are mirrored: every worker
starts from worker 0's values); ``strategy.run(fn)`` calls fn in the replica
context, where ``get_replica_context().all_reduce`` combines the workers'
values. A strategy without collectives (the default one, MirroredStrategy on
one CPU) computes the same things with no communication.
"""
import contextlib
import enum
import threading
import weakref

import numpy as np

from kiln import _kiln, _variable_hooks, nest
from kiln.autograph import maybe_convert
from kiln.dtypes import cast
from kiln.function import Function
from kiln.profiler import experimental as _profiler
from kiln.ops import array_ops, math_ops
from kiln.scopes import init_scope
from kiln.distribute import collectives
from kiln.distribute.input_lib import (DistributedDataset, InputContext, ValueContext,
                                       local_rows)


class ReduceOp(enum.Enum):
    """How values of the replicas are combined: SUM or MEAN."""

    SUM = "SUM"
    MEAN = "MEAN"


def _reduce_op(op):
    """A ReduceOp from a ReduceOp or its name ("SUM", "mean", ...)."""
    if isinstance(op, ReduceOp):
        return op
    if isinstance(op, str) and op.upper() in ReduceOp.__members__:
        return ReduceOp[op.upper()]
    raise ValueError(f"reduce_op must be a kiln.distribute.ReduceOp (SUM or MEAN), got {op!r}")


# ---- the current context: a per-thread stack ----

class _Context:
    """One entry of the stack: a strategy and, in the replica context, the
    ReplicaContext (None in the cross-replica context)."""

    __slots__ = ("strategy", "replica")

    def __init__(self, strategy, replica):
        self.strategy, self.replica = strategy, replica


_local = threading.local()


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _current():
    stack = _stack()
    return stack[-1] if stack else None


@contextlib.contextmanager
def _entered(context):
    stack = _stack()
    stack.append(context)
    try:
        yield
    finally:
        stack.remove(context)


def get_strategy():
    """The strategy of the innermost scope() or run(); the default strategy
    (one replica, no communication) outside any."""
    context = _current()
    return context.strategy if context is not None else _default_strategy()


def has_strategy():
    """Whether a strategy other than the default one is current."""
    context = _current()
    return context is not None and not context.strategy._is_default


def in_cross_replica_context():
    """True inside a strategy's scope() but outside its run()."""
    context = _current()
    return context is not None and context.replica is None


def get_replica_context():
    """The ReplicaContext inside run(); None in the cross-replica context of a
    strategy; the default strategy's replica context outside any strategy."""
    context = _current()
    if context is None:
        return _default_strategy()._replica_context()
    return context.replica


def scale_loss_for_distribution(value):
    """A per-replica mean loss divided by the number of replicas, so the
    gradients summed over the replicas are those of the global-batch mean."""
    n = get_strategy().num_replicas_in_sync
    return value if n == 1 else value * cast(1.0 / n, value.dtype)


def unscale_loss_for_distribution(value):
    """The inverse of scale_loss_for_distribution (the loss to report)."""
    n = get_strategy().num_replicas_in_sync
    return value if n == 1 else value * cast(float(n), value.dtype)


def aggregate_gradients(grads, variables):
    """The gradients summed over the replicas of the current strategy (as they
    are when it has one replica). Called by the Keras optimizers."""
    strategy = get_strategy()
    if strategy.num_replicas_in_sync == 1:
        return list(grads)
    return strategy._aggregate_gradients(list(grads), [v.shape.as_list() for v in variables])


def _mirror_new_variable(variable):
    """The variable hook: mirrors variables created in a strategy's scope."""
    context = _current()
    if context is not None:
        context.strategy._mirror(variable)


_variable_hooks.on_create = _mirror_new_variable


# ---- ReplicaContext ----

class ReplicaContext:
    """What code inside ``strategy.run`` uses to work with the other replicas
    (tf.distribute.ReplicaContext). ``replica_id_in_sync_group`` is a Python int."""

    def __init__(self, strategy, replica_id_in_sync_group):
        self._strategy = strategy
        self._replica_id = int(replica_id_in_sync_group)

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id

    @property
    def devices(self):
        return self._strategy.extended.worker_devices

    def all_reduce(self, reduce_op, value, options=None):
        """value (a nest of tensors) combined over the replicas; every replica
        gets the result. Every replica must call it, with the same structure
        and shapes."""
        return self._strategy._all_reduce(_reduce_op(reduce_op), value)

    def all_gather(self, value, axis, options=None):
        """value (a nest of tensors) of every replica, joined along axis in
        replica order."""
        return self._strategy._all_gather(value, axis)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """merge_fn(strategy, *args, **kwargs) run in the cross-replica context."""
        with _entered(_Context(self._strategy, None)):
            return merge_fn(self._strategy, *args, **(kwargs or {}))

    def __repr__(self):
        return (f"<kiln.distribute.ReplicaContext replica {self._replica_id} of "
                f"{self.num_replicas_in_sync}>")


# ---- Strategy ----

class StrategyExtended:
    """The less common parts of a strategy's API (strategy.extended)."""

    def __init__(self, strategy):
        self._strategy = strategy

    @property
    def worker_devices(self):
        s = self._strategy
        if s._collective:
            return (f"/job:worker/replica:0/task:{s._rank}/device:CPU:0",)
        return ("/job:localhost/replica:0/task:0/device:CPU:0",)

    @property
    def parameter_devices(self):
        return self.worker_devices

    @property
    def experimental_between_graph(self):
        """Whether each worker runs its own program (True for multi-worker)."""
        return self._strategy._collective

    @property
    def should_checkpoint(self):
        """Whether this worker should save checkpoints (worker 0)."""
        return self._strategy._rank == 0

    @property
    def should_save_summary(self):
        return self._strategy._rank == 0

    @property
    def should_init(self):
        return True

    @property
    def experimental_require_static_shapes(self):
        return False

    def broadcast_to(self, tensor, destinations=None):
        """tensor (a nest) as worker 0 has it, on every worker."""
        return self._strategy._broadcast(tensor)

    def reduce_to(self, reduce_op, value, destinations=None, options=None):
        return self._strategy._all_reduce(_reduce_op(reduce_op), value)


class Strategy:
    """The base class of kiln's distribution strategies (tf.distribute.Strategy).

    A strategy is worker ``rank`` of ``size``, one replica per worker; with
    ``collective`` set it communicates through the Collective* ops, otherwise
    it has one replica and combining is the identity."""

    _is_default = False

    def __init__(self, rank=0, size=1, collective=False, bucket_bytes=None):
        self._rank, self._size = int(rank), int(size)
        self._collective = bool(collective)
        self._bucket_bytes = bucket_bytes or collectives.BUCKET_BYTES
        self._extended = StrategyExtended(self)
        self._agreed = weakref.WeakSet()  # the kiln.functions whose graphs were agreed on
        if self._size > 1 and self._collective:
            # A worker of a multi-process job: its profiles name its rank (one file each).
            _profiler._set_worker(self._rank)

    # ---- properties ----

    @property
    def num_replicas_in_sync(self):
        """The number of replicas whose gradients are combined (the workers)."""
        return self._size

    @property
    def extended(self):
        return self._extended

    @property
    def cluster_resolver(self):
        return None

    # ---- contexts ----

    @contextlib.contextmanager
    def scope(self):
        """The cross-replica context of this strategy: variables created inside
        are mirrored, and Keras models created inside train with it."""
        current = _current()
        if current is not None and current.strategy is not self and \
                not current.strategy._is_default:
            raise ValueError(f"Mixing different kiln.distribute.Strategy objects: entering "
                             f"the scope of {self!r} inside the scope of "
                             f"{current.strategy!r}")
        with _entered(_Context(self, None)):
            yield self

    def _replica_context(self):
        return ReplicaContext(self, self._rank)

    def run(self, fn, args=(), kwargs=None, options=None):
        """fn(*args, **kwargs) in the replica context, on this worker's replica.
        With one replica per worker, the results are plain values.

        A kiln.function's graph is agreed on before its first run under this
        strategy: workers that traced different graphs raise
        FailedPreconditionError instead of exchanging mismatched collectives.
        Later traces (a batch of another size) are not agreed on, as workers
        may retrace at different steps; the collectives check them (every
        collective compares its kind, dtype, size and key across workers)."""
        kwargs = {} if kwargs is None else dict(kwargs)
        with _entered(_Context(self, self._replica_context())):
            if isinstance(fn, Function):
                if self._collective and _kiln.executing_eagerly():
                    self._agree_on_graph(fn, args, kwargs)
            else:
                fn = maybe_convert(fn)
            return fn(*args, **kwargs)

    def _agree_on_graph(self, fn, args, kwargs):
        if fn in self._agreed:
            return
        self._agreed.add(fn)
        cf = fn.get_concrete_function(*args, **kwargs)
        _kiln.comm_agree([collectives.graph_fingerprint(cf.graph)],
                         f"the graph of {getattr(fn, '__name__', 'the function')}")

    # ---- combining values ----

    def reduce(self, reduce_op, value, axis=None):
        """value (a nest of tensors, one per replica) combined over the replicas.
        With ``axis``, each tensor is also reduced along that axis: MEAN is then
        the mean of all the elements along axis on every worker."""
        op = _reduce_op(reduce_op)
        if axis is None:
            return self._all_reduce(op, value)
        leaves = [collectives._tensor(x) for x in nest.flatten(value)]
        sums = [math_ops.reduce_sum(t, axis) for t in leaves]
        if op is ReduceOp.SUM:
            return nest.pack_sequence_as(value, self._all_reduce(op, sums))
        counts = [cast(array_ops.shape(t)[axis], t.dtype) for t in leaves]
        sums, counts = self._all_reduce(ReduceOp.SUM, (sums, counts))
        means = [s / c if s.dtype.is_floating else math_ops.floordiv(s, c)
                 for s, c in zip(sums, counts)]
        return nest.pack_sequence_as(value, means)

    def gather(self, value, axis):
        """value (a nest of tensors) of every replica, joined along axis."""
        return self._all_gather(value, axis)

    def experimental_local_results(self, value):
        """This worker's values of value, as a tuple (one replica)."""
        return (value,)

    def _all_reduce(self, op, value):
        if not self._collective:
            return value
        return collectives.all_reduce(value, "sum" if op is ReduceOp.SUM else "mean")

    def _all_gather(self, value, axis):
        if not self._collective:
            return value
        return collectives.all_gather(value, axis)

    def _broadcast(self, value):
        if not self._collective:
            return value
        return collectives.broadcast(value)

    def _aggregate_gradients(self, grads, shapes):
        if not self._collective:
            return grads
        return collectives.all_reduce_gradients(grads, shapes, self._bucket_bytes)

    def _mirror(self, variable):
        """Gives a variable just created in this strategy's scope worker 0's value."""
        if not self._collective or variable.dtype.name == "string":
            return
        with init_scope():
            variable.assign(collectives.broadcast(variable.read_value()))

    def _local_rows(self, n):
        """(start, end) of this worker's rows in a global batch of n."""
        return local_rows(n, self._rank, self._size)

    def _same_permutation(self, n):
        """A random permutation of range(n), the same on every worker (worker 0's)."""
        order = np.random.permutation(n).astype(np.int64)
        if not self._collective:
            return order
        return collectives.broadcast(_kiln.convert_to_tensor(order)).numpy()

    # ---- input ----

    def experimental_distribute_dataset(self, dataset, options=None):
        """dataset (of global batches) as this worker sees it: its contiguous
        share of every batch."""
        if isinstance(dataset, DistributedDataset):
            return dataset
        return DistributedDataset(dataset, self._rank, self._size)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """dataset_fn(InputContext) builds this worker's own dataset (of
        per-replica batches); it is used as it is."""
        context = InputContext(self._size, self._rank, self._size)
        return DistributedDataset(dataset_fn(context), self._rank, self._size, shard=False)

    def experimental_distribute_values_from_function(self, value_fn):
        """value_fn(ValueContext) for this worker's replica."""
        return value_fn(ValueContext(self._rank, self._size))

    def __repr__(self):
        return f"<kiln.distribute.{type(self).__name__} worker {self._rank} of {self._size}>"


class _DefaultStrategy(Strategy):
    """The strategy when none is entered: one replica, no communication."""

    _is_default = True


_DEFAULT = []


def _default_strategy():
    if not _DEFAULT:
        _DEFAULT.append(_DefaultStrategy())
    return _DEFAULT[0]
