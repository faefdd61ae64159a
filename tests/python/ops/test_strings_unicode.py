"""tf.strings' Unicode functions against TensorFlow 2.21.

Every expected value below was printed by TensorFlow 2.21 (the .venv-peers install) for the
same call, e.g. ``tf.strings.unicode_decode_with_offsets(INPUTS, "UTF-8")`` or
``tf.raw_ops.UnicodeEncode(...)``, and copied here. Each case runs eagerly and inside a
kiln.function.
"""
import pytest

import kiln as tf
from ops_harness import as_list, eager_and_traced
from kiln import _kiln

INPUTS = [b"h\xc3\xa9", b"", b"a\xffb", b"\xed\xa0\x80x", b"\xc0\xafz", b"\xf4\x90\x80\x80",
          b"\xe2\x82", b"a\x01\x7f\xc2\x80"]
F = 65533


both = eager_and_traced


def check(fn, want, *args):
    for got in both(fn, *args):
        if isinstance(want, tuple):
            assert tuple(as_list(g) for g in got) == want
        else:
            assert as_list(got) == want


# (errors, replacement_char, replace_control_characters) -> (code points, offsets) for INPUTS
DECODE_UTF8 = {
    ("replace", F, False): (
        [[104, 233], [], [97, F, 98], [F, F, F, 120], [F, F, 122], [F, F, F, F], [F],
         [97, 1, 127, 128]],
        [[0, 1], [], [0, 1, 2], [0, 1, 2, 3], [0, 1, 2], [0, 1, 2, 3], [0], [0, 1, 2, 3]]),
    ("ignore", F, False): (
        [[104, 233], [], [97, 98], [120], [122], [], [], [97, 1, 127, 128]],
        [[0, 1], [], [0, 2], [3], [2], [], [], [0, 1, 2, 3]]),
    ("replace", F, True): (
        [[104, 233], [], [97, F, 98], [F, F, F, 120], [F, F, 122], [F, F, F, F], [F],
         [97, F, 127, 128]],
        [[0, 1], [], [0, 1, 2], [0, 1, 2, 3], [0, 1, 2], [0, 1, 2, 3], [0], [0, 1, 2, 3]]),
}


@pytest.mark.parametrize("key", sorted(DECODE_UTF8))
def test_decode_utf8_error_modes(key):
    errors, rc, ctl = key
    chars, offsets = DECODE_UTF8[key]
    check(lambda x: tf.strings.unicode_decode_with_offsets(x, "UTF-8", errors, rc, ctl),
          (chars, offsets), tf.constant(INPUTS))
    check(lambda x: tf.strings.unicode_decode(x, "UTF-8", errors, rc, ctl), chars,
          tf.constant(INPUTS))


def test_decode_replacement_char_and_controls():
    x = tf.constant([b"a\x01\x00\x1f\x7f\xc2\x9f\xc2\xa0", b"\xff"])
    check(lambda t: tf.strings.unicode_decode_with_offsets(
        t, "UTF-8", replacement_char=63, replace_control_characters=True),
        ([[97, 63, 63, 63, 127, 159, 160], [63]], [[0, 1, 2, 3, 4, 5, 7], [0]]), x)
    # errors="ignore" drops control characters
    check(lambda t: tf.strings.unicode_decode_with_offsets(
        t, "UTF-8", "ignore", replace_control_characters=True), ([[97, 98]], [[0, 2]]),
        tf.constant([b"a\x01b"]))
    # strict mode still replaces control characters
    check(lambda t: tf.strings.unicode_decode(t, "UTF-8", "strict",
                                              replace_control_characters=True),
          [[97, F]], tf.constant([b"a\x01"]))


def test_decode_utf16_and_utf32():
    u16 = tf.constant([b"\x00a\xd8\x3d\xde\x00", b"\x00", b"\xdc\x00\x00b", b"\xd8\x00\x00b",
                       b"\x00a\xd8\x00"])
    check(lambda t: tf.strings.unicode_decode_with_offsets(t, "UTF-16-BE"),
          ([[97, 128512], [F], [F, 98], [F, 98], [97, F]],
           [[0, 2], [0], [0, 2], [0, 2], [0, 2]]), u16)
    # a high surrogate and a cut-off last byte are one ill-formed sequence
    check(lambda t: tf.strings.unicode_decode_with_offsets(t, "UTF-16-BE"),
          ([[97, F], [F]], [[0, 2], [0]]), tf.constant([b"\x00a\xd8\x00\x41", b"\xd8\xff\x1f"]))
    check(lambda t: tf.strings.unicode_decode(t, "UTF-16-BE", errors="ignore"),
          [[97, 128512], [], [98], [98], [97]], u16)
    u32 = tf.constant([b"\x00\x00\x00a\x00\x01\xf6\x00", b"\x00\x11\x00\x00",
                       b"\x00\x00\xd8\x00", b"\x00\x00\x00a\x00", b"\xff\xff\xff\xff"])
    check(lambda t: tf.strings.unicode_decode_with_offsets(t, "UTF-32-BE"),
          ([[97, 128512], [F], [F], [97, F], [F]], [[0, 4], [0], [0], [0, 4], [0]]), u32)


def test_decode_ranks():
    x = tf.constant([["hé", "a"], ["b", "c"]])
    check(lambda t: tf.strings.unicode_decode_with_offsets(t, "UTF-8"),
          ([[[104, 233], [97]], [[98], [99]]], [[[0, 1], [0]], [[0], [0]]]), x)
    check(lambda t: tf.strings.unicode_decode(t, "UTF-8"), [104, 233], tf.constant("hé"))
    rt = tf.ragged.constant([["hé"], [], ["a", "b"]])
    assert tf.strings.unicode_decode(rt, "UTF-8").to_list() == [[[104, 233]], [], [[97], [98]]]
    out = tf.strings.unicode_decode(tf.constant(["ab"]), "UTF-8")
    assert out.row_splits.dtype == tf.int64 and out.values.dtype == tf.int32


def test_decode_traced_with_unknown_shape():
    f = tf.function(lambda t: tf.strings.unicode_decode(t, "UTF-8"),
                    input_signature=[tf.TensorSpec([None], tf.string)])
    assert f(tf.constant(["hé", "", "x"])).to_list() == [[104, 233], [], [120]]


# Encodings read through ICU's converters, as TensorFlow reads them. Values from
# tf.strings.unicode_decode_with_offsets(strings, encoding, errors=...) in TF 2.21.
OTHER_ENCODINGS = [
    ("ISO-8859-1", [b"caf\xe9", b"\x00\xff"], "replace",
     [[99, 97, 102, 233], [0, 255]], [[0, 1, 2, 3], [0, 1]]),
    ("UTF-16-LE", [b"a\x00\x3d\xd8\x00\xde", b"\x00\xd8x"], "replace",
     [[97, 128512], [65533]], [[0, 2], [0]]),
    ("UTF-16-LE", [b"a\x00\x3d\xd8\x00\xde", b"\x00\xd8x"], "ignore",
     [[97, 128512], []], [[0, 2], []]),
    ("windows-1252", [b"\x80\x81z"], "strict", [[8364, 129, 122]], [[0, 1, 2]]),
    ("Shift_JIS", [b"\x82\xa0\x82", b"\x83A"], "replace", [[12354, 65533], [12450]],
     [[0, 2], [0]]),
    ("Shift_JIS", [b"\x82\xa0\x82", b"\x83A"], "ignore", [[12354], [12450]], [[0], [0]]),
    ("UTF-16", [b"\xff\xfea\x00", b"\xfe\xff\x00b"], "strict", [[97], [98]], [[0], [0]]),
]


@pytest.mark.parametrize("encoding,strings,errors,chars,offsets", OTHER_ENCODINGS)
def test_decode_other_encodings(encoding, strings, errors, chars, offsets):
    for got in both(lambda: tf.strings.unicode_decode_with_offsets(strings, encoding,
                                                                  errors=errors)):
        assert [as_list(g) for g in got] == [chars, offsets]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid formatting"):
        tf.strings.unicode_decode([b"\x82\xa0\x82"], "Shift_JIS", errors="strict")
    got = tf.strings.unicode_transcode([b"caf\xe9"], "ISO-8859-1", "UTF-8")
    assert got.numpy().tolist() == [b"caf\xc3\xa9"]


def test_decode_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid formatting on input string"):
        tf.strings.unicode_decode([b"ok", b"a\xff"], "UTF-8", errors="strict")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid formatting on input string"):
        tf.function(lambda: tf.strings.unicode_decode([b"\x00"], "UTF-16-BE", "strict"))()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="replacement_char out of unicode codepoint range"):
        tf.strings.unicode_decode(["a"], "UTF-8", replacement_char=0x110000)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Could not create converter for input encoding: FOO"):
        tf.strings.unicode_decode(["a"], "FOO")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Value for attr 'errors' of \"x\" is not in the list of allowed"):
        tf.strings.unicode_decode(["a"], "UTF-8", errors="x")


CODES = [104, 233, -1, 0xD800, 0x110000, 128512, 0]
SPLITS = [0, 3, 7]
# tf.raw_ops.UnicodeEncode(CODES, SPLITS, output_encoding, errors)
ENCODE = {
    ("UTF-8", "replace"): [b"h\xc3\xa9\xef\xbf\xbd",
                           b"\xef\xbf\xbd\xef\xbf\xbd\xf0\x9f\x98\x80\x00"],
    ("UTF-16-BE", "replace"): [b"\x00h\x00\xe9\xff\xfd", b"\xff\xfd\xff\xfd\xd8=\xde\x00\x00\x00"],
    ("UTF-32-BE", "replace"): [b"\x00\x00\x00h\x00\x00\x00\xe9\x00\x00\xff\xfd",
                               b"\x00\x00\xff\xfd\x00\x00\xff\xfd\x00\x01\xf6\x00\x00\x00\x00\x00"],
    ("UTF-8", "ignore"): [b"h\xc3\xa9", b"\xf0\x9f\x98\x80\x00"],
    ("UTF-16-BE", "ignore"): [b"\x00h\x00\xe9", b"\xd8=\xde\x00\x00\x00"],
    ("UTF-32-BE", "ignore"): [b"\x00\x00\x00h\x00\x00\x00\xe9",
                              b"\x00\x01\xf6\x00\x00\x00\x00\x00"],
}


@pytest.mark.parametrize("key", sorted(ENCODE))
def test_encode_ragged(key):
    enc, errors = key
    rt = tf.RaggedTensor.from_row_splits(tf.constant(CODES), tf.constant(SPLITS, tf.int64))
    check(lambda v, s: tf.strings.unicode_encode(
        tf.RaggedTensor.from_row_splits(v, s), enc, errors), ENCODE[key],
        rt.values, rt.row_splits)


def test_encode_dense_ranks_and_replacement_char():
    check(lambda t: tf.strings.unicode_encode(t, "UTF-8"), b"h\xc3\xa9", tf.constant([104, 233]))
    check(lambda t: tf.strings.unicode_encode(t, "UTF-8"), [b"h\xc3\xa9", b"ab"],
          tf.constant([[104, 233], [97, 98]]))
    check(lambda t: tf.strings.unicode_encode(t, "UTF-8"), [[b"h\xc3\xa9"], [b"ab"]],
          tf.constant([[[104, 233]], [[97, 98]]]))
    check(lambda t: tf.strings.unicode_encode(t, "UTF-8"), [b"", b""],
          tf.zeros([2, 0], tf.int32))
    check(lambda t: tf.strings.unicode_encode(t, "UTF-8"), b"", tf.zeros([0], tf.int32))
    rt3 = tf.ragged.constant([[[104, 233], []], [[97]]])
    assert tf.strings.unicode_encode(rt3, "UTF-8").to_list() == [[b"h\xc3\xa9", b""], [b"a"]]
    rt = tf.ragged.constant([CODES[:3], CODES[3:]])
    assert as_list(tf.strings.unicode_encode(rt, "UTF-8", replacement_char=63)) == \
        [b"h\xc3\xa9?", b"??\xf0\x9f\x98\x80\x00"]


def test_encode_round_trip():
    words = tf.constant(["héllo", "", "語言處理", "😀!"])
    for enc in ["UTF-8", "UTF-16-BE", "UTF-32-BE"]:
        def f(t, enc=enc):
            coded = tf.strings.unicode_transcode(t, "UTF-8", enc)
            return tf.strings.unicode_encode(tf.strings.unicode_decode(coded, enc), "UTF-8")
        check(f, [w.encode() for w in ["héllo", "", "語言處理", "😀!"]], words)


def test_encode_errors():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Code point is out of range for Unicode, or is a surrogate."):
        tf.strings.unicode_encode([97, 0xD800], "UTF-8", errors="strict")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="replacement_char out of unicode codepoint range"):
        tf.strings.unicode_encode([97], "UTF-8", replacement_char=-1)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Value for attr 'output_encoding' of \"UTF-7\""):
        tf.strings.unicode_encode([97], "UTF-7")
    with pytest.raises(ValueError, match="input_tensor's rank must be at least 1."):
        tf.strings.unicode_encode(104, "UTF-8")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="First value in input_splits must be zero."):
        _kiln.execute("UnicodeEncode", tf.constant([97, 98]), tf.constant([1, 2], tf.int64),
                      output_encoding="UTF-8")


def test_transcode():
    x = tf.constant([b"h\xc3\xa9", b"", b"a\xffb", b"\xed\xa0\x80x", b"a\x01"])
    check(lambda t: tf.strings.unicode_transcode(t, "UTF-8", "UTF-16-BE"),
          [b"\x00h\x00\xe9", b"", b"\x00a\xff\xfd\x00b", b"\xff\xfd\xff\xfd\xff\xfd\x00x",
           b"\x00a\x00\x01"], x)
    check(lambda t: tf.strings.unicode_transcode(t, "UTF-8", "UTF-16-BE", errors="ignore"),
          [b"\x00h\x00\xe9", b"", b"\x00a\x00b", b"\x00x", b"\x00a\x00\x01"], x)
    check(lambda t: tf.strings.unicode_transcode(t, "UTF-8", "UTF-8", replacement_char=63,
                                                 replace_control_characters=True),
          [b"h\xc3\xa9", b"", b"a?b", b"???x", b"a?"], x)
    check(lambda t: tf.strings.unicode_transcode(t, "UTF-8", "UTF-32-BE"),
          [[b"\x00\x00\x00a\x00\x00\x00b"], [b"\x00\x00\x00c"]], tf.constant([["ab"], ["c"]]))
    check(lambda t: tf.strings.unicode_transcode(t, "UTF-16-BE", "UTF-8"), [b"a\xef\xbf\xbd"],
          tf.constant([b"\x00a\xd8\x00"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid formatting on input string"):
        tf.strings.unicode_transcode(x, "UTF-8", "UTF-8", errors="strict")


def test_script():
    # Latin, Cyrillic, Han, Arabic, Common, Inherited, invalid, invalid, Hiragana, Katakana,
    # Common (digit), a surrogate (Unknown, 103)
    codes = [65, 0x416, 0x4E2D, 0x627, 32, 0x300, -1, 0x110000, 0x3042, 0x30A2, 48, 0xD800]
    check(tf.strings.unicode_script, [25, 8, 17, 2, 0, 1, -1, -1, 20, 22, 0, 103],
          tf.constant(codes))
    check(tf.strings.unicode_script, [[25], [0]], tf.constant([[65], [32]]))
    assert tf.strings.unicode_script(tf.ragged.constant([[65], []])).to_list() == [[25], []]


def test_split_and_split_with_offsets():
    check(lambda t: tf.strings.unicode_split(t, "UTF-8"),
          [[b"h", b"\xc3\xa9"], [b"a", b"\xef\xbf\xbd"]], tf.constant(["hé".encode(), b"a\xff"]))
    check(lambda t: tf.strings.unicode_split(t, "UTF-16-BE"),
          [[b"\x00h", b"\x00\xe9", b"\xff\xfd"]], tf.constant([b"\x00h\x00\xe9\xd8\x00"]))
    check(lambda t: tf.strings.unicode_split(t, "UTF-16-BE", errors="ignore"),
          [[b"\x00h", b"\x00\xe9"]], tf.constant([b"\x00h\x00\xe9\xd8\x00"]))
    check(lambda t: tf.strings.unicode_split(t, "UTF-8", replacement_char=63), [[b"a", b"?"]],
          tf.constant([b"a\xff"]))
    check(lambda t: tf.strings.unicode_split_with_offsets(t, "UTF-8"),
          ([[b"h", b"\xc3\xa9"], [b"a"]], [[0, 1], [0]]), tf.constant(["hé", "a"]))
    check(lambda t: tf.strings.unicode_split_with_offsets(t, "UTF-8"),
          ([b"h", b"\xc3\xa9"], [0, 1]), tf.constant("hé"))
    check(lambda t: tf.strings.unicode_split_with_offsets(t, "UTF-8"),
          ([[[b"h", b"\xc3\xa9"]], [[b"a"]]], [[[0, 1]], [[0]]]), tf.constant([["hé"], ["a"]]))
