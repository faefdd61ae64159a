"""kiln.SparseTensor: a tensor given by the indices of its non-default entries
(tf.sparse.SparseTensor). The three components are kiln tensors, so a SparseTensor
works eagerly and inside a kiln.function, passes into and out of one (see
kiln._composite), and gradients flow to its values. `sp * x` and `sp / x` are added by
kiln.sparse.sparse_ops."""
from kiln import _kiln
from kiln._composite import CompositeTensor
from kiln.tensor_shape import TensorShape

Tensor = _kiln.Tensor
INT64 = _kiln.as_dtype("int64")


def _component(x, dtype, what):
    """x as a tensor (dtype, when given, must match); TensorSpecs (a traced signature)
    pass through."""
    if isinstance(x, _kiln.TensorSpec):
        return x
    if isinstance(x, _kiln.Variable):
        x = x.read_value()
    if isinstance(x, Tensor):
        if dtype is not None and x.dtype != dtype:
            raise ValueError(f"SparseTensor {what} must be {dtype.name}, got a "
                             f"{x.dtype.name} tensor")
        return x
    return _kiln.convert_to_tensor(x, dtype=dtype)


def _check_rank(t, rank, what):
    r = t.shape.rank
    if r is not None and r != rank:
        raise ValueError(f"SparseTensor {what} must have rank {rank}, got shape {t.shape}")


def _check_dim(a, b, what):
    if a is not None and b is not None and a != b:
        raise ValueError(f"SparseTensor: {what} ({a} vs {b})")


class SparseTensor(CompositeTensor):
    """A sparse tensor: `values[i]` sits at `indices[i]` of a `dense_shape` tensor whose
    other entries are zero (tf.sparse.SparseTensor). indices: int64 [N, rank]; values:
    [N]; dense_shape: int64 [rank]."""

    __slots__ = ()
    # static_shape: dense_shape's value when known when the tensor is built (a tuple,
    # None entries unknown), so that it survives being passed into a kiln.function.
    _fields = ("indices", "values", "dense_shape", "static_shape")

    def __new__(cls, indices, values, dense_shape, static_shape=None):
        indices = _component(indices, INT64, "indices")
        values = _component(values, None, "values")
        dense_shape = _component(dense_shape, INT64, "dense_shape")
        if isinstance(indices, Tensor) and isinstance(values, Tensor) and \
                isinstance(dense_shape, Tensor):
            _check_rank(indices, 2, "indices")
            _check_rank(values, 1, "values")
            _check_rank(dense_shape, 1, "dense_shape")
            if indices.shape.rank == 2:
                _check_dim(indices.shape[0], values.shape[0] if values.shape.rank else None,
                           "indices and values have different numbers of entries")
                _check_dim(indices.shape[1], dense_shape.shape[0] if dense_shape.shape.rank
                           else None, "indices.shape[1] must equal the rank in dense_shape")
        if static_shape is None and isinstance(dense_shape, Tensor) and \
                not dense_shape.is_symbolic:
            static_shape = tuple(int(d) for d in dense_shape.numpy())
        elif static_shape is not None:
            static_shape = tuple(None if d is None else int(d) for d in static_shape)
        return tuple.__new__(cls, (indices, values, dense_shape, static_shape))

    @property
    def indices(self):
        """The int64 [N, rank] coordinates of the values."""
        return tuple.__getitem__(self, 0)

    @property
    def values(self):
        """The [N] values."""
        return tuple.__getitem__(self, 1)

    @property
    def dense_shape(self):
        """The int64 [rank] shape of the dense tensor."""
        return tuple.__getitem__(self, 2)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        """The static shape: dense_shape's value when it is known (eager, a constant in a
        traced function, or an argument of one), else a shape of unknown dims."""
        static = tuple.__getitem__(self, 3)
        if static is not None:
            return TensorShape(list(static))
        ds = self.dense_shape
        n = ds.shape[0] if ds.shape.rank else None
        return TensorShape(None if n is None else [None] * n)

    def get_shape(self):
        return self.shape

    @property
    def ndim(self):
        return self.shape.rank

    def with_values(self, new_values):
        """The same indices and shape with new values."""
        return SparseTensor(self.indices, new_values, self.dense_shape,
                            tuple.__getitem__(self, 3))

    def _map_values(self, fn):
        return self.with_values(fn(self.values))

    @classmethod
    def from_value(cls, sparse_tensor_value):
        return cls(sparse_tensor_value.indices, sparse_tensor_value.values,
                   sparse_tensor_value.dense_shape)

    def __repr__(self):
        return (f"SparseTensor(indices={self.indices}, values={self.values}, "
                f"dense_shape={self.dense_shape})")

    __str__ = __repr__

    def __getitem__(self, key):
        raise TypeError("a SparseTensor cannot be indexed; use kiln.sparse.slice or "
                        "kiln.sparse.to_dense")

    def consumers(self):
        return []


def is_sparse(x):
    """True for a kiln.SparseTensor."""
    return isinstance(x, SparseTensor)
