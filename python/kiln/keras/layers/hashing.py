"""Hashing and HashedCrossing: Keras 3's hashing preprocessing layers, with TensorFlow's
buckets (FarmHash Fingerprint64, or SipHash-2-4 with a salt; crosses as TF's
SparseCrossHashed op computes them).

Both run eagerly, in functions and in ``tf.data`` pipelines. Inputs are strings or
integers (Hashing also takes floats, cast to int64 first, and bools); integers are hashed
through their decimal text as Keras does.
"""
from kiln import _kiln, dtypes, strings
from kiln.keras.layers.base import Layer
from kiln.keras.layers.index_lookup import check_salt, to_sparse
from kiln.ops import _helpers as h
from kiln.ops import array_ops, bitwise_ops, math_ops
from kiln.ragged import RaggedTensor
from kiln.sparse.sparse_tensor import SparseTensor
from kiln.tensor_shape import TensorShape

_HASHING_MODES = ("int", "one_hot", "multi_hot", "count")


def encode_categorical(idx, output_mode, depth, dtype, sparse=False):
    """Keras' encode_categorical_inputs: int casts; one_hot adds an axis of `depth` (a
    trailing axis of 1 replaced); multi_hot and count reduce axis 1 (axis 0 of one
    example). A scalar is one example."""
    if output_mode == "int":
        return dtypes.cast(idx, dtype)
    if len(idx.shape) == 0:
        idx = array_ops.expand_dims(idx, -1)
    if output_mode == "one_hot" and len(idx.shape) > 1 and idx.shape[-1] == 1:
        idx = array_ops.squeeze(idx, [-1])
    out = array_ops.one_hot(idx, depth, dtype=dtype)
    if output_mode != "one_hot":
        out = math_ops.reduce_sum(out, axis=1 if len(idx.shape) > 1 else 0)
        if output_mode == "multi_hot":
            out = math_ops.minimum(out, h.tensor(1, dtype))
    return to_sparse(out) if sparse else out


class Hashing(Layer):
    """Hashes strings, integers or floats into ``num_bins`` bins (bin 0 kept for
    ``mask_value`` when set): FarmHash Fingerprint64 of the value's text, SipHash
    with ``salt``; then int / one_hot / multi_hot / count outputs as Keras 3.
    Ragged and sparse inputs keep their structure in int mode."""

    _kiln_static_shapes = True

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False,
                 **kwargs):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else "float32"
        super().__init__(**kwargs)
        if num_bins is None or num_bins <= 0:
            raise ValueError("The `num_bins` for `Hashing` cannot be `None` or non-positive "
                             f"values. Received: num_bins={num_bins}.")
        if output_mode == "int" and self.dtype not in ("int32", "int64"):
            raise ValueError("When `output_mode=\"int\"`, `dtype` should be an integer type, "
                             f"'int32' or 'in64'. Received: dtype={kwargs['dtype']}")
        if output_mode not in _HASHING_MODES:
            raise ValueError("Invalid value for argument `output_mode`. Expected one of "
                             f"{_HASHING_MODES}. Received: output_mode={output_mode}")
        if sparse and output_mode == "int":
            raise ValueError("`sparse` may only be true if `output_mode` is `\"one_hot\"`, "
                             "`\"multi_hot\"`, or `\"count\"`. Received: "
                             f"sparse={sparse} and output_mode={output_mode}")
        self.num_bins, self.mask_value = num_bins, mask_value
        self.output_mode, self.sparse = output_mode, sparse
        self.salt = check_salt(salt, "Hashing")
        self.strong_hash = self.salt is not None
        self._autocast = False
        self.built = True

    def _bins(self, values):
        """The bin of each value (int64), bin 0 for the mask value when set."""
        values = h.tensor(values)
        bins, mask = self.num_bins, None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            mask = math_ops.equal(values, h.tensor(self.mask_value, values.dtype))
        if values.dtype.is_floating:
            values = dtypes.cast(values, "int64")
        if values.dtype.name != "string":
            values = strings.as_string(values)
        if self.strong_hash:
            out = strings.to_hash_bucket_strong(values, bins, self.salt)
        else:
            out = strings.to_hash_bucket_fast(values, bins)
        if mask is not None:
            out = array_ops.where(mask, array_ops.zeros_like(out), out + 1)
        return out

    def call(self, inputs):
        if isinstance(inputs, RaggedTensor):
            return self._call_ragged(inputs)
        if isinstance(inputs, SparseTensor):
            return self._call_sparse(inputs)
        x = h.tensor(inputs)
        if self.output_mode == "one_hot" and x.shape[-1] == 1:
            x = array_ops.squeeze(x, [-1])
        return encode_categorical(self._bins(x), self.output_mode, self.num_bins, self.dtype,
                                  self.sparse)

    def _per_row(self, bins, row_ids, nrows):
        """multi_hot / count of the bins of each row (2-D ragged or sparse inputs)."""
        if self.output_mode == "one_hot":
            raise ValueError("output_mode 'one_hot' takes dense inputs")
        onehot = array_ops.one_hot(bins, self.num_bins, dtype=self.dtype)
        out = math_ops.unsorted_segment_sum(onehot, row_ids, nrows)
        if self.output_mode == "multi_hot":
            out = math_ops.minimum(out, h.tensor(1, self.dtype))
        return to_sparse(out) if self.sparse else out

    def _call_ragged(self, rt):
        if self.output_mode == "int":
            return rt.with_flat_values(dtypes.cast(self._bins(rt.flat_values), self.dtype))
        if isinstance(rt.values, RaggedTensor):
            raise ValueError(f"output_mode {self.output_mode!r} takes ragged inputs of rank 2")
        return self._per_row(self._bins(rt.values), rt.value_rowids(), rt.nrows())

    def _call_sparse(self, sp):
        bins = self._bins(sp.values)
        if self.output_mode == "int":
            return SparseTensor(sp.indices, dtypes.cast(bins, self.dtype), sp.dense_shape)
        if len(sp.shape) != 2:
            raise ValueError(f"output_mode {self.output_mode!r} takes sparse inputs of rank 2")
        return self._per_row(bins, sp.indices[:, 0], sp.dense_shape[0])

    def _output_dtype(self, inputs):
        return _kiln.as_dtype(self.dtype)

    def compute_output_shape(self, input_shape):
        """The shape call() gives (Keras' own formula is wrong for one_hot of (..., n > 1)
        and for ranks above 2)."""
        dims = list(TensorShape(input_shape))
        if self.output_mode == "int":
            return TensorShape(dims)
        if self.output_mode == "one_hot":
            return TensorShape((dims[:-1] if dims and dims[-1] == 1 else dims or [1]) +
                               [self.num_bins])
        return TensorShape(dims[:1] + dims[2:] + [self.num_bins] if len(dims) > 1
                           else [self.num_bins])

    def get_config(self):
        return {**super().get_config(), "num_bins": self.num_bins, "salt": self.salt,
                "mask_value": self.mask_value, "output_mode": self.output_mode,
                "sparse": self.sparse}


# TF's SparseCrossHashed: h = FingerprintCat64(h, feature hash) from this key, over the
# features in order; a string's hash is its Fingerprint64, an integer's its own bits.
_CROSS_KEY = 0xDECAFCAFFE
_MUL = 0xC6A4A7935BD1E995 - (1 << 64)  # kMul of FingerprintCat64, as int64 bits
_INT64_MAX = (1 << 63) - 1


def _shift_mix(v):
    """v ^ (v >> 47) with a logical (uint64) shift."""
    high = bitwise_ops.bitwise_and(bitwise_ops.right_shift(v, h.tensor(47, "int64")),
                                   h.tensor((1 << 17) - 1, "int64"))
    return bitwise_ops.bitwise_xor(v, high)


def _fingerprint_cat(fp1, fp2):
    """TF's FingerprintCat64 in int64 (wrapping arithmetic, the uint64 bits)."""
    mul = h.tensor(_MUL, "int64")
    out = bitwise_ops.bitwise_xor(fp1, mul)
    out = bitwise_ops.bitwise_xor(out, _shift_mix(fp2 * mul) * mul) * mul
    return _shift_mix(_shift_mix(out) * mul)


def fingerprint64(x):
    """FarmHash Fingerprint64 of each string (the uint64 bits as int64), rebuilt from its
    remainders mod 2**63 - 1 and mod 2**62 (CRT: the quotient is 0, 1 or 2)."""
    a = strings.to_hash_bucket_fast(x, _INT64_MAX)
    b = strings.to_hash_bucket_fast(x, 1 << 62)
    k = math_ops.floormod(a - b, h.tensor(1 << 62, "int64"))
    return a + k * h.tensor(_INT64_MAX, "int64")


def _unsigned_mod(v, n):
    """(v read as uint64) mod n, for 0 < n < 2**63."""
    r = math_ops.floormod(v, h.tensor(n, "int64"))
    c = (1 << 64) % n  # 2**64 mod n: what a negative v lacks
    t = r - h.tensor(n - c, "int64")
    wrapped = array_ops.where(t >= 0, t, r + h.tensor(c, "int64"))
    return array_ops.where(v < 0, wrapped, r)


def cross_hashed(features, num_buckets):
    """TF's SparseCrossHashed of dense features with one value per row (the same shape):
    the hash of each row's cross, mod num_buckets (mod 2**63 - 1 when num_buckets is 0)."""
    out = None
    for f in features:
        f = fingerprint64(f) if f.dtype.name == "string" else dtypes.cast(f, "int64")
        out = _fingerprint_cat(h.tensor(_CROSS_KEY, "int64") if out is None else out, f)
    return _unsigned_mod(out, num_buckets if num_buckets > 0 else _INT64_MAX)


class HashedCrossing(Layer):
    """Crosses two or more string / integer features (each of shape (), (batch,) or
    (batch, 1)) into ``num_bins`` bins as ``tf.sparse.cross_hashed`` does; int or
    one_hot outputs (``sparse`` for a SparseTensor one_hot)."""

    _kiln_static_shapes = True

    def __init__(self, num_bins, output_mode="int", sparse=False, name=None, dtype=None,
                 **kwargs):
        if output_mode == "int" and dtype is None:
            dtype = "int64"
        super().__init__(name=name, dtype=dtype)  # Keras drops the other kwargs
        if not (isinstance(output_mode, str) and output_mode in ("int", "one_hot")):
            raise ValueError("Unknown value for `output_mode` argument of HashedCrossing. "
                             "Allowed values are: ('int', 'one_hot'). Received: "
                             f"output_mode={output_mode}")
        self.num_bins, self.output_mode, self.sparse = num_bins, output_mode, sparse
        self._autocast = False
        self.built = True

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError("`HashedCrossing` should be called on a list or tuple of inputs. "
                             f"Received: inputs={inputs}")
        if len(inputs) < 2:
            raise ValueError("`HashedCrossing` should be called on at least two inputs. "
                             f"Received: inputs={inputs}")
        inputs = [x if isinstance(x, (RaggedTensor, SparseTensor)) else h.tensor(x)
                  for x in inputs]
        self._check_inputs(inputs)
        if not isinstance(self.num_bins, int) or self.num_bins < 0:
            raise ValueError("`num_bins` for `HashedCrossing` must be a non-negative integer. "
                             f"Received: num_bins={self.num_bins}")
        out = cross_hashed(inputs, self.num_bins)
        return encode_categorical(out, self.output_mode, self.num_bins, self.compute_dtype,
                                  self.sparse)

    @staticmethod
    def _check_inputs(inputs):
        shape = tuple(inputs[0].shape)
        if len(shape) > 2 or (len(shape) == 2 and shape[-1] != 1):
            raise ValueError("All `HashedCrossing` inputs should have shape `()`, "
                             f"`(batch_size)` or `(batch_size, 1)`. Received: inputs={inputs}")
        if not all(tuple(x.shape) == shape for x in inputs[1:]):
            raise ValueError("All `HashedCrossing` inputs should have equal shape. "
                             f"Received: inputs={inputs}")
        if any(isinstance(x, (RaggedTensor, SparseTensor)) for x in inputs):
            raise ValueError("All `HashedCrossing` inputs should be dense tensors. "
                             f"Received: inputs={inputs}")
        if not all(x.dtype.is_integer or x.dtype.name == "string" for x in inputs):
            raise ValueError("All `HashedCrossing` inputs should have an integer or string "
                             f"dtype. Received: inputs={inputs}")

    def _output_dtype(self, inputs):
        return _kiln.as_dtype(self.compute_dtype)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 2 or not all(isinstance(s, (tuple, list, TensorShape))
                                            for s in input_shape):
            raise ValueError("Expected as input a list/tuple of 2 tensors. "
                             f"Received input_shape={input_shape}")
        first = list(TensorShape(input_shape[0]))
        if self.output_mode == "int":
            return TensorShape(first)
        if first and first[-1] == 1:
            first = first[:-1]
        return TensorShape((first or [1]) + [self.num_bins])

    def get_config(self):
        return {"num_bins": self.num_bins, "output_mode": self.output_mode,
                "sparse": self.sparse, "name": self.name, "dtype": self.dtype}


__all__ = ["Hashing", "HashedCrossing", "encode_categorical", "cross_hashed",
           "fingerprint64"]
