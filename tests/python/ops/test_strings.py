"""tf.strings against TensorFlow's documented outputs and Python's own string methods,
eagerly and inside kiln.function, with RaggedTensors where TensorFlow takes or returns
them, and the error paths."""
import re

import numpy as np
import pytest

import kiln as tf

WORDS = ["hello world", "  Lead and trail  ", "", "a,b,,c", "héllo wörld", "1<>2<>3",
         "tab\tnew\nline", "UPPER lower 123"]


def both(fn, *args):
    """fn's result eagerly and inside a kiln.function (traced with the same arguments)."""
    return fn(*args), tf.function(fn, autograph=False)(*args)


def as_list(t):
    """A tensor's or RaggedTensor's values as (nested) Python lists of bytes/numbers."""
    if isinstance(t, tf.RaggedTensor):
        return t.to_list()
    return t.numpy().tolist()


def b(s):
    return s.encode() if isinstance(s, str) else s


def test_length_in_bytes_and_utf8_chars():
    x = tf.constant(WORDS + ["😀", "\u20ac"])
    for got in both(lambda t: tf.strings.length(t), x):
        assert got.dtype == tf.int32
        assert as_list(got) == [len(w.encode()) for w in WORDS] + [4, 3]
    for got in both(lambda t: tf.strings.length(t, unit="UTF8_CHAR"), x):
        assert as_list(got) == [len(w) for w in WORDS] + [1, 1]
    # Invalid UTF-8: every byte that is not a continuation byte counts.
    assert tf.strings.length(tf.constant([b"\xff\xfe", b"\x80"]), "UTF8_CHAR").numpy().tolist() \
        == [2, 0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="unit must be"):
        tf.strings.length("a", unit="CHAR")


def test_join_as_documented():
    assert tf.strings.join(["abc", "def"]).numpy() == b"abcdef"
    got = tf.strings.join([["abc", "123"], ["def", "456"], ["ghi", "789"]], separator=".")
    assert as_list(got) == [b"abc.def.ghi", b"123.456.789"]
    for got in both(lambda a, s: tf.strings.join([a, s, a], separator="-"),
                    tf.constant(["x", "y"]), tf.constant("!")):
        assert as_list(got) == [b"x-!-x", b"y-!-y"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input shapes do not match"):
        tf.strings.join([["a", "b"], ["a", "b", "c"]])


def test_reduce_join_as_documented():
    x = tf.constant([["abc", "123"], ["def", "456"]])
    for got in both(lambda t: tf.strings.reduce_join(t), x):
        assert got.numpy() == b"abc123def456"
    assert as_list(tf.strings.reduce_join(x, axis=-1)) == [b"abc123", b"def456"]
    assert as_list(tf.strings.reduce_join(x, axis=-1, separator="-")) == [b"abc-123", b"def-456"]
    assert as_list(tf.strings.reduce_join(x, axis=0, keepdims=True)) == [[b"abcdef", b"123456"]]
    a = tf.constant([["a", "b"], ["c", "d"]])
    assert tf.strings.reduce_join(a, [0, 1]).numpy() == b"acbd"  # first axis fastest
    assert tf.strings.reduce_join(a, [1, 0]).numpy() == b"abcd"
    assert as_list(tf.strings.reduce_join(a, [])) == [[b"a", b"b"], [b"c", b"d"]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid reduction dimension 2"):
        tf.strings.reduce_join(a, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Duplicate reduction dimension"):
        tf.strings.reduce_join(a, [0, -2])
    # Traced with an unknown rank: axis=None still joins everything.
    f = tf.function(lambda t: tf.strings.reduce_join(t, separator=" "),
                    input_signature=[tf.TensorSpec(None, tf.string)])
    assert f(a).numpy() == b"a b c d"


def test_reduce_join_of_ragged_rows_and_columns():
    rt = tf.ragged.constant([["a", "b"], [], ["c", "d", "e"]])
    assert as_list(tf.strings.reduce_join(rt, axis=-1)) == [b"ab", b"", b"cde"]
    assert as_list(tf.strings.reduce_join(rt, axis=1, separator=",")) == [b"a,b", b"", b"c,d,e"]
    assert as_list(tf.strings.reduce_join(rt, axis=0)) == [b"ac", b"bd", b"e"]
    assert tf.strings.reduce_join(rt).numpy() == b"abcde"
    # The text-generation guide's round trip: characters back into strings.
    chars = tf.strings.unicode_split(["héllo", "wörld!"], input_encoding="UTF-8")
    assert as_list(tf.strings.reduce_join(chars, axis=-1)) == ["héllo".encode(),
                                                                "wörld!".encode()]


def test_lower_upper_strip_match_python_on_ascii():
    ascii_words = [w for w in WORDS if w.isascii()]
    x = tf.constant(ascii_words)
    for got in both(lambda t: tf.strings.lower(t), x):
        assert as_list(got) == [b(w.lower()) for w in ascii_words]
    for got in both(lambda t: tf.strings.upper(t, encoding="utf-8"), x):
        assert as_list(got) == [b(w.upper()) for w in ascii_words]
    for got in both(lambda t: tf.strings.strip(t), x):
        assert as_list(got) == [b(w.strip()) for w in ascii_words]
    # Non-ASCII letters are left as they are (TensorFlow's utf-8 maps them).
    assert tf.strings.upper("héllo").numpy() == "HéLLO".encode()
    assert as_list(tf.strings.strip([b"\nTensorFlow", b"     The python library    "])) == \
        [b"TensorFlow", b"The python library"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="only utf-8 or ''"):
        tf.strings.lower("A", encoding="latin-1")


def test_substr_as_documented():
    assert as_list(tf.strings.substr([b"Hello", b"World"], 1, 3)) == [b"ell", b"orl"]
    assert as_list(tf.strings.substr([b"Hello", b"World"], [1, 2], [3, 2])) == [b"ell", b"rl"]
    words = [[b"ten", b"eleven", b"twelve"], [b"thirteen", b"fourteen", b"fifteen"],
             [b"sixteen", b"seventeen", b"eighteen"]]
    got = tf.strings.substr(words, [[1, 2, 3]] * 3, [[2, 3, 4], [4, 3, 2], [5, 5, 5]])
    assert as_list(got) == [[b"en", b"eve", b"lve"], [b"hirt", b"urt", b"te"],
                            [b"ixtee", b"vente", b"hteen"]]
    words4 = words + [[b"nineteen", b"twenty", b"twentyone"]]
    for got in both(lambda t, p, n: tf.strings.substr(t, p, n), tf.constant(words4),
                    tf.constant([1, 2, 3]), tf.constant([1, 2, 3])):
        assert as_list(got) == [[b"e", b"ev", b"lve"], [b"h", b"ur", b"tee"],
                                [b"i", b"ve", b"hte"], [b"i", b"en", b"nty"]]
    assert as_list(tf.strings.substr(b"thirteen", [1, 5, 7], [3, 2, 1])) == [b"hir", b"ee", b"n"]


def test_substr_negative_positions_and_utf8_chars_match_python_slices():
    s = "héllo wörld"
    for pos in range(-len(s), len(s) + 1):
        for n in (0, 1, 3, 20):
            want = s[pos:][:n] if pos < 0 else s[pos:pos + n]
            got = tf.strings.substr(s, pos, n, unit="UTF8_CHAR").numpy().decode()
            assert got == want, (pos, n)
    e = s.encode()
    for pos in range(-len(e), len(e) + 1):
        assert tf.strings.substr(e, pos, 4).numpy() == (e[pos:][:4] if pos < 0 else
                                                         e[pos:pos + 4])


def test_substr_errors():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"pos 10 out of range for string b'hello' at index 0"):
        tf.strings.substr("hello", 10, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="pos and len shapes must match"):
        tf.strings.substr(["ab", "cd"], [0, 1], [1])
    f = tf.function(lambda t, p: tf.strings.substr(t, p, 1),
                    input_signature=[tf.TensorSpec([None], tf.string),
                                     tf.TensorSpec([], tf.int32)])
    assert as_list(f(tf.constant(["abc", "de"]), tf.constant(-2))) == [b"b", b"d"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="pos -3 out of range.*index 1"):
        f(tf.constant(["abc", "de"]), tf.constant(-3))


def test_as_string_as_documented_and_printf():
    assert as_list(tf.strings.as_string([3, 2])) == [b"3", b"2"]
    assert as_list(tf.strings.as_string([3.1415926, 2.71828], precision=2)) == [b"3.14", b"2.72"]
    vals = [0.0, 1.5, -2.25e-5, 12345.678, 1e20]
    x = tf.constant(vals, dtype=tf.float64)
    for got in both(lambda t: tf.strings.as_string(t), x):
        assert as_list(got) == [b("%f" % v) for v in vals]
    assert as_list(tf.strings.as_string(x, scientific=True)) == [b("%e" % v) for v in vals]
    assert as_list(tf.strings.as_string(x, precision=3, shortest=True)) == \
        [b("%.3g" % v) for v in vals]
    assert as_list(tf.strings.as_string(x, precision=1, width=12, fill="0")) == \
        [b("%012.1f" % v) for v in vals]
    assert as_list(tf.strings.as_string(tf.constant([5, -5]), width=4)) == [b"   5", b"  -5"]
    assert as_list(tf.strings.as_string(tf.constant([5]), width=3, fill="0")) == [b"005"]
    assert as_list(tf.strings.as_string(tf.constant([True, False]))) == [b"true", b"false"]
    assert tf.strings.as_string(tf.constant(2 ** 40, tf.int64)).numpy() == b"1099511627776"
    with pytest.raises(tf.errors.InvalidArgumentError, match="precision not supported"):
        tf.strings.as_string(tf.constant([1]), precision=2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot select both"):
        tf.strings.as_string(1.0, scientific=True, shortest=True)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Fill argument not supported"):
        tf.strings.as_string(1, width=3, fill="x")


def test_to_number_as_documented_and_errors():
    got = tf.strings.to_number("1.55")
    assert got.dtype == tf.float32 and got.numpy() == np.float32(1.55)
    assert tf.strings.to_number("3", tf.int32).numpy() == 3
    strs = ["1", " -2.5 ", "1e3", "0x10", "inf", "-NaN", ".5"]
    for got in both(lambda t: tf.strings.to_number(t, out_type=tf.float64), tf.constant(strs)):
        np.testing.assert_array_equal(got.numpy(), [1, -2.5, 1000, 16, np.inf, np.nan, 0.5])
    ints = ["0", "-2147483648", " 2147483647 ", "007"]
    assert as_list(tf.strings.to_number(ints, tf.int32)) == [int(s) for s in ints]
    assert tf.strings.to_number("-9223372036854775808", tf.int64).numpy() == -2 ** 63
    for bad, dt in [("abc", tf.float32), ("1.5", tf.int32), ("2147483648", tf.int32),
                    ("", tf.float64), ("1e", tf.float32), ("+5", tf.int64)]:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="StringToNumberOp could not correctly convert string: " +
                           re.escape(bad)):
            tf.strings.to_number(bad, dt)
    f = tf.function(lambda t: tf.strings.to_number(t), input_signature=[
        tf.TensorSpec([None], tf.string)])
    np.testing.assert_array_equal(f(tf.constant(["1", "2"])).numpy(), [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="convert string: x"):
        f(tf.constant(["1", "x"]))


def test_regex_replace_matches_python_re_where_the_dialects_agree():
    assert tf.strings.regex_replace("Text with tags.<br /><b>contains html</b>", "<[^>]+>",
                                    " ").numpy() == b"Text with tags.  contains html "
    cases = [(r"\d+", "#"), (r"(\w+)@(\w+)", r"\2 at \1"), (r"\s+", " "), ("o", "0"),
             ("^h", "H"), (r"[aeiou]", "")]
    for pattern, rewrite in cases:
        for g in (True, False):
            want = [b(re.sub(pattern, rewrite, w, count=0 if g else 1)) for w in WORDS]
            for got in both(lambda t: tf.strings.regex_replace(t, pattern, rewrite,
                                                               replace_global=g),
                            tf.constant(WORDS)):
                assert as_list(got) == want, (pattern, g)
    # The pattern fed at call time, checked when the function runs.
    f = tf.function(lambda t, p: tf.strings.regex_replace(t, p, "_"),
                    input_signature=[tf.TensorSpec([None], tf.string),
                                     tf.TensorSpec([], tf.string)])
    assert as_list(f(tf.constant(["a1b22"]), tf.constant("[0-9]+"))) == [b"a_b_"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid pattern"):
        f(tf.constant(["a"]), tf.constant("(a"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid pattern"):
        tf.strings.regex_replace("a", "(a", "b")
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid rewrite pattern"):
        tf.strings.regex_replace("a", "(a)", r"\3")
    # Linear time: no catastrophic backtracking on a nested quantifier.
    assert tf.strings.regex_replace("a" * 50, "(a*)*b", "x").numpy() == b"a" * 50


def test_regex_full_match_as_documented():
    got = tf.strings.regex_full_match(["TF lib", "lib TF"], ".*lib$")
    assert got.dtype == tf.bool and as_list(got) == [True, False]


def test_split_returns_ragged_like_python_split():
    assert as_list(tf.strings.split("hello world")) == [b"hello", b"world"]
    got = tf.strings.split(["hello world", "a b c"])
    assert isinstance(got, tf.RaggedTensor)
    assert got.to_list() == [[b"hello", b"world"], [b"a", b"b", b"c"]]
    for sep in (None, ",", "<>", " "):
        for maxsplit in (-1, 0, 1, 2):
            want = [[b(p) for p in w.split(sep, maxsplit)] for w in WORDS]
            if sep is None and maxsplit >= 0:
                continue  # TensorFlow's whitespace split with a limit differs; tested below
            got = tf.strings.split(WORDS, sep=sep, maxsplit=maxsplit)
            assert got.to_list() == want, (sep, maxsplit)
    assert tf.strings.split(["a b  c"], maxsplit=1).to_list() == [[b"a", b"b  c"]]
    # TensorFlow's SplitV2: maxsplit=0 keeps the string whole (Python strips it), and the
    # rest after maxsplit pieces is kept even when empty (Python drops it).
    assert tf.strings.split(["  a b "], maxsplit=0).to_list() == [[b"  a b "]]
    assert tf.strings.split(["a "], maxsplit=1).to_list() == [[b"a", b""]]
    # Rank 2: one more ragged dimension.
    assert tf.strings.split([["a b", "c"], ["d e f", ""]]).to_list() == \
        [[[b"a", b"b"], [b"c"]], [[b"d", b"e", b"f"], []]]
    # Inside a function, fed at call time.
    f = tf.function(lambda t: tf.strings.split(t, ",").to_tensor(default_value="-"),
                    input_signature=[tf.TensorSpec([None], tf.string)])
    assert as_list(f(tf.constant(["1,2", "3"]))) == [[b"1", b"2"], [b"3", b"-"]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="sep must be a scalar"):
        tf.strings.split(["a"], sep=tf.constant([","]))


def test_bytes_and_unicode_split():
    assert as_list(tf.strings.bytes_split("hello")) == [b"h", b"e", b"l", b"l", b"o"]
    assert tf.strings.bytes_split(["hello", "123"]).to_list() == \
        [[b"h", b"e", b"l", b"l", b"o"], [b"1", b"2", b"3"]]
    assert as_list(tf.strings.unicode_split("語言處理", "UTF-8")) == \
        [b"\xe8\xaa\x9e", b"\xe8\xa8\x80", b"\xe8\x99\x95", b"\xe7\x90\x86"]
    # Ill-formed bytes become U+FFFD.
    assert as_list(tf.strings.unicode_split(b"a\xffb", "UTF-8")) == [b"a", "\ufffd".encode(), b"b"]
    # Other encodings: characters in that encoding (more in test_strings_unicode.py).
    assert as_list(tf.strings.unicode_split(b"\x00a\x00b", "UTF-16-BE")) == [b"\x00a", b"\x00b"]


def test_unsorted_segment_join_as_documented():
    got = tf.strings.unsorted_segment_join(inputs=["this", "a", "test", "is"],
                                           segment_ids=[0, 1, 1, 0], num_segments=2,
                                           separator=" ")
    assert as_list(got) == [b"this is", b"a test"]


def test_format_prints_tensors_like_tf_print():
    for got in both(lambda t: tf.strings.format("tensor: {}, suffix", t), tf.range(5)):
        assert got.numpy() == b"tensor: [0 1 2 3 4], suffix"
    assert tf.strings.format("{} / {}", [tf.constant([[1.5, 2.0]]), tf.constant(True)]).numpy() \
        == b"[[1.5 2]] / 1"
    assert tf.strings.format("{}", tf.range(10)).numpy() == b"[0 1 2 ... 7 8 9]"
    assert tf.strings.format("{}", tf.range(10), summarize=-1).numpy() == \
        b"[0 1 2 3 4 5 6 7 8 9]"
    assert tf.strings.format("{}", [tf.constant(["a", "b"])]).numpy() == b'["a" "b"]'
    assert tf.strings.format("x=%s", [3], placeholder="%s").numpy() == b"x=3"
    with pytest.raises(tf.errors.InvalidArgumentError, match="num placeholders in template"):
        tf.strings.format("{} {}", [tf.constant(1)])


def test_elementwise_functions_take_ragged_tensors():
    rt = tf.ragged.constant([["Ab", "c"], [], ["dEf"]])
    assert tf.strings.length(rt).to_list() == [[2, 1], [], [3]]
    assert tf.strings.upper(rt).to_list() == [[b"AB", b"C"], [], [b"DEF"]]
    assert tf.strings.substr(rt, 0, 1).to_list() == [[b"A", b"c"], [], [b"d"]]
    assert tf.strings.regex_replace(rt, "[a-z]", "_").to_list() == [[b"A_", b"_"], [], [b"_E_"]]
    assert tf.strings.join([rt, "!"]).to_list() == [[b"Ab!", b"c!"], [], [b"dEf!"]]


def test_a_text_pipeline_traced():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def parse(lines):
        clean = tf.strings.lower(tf.strings.strip(lines))
        clean = tf.strings.regex_replace(clean, r"[^a-z0-9,]", "")
        fields = tf.strings.split(clean, ",")
        nums = tf.strings.to_number(fields.flat_values, out_type=tf.int64)
        label = tf.strings.reduce_join(tf.strings.as_string(nums), separator="+")
        return nums, label, tf.strings.format("{} rows", tf.size(lines))

    nums, label, text = parse(tf.constant([" 1, 2 ", "3,#4"]))
    assert as_list(nums) == [1, 2, 3, 4]
    assert label.numpy() == b"1+2+3+4"
    assert text.numpy() == b"2 rows"


def test_join_and_reduce_join_take_bytes_separators():
    assert tf.strings.join(["a", "b"], separator=b"-").numpy() == b"a-b"
    assert tf.strings.reduce_join(["a", "b", "c"], separator=b", ").numpy() == b"a, b, c"
