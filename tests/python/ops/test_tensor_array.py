"""tf.TensorArray: static shapes carried out of loops (stack after a tf.range loop
inside tf.function), infer_shape, value semantics of old arrays, long loops."""
import numpy as np
import pytest

import kiln as tf


def _fill(ta, n, row):
    for i in tf.range(n):
        ta = ta.write(i, row * tf.cast(i, tf.float32))
    return ta


def test_stack_after_a_range_loop_has_the_static_shape():
    seen = {}

    @tf.function
    def f(row, n):
        fixed = _fill(tf.TensorArray(tf.float32, size=5), 5, row)
        seen["fixed"] = fixed.stack().shape.as_list()
        seen["element"] = fixed.element_shape.as_list()
        # A size known only at run time, or dynamic_size: unknown length.
        seen["arg"] = _fill(tf.TensorArray(tf.float32, size=n), n, row).stack().shape.as_list()
        grown = _fill(tf.TensorArray(tf.float32, size=0, dynamic_size=True), n, row)
        seen["dynamic"] = grown.stack().shape.as_list()
        return fixed.stack(), grown.stack()

    row = tf.constant([1.0, 2.0, 3.0])
    fixed, grown = f(row, tf.constant(4))
    assert seen == {"fixed": [5, 3], "element": [3], "arg": [None, 3], "dynamic": [None, 3]}
    np.testing.assert_allclose(fixed.numpy(), np.arange(5)[:, None] * [1.0, 2.0, 3.0])
    np.testing.assert_allclose(grown.numpy(), np.arange(4)[:, None] * [1.0, 2.0, 3.0])


def test_seed_guide_dynamic_rnn_states_have_the_static_shape():
    # The guide's dynamic_rnn: states.stack() is [max_seq_len, batch, units].
    shapes = []
    w = tf.constant(np.random.RandomState(0).uniform(-0.5, 0.5, (3, 4)), tf.float32)
    u = tf.constant(np.random.RandomState(1).uniform(-0.5, 0.5, (4, 4)), tf.float32)

    def rnn_cell(x, state):
        new = tf.tanh(tf.matmul(x, w) + tf.matmul(state, u))
        return new, new

    @tf.function
    def dynamic_rnn(input_data, initial_state):
        input_data = tf.transpose(input_data, [1, 0, 2])
        max_seq_len = input_data.shape[0]
        states = tf.TensorArray(tf.float32, size=max_seq_len)
        state = initial_state
        for i in tf.range(max_seq_len):
            new_output, state = rnn_cell(input_data[i], state)
            states = states.write(i, state)
        shapes.append(states.stack().shape.as_list())
        return tf.transpose(states.stack(), [1, 0, 2])

    x = np.random.RandomState(2).uniform(0, 1, (2, 5, 3)).astype(np.float32)
    out = dynamic_rnn(tf.constant(x), tf.zeros([2, 4]))
    assert shapes == [[5, 2, 4]]
    state, want = np.zeros((2, 4), np.float32), []
    for t in range(5):
        state = np.tanh(x[:, t] @ w.numpy() + state @ u.numpy())
        want.append(state)
    np.testing.assert_allclose(out.numpy(), np.stack(want, 1), rtol=1e-5, atol=1e-6)
    dynamic_rnn.get_concrete_function(tf.TensorSpec([None, 5, 3], tf.float32),
                                      tf.TensorSpec([None, 4], tf.float32))
    assert shapes[-1] == [5, None, 4]


def test_an_eager_loop_result_knows_its_element_shape():
    ta = tf.TensorArray(tf.float32, size=3)
    _, ta = tf.while_loop(lambda i, ta: i < 3, lambda i, ta: (i + 1, ta.write(i, [1.0, 2.0])),
                          (0, ta))
    assert ta.element_shape.as_list() == [2]
    assert ta.stack().shape.as_list() == [3, 2]


@pytest.mark.parametrize("traced", [False, True])
def test_infer_shape_false_lets_elements_differ(traced):
    def build(infer_shape):
        ta = tf.TensorArray(tf.float32, size=3, infer_shape=infer_shape)
        for i in tf.range(3):
            ta = ta.write(i, tf.cast(tf.range(i + 1), tf.float32))
        return ta.read(0), ta.read(2)

    run = tf.function(build) if traced else build
    first, last = run(False)
    np.testing.assert_array_equal(first.numpy(), [0.0])
    np.testing.assert_array_equal(last.numpy(), [0.0, 1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="value has shape \\[2\\]"):
        (tf.function(build) if traced else build)(True)


def test_infer_shape_flag_and_checks():
    ta = tf.TensorArray(tf.float32, size=2, infer_shape=False, element_shape=[None])
    assert ta.infer_shape is False and ta.dynamic_size is False
    ta = ta.write(0, [1.0]).write(1, [1.0, 2.0])
    assert ta.element_shape.as_list() == [None]   # not narrowed by the writes
    with pytest.raises(tf.errors.InvalidArgumentError, match="elements have shape"):
        ta.write(0, [[1.0]])                      # still checked against element_shape
    with pytest.raises(tf.errors.InvalidArgumentError, match="element 1 has shape"):
        ta.stack()
    strict = tf.TensorArray(tf.float32, size=2).write(0, [1.0])
    assert strict.infer_shape is True and strict.element_shape.as_list() == [1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="elements have shape \\[1\\]"):
        strict.write(1, [1.0, 2.0])


def test_old_arrays_keep_their_values():
    ta = tf.TensorArray(tf.float32, size=2)
    a = ta.write(0, 1.0)
    b = a.write(0, 2.0).write(1, 3.0)
    assert a.read(0).numpy() == 1.0 and a.read(1).numpy() == 0.0
    np.testing.assert_array_equal(b.stack().numpy(), [2.0, 3.0])

    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=1, element_shape=[])
        olds = tf.zeros([])
        for i in tf.range(4):
            new = ta.write(0, x * tf.cast(i, tf.float32))
            olds += ta.read(0)                   # the array before this write
            ta = new
        return ta.read(0), olds

    last, olds = f(tf.constant(2.0))
    assert last.numpy() == 6.0 and olds.numpy() == 2.0 * (0 + 1 + 2)


def test_a_long_loop_matches_numpy():
    @tf.function
    def squares(n):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        for i in tf.range(n):
            ta = ta.write(i, i * i)
        return ta.stack()

    for n in (0, 1, 33, 2500):
        np.testing.assert_array_equal(squares(tf.constant(n)).numpy(), np.arange(n) ** 2)


def test_constructor_takes_tensorflows_arguments():
    ta = tf.TensorArray(dtype=tf.int32, size=2, dynamic_size=False, clear_after_read=False,
                        tensor_array_name="x", handle=None, flow=None, infer_shape=True,
                        element_shape=None, colocate_with_first_write_call=False, name="n")
    assert int(ta.size()) == 2 and ta.dtype == tf.int32 and not ta.dynamic_size
    positional = tf.TensorArray(tf.float32, 2, False, None, None, None, None, False, [3])
    assert positional.element_shape.as_list() == [3] and not positional.infer_shape
    assert not tf.TensorArray(tf.float32, size=1, infer_shape=0).infer_shape
    assert tf.TensorArray(tf.float32, size=1, infer_shape="yes").infer_shape
    grown = tf.TensorArray(tf.int32, dynamic_size=1).write(2, 5)
    np.testing.assert_array_equal(grown.stack().numpy(), [0, 0, 5])
    with pytest.raises(ValueError, match="size must be given unless dynamic_size=True"):
        tf.TensorArray(tf.float32)
    with pytest.raises(TypeError, match="Cannot convert 1.5 to EagerTensor of dtype int32"):
        tf.TensorArray(tf.float32, size=1.5)
    with pytest.raises(TypeError, match="Unknown dtype name 'nope'"):
        tf.TensorArray("nope", size=1)


def test_methods_return_kiln_tensor_arrays_and_take_a_name():
    ta = tf.TensorArray(tf.float32, size=2)
    out = ta.write(0, 1.0, name="w").write(tf.constant(1), tf.constant(2.0))
    assert type(out) is tf.TensorArray and repr(out) == "<kiln.TensorArray dtype=float32>"
    assert out.flow.dtype == out.handle.dtype and out.handle.dtype.name == "resource"
    np.testing.assert_array_equal(out.stack(name="s").numpy(), [1.0, 2.0])
    assert float(out.read(1, name="r")) == 2.0 and int(out.size(name="n")) == 2
    un = ta.unstack(tf.constant([3.0, 4.0]), name="u")
    assert type(un) is tf.TensorArray
    np.testing.assert_array_equal(un.gather([1, 0]).numpy(), [4.0, 3.0])
    np.testing.assert_array_equal(ta.scatter([1, 0], tf.constant([5.0, 6.0])).stack().numpy(),
                                  [6.0, 5.0])

    class Mine(tf.TensorArray):
        pass

    assert type(Mine(tf.float32, size=1).write(0, 1.0)) is tf.TensorArray  # as before
    with pytest.raises(TypeError, match="Cannot convert 0.5 to EagerTensor of dtype int32"):
        ta.write(0.5, 1.0)
    with pytest.raises(ValueError, match="requested dtype float32 for Tensor with dtype int32"):
        ta.write(0, tf.constant(1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="index 3 is out of range"):
        ta.write(3, 1.0)


def test_writes_are_differentiable_eagerly_and_traced():
    x = tf.constant([1.0, 2.0])

    def f(x):
        ta = tf.TensorArray(tf.float32, size=2, name="ta")
        for i in tf.range(2):
            ta = ta.write(i, x * tf.cast(i + 1, tf.float32), name="w")
        return tf.reduce_sum(ta.stack(name="s") ** 2)

    for fn in (f, tf.function(f)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), [10.0, 20.0])


def test_methods_called_on_another_object_raise_type_error():
    # The C++ base class's methods, called unbound on something else: a TypeError naming the
    # type (it was RuntimeError: std::bad_cast).
    base = tf.TensorArray.__mro__[1]
    for call in (lambda: base.write(object(), 0, 1.0), lambda: base.unstack(3, [1.0]),
                 lambda: base._with_handle("x", 1)):
        with pytest.raises(TypeError, match="expected a kiln.TensorArray, got (object|int|str)"):
            call()
    ta = tf.TensorArray(tf.float32, size=1)
    assert base.write(ta, 0, 2.0).read(0).numpy() == 2.0
