"""TextVectorization (Keras 3's arguments, defaults, vocabulary layout and errors): strings
standardized, split into tokens, joined into ngrams (tf.strings.ngrams' order: each width in
turn, " " between tokens) and looked up in a StringLookup with mask_token "" (index 0 in int
mode is padding). ``ragged=True`` keeps int outputs ragged; ``sparse=True`` gives SparseTensors
for the other modes."""
import numpy as np

import kiln.strings as string_ops
from kiln import _kiln
from kiln.keras.layers.base import Layer
from kiln.keras.layers.index_lookup import StringLookup, numpy_batches, take
from kiln.ops import _helpers as h
from kiln.ops import array_ops, math_ops
from kiln.ragged import RaggedTensor, ragged_ops
from kiln.tensor_shape import TensorShape

_STANDARDIZE = (None, "lower_and_strip_punctuation", "lower", "strip_punctuation")
_SPLIT = (None, "whitespace", "character")
_PUNCTUATION = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'


def _check_args(standardize, split, ngrams, output_mode, output_sequence_length, ragged):
    if not (standardize in _STANDARDIZE or callable(standardize)):
        raise ValueError(f"Invalid value for argument `standardize`. Expected one of "
                         f"{_STANDARDIZE} or a callable. Received: standardize={standardize}")
    if not (split in _SPLIT or callable(split)):
        raise ValueError(f"Invalid value for argument `split`. Expected one of {_SPLIT} or a "
                         f"callable. Received: split={split}")
    if not (ngrams is None or isinstance(ngrams, int) or isinstance(ngrams, tuple) and all(
            isinstance(i, int) for i in ngrams)):
        raise ValueError("`ngrams` must be None, an integer, or a tuple of integers. "
                         f"Received: ngrams={ngrams}")
    if output_mode == "int" and not (output_sequence_length is None or isinstance(
            output_sequence_length, int)):
        raise ValueError("`output_sequence_length` must be either None or an integer when "
                         "`output_mode` is 'int'. Received: "
                         f"output_sequence_length={output_sequence_length}")
    if output_mode != "int" and output_sequence_length is not None:
        raise ValueError("`output_sequence_length` must not be set if `output_mode` is not "
                         f"'int'. Received output_sequence_length={output_sequence_length}.")
    if ragged and output_mode != "int":
        raise ValueError("`ragged` must not be true if `output_mode` is `'int'`. Received: "
                         f"ragged={ragged} and output_mode={output_mode}")


def _width_ngrams(rt, n):
    """The width-n ngrams of each row of a ragged_rank-1 string tensor."""
    values, splits = rt.values, rt.row_splits
    starts = splits[:-1]
    counts = math_ops.maximum(splits[1:] - starts - (n - 1), h.tensor(0, splits.dtype))
    pos = ragged_ops.range(starts, starts + counts).flat_values
    parts = [array_ops.gather(values, pos + k) for k in range(n)]
    joined = string_ops.join(parts, separator=" ") if n > 1 else parts[0]
    new_splits = array_ops.concat([h.tensor([0], splits.dtype),
                                   math_ops.cumsum(counts)], 0)
    return RaggedTensor.from_row_splits(joined, new_splits, validate=False)


def ngrams(tokens, widths):
    """tf.strings.ngrams(tokens, widths, separator=" ") over the last axis."""
    if any(n < 1 for n in widths):
        raise ValueError(f"ngram widths must be positive. Received: ngrams={widths}")
    if isinstance(tokens, RaggedTensor):
        if isinstance(tokens.values, RaggedTensor):
            return tokens.with_values(ngrams(tokens.values, widths))
        parts = [_width_ngrams(tokens, n) for n in widths]
        return parts[0] if len(parts) == 1 else ragged_ops.concat(parts, axis=1)
    rank = len(tokens.shape)
    if rank == 1:  # one sequence
        size = array_ops.shape(tokens, out_type="int64")[:1]
        row = RaggedTensor.from_row_splits(
            tokens, array_ops.concat([h.tensor([0], "int64"), size], 0), validate=False)
        return ngrams(row, widths).flat_values
    if rank == 2:
        return ngrams(RaggedTensor.from_tensor(tokens), widths).to_tensor(default_value="")
    raise NotImplementedError(f"TextVectorization: ngrams of rank-{rank} tokens")


class TextVectorization(Layer):
    """Strings to token indices ("int": [batch, tokens], 0-padded, to
    ``output_sequence_length`` when given; a RaggedTensor, trimmed only, with
    ``ragged=True``) or to one_hot / multi_hot / count / tf_idf vectors over
    the vocabulary (SparseTensors with ``sparse=True``). ``ngrams`` (N: widths
    1..N, or a tuple of widths) replaces the tokens by their ngrams. The
    vocabulary is given or learned by ``adapt`` (""=padding, "[UNK]"=out of
    vocabulary come first)."""

    _kiln_static_shapes = True

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int",
                 output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", name=None,
                 **kwargs):
        vocabulary_size = kwargs.pop("vocabulary_size", None)
        kwargs.pop("dtype", None)
        super().__init__(name=name, **kwargs)
        output_mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        _check_args(standardize, split, ngrams, output_mode, output_sequence_length, ragged)
        self._standardize, self._split, self._ngrams_arg = standardize, split, ngrams
        self._ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self._output_mode, self._output_sequence_length = output_mode, output_sequence_length
        self._ragged, self._encoding = bool(ragged), encoding
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens, mask_token="", output_mode=output_mode,
            sparse=sparse, encoding=encoding, vocabulary_size=vocabulary_size,
            name=f"{self.name}_lookup")
        self._autocast = False
        self.built = True

    # ---- the vocabulary (the lookup layer's) ----

    def get_vocabulary(self, include_special_tokens=True):
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup_layer.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights)

    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary from the standardized, split `data`."""
        self._lookup_layer.adapt_documents(
            self._documents(b) for b in take(numpy_batches(data), steps))

    def _documents(self, batch):
        tokens = self._preprocess(h.tensor(np.asarray(batch)))
        if isinstance(tokens, RaggedTensor):
            rows = [_flatten(r) for r in tokens.to_list()]
        else:
            arr = np.asarray(tokens.numpy())
            rows = [r.reshape(-1).tolist() for r in (arr.reshape(1, -1) if arr.ndim <= 1
                                                      else arr)]
        return [[t.decode("utf-8") for t in row if t != b""] for row in rows]

    # ---- calling ----

    def _preprocess(self, x):
        """Standardized, split strings (ragged when split), then their ngrams."""
        if self._standardize in ("lower", "lower_and_strip_punctuation"):
            x = string_ops.lower(x)
        if self._standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            x = string_ops.regex_replace(x, _PUNCTUATION, "")
        if callable(self._standardize):
            x = self._standardize(x)
        if self._split is not None:
            x = self._split_tokens(x)
        return ngrams(x, self._ngrams) if self._ngrams is not None else x

    def _split_tokens(self, x):
        if len(x.shape) > 1:
            if x.shape[-1] != 1:
                raise ValueError("When using `TextVectorization` to tokenize strings, the input "
                                 "rank must be 1 or the last shape dimension must be 1. "
                                 f"Received: inputs.shape={tuple(x.shape)} with "
                                 f"rank={len(x.shape)}")
            x = array_ops.squeeze(x, [-1])
        if self._split == "whitespace":
            return string_ops.split(x)
        if self._split == "character":
            return string_ops.unicode_split(x, "UTF-8")
        return self._split(x)

    def call(self, inputs):
        x = h.tensor(inputs)
        if x.dtype.name != "string":
            raise ValueError("TextVectorization expects string inputs. Received: "
                             f"dtype={x.dtype.name}")
        tokens = self._preprocess(x)
        n = self._output_sequence_length
        if self._output_mode == "int" and self._ragged:
            if isinstance(tokens, RaggedTensor):
                out = tokens.with_flat_values(self._lookup_layer.call(tokens.flat_values))
            else:
                out = self._lookup_layer.call(tokens)
            if n is None:
                return out
            return out[:, :n] if isinstance(out, RaggedTensor) else out[..., :n]
        if isinstance(tokens, RaggedTensor) and self._output_mode == "one_hot":
            return self._ragged_one_hot(tokens)
        if isinstance(tokens, RaggedTensor):
            tokens = tokens.to_tensor(default_value="")  # "" is the mask: 0 or left out
        out = self._lookup_layer.call(tokens)
        if self._output_mode != "int" or n is None:
            return out
        zeros = array_ops.zeros(array_ops.stack([array_ops.shape(out)[0], n]), dtype="int64")
        return array_ops.concat([out, zeros], 1)[:, :n]

    def _ragged_one_hot(self, tokens):
        """One one_hot vector per token (Keras: a ragged [batch, None, depth] tensor)."""
        if self._lookup_layer.sparse:
            raise ValueError("TextVectorization: `sparse=True` with output_mode 'one_hot' "
                             "needs `split=None` (split text gives ragged one_hot rows)")
        return tokens.with_flat_values(self._lookup_layer.call(tokens.flat_values))

    def _output_dtype(self, inputs):
        return _kiln.as_dtype("float32" if self._output_mode == "tf_idf" else "int64")

    def compute_output_shape(self, input_shape):
        batch = TensorShape(input_shape)[0] if TensorShape(input_shape).rank else None
        if self._output_mode == "int":
            return TensorShape([batch, self._output_sequence_length])
        return TensorShape([batch, self._lookup_layer._depth()])

    def get_config(self):
        lookup = self._lookup_layer
        return {"name": self.name, "trainable": self.trainable,
                "dtype": Layer.get_config(self)["dtype"], "max_tokens": lookup.max_tokens, "standardize": self._standardize,
                "split": self._split, "ngrams": self._ngrams_arg,
                "output_mode": self._output_mode,
                "output_sequence_length": self._output_sequence_length,
                "pad_to_max_tokens": lookup.pad_to_max_tokens, "sparse": lookup.sparse,
                "ragged": self._ragged, "vocabulary": lookup.get_config()["vocabulary"],
                "idf_weights": lookup.get_config()["idf_weights"], "encoding": self._encoding,
                "vocabulary_size": self.vocabulary_size()}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("ngrams"), list):
            config["ngrams"] = tuple(config["ngrams"])
        return cls(**config)


def _flatten(row):
    if isinstance(row, list):
        return [t for e in row for t in _flatten(e)]
    return [row]


__all__ = ["TextVectorization"]
