"""The collective ops kiln.distribute issues (kiln._kiln.raw's Collective* ops).

Every function here works eagerly and inside a trace, and every worker must
make the same calls in the same order. Nested values are packed: the leaves
of one dtype whose shapes are known are flattened and joined into one tensor,
so a structure costs one collective per dtype instead of one per leaf.
"""
import hashlib

import numpy as np

from kiln import _kiln, nest
from kiln.ops import array_ops, core, math_ops

raw = _kiln.raw

BUCKET_BYTES = 4 << 20  # the gradient bucket size

# The collectives' keys: the same logical collective carries the same key on every
# worker (the communicator compares them, with the kind, dtype and size).
KEY_ALL_REDUCE = 0
KEY_BROADCAST = 1
KEY_ALL_GATHER = 2
KEY_GRADIENTS = 1000  # + bucket index


def _tensor(x):
    if isinstance(x, _kiln.Variable):
        return x.read_value()
    return x if isinstance(x, _kiln.Tensor) else _kiln.convert_to_tensor(x)


def _static_shape(t):
    """t's shape as a list of ints, or None when a dimension is unknown."""
    dims = t.shape.as_list() if t.shape.rank is not None else None
    return None if dims is None or any(d is None for d in dims) else dims


def _size(shape):
    return int(np.prod(shape)) if shape else 1


def _pack(tensors):
    """The tensors flattened and joined into one vector (one tensor: itself)."""
    if len(tensors) == 1:
        return tensors[0]
    return array_ops.concat([array_ops.reshape(t, [-1]) for t in tensors], 0)


def _unpack(vector, shapes):
    """The inverse of _pack: the pieces of vector, reshaped to shapes."""
    if len(shapes) == 1:
        return [vector]
    pieces = array_ops.split(vector, [_size(s) for s in shapes], 0)
    return [array_ops.reshape(p, s) for p, s in zip(pieces, shapes)]


def _groups(tensors, shapes, order, limit=None):
    """Lists of positions (taken in ``order``) to pack together: one dtype per
    list, at most ``limit`` bytes per list (one tensor may exceed it alone).
    Tensors without a static shape go alone."""
    open_, done = {}, []
    for i in order:
        t, shape = tensors[i], shapes[i]
        if shape is None:
            done.append([i])
            continue
        group = open_.setdefault(t.dtype, [[], 0])
        group[0].append(i)
        group[1] += _size(shape) * t.dtype.size
        if limit is not None and group[1] >= limit:
            done.append(group[0])
            del open_[t.dtype]
    return done + [g for g, _ in open_.values()]


def all_reduce(value, reduction, key=KEY_ALL_REDUCE):
    """value (a nest of tensors) reduced over the workers: "sum", "mean", "max"
    or "min", elementwise. Leaves of one dtype go in one collective."""
    leaves = [_tensor(x) for x in nest.flatten(value)]
    if not leaves:
        return value
    shapes = [_static_shape(t) for t in leaves]
    out = [None] * len(leaves)
    for group in _groups(leaves, shapes, range(len(leaves))):
        group_shapes = [shapes[i] for i in group]
        packed = _pack([leaves[i] for i in group])
        reduced = raw.CollectiveAllReduce(packed, reduction=reduction, key=key)
        for i, t in zip(group, _unpack(reduced, group_shapes)):
            out[i] = t
    return nest.pack_sequence_as(value, out)


def all_reduce_gradients(grads, shapes, bucket_bytes=BUCKET_BYTES):
    """The gradients (a list in variable order) summed over the workers.

    The gradients are packed into buckets of about ``bucket_bytes``, last
    variable first (the backward pass makes the last layers' gradients
    first). Each bucket's all-reduce starts as soon as its gradients exist and
    is waited for only where the sum is used, so inside a function the graph
    optimizer overlaps the reductions with the rest of the backward pass."""
    grads = [_tensor(g) for g in grads]
    shapes = [list(s) for s in shapes]
    started = []
    for k, group in enumerate(_groups(grads, shapes, reversed(range(len(grads))),
                                      bucket_bytes)):
        group_shapes = [shapes[i] for i in group]
        packed = _pack([grads[i] for i in group])
        ticket = raw.CollectiveAllReduceStart(packed, reduction="sum", key=KEY_GRADIENTS + k)
        started.append((k, group, group_shapes, packed, ticket))
    out = list(grads)
    for k, group, group_shapes, packed, ticket in started:
        summed = raw.CollectiveAllReduceDone(packed, ticket, reduction="sum",
                                             key=KEY_GRADIENTS + k)
        for i, t in zip(group, _unpack(summed, group_shapes)):
            out[i] = t
    return out


def broadcast(value, root=0):
    """value (a nest of tensors) as worker ``root`` has it, on every worker."""
    return nest.map_structure(
        lambda x: raw.CollectiveBroadcast(_tensor(x), root=root, key=KEY_BROADCAST),
        value)


def _move_axis(t, src, dst):
    rank = t.shape.rank
    perm = list(range(rank))
    perm.insert(dst % rank, perm.pop(src % rank))
    return array_ops.transpose(t, perm)


def _gather_rows(t):
    """Every worker's t joined along axis 0, dims 0 of any sizes. The op needs
    the same shape on every worker (its output shape is dim 0 times the
    workers), so each pads its rows to the largest count and the padding is
    dropped after the gather (TensorFlow pads the same way)."""
    rows = array_ops.reshape(array_ops.shape(t)[0], [1])  # int32
    counts = raw.CollectiveAllGather(rows, key=KEY_ALL_GATHER)  # one per worker
    most = math_ops.reduce_max(counts)
    pad = [[0, most - rows[0]]] + [[0, 0]] * (t.shape.rank - 1)
    gathered = raw.CollectiveAllGather(array_ops.pad(t, pad), key=KEY_ALL_GATHER)
    keep = core.range(most)[None, :] < counts[:, None]  # [workers, most]
    return array_ops.boolean_mask(gathered, array_ops.reshape(keep, [-1]))


def all_gather(value, axis=0):
    """Every worker's value (a nest of tensors) joined along ``axis``, in worker
    order. The workers' sizes along ``axis`` may differ; the rest must agree."""
    def gather(x):
        t = _tensor(x)
        if axis % max(t.shape.rank, 1) == 0:
            return _gather_rows(t)
        return _move_axis(_gather_rows(_move_axis(t, axis, 0)), 0, axis)
    return nest.map_structure(gather, value)


def graph_fingerprint(graph):
    """A 62-bit hash of a graph's structure: op types, the edges between them
    (by position, not by name: names carry per-process counters such as layer
    numbers) and the output dtypes. Not the shapes: workers may hold batches
    of different sizes and still run the same program."""
    nodes = graph.as_graph_def().node
    index = {n.name: i for i, n in enumerate(nodes)}
    h = hashlib.sha256()
    for n in nodes:
        inputs = []
        for name in n.input:
            base, _, port = name.partition(":")
            inputs.append(f"{index.get(base.lstrip('^'), base)}:{port}")
        dtypes = ",".join(str(dtype) for dtype, _ in n.outputs)
        h.update(f"{n.op}({','.join(inputs)})->{dtypes}\n".encode())
    return int.from_bytes(h.digest()[:8], "big") >> 2
