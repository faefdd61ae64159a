"""The AutoGraph examples of the tf.function guide (seed 002), run with
`import kiln as tf`, with the outputs the guide prints."""
import numpy as np

import kiln as tf
import kiln.autograph  # noqa: F401  (tf.autograph)


def _lines(text):
    return [line for line in text.splitlines() if line.strip()]


def test_simple_while_loop(capsys):
    @tf.function
    def f(x):
        while tf.reduce_sum(x) > 1:
            tf.print(x)
            x = tf.tanh(x)
        return x

    start = tf.random.uniform([5])
    result = f(start)
    # The same loop run eagerly, step by step.
    expected, steps = start.numpy(), 0
    while expected.sum() > 1:
        expected = np.tanh(expected)
        steps += 1
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5)
    assert float(tf.reduce_sum(result)) <= 1
    assert len(_lines(capsys.readouterr().err)) == steps  # one tf.print per iteration


def test_to_code_of_simple_loop():
    def f(x):
        while tf.reduce_sum(x) > 1:
            tf.print(x)
            x = tf.tanh(x)
        return x

    code = tf.autograph.to_code(tf.function(f).python_function)
    assert code.startswith("def ag__f(x):")
    assert "def get_state():\n        return (x,)" in code
    assert "ag__.while_stmt(loop_test, loop_body, get_state, set_state, ('x',), {})" in code
    assert "x = ag__.converted_call(tf.tanh, (x,), None)" in code


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


def test_fizzbuzz(capsys):
    f = tf.function(fizzbuzz)
    f(tf.constant(5))
    f(tf.constant(20))
    out = capsys.readouterr()
    # Python prints happen once, while tracing; every branch is traced.
    assert _lines(out.out) == ["Tracing for loop", "Tracing fizzbuzz branch",
                               "Tracing fizz branch", "Tracing buzz branch",
                               "Tracing default branch"]
    expected = ["1", "2", "fizz", "4", "buzz"]
    for i in range(1, 21):
        expected.append("fizzbuzz" if i % 15 == 0 else "fizz" if i % 3 == 0 else
                        "buzz" if i % 5 == 0 else str(i))
    assert _lines(out.err) == expected


def train_one_step():
    pass


def test_training_loop_retracing(capsys):
    @tf.function
    def train(num_steps):
        print("Tracing with num_steps = ", num_steps)
        tf.print("Executing with num_steps = ", num_steps)
        for _ in tf.range(num_steps):
            train_one_step()

    train(num_steps=10)
    train(num_steps=20)
    train(num_steps=tf.constant(10))
    train(num_steps=tf.constant(20))
    out = capsys.readouterr()
    traced = _lines(out.out)
    assert traced[:2] == ["Tracing with num_steps =  10", "Tracing with num_steps =  20"]
    assert len(traced) == 3 and traced[2].startswith("Tracing with num_steps =  Tensor(")
    assert _lines(out.err) == ["Executing with num_steps =  %d" % n for n in (10, 20, 10, 20)]


def test_training_loop_body_runs_each_step():
    v = tf.Variable(0)

    @tf.function
    def train(num_steps):
        for _ in tf.range(num_steps):
            v.assign_add(1)

    train(tf.constant(7))
    assert int(v.numpy()) == 7
    train(tf.constant(3))
    assert int(v.numpy()) == 10


def test_loop_over_python_data_is_unrolled():
    @tf.function
    def train(dataset):
        loss = tf.constant(0)
        for x, y in dataset:
            loss += tf.abs(y - x)
        return loss

    assert int(train([(1, 1)] * 3).numpy()) == 0
    assert int(train([(1, 2), (5, 1)]).numpy()) == 5


def test_dynamic_rnn_with_tensor_array():
    batch_size, seq_len, feature_size = 2, 3, 4

    def rnn_step(inp, state):
        return inp + state

    @tf.function
    def dynamic_rnn(rnn_step, input_data, initial_state):
        input_data = tf.transpose(input_data, [1, 0, 2])
        max_seq_len = input_data.shape[0]
        states = tf.TensorArray(tf.float32, size=max_seq_len)
        state = initial_state
        for i in tf.range(max_seq_len):
            state = rnn_step(input_data[i], state)
            states = states.write(i, state)
        return tf.transpose(states.stack(), [1, 0, 2])

    data = tf.random.uniform([batch_size, seq_len, feature_size])
    out = dynamic_rnn(rnn_step, data, tf.zeros([batch_size, feature_size]))
    assert tuple(out.shape.as_list()) == (batch_size, seq_len, feature_size)
    np.testing.assert_allclose(out.numpy(), np.cumsum(data.numpy(), axis=1), rtol=1e-5)
