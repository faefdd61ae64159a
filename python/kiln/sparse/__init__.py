"""kiln.sparse (tf.sparse): sparse tensors and the ops on them.

    sp = kiln.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])
    kiln.sparse.to_dense(sp)                      # [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]]
    kiln.sparse.sparse_dense_matmul(sp, dense)    # without densifying sp
"""
from kiln.sparse.sparse_tensor import SparseTensor, is_sparse
from kiln.sparse.sparse_ops import (to_dense, from_dense, sparse_dense_matmul, matmul, add,
                                    reorder, retain, reduce_sum, reduce_max, transpose,
                                    concat, slice, map_values, eye)  # noqa: A004

__all__ = ["SparseTensor", "to_dense", "from_dense", "sparse_dense_matmul", "matmul", "add",
           "reorder", "retain", "reduce_sum", "reduce_max", "transpose", "concat", "slice",
           "map_values", "eye", "is_sparse"]
