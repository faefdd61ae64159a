"""Guide 002, "Transformaciones de AutoGraph": while on tensors, to_code,
conditionals (fizzbuzz), loops over Python data vs Datasets, TensorArray."""
import ast
import re

import numpy as np

import kiln as tf
from seed_helpers import guide, Interleaved

# The guide's tf.print lines for its random start; the loop is rerun from the first.
GUIDE_WHILE_PRINTS = """
[0.666458249 0.713946581 0.723879576 0.330758929 0.184087753]
[0.582645297 0.613145649 0.619306684 0.319202513 0.182036072]
[0.524585426 0.546337605 0.550645113 0.308785647 0.18005164]
[0.481231302 0.497770309 0.501003504 0.299331933 0.178130865]
[0.447229207 0.460361809 0.462906033 0.290701121 0.176270396]
[0.419618756 0.430379033 0.432449728 0.282779962 0.174467146]
[0.396609187 0.405638 0.407366514 0.275476 0.172718227]
[0.377043903 0.384762734 0.386234313 0.268712848 0.17102097]
[0.360137492 0.366836458 0.368109286 0.262426734 0.169372901]
[0.345335096 0.351221472 0.352336824 0.256563932 0.167771652]
[0.332231969 0.337458342 0.338446289 0.251078814 0.166215062]
[0.320524871 0.325206399 0.326089561 0.24593246 0.164701089]
[0.309981436 0.314206958 0.31500268 0.241091311 0.163227797]
[0.300420195 0.304259449 0.304981351 0.236526251 0.161793426]
[0.291697085 0.295205742 0.295864582 0.232211992 0.160396278]
[0.283696055 0.286919087 0.287523568 0.228126258 0.159034774]
[0.276322395 0.279296666 0.27985391 0.224249557 0.157707423]
[0.269497961 0.272254 0.272769839 0.220564634 0.15641281]
[0.263157606 0.265720904 0.266200244 0.21705614 0.155149609]
[0.257246554 0.259638608 0.260085613 0.213710397 0.153916568]
[0.251718313 0.25395745 0.254375577 0.210515186 0.152712509]
[0.246533215 0.248635098 0.249027327 0.207459539 0.151536316]
[0.241657034 0.243635193 0.244004101 0.204533577 0.15038693]
[0.237060249 0.238926381 0.239274174 0.201728329 0.149263337]
[0.232717097 0.234481394 0.234810054 0.199035719 0.148164615]
[0.228605017 0.230276451 0.230587661 0.196448416 0.147089839]
[0.224704206 0.226290658 0.22658591 0.193959698 0.14603813]
[0.220997125 0.222505584 0.222786173 0.191563457 0.145008713]
"""
GUIDE_WHILE_RESULT = [0.21746822, 0.21890487, 0.21917202, 0.18925412, 0.14400077]


def _simple_loop():
    # A simple loop
    @tf.function
    def f(x):
        while tf.reduce_sum(x) > 1:
            tf.print(x)
            x = tf.tanh(x)
        return x
    return f


def _rows(text):
    return [[float(v) for v in line.strip("[]").split()] for line in text.strip().split("\n")]


def test_while_loop_matches_guide_values():
    start = _rows(GUIDE_WHILE_PRINTS)[0]
    with Interleaved() as out:
        f = _simple_loop()
        r = f(tf.constant(start))
    got, want = _rows(out.text), _rows(GUIDE_WHILE_PRINTS)
    assert len(got) == len(want) == 28
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(r.numpy(), GUIDE_WHILE_RESULT, rtol=1e-5)
    # tf.print's format: a bracketed row, floats to 9 significant digits at most.
    first = "[0.666458249 0.713946581 0.723879576 0.330758929 0.184087753]"
    assert out.text.split("\n")[0] == first
    for line in out.text.strip().split("\n"):
        assert re.fullmatch(r"\[(0\.\d{1,9} ?){5}\]", line), line


def test_while_loop_random_input_semantics():
    with Interleaved() as out:
        f = _simple_loop()
        x0 = tf.random.uniform([5])
        r = f(x0)
    rows = np.array(_rows(out.text) if out.text else np.zeros((0, 5)), np.float32)
    final = r.numpy()
    # Each printed row had a sum > 1 and is followed by its tanh; the result's sum is <= 1.
    if len(rows):
        np.testing.assert_allclose(rows[0], x0.numpy(), rtol=1e-6)
        assert (rows.sum(axis=1) > 1 - 1e-5).all()
        np.testing.assert_allclose(np.tanh(rows), np.vstack([rows[1:], final]), rtol=1e-5)
    else:
        np.testing.assert_array_equal(final, x0.numpy())
    assert final.sum() <= 1 + 1e-5
    assert f.experimental_get_tracing_count() == 1   # one graph, loop decided at run time


def test_to_code_of_while_loop():
    f = _simple_loop()
    code = tf.autograph.to_code(f.python_function)
    assert isinstance(code, str)
    tree = ast.parse(code)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert len(defs) == 1 and defs[0].name.endswith("f")
    assert [a.arg for a in defs[0].args.args] == ["x"]
    # The guide's code: the while statement becomes a staged loop with test and body.
    assert "while_stmt" in code
    assert "tanh" in code and "reduce_sum" in code and "print" in code
    assert "while " not in code  # no Python while left


FIZZBUZZ_OUT = """
Tracing for loop
Tracing fizzbuzz branch
Tracing fizz branch
Tracing buzz branch
Tracing default branch
1
2
fizz
4
buzz
1
2
fizz
4
buzz
fizz
7
8
fizz
buzz
11
fizz
13
14
fizzbuzz
16
17
fizz
19
buzz
"""


def test_fizzbuzz_conditionals():
    with Interleaved() as out:
        @tf.function
        def fizzbuzz(n):
            for i in tf.range(1, n + 1):
                print('Tracing for loop')
                if i % 15 == 0:
                    print('Tracing fizzbuzz branch')
                    tf.print('fizzbuzz')
                elif i % 3 == 0:
                    print('Tracing fizz branch')
                    tf.print('fizz')
                elif i % 5 == 0:
                    print('Tracing buzz branch')
                    tf.print('buzz')
                else:
                    print('Tracing default branch')
                    tf.print(i)

        fizzbuzz(tf.constant(5))
        fizzbuzz(tf.constant(20))
    assert out.text == guide(FIZZBUZZ_OUT)
    assert fizzbuzz.experimental_get_tracing_count() == 1


def test_python_if_runs_at_trace_time():
    # A condition that is not a tensor stays a Python if: only one branch is traced.
    with Interleaved() as out:
        @tf.function
        def f(x, flag):
            if flag:
                print("Tracing true branch")
                return x + 1
            else:
                print("Tracing false branch")
                return x - 1

        assert f(tf.constant(1), True).numpy() == 2
        assert f(tf.constant(1), False).numpy() == 0
        assert f(tf.constant(5), True).numpy() == 6
    assert out.text == "Tracing true branch\nTracing false branch\n"


# -- Recorriendo los datos de Python --

def _train():
    @tf.function
    def train(dataset):
        loss = tf.constant(0)
        for x, y in dataset:
            loss += tf.abs(y - x)  # Some dummy computation.
        return loss
    return train


def measure_graph_size(f, *args):
    g = f.get_concrete_function(*args).graph
    print("{}({}) contains {} nodes in its graph".format(
        f.__name__, ', '.join(map(str, args)), len(g.as_graph_def().node)))


MEASURE_OUT = """
train([(1, 1), (1, 1), (1, 1)]) contains 11 nodes in its graph
train([(1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1), (1, 1)]) contains 32 nodes in its graph
train(<FlatMapDataset shapes: (<unknown>, <unknown>), types: (tf.int32, tf.int32)>) contains 6 nodes in its graph
train(<FlatMapDataset shapes: (<unknown>, <unknown>), types: (tf.int32, tf.int32)>) contains 6 nodes in its graph
"""


def test_python_data_unrolls_into_graph(capsys):
    train = _train()
    small_data = [(1, 1)] * 3
    big_data = [(1, 1)] * 10
    measure_graph_size(train, small_data)
    measure_graph_size(train, big_data)
    assert capsys.readouterr().out == guide(MEASURE_OUT).split("train(<")[0]
    assert train(small_data).numpy() == 0
    assert train([(1, 3), (5, 2)]).numpy() == 5


def test_dataset_loop_graph_size_is_constant(capsys):
    train = _train()
    small_data = [(1, 1)] * 3
    big_data = [(1, 1)] * 10
    measure_graph_size(train, small_data)
    measure_graph_size(train, big_data)
    measure_graph_size(train, tf.data.Dataset.from_generator(
        lambda: small_data, (tf.int32, tf.int32)))
    measure_graph_size(train, tf.data.Dataset.from_generator(
        lambda: big_data, (tf.int32, tf.int32)))
    assert capsys.readouterr().out == guide(MEASURE_OUT)


def test_dataset_loop_values():
    train = _train()
    data = [(1, 3), (5, 2), (4, 4)]
    ds = tf.data.Dataset.from_generator(lambda: data, (tf.int32, tf.int32))
    assert train(ds).numpy() == 5
    data.append((0, 10))   # from_generator reads the generator on every call
    assert train(ds).numpy() == 15


# -- Acumulación de valores en un bucle --

# The guide's printed result; its random input is recovered as the step differences.
GUIDE_RNN_RESULT = np.array(
    [[[0.06309307, 0.9938811, 0.90789986, 0.42136216],
      [0.44997275, 1.9107027, 1.0716251, 0.717237],
      [0.6026064, 2.1622117, 1.4164022, 1.4153863]],
     [[0.04946005, 0.69127274, 0.56848884, 0.22406638],
      [0.8148316, 1.0278493, 0.6207781, 1.1935129],
      [0.9178308, 1.320889, 0.989761, 2.0120025]]], np.float32)


def _dynamic_rnn():
    @tf.function
    def dynamic_rnn(rnn_step, input_data, initial_state):
        # [batch, time, features] -> [time, batch, features]
        input_data = tf.transpose(input_data, [1, 0, 2])
        max_seq_len = input_data.shape[0]

        states = tf.TensorArray(tf.float32, size=max_seq_len)
        state = initial_state
        for i in tf.range(max_seq_len):
            state = rnn_step(input_data[i], state)
            states = states.write(i, state)
        return tf.transpose(states.stack(), [1, 0, 2])
    return dynamic_rnn


def rnn_step(inp, state):
    return inp + state


def test_tensor_array_accumulates_guide_values():
    batch_size = 2
    feature_size = 4
    inputs = np.diff(GUIDE_RNN_RESULT, axis=1, prepend=0).astype(np.float32)
    dynamic_rnn = _dynamic_rnn()
    r = dynamic_rnn(rnn_step, tf.constant(inputs), tf.zeros([batch_size, feature_size]))
    assert r.shape == (2, 3, 4) and r.dtype == tf.float32
    np.testing.assert_allclose(r.numpy(), GUIDE_RNN_RESULT, rtol=1e-6, atol=1e-6)
    # As TensorFlow 2.21 prints them: a result for a deterministic input (the same trace),
    # and the signature (in the seed's form), the Python function bound at trace time as
    # name=value.
    data = tf.reshape(tf.range(24, dtype=tf.float32), [2, 3, 4])
    assert str(dynamic_rnn(rnn_step, data, tf.zeros([batch_size, feature_size]))) == guide("""
        tf.Tensor(
        [[[ 0.  1.  2.  3.]
          [ 4.  6.  8. 10.]
          [12. 15. 18. 21.]]

         [[12. 13. 14. 15.]
          [28. 30. 32. 34.]
          [48. 51. 54. 57.]]], shape=(2, 3, 4), dtype=float32)""")
    assert re.sub(r" at 0x[0-9a-f]+>", " at ADDRESS>",
                  dynamic_rnn.pretty_printed_concrete_signatures()) == (
        "dynamic_rnn(rnn_step=<function rnn_step at ADDRESS>, input_data, initial_state)\n"
        "  Args:\n"
        "    input_data: float32 Tensor, shape=(2, 3, 4)\n"
        "    initial_state: float32 Tensor, shape=(2, 4)\n"
        "  Returns:\n"
        "    float32 Tensor, shape=(2, 3, 4)")


def test_tensor_array_random_input():
    batch_size = 2
    seq_len = 3
    feature_size = 4
    data = tf.random.uniform([batch_size, seq_len, feature_size])
    r = _dynamic_rnn()(rnn_step, data, tf.zeros([batch_size, feature_size]))
    np.testing.assert_allclose(r.numpy(), np.cumsum(data.numpy(), axis=1), rtol=1e-6)
