"""Tensor-dependent while/for loops (kiln.while_loop), loops over Python data
(unrolled), datasets (their _kiln_for_loop), break/continue/return, and the
errors for what a graph loop cannot carry."""
import numpy as np
import pytest

import kiln as tf
from kiln import autograph


def val(t):
    if isinstance(t, tuple):
        return tuple(val(x) for x in t)
    return t.numpy().item() if hasattr(t, "numpy") else t


def test_while_with_several_loop_variables(capsys):
    @tf.function
    def collatz(n):
        steps = 0
        while n != 1:
            print("traced once")
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        return steps

    assert val(collatz(tf.constant(6))) == 8
    assert val(collatz(tf.constant(27))) == 111
    assert capsys.readouterr().out.count("traced once") == 1


def test_while_with_break_and_continue():
    @tf.function
    def f(n):
        i = 0
        total = 0
        while i < n:
            i += 1
            if i % 3 == 0:
                continue
            if i > 10:
                break
            total += i
        return total, i

    assert val(f(tf.constant(20))) == (1 + 2 + 4 + 5 + 7 + 8 + 10, 11)
    assert val(f(tf.constant(4))) == (1 + 2 + 4, 4)


def test_for_range_with_break_and_continue():
    @tf.function
    def f(x, n):
        s = 0
        for i in tf.range(n):
            if i > x:
                break
            if i % 2 == 0:
                continue
            s += i
        return s

    assert val(f(tf.constant(5), tf.constant(10))) == 1 + 3 + 5
    assert val(f(tf.constant(50), tf.constant(10))) == 1 + 3 + 5 + 7 + 9


def test_return_inside_tensor_for_loop():
    @tf.function
    def find(x, n):
        for i in tf.range(n):
            if i * i > x:
                return i
        return -1

    assert val(find(tf.constant(10), tf.constant(100))) == 4
    assert val(find(tf.constant(10), tf.constant(2))) == -1


def test_return_inside_tensor_while_loop():
    @tf.function
    def f(x):
        while x < 100:
            x = x * 2
            if x % 3 == 0:
                return x * 1000
        return x

    assert val(f(tf.constant(3))) == 6000
    assert val(f(tf.constant(1))) == 128


def test_return_inside_loop_without_fallback_is_an_error():
    @tf.function
    def f(n):
        for i in tf.range(n):
            if i > 2:
                return i

    with pytest.raises(ValueError, match="returns None"):
        f(tf.constant(5))


def test_for_over_rows_of_a_tensor():
    @tf.function
    def f(m):
        acc = tf.zeros([3])
        for row in m:
            acc = acc + row
        return acc

    m = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_allclose(f(m).numpy(), [5.0, 7.0, 9.0])


def test_for_over_tensor_of_unknown_length():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
    def f(v):
        s = 0
        for x in v:
            s += x
        return s

    assert val(f(tf.constant([1, 2, 3]))) == 6
    assert val(f(tf.constant([5]))) == 5
    assert val(f(tf.zeros([0], tf.int32))) == 0


def test_nested_tensor_loops():
    @tf.function
    def f(n):
        total = 0
        for i in tf.range(n):
            j = 0
            while j < i:
                total += j
                j += 1
        return total

    assert val(f(tf.constant(5))) == sum(j for i in range(5) for j in range(i))


def test_builtin_range_len_enumerate_on_tensors():
    @tf.function
    def f(n, v):
        s = 0
        for i in range(n):
            s += i
        weighted = tf.constant(0.0)
        for i, x in enumerate(v):
            weighted += tf.cast(i, tf.float32) * x
        return s, weighted, len(v)

    s, w, n = f(tf.constant(4), tf.constant([1.0, 2.0, 3.0]))
    assert (val(s), val(w), n) == (6, 8.0, 3)


def test_loop_variable_defined_inside_loop_and_used_after():
    @tf.function
    def f(n):
        for i in tf.range(n):
            y = i * 2
        return y

    assert val(f(tf.constant(4))) == 6


def test_loop_variable_read_before_definition_is_an_error():
    @tf.function
    def f(n):
        for i in tf.range(n):
            y = y + i  # noqa: F821
        return y

    with pytest.raises(UnboundLocalError, match="'y'"):
        f(tf.constant(3))


def test_loop_variable_changing_dtype_is_an_error():
    @tf.function
    def f(n):
        x = tf.constant(0)
        for i in tf.range(n):
            x = tf.cast(x, tf.float32) + 1.0
        return x

    with pytest.raises(TypeError, match=r"'x' has dtype int32 in the value before the loop "
                                        r"but float32 in the value after one iteration"):
        f(tf.constant(3))


def test_loop_variable_changing_structure_is_an_error():
    @tf.function
    def f(n):
        x = tf.constant(0)
        for i in tf.range(n):
            x = (x, x)
        return x

    with pytest.raises(ValueError, match="'x' has a different structure"):
        f(tf.constant(3))


def test_loop_variable_of_python_object_is_an_error():
    @tf.function
    def f(n):
        label = "start"
        for i in tf.range(n):
            label = "step"
        return label

    with pytest.raises(TypeError, match=r"'label' is 'start' of type str, but a "
                                        r"tensor-dependent for loop can only carry tensors"):
        f(tf.constant(3))


def test_python_loop_is_unrolled_and_can_break_on_tensor(capsys):
    @tf.function
    def f(limit):
        s = tf.constant(0)
        for v in [1, 2, 3, 4]:
            print("unrolled", v)
            if s + v > limit:
                break
            s += v
        return s

    assert val(f(tf.constant(5))) == 3
    assert val(f(tf.constant(100))) == 10
    assert capsys.readouterr().out.count("unrolled") == 4


def test_python_loop_with_tensor_return():
    @tf.function
    def f(x):
        for v in (1, 2, 3):
            if x < v:
                return v * 10
        return 0

    assert [val(f(tf.constant(i))) for i in (0, 1, 2, 5)] == [10, 20, 30, 0]


def test_python_while_becomes_graph_loop_when_condition_turns_tensor():
    @tf.function
    def f(step):
        i = 0
        while i < 10:
            i = i + step
        return i

    assert val(f(tf.constant(3))) == 12


def test_tensor_array_in_while_loop():
    @tf.function
    def squares(n):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        i = 0
        while i < n:
            ta = ta.write(i, i * i)
            i += 1
        return ta.stack()

    assert squares(tf.constant(4)).numpy().tolist() == [0, 1, 4, 9]


def test_iterating_a_scalar_tensor_is_an_error():
    @tf.function
    def f(x):
        for v in x:
            x = v
        return x

    with pytest.raises(TypeError, match="cannot iterate over a scalar tensor"):
        f(tf.constant(3))


def test_try_except_in_tensor_loop_warns():
    @tf.function
    def f(x):
        while x > 0:
            try:
                x = x - 1
            except ValueError:
                pass
        return x

    with pytest.warns(autograph.AutoGraphWarning, match=r"the try/except that changes 'x' "
                                                        r"inside the tensor-dependent while"):
        assert val(f(tf.constant(3))) == 0


def _countdown(x):
    while x > 0:
        yield x
        x -= 1


def test_while_with_yield_over_tensor_warns_and_raises():
    @tf.function
    def f(x):
        total = 0
        for v in _countdown(x):
            total += v
        return total

    assert val(f(3)) == 6  # Python values: a plain generator
    with pytest.warns(autograph.AutoGraphWarning, match=r"test_ag_loops.py:\d+: the while loop "
                                                        r"at line \d+, which contains yield"):
        with pytest.raises(autograph.ConversionError, match="contains yield"):
            f(tf.constant(3))


class ListDataset:
    """A stand-in for a kiln Dataset: a graph loop over the rows of a tensor
    through the _kiln_for_loop contract."""

    def __init__(self, values):
        self.values = tf.constant(values)
        self.calls = 0

    def _kiln_for_loop(self, body_fn, init_state, extra_test):
        self.calls += 1
        t, n = self.values, tf.shape(self.values)[0]

        def cond(i, *state):
            ok = i < n
            more = extra_test(state)
            return ok if more is None else tf.logical_and(ok, more)

        def body(i, *state):
            return (i + 1,) + tuple(body_fn(t[i], state))

        return tf.while_loop(cond, body, (tf.constant(0),) + tuple(init_state))[1:]

    def __iter__(self):
        return (self.values[i] for i in range(self.values.shape[0]))


def test_for_over_dataset_uses_its_loop():
    @tf.function
    def f(ds):
        total = tf.constant(0)
        for x in ds:
            if x > 3:
                break
            total += x
        return total

    ds = ListDataset([1, 2, 3, 4, 5])
    assert val(f(ds)) == 6
    assert ds.calls == 1
    eager = autograph.to_graph(f.python_function)
    assert val(eager(ListDataset([1, 2, 3, 4, 5]))) == 6


def test_enumerate_dataset():
    @tf.function
    def f(ds):
        total = tf.constant(0)
        for i, x in enumerate(ds):
            total += i * x
        return total

    assert val(f(ListDataset([5, 6, 7]))) == 0 * 5 + 1 * 6 + 2 * 7


def test_dataset_loop_variable_defined_inside_and_used_after():
    @tf.function
    def f(ds):
        for x in ds:
            last = x
        return last

    assert val(f(ListDataset([1, 2]))) == 2


def test_dataset_loop_without_state(capsys):
    @tf.function
    def f(ds):
        for x in ds:
            tf.print(x)

    f(ListDataset([7, 8]))
    assert capsys.readouterr().err.split() == ["7", "8"]


def test_set_loop_options_shape_invariants_and_maximum_iterations():
    set_loop_options = autograph.experimental.set_loop_options

    @tf.function
    def grow(n):
        x = tf.zeros([1])
        for i in tf.range(n):
            set_loop_options(shape_invariants=[(x, tf.TensorShape([None]))])
            x = tf.concat([x, [1.0]], 0)
        return x

    assert grow(tf.constant(3)).numpy().tolist() == [0.0, 1.0, 1.0, 1.0]
    assert "set_loop_options" not in autograph.to_code(grow).split("def loop_body")[1]

    @tf.function
    def capped(n):
        i = 0
        while i < n:
            set_loop_options(maximum_iterations=5)
            i += 1
        return i

    assert val(capped(tf.constant(100))) == 5


def test_set_loop_options_for_a_non_loop_variable_is_an_error():
    @tf.function
    def f(n):
        x, other = tf.zeros([1]), tf.zeros([1])
        for i in tf.range(n):
            autograph.experimental.set_loop_options(shape_invariants=[(other, [None])])
            x = x + 1.0
        return x

    with pytest.raises(ValueError, match="not a variable of this loop"):
        f(tf.constant(2))


def test_shape_change_without_invariant_is_an_error():
    @tf.function
    def f(n):
        x = tf.zeros([1])
        for i in tf.range(n):
            x = tf.concat([x, [1.0]], 0)
        return x

    with pytest.raises(ValueError, match="shape"):
        f(tf.constant(2))


def test_nonlocal_variables_are_carried():
    @tf.function
    def f(x):
        count = tf.constant(0)

        def bump():
            nonlocal count
            if x > 0:
                count = count + 1
            for _ in tf.range(tf.maximum(x, 0)):
                count = count + 10
        bump()
        return count

    assert val(f(tf.constant(2))) == 21
    assert val(f(tf.constant(-1))) == 0


def test_python_while_with_tensor_break_becomes_graph_loop():
    @tf.function
    def first_positive(x):
        i = 0
        while i < 5:
            if x[i] > 0:
                break
            i += 1
        return i

    assert val(first_positive(tf.constant([0, 0, 3, 0, 0]))) == 2
    assert val(first_positive(tf.constant([0, 0, 0, 0, 0]))) == 5


def test_variable_as_condition():
    flag = tf.Variable(True)

    @tf.function
    def f(x):
        if flag:
            x = x + 1
        return x

    assert val(f(tf.constant(1))) == 2
    flag.assign(False)
    assert val(f(tf.constant(1))) == 1


def test_return_in_else_branch_inside_loop():
    @tf.function
    def f(n):
        for i in tf.range(n):
            if i < 3:
                pass
            else:
                return i * 10
        return -1

    assert val(f(tf.constant(10))) == 30
    assert val(f(tf.constant(2))) == -1
