"""kiln.ragged (tf.ragged): ragged tensors and the ops on them.

    rt = kiln.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    rt.shape                       # TensorShape([5, None])
    kiln.reduce_mean(rt, axis=1)   # per-row means (NaN for empty rows)
    rt.to_tensor()                 # zero-padded dense tensor
"""
from kiln.ragged.ragged_tensor import RaggedTensor, is_ragged
from kiln.ragged.factory import constant
from kiln.ragged.ragged_ops import (map_flat_values, range, stack, boolean_mask,  # noqa: A004
                                    row_splits_to_segment_ids, segment_ids_to_row_splits)
from kiln.ragged import _convert  # noqa: F401  (to_tensor, from_tensor, to/from_sparse)
from kiln.ragged import _dispatch  # noqa: F401  (operators and the math-op handler)

__all__ = ["RaggedTensor", "constant", "map_flat_values", "range", "stack", "boolean_mask",
           "row_splits_to_segment_ids", "segment_ids_to_row_splits", "is_ragged"]
