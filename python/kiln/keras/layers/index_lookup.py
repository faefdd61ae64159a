"""The vocabulary lookup shared by StringLookup, IntegerLookup and TextVectorization (Keras 3's
IndexLookup: arguments, index layout, adapt order, output modes and errors).

kiln has no hash-table op: the vocabulary is a constant and a lookup compares each input with
every term (memory grows with inputs x vocabulary; fine for vocabularies of thousands).
Indices: [mask (int mode, when mask_token is set)] + [num_oov_indices OOV] + terms.
"""
import os

import numpy as np

from kiln import _kiln, dtypes, errors, strings
from kiln.keras.layers.base import Layer
from kiln.ops import _helpers as h
from kiln.ops import array_ops, math_ops
from kiln.ragged import RaggedTensor
from kiln.sparse import sparse_ops
from kiln.sparse.sparse_tensor import SparseTensor
from kiln.tensor_shape import TensorShape

_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


def numpy_batches(data):
    """The batches of `data` (an array, a list, a tensor, or a dataset of them) as NumPy."""
    if isinstance(data, (np.ndarray, list, tuple, str, bytes, int, float)):
        yield np.asarray(data)
    elif isinstance(data, (_kiln.Tensor, _kiln.Variable)):
        yield np.asarray(data.numpy())
    else:
        for batch in data:
            if isinstance(batch, (list, tuple)):  # (features, labels): adapt on features
                batch = batch[0]
            yield np.asarray(batch.numpy() if hasattr(batch, "numpy") else batch)


def take(batches, steps):
    for i, b in enumerate(batches):
        if steps is not None and i >= steps:
            return
        yield b


def _unknown(value, allowed, caller, arg):
    """Keras' validate_string_arg error."""
    if not (isinstance(value, str) and value in allowed):
        raise ValueError(f"Unknown value for `{arg}` argument of {caller}. Allowed values are: "
                         f"{allowed}. Received: {arg}={value}")


def _check_args(caller, max_tokens, num_oov_indices, oov_method, pad_to_max_tokens):
    if max_tokens is not None and max_tokens <= 1:
        raise ValueError("If set, `max_tokens` must be greater than 1. Received: "
                         f"max_tokens={max_tokens}")
    if pad_to_max_tokens and max_tokens is None:
        raise ValueError("If pad_to_max_tokens is True, must set `max_tokens`. Received: "
                         f"max_tokens={max_tokens}")
    if num_oov_indices < 0:
        raise ValueError("`num_oov_indices` must be greater than or equal to 0. Received: "
                         f"num_oov_indices={num_oov_indices}")
    _unknown(oov_method, ("floormod", "farmhash"), caller, "oov_method")


def _check_modes(caller, output_mode, invert, sparse, idf_weights):
    _unknown(output_mode, _MODES, caller, "output_mode")
    if invert and output_mode != "int":
        raise ValueError("`output_mode` must be `'int'` when `invert` is true. Received: "
                         f"output_mode={output_mode}")
    if sparse and output_mode == "int":
        raise ValueError("`sparse` may only be true if `output_mode` is `'one_hot'`, "
                         "`'multi_hot'`, `'count'` or `'tf_idf'`. Received: "
                         f"sparse={sparse} and output_mode={output_mode}")
    if idf_weights is not None and output_mode != "tf_idf":
        raise ValueError("`idf_weights` should only be set if `output_mode` is `'tf_idf'`. "
                         f"Received: idf_weights={idf_weights} and output_mode={output_mode}")


def check_salt(salt, what):
    """`salt` as Keras keeps it: None, or a list of two integers (an int is used twice)."""
    if salt is None:
        return None
    if isinstance(salt, (tuple, list)) and len(salt) == 2:
        return list(salt)
    if isinstance(salt, int):
        return [salt, salt]
    size = "size 2 integers" if what == "Hashing" else "2 integers"
    raise ValueError(f"The `salt` argument for `{what}` can only be a tuple of {size}, or a "
                     f"single integer. Received: salt={salt}.")


def to_sparse(dense):
    """The non-zero entries of `dense` as a SparseTensor (row-major order, the static
    shape kept): what TF's Keras returns for ``sparse=True``."""
    sp = sparse_ops.from_dense(dense)
    return SparseTensor(sp.indices, sp.values, sp.dense_shape,
                        static_shape=tuple(TensorShape(dense.shape).as_list()))


def _listify(v):
    if v is None:
        return None
    if isinstance(v, (_kiln.Tensor, _kiln.Variable)):
        v = v.numpy()
    return np.asarray(v).tolist() if not isinstance(v, list) else v


class IndexLookup(Layer):
    """Maps terms to indices (``invert``: indices to terms) through a
    vocabulary given or learned by ``adapt`` (most frequent first, ties in
    reverse term order), then to one_hot / multi_hot / count / tf_idf
    vectors when ``output_mode`` says so (SparseTensors with ``sparse``).
    Ragged inputs keep their rows in int mode and count per row otherwise."""

    _kiln_static_shapes = True
    _string = True

    def __init__(self, max_tokens, num_oov_indices, mask_token, oov_token, vocabulary_dtype,
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 sparse=False, pad_to_max_tokens=False, oov_method="floormod", salt=None,
                 **kwargs):
        frozen = kwargs.pop("vocabulary_size", None)
        kwargs.pop("has_input_vocabulary", None)
        super().__init__(**kwargs)
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        caller = type(self).__name__
        _check_args(caller, max_tokens, num_oov_indices, oov_method, pad_to_max_tokens)
        if salt is not None and not self._string and oov_method != "farmhash":
            raise ValueError("`salt` can only be used when `oov_method='farmhash'`. "
                             f"Received: oov_method={oov_method}")
        salt = check_salt(salt, "IndexLookup")
        _check_modes(caller, output_mode, invert, sparse, idf_weights)
        self.invert, self.max_tokens = bool(invert), max_tokens
        self.num_oov_indices, self.mask_token, self.oov_token = num_oov_indices, mask_token, \
            oov_token
        self.output_mode, self.sparse, self.pad_to_max_tokens = output_mode, bool(sparse), \
            bool(pad_to_max_tokens)
        self.vocabulary_dtype, self.oov_method, self.salt = vocabulary_dtype, oov_method, salt
        self.input_vocabulary = vocabulary if not isinstance(vocabulary, str) else None
        self.input_idf_weights = idf_weights
        self._frozen_vocab_size = frozen
        self._tokens, self._idf, self._has_input_vocabulary = [], None, False
        self.supports_masking = False
        self._autocast = False
        if output_mode == "tf_idf" and vocabulary is not None and idf_weights is None:
            raise ValueError("When specifying the `vocabulary` argument, in TF-IDF output mode, "
                             "the `idf_weights` argument must also be provided.")
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)
        self.built = True

    # ---- the vocabulary ----

    def _term(self, v):
        if self._string:
            return v.decode("utf-8") if isinstance(v, bytes) else str(v)
        return int(v)

    def _oov_start_index(self):
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start_index(self):
        return self._oov_start_index() + self.num_oov_indices

    def vocabulary_size(self):
        """The number of indices: terms, OOV indices and the mask's."""
        return len(self._tokens) + self._token_start_index()

    def get_vocabulary(self, include_special_tokens=True):
        """The terms in index order (with the mask and OOV tokens at their indices)."""
        vocab = [self.oov_token] * self._token_start_index() + list(self._tokens)
        if self.mask_token is not None and self.output_mode == "int":
            vocab[0] = self.mask_token
        return vocab if include_special_tokens else vocab[self._token_start_index():]

    def _read_terms(self, vocabulary):
        if isinstance(vocabulary, str):
            if not os.path.exists(vocabulary):
                raise ValueError(f"Vocabulary file {vocabulary} does not exist.")
            if self.output_mode == "tf_idf":
                raise ValueError("output_mode `'tf_idf'` does not support loading a "
                                 "vocabulary from file.")
            with open(vocabulary, encoding="utf-8") as f:
                return [self._term(line.rstrip("\n")) for line in f]
        if isinstance(vocabulary, (_kiln.Tensor, _kiln.Variable)):
            vocabulary = vocabulary.numpy()
        return [self._term(v) for v in np.asarray(vocabulary).reshape(-1)]

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the terms (a list, an array, a tensor, or a file with one term a line) and,
        for tf_idf, their idf weights; the mask and OOV tokens may lead the list."""
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise ValueError("`idf_weights` must be set if output_mode is 'tf_idf'.")
        if self.output_mode != "tf_idf" and idf_weights is not None:
            raise ValueError("`idf_weights` should only be set if output_mode is `'tf_idf'`. "
                             f"Received: output_mode={self.output_mode} and "
                             f"idf_weights={idf_weights}")
        terms = self._read_terms(vocabulary)
        if not terms:
            raise ValueError(f"Cannot set an empty vocabulary. Received: vocabulary={terms}")
        start = self._token_start_index()
        special = [self.mask_token] * self._oov_start_index() + \
            [self.oov_token] * self.num_oov_indices
        found_special = terms[:start] == special
        tokens = terms[start:] if found_special else terms
        self._check_tokens(tokens, special)
        self._tokens = tokens
        self._has_input_vocabulary = True
        if idf_weights is not None:
            self._set_idf(np.asarray(_listify(idf_weights), np.float64), len(terms),
                          found_special)
        self._frozen_vocab_size = self.vocabulary_size()

    def _check_tokens(self, tokens, special):
        seen, repeated = set(), []
        for t in tokens:
            if t in seen and t not in repeated:
                repeated.append(t)
            seen.add(t)
        if repeated:
            raise ValueError("The passed vocabulary has at least one repeated term. Please "
                             f"uniquify your dataset. The repeated terms are: {repeated}")
        reserved = [("mask_token", self.mask_token)]
        if self.invert:
            reserved.append(("oov_token", self.oov_token))
        for what, tok in reserved:
            if tok is not None and tok in seen:
                raise ValueError(
                    "Found reserved "
                    f"{'mask' if what == 'mask_token' else 'OOV'} token at unexpected location "
                    "in `vocabulary`. Note that passed `vocabulary` does not need to include "
                    "the OOV and mask tokens. Either remove all mask and OOV tokens, or "
                    "include them only at the start of the vocabulary in precisely this "
                    f"order: {special}. Received: {what}={tok}")
        if self.max_tokens is not None and \
                self._token_start_index() + len(tokens) > self.max_tokens:
            raise ValueError("Attempted to set a vocabulary larger than the maximum vocab size. "
                             "Received vocabulary size is "
                             f"{self._token_start_index() + len(tokens)}; `max_tokens` is "
                             f"{self.max_tokens}.")

    def _set_idf(self, idf, n_terms, found_special):
        if len(idf) != n_terms:
            raise ValueError("`idf_weights` must be the same length as vocabulary. "
                             f"len(idf_weights) is {len(idf)}; len(vocabulary) is {n_terms}")
        front = 0 if found_special else self._token_start_index()
        back = self.max_tokens - front - len(idf) if self.pad_to_max_tokens else 0
        self._idf = np.pad(idf, (front, back), constant_values=(
            0 if found_special else np.average(idf), 0)).astype(np.float32)

    # ---- adapt ----

    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary (and idf weights) from `data`: the most frequent terms
        first, up to ``max_tokens`` indices in all."""
        self.adapt_documents(self._adapt_rows(b) for b in take(numpy_batches(data), steps))

    def adapt_documents(self, batches):
        """adapt() on batches already split into documents (lists of terms)."""
        if self._has_input_vocabulary:
            raise ValueError(f"Cannot adapt layer '{self.name}' after setting a static "
                             "vocabulary via `vocabulary` argument or `set_vocabulary()` "
                             "method.")
        counts, docs, n_docs = {}, {}, 0
        for rows in batches:
            for row in rows:
                for t in row:
                    counts[t] = counts.get(t, 0) + 1
                for t in set(row):
                    docs[t] = docs.get(t, 0) + 1
            n_docs += len(rows)
        self._finish_adapt(counts, docs, n_docs)

    def _adapt_rows(self, batch):
        """A batch as documents (lists of terms): rank 0 and 1 are one document."""
        arr = np.asarray(batch)
        if arr.ndim <= 1:
            arr = arr.reshape(1, -1)
        return [[self._term(v) for v in row.reshape(-1)] for row in arr]

    def _finish_adapt(self, counts, docs, n_docs):
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        terms = list(counts)
        order = np.lexsort((np.asarray(terms), np.asarray([counts[t] for t in terms])))[::-1]
        if self.max_tokens:
            order = order[:self.max_tokens - self._token_start_index()]
        self._tokens = [terms[i] for i in order]
        if self.output_mode == "tf_idf":
            doc_counts = np.asarray([docs[t] for t in self._tokens], np.float64)
            idf = np.log(1 + n_docs / (1 + doc_counts))
            idf = np.pad(idf, (self._token_start_index(), 0),
                         constant_values=np.mean(idf) if len(idf) else 0.0)
            if self.pad_to_max_tokens:
                idf = np.pad(idf, (0, self.max_tokens - len(idf)))
            self._idf = idf.astype(np.float32)
        self._frozen_vocab_size = self.vocabulary_size()

    # ---- calling ----

    def _terms_tensor(self, terms):
        if self._string:
            return h.tensor(np.asarray(terms, dtype=object).astype(bytes) if terms
                            else np.zeros([0], bytes))
        return h.tensor(np.asarray(terms, dtype=np.int64).reshape(-1))

    def _keys(self, inputs):
        x = h.tensor(inputs)
        if self._string or self.invert:
            return x if self._string or x.dtype.name == "int64" else dtypes.cast(x, "int64")
        return dtypes.cast(x, "int64") if x.dtype.name != "int64" else x

    def _lookup(self, x):
        """Indices of the terms in x (int64), OOV and mask handled as Keras."""
        oov_start = self._oov_start_index()
        if self.num_oov_indices > 1:
            default = self._oov_buckets(x) + oov_start
        else:
            default = h.tensor(-1 if self.num_oov_indices == 0 else oov_start, "int64")
        if self._tokens:
            eq = math_ops.equal(array_ops.expand_dims(x, -1), self._terms_tensor(self._tokens))
            pos = math_ops.argmax(dtypes.cast(eq, "int32"), axis=-1, output_type="int64")
            idx = array_ops.where(math_ops.reduce_any(eq, axis=-1),
                                  pos + self._token_start_index(), default)
        else:
            idx = array_ops.zeros_like(x, dtype="int64") + default
        if self.mask_token is not None:
            masked = math_ops.equal(x, self._terms_tensor([self.mask_token])[0])
            mask_value = 0 if self.output_mode == "int" else -1  # -1: left out of the counts
            idx = array_ops.where(masked, h.tensor(mask_value, "int64"), idx)
        if self.num_oov_indices == 0 and _kiln.executing_eagerly():
            self._check_no_oov(x, idx)
        return idx

    def _oov_buckets(self, x):
        """Keras' OOV bucket of each input: integers by floormod (or, with oov_method
        "farmhash", their decimal text hashed); strings by FarmHash, SipHash with `salt`."""
        n = self.num_oov_indices
        if not self._string:
            if self.oov_method != "farmhash":
                return math_ops.floormod(x, h.tensor(n, "int64"))
            x = strings.as_string(x)
        if self.salt is not None:
            return strings.to_hash_bucket_strong(x, n, self.salt)
        return strings.to_hash_bucket_fast(x, n)

    def _check_no_oov(self, x, idx):
        bad = np.asarray(x.numpy())[np.asarray(idx.numpy()) == -1]
        if self.mask_token is not None:
            bad = bad[bad != (self.mask_token.encode() if self._string else self.mask_token)]
        if bad.size:
            raise errors.InvalidArgumentError(
                "When `num_oov_indices=0` all inputs should be in vocabulary, found OOV values "
                f"{bad.tolist()}, consider setting `num_oov_indices=1`.")

    def _invert(self, x):
        vocab = self.get_vocabulary()
        n = len(vocab)
        valid = math_ops.logical_and(x >= 0, x < n)
        clipped = math_ops.minimum(math_ops.maximum(x, h.tensor(0, x.dtype)),
                                   h.tensor(n - 1, x.dtype))
        terms = array_ops.gather(self._terms_tensor(vocab), clipped)
        return array_ops.where(valid, terms, self._terms_tensor([self.oov_token])[0])

    def _depth(self):
        return self.max_tokens if self.pad_to_max_tokens else self.vocabulary_size()

    def _encode(self, idx):
        """int64 indices -> one_hot / multi_hot / count (int64) or tf_idf (float32)."""
        if len(idx.shape) > 2 or (self.output_mode == "one_hot" and len(idx.shape) > 1
                                  and idx.shape[-1] != 1):
            raise ValueError("When output_mode is not `'int'`, maximum supported output rank "
                             f"is 2. Received output_mode {self.output_mode} and input shape "
                             f"{tuple(idx.shape)}, which would result in output rank "
                             f"{len(idx.shape) + (self.output_mode == 'one_hot')}.")
        depth = self._depth()
        if self.output_mode == "one_hot":
            if len(idx.shape) > 1:
                idx = array_ops.squeeze(idx, [-1])
            return array_ops.one_hot(idx, depth, dtype="int64")
        return self._from_counts(
            math_ops.reduce_sum(array_ops.one_hot(idx, depth, dtype="int64"), axis=-2))

    def _from_counts(self, counts):
        """Per-example counts (int64) as multi_hot / count / tf_idf."""
        if self.output_mode == "multi_hot":
            return math_ops.minimum(counts, h.tensor(1, "int64"))
        if self.output_mode == "count":
            return counts
        if self._idf is None:
            raise ValueError("When `output_mode` is `'tf_idf'`, `idf_weights` must be provided.")
        return dtypes.cast(counts, "float32") * h.tensor(self._idf[:self._depth()], "float32")

    def call(self, inputs):
        if isinstance(inputs, RaggedTensor):
            return self._call_ragged(inputs)
        x = self._keys(inputs)
        scalar = len(x.shape) == 0
        if scalar:
            x = array_ops.expand_dims(x, -1)
        if self.invert:
            out = self._invert(x)
        else:
            out = self._lookup(x)
            if self.output_mode != "int":
                out = self._encode(out)
                return to_sparse(out) if self.sparse else out
        return array_ops.squeeze(out, [-1]) if scalar else out

    def _call_ragged(self, rt):
        """Ragged inputs: int outputs keep the rows; the other modes count over each
        row (2-D inputs, one row per example)."""
        if self.output_mode == "int":
            return rt.with_flat_values(self.call(rt.flat_values))
        if isinstance(rt.values, RaggedTensor) or self.output_mode == "one_hot":
            raise ValueError(f"output_mode {self.output_mode!r} takes ragged inputs of rank 2 "
                             "(one row of terms per example)")
        idx = self._lookup(self._keys(rt.values))
        onehot = array_ops.one_hot(idx, self._depth(), dtype="int64")
        counts = math_ops.unsorted_segment_sum(onehot, rt.value_rowids(), rt.nrows())
        out = self._from_counts(counts)
        return to_sparse(out) if self.sparse else out

    def _output_dtype(self, inputs):
        if self.output_mode == "tf_idf":
            return _kiln.as_dtype("float32")
        if self.invert:
            return _kiln.as_dtype("string" if self._string else "int64")
        return _kiln.as_dtype("int64")

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        if self.output_mode == "int":
            return TensorShape(dims)
        depth = self._depth()
        if self.output_mode == "one_hot":
            return TensorShape((dims[:-1] if dims and dims[-1] == 1 and len(dims) > 1
                                else dims) + [depth])
        return TensorShape(dims[:-1] + [depth])

    def get_config(self):
        return {**super().get_config(), "invert": self.invert, "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "oov_token": self.oov_token,
                "mask_token": self.mask_token, "output_mode": self.output_mode,
                "sparse": self.sparse, "pad_to_max_tokens": self.pad_to_max_tokens,
                "idf_weights": _listify(self.input_idf_weights),
                "vocabulary": _listify(self.input_vocabulary),
                "vocabulary_size": self._frozen_vocab_size, "oov_method": self.oov_method,
                "salt": self.salt}


class StringLookup(IndexLookup):
    """Strings to indices (or, with ``invert``, back): Keras 3's StringLookup
    (mask_token None, oov_token "[UNK]", one OOV index by default; several OOV
    indices take the FarmHash bucket of the string, SipHash with ``salt``)."""

    _string = True

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 pad_to_max_tokens=False, sparse=False, encoding="utf-8", name=None,
                 salt=None, **kwargs):
        if encoding.lower().replace("-", "") != "utf8":
            raise NotImplementedError("StringLookup: only the utf-8 encoding is supported")
        kwargs.pop("vocabulary_dtype", None)
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, "string",
                         vocabulary=vocabulary, idf_weights=idf_weights, invert=invert,
                         output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, name=name, salt=salt, **kwargs)
        self.encoding = encoding

    def get_config(self):
        return {**super().get_config(), "encoding": self.encoding}


class IntegerLookup(IndexLookup):
    """Integers to indices (or, with ``invert``, back): Keras 3's IntegerLookup
    (mask_token None, oov_token -1, one OOV index by default; several OOV
    indices take ``input % num_oov_indices``, or with ``oov_method="farmhash"``
    the FarmHash (SipHash with ``salt``) bucket of the decimal text)."""

    _string = False

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False,
                 oov_method="floormod", salt=None, name=None, **kwargs):
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError("If `max_tokens` is set for `IntegerLookup`, it must be greater "
                             f"than 1. Received: max_tokens={max_tokens}")
        if num_oov_indices < 0:
            raise ValueError("The value of `num_oov_indices` argument for `IntegerLookup` must "
                             f">= 0. Received: num_oov_indices={num_oov_indices}")
        if vocabulary_dtype != "int64":
            raise ValueError("Only `vocabulary_dtype='int64'` is supported at this time. "
                             f"Received: vocabulary_dtype={vocabulary_dtype}")
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary_dtype,
                         vocabulary=vocabulary, idf_weights=idf_weights, invert=invert,
                         output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, oov_method=oov_method,
                         salt=salt, name=name, **kwargs)

    def get_config(self):
        return {**super().get_config(), "vocabulary_dtype": self.vocabulary_dtype}

__all__ = ["IndexLookup", "StringLookup", "IntegerLookup", "numpy_batches", "take"]
