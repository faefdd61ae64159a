"""Attention layers: MultiHeadAttention and Attention (Keras 3's arguments, weight names and
shapes, masks and errors).

MultiHeadAttention's projections are Keras' EinsumDense kernels ([d, heads, key_dim] for query,
key and value, [heads, value_dim, d_out] for the output), computed as matrix products over
reshaped kernels; the heads' scores are one batched product.
"""
import math

from kiln import dtypes
from kiln.keras import initializers
from kiln.keras.layers import _args
from kiln.keras.layers.activation import Softmax
from kiln.keras.layers.base import Layer
from kiln.ops import _helpers as h
from kiln.ops import array_ops, core, linalg_ops, math_ops, nn_ops


def _steps(x):
    """x's number of steps (axis 1): static when known, so shapes stay known."""
    return x.shape[1] if x.shape[1] is not None else array_ops.shape(x)[1]


def _causal(q_len, v_len):
    """[1, T, S]: query step i sees value steps j <= i."""
    rows = math_ops.cumsum(array_ops.ones([q_len, v_len], dtype="int32"), axis=0)
    cols = math_ops.cumsum(array_ops.ones([q_len, v_len], dtype="int32"), axis=1)
    return array_ops.expand_dims(math_ops.greater_equal(rows, cols), 0)


def _band(q_len, v_len, window):
    """[1, T, S]: query step i sees value steps j with |i - j| < window."""
    rows = array_ops.expand_dims(core.range(q_len), 1)
    cols = array_ops.expand_dims(core.range(v_len), 0)
    return array_ops.expand_dims(math_ops.less(math_ops.abs(rows - cols), window), 0)


def _attention_mask(query, value, query_mask, value_mask, key_mask, attention_mask, causal,
                    window=None):
    """The [B, T, S] boolean mask of which value steps each query step sees, or None."""
    mask = None

    def both(a, b):
        return b if a is None else math_ops.logical_and(a, b)
    if query_mask is not None:
        mask = array_ops.expand_dims(dtypes.cast(query_mask, "bool"), -1)  # [B, T, 1]
    if value_mask is not None:
        mask = both(mask, array_ops.expand_dims(dtypes.cast(value_mask, "bool"), -2))
    if key_mask is not None:
        mask = both(mask, array_ops.expand_dims(dtypes.cast(key_mask, "bool"), -2))
    if causal:
        q_len, v_len = array_ops.shape(query)[1], array_ops.shape(value)[1]
        mask = both(mask, _causal(q_len, v_len))
    if window is not None:
        mask = both(mask, _band(array_ops.shape(query)[1], array_ops.shape(value)[1], window))
    if attention_mask is not None:
        mask = both(mask, dtypes.cast(attention_mask, "bool"))
    return mask


class MultiHeadAttention(Layer):
    """softmax(q k^T / sqrt(key_dim)) v per head, over projections of query
    [B, T, dq], value [B, S, dv] and key (value when not given), then an
    output projection to dq (or ``output_shape``). Masks: ``attention_mask``
    [B, T, S] (true: attend), the query's / value's / key's masks,
    ``use_causal_mask`` and ``sliding_window`` (|i - j| < window); a query step
    that sees nothing gets zero weights. ``use_gate``: the heads' outputs are
    multiplied by sigmoid(query @ gate kernel + bias) before the output
    projection."""

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, sliding_window=None,
                 flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 use_gate=False, seed=None, **kwargs):
        super().__init__(**kwargs)
        del flash_attention  # a backend choice in Keras; kiln has one path
        if sliding_window is not None and (isinstance(sliding_window, bool) or not isinstance(
                sliding_window, int) or sliding_window <= 0):
            raise ValueError("`sliding_window` must be `None` or a positive integer. "
                             f"Received: sliding_window={sliding_window}")
        self.sliding_window, self.use_gate = sliding_window, bool(use_gate)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.activity_regularizer = activity_regularizer
        self.num_heads = _args.positive_int(num_heads, "num_heads", "MultiHeadAttention")
        self.key_dim = _args.positive_int(key_dim, "key_dim", "MultiHeadAttention")
        self.value_dim = self.key_dim if value_dim is None else \
            _args.positive_int(value_dim, "value_dim", "MultiHeadAttention")
        self.dropout = _args.rate(dropout, "dropout")
        self.use_bias = bool(use_bias)
        if output_shape is not None and not isinstance(output_shape, int):
            output_shape = tuple(output_shape)
            if len(output_shape) != 1:
                raise NotImplementedError("MultiHeadAttention: output_shape of more than one dim "
                                          "is not supported yet")
            output_shape = output_shape[0]
        self._output_dim = output_shape
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        if attention_axes is not None and tuple(attention_axes) not in ((1,), (-2,)):
            raise NotImplementedError("MultiHeadAttention: attention over axes other than the "
                                      "steps is not supported yet")
        self._attention_axes = None if attention_axes is None else tuple(attention_axes)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.seed = seed
        self._softmax = Softmax(axis=-1)
        self.supports_masking = True

    def _dense(self, name, shape, bias_shape):
        layer = _Projection(name=name, dtype=self.dtype_policy)
        layer.kernel = layer.add_weight("kernel", shape, initializer=self.kernel_initializer)
        layer.bias = layer.add_weight("bias", bias_shape, initializer=self.bias_initializer) \
            if self.use_bias else None
        layer.built = True
        return layer

    def _build_from_shapes(self, q_shape, v_shape, k_shape):
        dq, dv, dk = q_shape[-1], v_shape[-1], k_shape[-1]
        if None in (dq, dv, dk):
            raise ValueError("MultiHeadAttention: the last dimension of query, value and key "
                             "should be defined")
        heads = self.num_heads
        self.query_dense = self._dense("query", (dq, heads, self.key_dim), (heads, self.key_dim))
        self.key_dense = self._dense("key", (dk, heads, self.key_dim), (heads, self.key_dim))
        if self.use_gate:  # Keras builds it between key and value
            self.gate_dense = self._dense("gate", (dq, heads, self.value_dim),
                                          (heads, self.value_dim))
        self.value_dense = self._dense("value", (dv, heads, self.value_dim),
                                       (heads, self.value_dim))
        out = self._output_dim or dq
        self.output_dense = self._dense("attention_output", (heads, self.value_dim, out), (out,))
        self._attention_axes = (1,)
        self.built = True

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        self._build_from_shapes(list(query_shape), list(value_shape),
                                list(key_shape if key_shape is not None else value_shape))

    def __call__(self, query, value=None, key=None, **kwargs):
        if value is None:
            raise ValueError("MultiHeadAttention needs `query` and `value` (and optionally "
                             "`key`)")
        if not self.built:
            self.build(tuple(query.shape), tuple(value.shape),
                       tuple(key.shape) if key is not None else None)
        return super().__call__(query, value, key, **kwargs)

    def _maybe_build(self, inputs):
        pass  # built from query, value and key in __call__

    def _project(self, x, dense, width):
        """[B, L, d] -> [B, heads, L, width]."""
        kernel = array_ops.reshape(dense.kernel, [-1, self.num_heads * width])
        y = linalg_ops.matmul(x, kernel)
        if dense.bias is not None:
            y = y + array_ops.reshape(dense.bias, [-1])
        y = array_ops.reshape(y, [-1, _steps(x), self.num_heads, width])
        return array_ops.transpose(y, [0, 2, 1, 3])

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        key = value if key is None else key
        q = self._project(query, self.query_dense, self.key_dim)
        k = self._project(key, self.key_dense, self.key_dim)
        v = self._project(value, self.value_dense, self.value_dim)
        q = q * h.tensor(1.0 / math.sqrt(self.key_dim), q.dtype)
        scores = linalg_ops.matmul(q, k, transpose_b=True)  # [B, heads, T, S]
        mask = _attention_mask(query, value, query_mask, value_mask, key_mask, attention_mask,
                               use_causal_mask, self.sliding_window)
        if mask is not None:
            mask = array_ops.expand_dims(mask, 1)  # every head
            mask = math_ops.logical_and(mask, array_ops.ones_like(scores, dtype="bool"))
        probs = self._softmax(scores, mask=mask)
        attended = probs
        if training and self.dropout > 0:
            attended = nn_ops.dropout(probs, self.dropout, seed=self.seed)
        out = linalg_ops.matmul(attended, v)  # [B, heads, T, value_dim]
        out = array_ops.transpose(out, [0, 2, 1, 3])
        if self.use_gate:
            gate = self._project(query, self.gate_dense, self.value_dim)
            out = out * math_ops.sigmoid(array_ops.transpose(gate, [0, 2, 1, 3]))
        out = array_ops.reshape(out, [-1, _steps(query), self.num_heads * self.value_dim])
        kernel = array_ops.reshape(self.output_dense.kernel,
                                   [self.num_heads * self.value_dim, -1])
        out = linalg_ops.matmul(out, kernel)
        if self.output_dense.bias is not None:
            out = out + self.output_dense.bias
        if return_attention_scores:
            return out, probs
        return out

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout,
                "use_bias": self.use_bias, "use_gate": self.use_gate,
                "output_shape": None if self._output_dim is None else (self._output_dim,),
                "attention_axes": self._attention_axes, "sliding_window": self.sliding_window,
                **_args.extras_config(self, _args.CONV_EXTRAS),
                "kernel_initializer": initializers.serialize(self.kernel_initializer)
                if isinstance(self.kernel_initializer, initializers.Initializer) else None,
                "bias_initializer": initializers.serialize(self.bias_initializer)
                if isinstance(self.bias_initializer, initializers.Initializer) else None,
                "seed": self.seed}


class _Projection(Layer):
    """The holder of one of MultiHeadAttention's kernels (Keras' EinsumDense
    sublayers: ``query``, ``key``, ``value``, ``attention_output``)."""


class Attention(Layer):
    """Dot-product attention over ``[query, value]`` or ``[query, value,
    key]``: softmax(score(q, k)) v, with score ``q k^T`` ("dot", times a
    learned ``scale`` with ``use_scale``) or ``sum(scale * tanh(q + k))``
    ("concat"). ``mask`` = [query_mask, value_mask]."""

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError("Invalid value for argument score_mode. Expected one of "
                             f"{{'dot', 'concat'}}. Received: score_mode={score_mode}")
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode
        self.dropout = _args.rate(dropout, "dropout")
        self.seed = seed
        self._softmax = Softmax(axis=-1)
        self.supports_masking = True

    def build(self, input_shape):
        self.scale = self.add_weight("scale", (), initializer="ones") if self.use_scale \
            else None
        self.concat_score_weight = self.add_weight("concat_score_weight", (),
                                                   initializer="ones") \
            if self.score_mode == "concat" else None
        self.built = True

    def _maybe_build(self, inputs):
        if not self.built:
            self.build(None)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError("Attention layer expects `inputs` to be a list of 2 or 3 tensors "
                             f"[query, value(, key)]. Received: inputs={inputs}")
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) == 3 else v
        if self.score_mode == "dot":
            scores = linalg_ops.matmul(q, k, transpose_b=True)
            if self.scale is not None:
                scores = scores * self.scale
        else:
            qe = array_ops.expand_dims(q, -2)
            ke = array_ops.expand_dims(k, -3)
            if self.scale is not None:
                scores = self.concat_score_weight * math_ops.reduce_sum(
                    math_ops.tanh(self.scale * (qe + ke)), axis=-1)
            else:
                scores = self.concat_score_weight * math_ops.reduce_sum(
                    math_ops.tanh(qe + ke), axis=-1)
        q_mask = v_mask = None
        if mask is not None:
            q_mask, v_mask = mask[0], mask[1] if len(mask) > 1 else None
        att = _attention_mask(q, v, None, v_mask, None, None, use_causal_mask)
        probs = self._softmax(scores, mask=att)
        attended = probs
        if training and self.dropout > 0:
            attended = nn_ops.dropout(probs, self.dropout, seed=self.seed)
        out = linalg_ops.matmul(attended, v)
        if q_mask is not None:
            out = out * array_ops.expand_dims(dtypes.cast(q_mask, out.dtype), -1)
        if return_attention_scores:
            return out, probs
        return out

    def compute_mask(self, inputs, mask=None):
        return None if mask is None else mask[0]

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}


__all__ = ["MultiHeadAttention", "Attention"]
