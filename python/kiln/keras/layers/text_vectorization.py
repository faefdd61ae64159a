"""TextVectorization (Keras 3's arguments, defaults, vocabulary layout and errors): strings
standardized, split into tokens and looked up in a StringLookup with mask_token "" (index 0 in
int mode is padding). Not yet: ngrams, ragged outputs, sparse outputs."""
import numpy as np

import kiln.strings as string_ops
from kiln import _kiln
from kiln.keras.layers.base import Layer
from kiln.keras.layers.index_lookup import StringLookup, numpy_batches, take
from kiln.ops import _helpers as h
from kiln.ops import array_ops
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
    if ngrams is not None or ragged:
        raise NotImplementedError("TextVectorization: ngrams and ragged outputs are not "
                                  "supported yet")


class TextVectorization(Layer):
    """Strings to token indices ("int": [batch, tokens], 0-padded, to
    ``output_sequence_length`` when given) or to one_hot / multi_hot / count /
    tf_idf vectors over the vocabulary. The vocabulary is given or learned by
    ``adapt`` (""=padding, "[UNK]"=out of vocabulary come first)."""

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
        self._output_mode, self._output_sequence_length = output_mode, output_sequence_length
        self._ragged, self._encoding = False, encoding
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
        tokens = np.asarray(self._tokens(h.tensor(np.asarray(batch))).numpy())
        if tokens.ndim <= 1:
            tokens = tokens.reshape(1, -1)
        return [[t.decode("utf-8") for t in row.reshape(-1) if t != b""] for row in tokens]

    # ---- calling ----

    def _tokens(self, x):
        """Standardized and split strings: [batch, tokens] padded with "" (the mask)."""
        if self._standardize in ("lower", "lower_and_strip_punctuation"):
            x = string_ops.lower(x)
        if self._standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            x = string_ops.regex_replace(x, _PUNCTUATION, "")
        if callable(self._standardize):
            x = self._standardize(x)
        if self._split is None:
            return x
        if len(x.shape) > 1:
            if x.shape[-1] != 1:
                raise ValueError("When using `TextVectorization` to tokenize strings, the input "
                                 "rank must be 1 or the last shape dimension must be 1. "
                                 f"Received: inputs.shape={tuple(x.shape)} with "
                                 f"rank={len(x.shape)}")
            x = array_ops.squeeze(x, [-1])
        if self._split == "whitespace":
            x = string_ops.split(x)
        elif self._split == "character":
            x = string_ops.unicode_split(x, "UTF-8")
        else:
            x = self._split(x)
        return x.to_tensor(default_value="") if hasattr(x, "to_tensor") else x

    def call(self, inputs):
        x = h.tensor(inputs)
        if x.dtype.name != "string":
            raise ValueError("TextVectorization expects string inputs. Received: "
                             f"dtype={x.dtype.name}")
        out = self._lookup_layer.call(self._tokens(x))
        n = self._output_sequence_length
        if self._output_mode != "int" or n is None:
            return out
        zeros = array_ops.zeros(array_ops.stack([array_ops.shape(out)[0], n]), dtype="int64")
        return array_ops.concat([out, zeros], 1)[:, :n]

    def _output_dtype(self, inputs):
        return _kiln.as_dtype("float32" if self._output_mode == "tf_idf" else "int64")

    def compute_output_shape(self, input_shape):
        batch = TensorShape(input_shape)[0] if TensorShape(input_shape).rank else None
        if self._output_mode == "int":
            return TensorShape([batch, self._output_sequence_length])
        return TensorShape([batch, self._lookup_layer._depth()])

    def get_config(self):
        lookup = self._lookup_layer
        return {"name": self.name, "trainable": self.trainable, "dtype": self.dtype,
                "max_tokens": lookup.max_tokens, "standardize": self._standardize,
                "split": self._split, "ngrams": self._ngrams_arg,
                "output_mode": self._output_mode,
                "output_sequence_length": self._output_sequence_length,
                "pad_to_max_tokens": lookup.pad_to_max_tokens, "sparse": lookup.sparse,
                "ragged": self._ragged, "vocabulary": lookup.get_config()["vocabulary"],
                "idf_weights": lookup.get_config()["idf_weights"], "encoding": self._encoding,
                "vocabulary_size": self.vocabulary_size()}


__all__ = ["TextVectorization"]
