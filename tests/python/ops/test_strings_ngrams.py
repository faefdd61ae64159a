"""tf.strings.ngrams, and substr/length with unit="UTF8_CHAR", against the outputs
TensorFlow 2.21 gives for the same calls (hard-coded here), eagerly and inside
kiln.function, with the error classes TensorFlow raises."""
import pytest

import kiln as tf
from ops_harness import as_list, eager_and_traced

ABC = ["a", "b", "c"]
ROWS = [["a", "b", "c"], [], ["d"], ["e", "f"]]


both = eager_and_traced


def ragged(rows):
    return tf.ragged.constant(rows, dtype=tf.string)


# (data, ngram_width, keyword arguments, TensorFlow 2.21's output and shape)
DENSE_CASES = [
    (["A", "B", "C", "D"], 2, {}, [b"A B", b"B C", b"C D"], (3,)),
    (["TF", "and", "keras"], 1, {}, [b"TF", b"and", b"keras"], (3,)),
    (["a", "b", "c", "d"], 3, {}, [b"a b c", b"b c d"], (2,)),
    (ABC, 5, {}, [], (0,)),
    (ABC, 5, {"preserve_short_sequences": True}, [b"a b c"], (1,)),
    (ABC, (1, 2, 3), {}, [b"a", b"b", b"c", b"a b", b"b c", b"a b c"], (6,)),
    (ABC, [3, 1], {}, [b"a b c", b"a", b"b", b"c"], (4,)),
    (ABC, 2, {"separator": "--"}, [b"a--b", b"b--c"], (2,)),
    (ABC, 2, {"separator": ""}, [b"ab", b"bc"], (2,)),
    (ABC, 2, {"separator": b"+"}, [b"a+b", b"b+c"], (2,)),
    (ABC, 2, {"pad_values": ("x", b"y")}, [b"x a", b"a b", b"b c", b"c y"], (4,)),
    (ABC, 2, {"pad_values": ("é", b"\xff")}, [b"\xc3\xa9 a", b"a b", b"b c", b"c \xff"], (4,)),
    (ABC, 3, {"pad_values": "#"}, [b"# # a", b"# a b", b"a b c", b"b c #", b"c # #"], (5,)),
    (ABC, 3, {"pad_values": ("<s>", "</s>")},
     [b"<s> <s> a", b"<s> a b", b"a b c", b"b c </s>", b"c </s> </s>"], (5,)),
    (ABC, 3, {"pad_values": ("L", "R"), "padding_width": 1}, [b"L a b", b"a b c", b"b c R"],
     (3,)),
    (["a", "b"], 3, {"pad_values": ("L", "R"), "padding_width": 5},  # at most width - 1
     [b"L L a", b"L a b", b"a b R", b"b R R"], (4,)),
    ([b"a", b"b"], 2, {"pad_values": (b"L", b"R")}, [b"L a", b"a b", b"b R"], (3,)),
    (["a", "b"], 2, {"pad_values": ["L", "R", "X"]}, [b"L a", b"a b", b"b R"], (3,)),
    (["a", "b"], (1, 2), {"pad_values": "P"}, [b"a", b"b", b"P a", b"a b", b"b P"], (5,)),
    (["a", "b"], 3, {"pad_values": ""}, [b"  a", b" a b", b"a b ", b"b  "], (4,)),
    (["a", "b"], (3, 4), {"preserve_short_sequences": True}, [b"a b"], (1,)),
    (["a", "b"], (), {}, [], (0,)),
    ([b"h\xc3\xa9llo", "日本".encode(), "😀".encode()], 2, {"separator": "·"},
     [b"h\xc3\xa9llo\xc2\xb7\xe6\x97\xa5\xe6\x9c\xac",
      b"\xe6\x97\xa5\xe6\x9c\xac\xc2\xb7\xf0\x9f\x98\x80"], (2,)),
    ([["a", "b", "c"], ["d", "e", "f"]], 2, {}, [[b"a b", b"b c"], [b"d e", b"e f"]], (2, 2)),
    ([["a", "b", "c"], ["d", "e", "f"]], (2, 3), {"pad_values": "_"},
     [[b"_ a", b"a b", b"b c", b"c _", b"_ _ a", b"_ a b", b"a b c", b"b c _", b"c _ _"],
      [b"_ d", b"d e", b"e f", b"f _", b"_ _ d", b"_ d e", b"d e f", b"e f _", b"f _ _"]],
     (2, 9)),
    ([[["a", "b", "c"], ["d", "e", "f"]], [["g", "h", "i"], ["j", "k", "l"]]], 2, {},
     [[[b"a b", b"b c"], [b"d e", b"e f"]], [[b"g h", b"h i"], [b"j k", b"k l"]]], (2, 2, 2)),
    ([["a", "b"], ["c", "d"]], 3, {}, [[], []], (2, 0)),
    ([["a", "b"], ["c", "d"]], 3, {"preserve_short_sequences": True}, [[b"a b"], [b"c d"]],
     (2, 1)),
]


@pytest.mark.parametrize("data,width,kwargs,want,shape", DENSE_CASES)
def test_ngrams_of_dense_tensors(data, width, kwargs, want, shape):
    for got in both(lambda t: tf.strings.ngrams(t, width, **kwargs), tf.constant(data)):
        assert isinstance(got, tf.Tensor) and got.dtype == tf.string
        assert as_list(got) == want
        assert tuple(got.shape) == shape
    assert as_list(tf.strings.ngrams(data, width, **kwargs)) == want  # Python lists too


# Empty inputs: no n-grams (not even padding only). With no rows, TensorFlow's reshape
# to [..., -1] makes the last dimension 1 // (the non-zero leading dimensions).
@pytest.mark.parametrize("shape,kwargs,out_shape", [
    ([0], {"pad_values": "#"}, (0,)), ([2, 0], {}, (2, 0)), ([2, 0], {"pad_values": "#"}, (2, 0)),
    ([0, 3], {}, (0, 1)), ([0, 2, 3], {}, (0, 2, 0)), ([0, 1, 3], {}, (0, 1, 1)),
    ([2, 0, 3], {}, (2, 0, 0))])
def test_ngrams_of_empty_dense_tensors(shape, kwargs, out_shape):
    for got in both(lambda t: tf.strings.ngrams(t, 2, **kwargs), tf.zeros(shape, tf.string)):
        assert tuple(got.shape) == out_shape


def test_ngrams_of_dense_tensors_with_unknown_dimensions():
    f = tf.function(lambda x: tf.strings.ngrams(
        x, (1, 3), separator="_", pad_values=("<", ">"), padding_width=1,
        preserve_short_sequences=True), input_signature=[tf.TensorSpec([None, None], tf.string)])
    got = f(tf.constant([["a", "b", "c"], ["d", "e", "f"]]))
    assert as_list(got) == [[b"a", b"b", b"c", b"<_a_b", b"a_b_c", b"b_c_>"],
                            [b"d", b"e", b"f", b"<_d_e", b"d_e_f", b"e_f_>"]]
    assert tuple(f(tf.zeros([0, 4], tf.string)).shape) == (0, 1)


RAGGED_CASES = [
    (ROWS, 2, {}, [[b"a b", b"b c"], [], [], [b"e f"]]),
    (ROWS, 3, {"pad_values": ("L", "R")},  # an empty row among others: padding only
     [[b"L L a", b"L a b", b"a b c", b"b c R", b"c R R"], [b"L L R", b"L R R"],
      [b"L L d", b"L d R", b"d R R"], [b"L L e", b"L e f", b"e f R", b"f R R"]]),
    (ROWS, 3, {"pad_values": ("L", "R"), "padding_width": 1},
     [[b"L a b", b"a b c", b"b c R"], [], [b"L d R"], [b"L e f", b"e f R"]]),
    (ROWS, 3, {"preserve_short_sequences": True}, [[b"a b c"], [], [b"d"], [b"e f"]]),
    ([["a", "b", "c", "d", "e"], [], ["d"], ["e", "f"]], (4, 5),
     {"pad_values": ("L", "R"), "padding_width": 1, "preserve_short_sequences": True},
     [[b"L a b c", b"a b c d", b"b c d e", b"c d e R", b"L a b c d", b"a b c d e",
       b"b c d e R"], [], [b"L d R"], [b"L e f R"]]),
    ([["a"], ["b", "c", "d", "e", "f", "g"]], 9,
     {"pad_values": ("<", ">"), "padding_width": 2, "preserve_short_sequences": True},
     [[b"< < a > >"], [b"< < b c d e f g >", b"< b c d e f g > >"]]),
    (ROWS, (3, 1, 2), {},
     [[b"a b c", b"a", b"b", b"c", b"a b", b"b c"], [], [b"d"], [b"e", b"f", b"e f"]]),
    ([["a"]], 3, {"pad_values": "#", "preserve_short_sequences": True},
     [[b"# # a", b"# a #", b"a # #"]]),
    ([["a", "b"], [], ["c"]], (), {"preserve_short_sequences": True}, [[b"a b"], [], [b"c"]]),
    ([[], []], 2, {}, [[], []]),
    ([[], []], 2, {"pad_values": "#"}, [[], []]),  # no strings at all: no padding either
    ([["a"], []], 3, {"pad_values": ("L", "R")},
     [[b"L L a", b"L a R", b"a R R"], [b"L L R", b"L R R"]]),
    ([[["a", "b", "c"], ["d"]], [], [["e", "f"]]], 2, {}, [[[b"a b", b"b c"], []], [],
                                                          [[b"e f"]]]),
]


@pytest.mark.parametrize("rows,width,kwargs,want", RAGGED_CASES)
def test_ngrams_of_ragged_tensors(rows, width, kwargs, want):
    rt = ragged(rows)
    for got in both(lambda t: tf.strings.ngrams(t, width, **kwargs), rt):
        assert isinstance(got, tf.RaggedTensor)
        assert got.to_list() == want
        assert got.row_splits.dtype == tf.int64


def test_ngrams_keeps_int32_row_splits():
    rt = tf.RaggedTensor.from_row_splits(tf.constant(["a", "b", "c"]),
                                         tf.constant([0, 2, 3], tf.int32))
    for got in both(lambda t: tf.strings.ngrams(t, 2), rt):
        assert got.to_list() == [[b"a b"], []]
        assert got.row_splits.dtype == tf.int32
    empty = tf.RaggedTensor.from_row_splits(tf.constant(["a"])[:0],
                                            tf.constant([0, 0], tf.int32))
    assert tf.strings.ngrams(empty, 2, pad_values="#").to_list() == [[]]


def test_ngram_widths_may_be_integral_numbers():
    for width in (2.0, tf.constant(2)):
        assert as_list(tf.strings.ngrams(["a", "b"], width)) == [b"a b"]
    assert as_list(tf.strings.ngrams(["a", "b"], True)) == [b"a", b"b"]


def test_ngrams_errors():
    with pytest.raises(ValueError, match="All ngram_widths must be greater than 0. Got 0"):
        tf.strings.ngrams(["a"], 0)
    with pytest.raises(ValueError, match=r"greater than 0. Got \[2, -1\]"):
        tf.strings.ngrams(["a"], [2, -1])
    with pytest.raises(ValueError, match="greater than 0"):
        tf.strings.ngrams(ragged([["a"]]), (2, -1))  # TensorFlow: a TypeError formatting it
    for pad in (3, ("a", 3), ["a", 1], ("a",)):  # ("a",): TensorFlow's IndexError
        with pytest.raises(TypeError, match="pad_values must be a string, tuple of strings"):
            tf.strings.ngrams(["a"], 2, pad_values=pad)
    with pytest.raises(ValueError, match="padding_width must be greater than 0."):
        tf.strings.ngrams(["a"], 2, pad_values="#", padding_width=0)
    with pytest.raises(ValueError, match="pad_values must be provided if padding_width is set."):
        tf.strings.ngrams(["a"], 2, padding_width=1)
    with pytest.raises(ValueError, match="Data must have rank>0"):
        tf.strings.ngrams("a", 2)
    with pytest.raises(TypeError):
        tf.strings.ngrams([1, 2], 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Pad width should be >= 0"):
        tf.strings.ngrams(["a", "b"], (), pad_values="#", preserve_short_sequences=True)
    with pytest.raises(TypeError, match="ngram_width must be integers"):
        tf.strings.ngrams(["a", "b"], 2.5)


def test_ngrams_errors_inside_functions():
    f = tf.function(lambda x: tf.strings.ngrams(x, 2),
                    input_signature=[tf.TensorSpec(None, tf.string)])
    with pytest.raises(ValueError, match="Rank of data must be known."):
        f(tf.constant(["a", "b"]))
    g = tf.function(lambda x, w: tf.strings.ngrams(x, w),
                    input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([], tf.int32)])
    with pytest.raises(TypeError, match="must be Python integers"):
        g(tf.constant(["a", "b"]), tf.constant(2))
    uniform = tf.RaggedTensor.from_row_splits(tf.constant([["a", "b"], ["c", "d"]]), [0, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="1-D values"):
        tf.strings.ngrams(uniform, 2)


# unit="UTF8_CHAR": Substr and StringLength take TensorFlow's `unit` attribute.
UTF8 = [s.encode() for s in ["héllo", "日本語テキスト", "a€b", "😀x😀"]] + \
    [b"\xe6\x97x\xe6\x97\xa5", b"\xff\xc3\xa9\x80z"]  # ill-formed UTF-8 as well


def test_length_in_utf8_chars_as_tensorflow():
    for got in both(lambda t: tf.strings.length(t, unit="UTF8_CHAR"), tf.constant(UTF8 + [b""])):
        assert as_list(got) == [5, 7, 3, 3, 3, 3, 0]
    assert as_list(tf.strings.length(UTF8 + [b""])) == [6, 21, 5, 9, 6, 5, 0]
    got = tf.strings.length(ragged([["héllo", "ü"], [], ["日本語"]]), unit="UTF8_CHAR")
    assert got.to_list() == [[5, 1], [], [3]]


@pytest.mark.parametrize("pos,n,want", [
    (1, 2, [b"\xc3\xa9l", b"\xe6\x9c\xac\xe8\xaa\x9e", b"\xe2\x82\xacb", b"x\xf0\x9f\x98\x80",
            b"x\xe6\x97\xa5", b"\xc3\xa9\x80z"]),
    (-2, 2, [b"lo", b"\xe3\x82\xb9\xe3\x83\x88", b"\xe2\x82\xacb", b"x\xf0\x9f\x98\x80",
             b"x\xe6\x97\xa5", b"\xc3\xa9\x80z"]),
    (-3, 10, [b"llo", b"\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88", b"a\xe2\x82\xacb",
              b"\xf0\x9f\x98\x80x\xf0\x9f\x98\x80", b"\xe6\x97x\xe6\x97\xa5",
              b"\xff\xc3\xa9\x80z"]),
    ([0, 6, 3, -1, 2, 3], [9, 1, 0, 1, 1, 1],
     [b"h\xc3\xa9llo", b"\xe3\x83\x88", b"", b"\xf0\x9f\x98\x80", b"\xe6\x97\xa5", b""]),
    (1, -1, [b""] * 6),
])
def test_substr_in_utf8_chars_as_tensorflow(pos, n, want):
    for got in both(lambda t, p, m: tf.strings.substr(t, p, m, unit="UTF8_CHAR"),
                    tf.constant(UTF8), tf.constant(pos), tf.constant(n)):
        assert as_list(got) == want


def test_substr_in_utf8_chars_broadcasts_and_takes_ragged():
    got = tf.strings.substr("日本語", [0, 1, 2, 3, -1, -3], [1, 2, 5, 1, 1, 1], unit="UTF8_CHAR")
    assert as_list(got) == [b"\xe6\x97\xa5", b"\xe6\x9c\xac\xe8\xaa\x9e", b"\xe8\xaa\x9e", b"",
                            b"\xe8\xaa\x9e", b"\xe6\x97\xa5"]
    got = tf.strings.substr("日本語", tf.constant([-3], tf.int64), tf.constant([2], tf.int64),
                            unit="UTF8_CHAR")
    assert as_list(got) == [b"\xe6\x97\xa5\xe6\x9c\xac"]
    got = tf.strings.substr([["日本", "語テ"], ["a€", "é"]], [[1, 0], [-1, 0]],
                            [[1, 2], [1, 1]], unit="UTF8_CHAR")
    assert as_list(got) == [[b"\xe6\x9c\xac", b"\xe8\xaa\x9e\xe3\x83\x86"],
                            [b"\xe2\x82\xac", b"\xc3\xa9"]]
    for got in both(lambda t: tf.strings.substr(t, -1, 1, unit="UTF8_CHAR"),
                    ragged([["héllo", "ü"], [], ["日本語"]])):
        assert got.to_list() == [[b"o", b"\xc3\xbc"], [], [b"\xe8\xaa\x9e"]]
    assert as_list(tf.strings.substr("héllo", 2, 2)) == b"\xa9l"  # bytes, not characters
    assert as_list(tf.strings.substr("héllo", 5, 1, unit="UTF8_CHAR")) == b""
    assert as_list(tf.strings.substr("héllo", -5, 1, unit="UTF8_CHAR")) == b"h"
    # A negative len is "to the end" in bytes and "" in characters, as TensorFlow; with a
    # negative pos too TensorFlow 2.21's UTF8_CHAR kernel raises "pos -2 out of range" where
    # kiln gives "" (docs/OPS.md, "Strings").
    assert as_list(tf.strings.substr("héllo", -2, -1)) == b"lo"
    assert as_list(tf.strings.substr("héllo", -2, -1, unit="UTF8_CHAR")) == b""


def test_substr_in_utf8_chars_positions_out_of_range():
    cases = [("héllo", 6, "pos 6 out of range"), ("héllo", -6, "pos -6 out of range"),
             ("日本", 3, "pos 3 out of range"),  # 6 bytes but 2 characters
             ([""], 1, "pos 1 out of range")]
    for s, pos, msg in cases:
        with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
            tf.strings.substr(s, pos, 1, unit="UTF8_CHAR")
    f = tf.function(lambda t, p: tf.strings.substr(t, p, [1, 1], unit="UTF8_CHAR"),
                    autograph=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="pos 4 out of range.*index 1"):
        f(tf.constant(["ab", "日本語"]), tf.constant([1, 4]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="unit must be"):
        tf.strings.substr("a", 0, 1, unit="utf8_char")
