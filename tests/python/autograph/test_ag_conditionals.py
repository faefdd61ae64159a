"""Tensor-dependent if statements, conditional expressions and logical
operators inside kiln.function (kiln.cond), with their error messages."""
import pytest

import kiln as tf
from kiln import autograph


def val(t):
    return t.numpy().item() if hasattr(t, "numpy") else t


def test_if_else_on_tensor_traces_both_branches(capsys):
    @tf.function
    def f(x):
        if x > 0:
            print("trace positive")
            y = x * 2
        else:
            print("trace other")
            y = -x
        return y

    assert val(f(tf.constant(3))) == 6
    assert val(f(tf.constant(-4))) == 4
    assert capsys.readouterr().out.split() == ["trace", "positive", "trace", "other"]


def test_if_on_python_value_runs_one_branch(capsys):
    @tf.function
    def f(x, flag):
        if flag:
            print("only this")
            x = x + 1
        else:
            print("not this")
        return x

    assert val(f(tf.constant(1), True)) == 2
    assert capsys.readouterr().out.strip() == "only this"


def test_elif_chain_and_nested_ifs():
    @tf.function
    def sign(x):
        if x > 0:
            s = 1
        elif x < 0:
            s = -1
        else:
            s = 0
        if s != 0:
            if x > 10:
                s = s * 100
        return s

    assert [val(sign(tf.constant(v))) for v in (5, -5, 0, 50)] == [1, -1, 0, 100]


def test_variable_modified_in_one_branch_keeps_value_in_other():
    @tf.function
    def f(x):
        y = x
        if x > 0:
            y = y + 10
        return y

    assert val(f(tf.constant(1))) == 11
    assert val(f(tf.constant(-1))) == -1


def test_python_number_in_branch_takes_other_branch_dtype():
    @tf.function
    def f(x):
        if x > 0:
            y = tf.constant(1.5)
        else:
            y = 2
        return y

    r = f(tf.constant(-1))
    assert r.dtype == tf.float32 and val(r) == 2.0


def test_return_in_both_branches_and_early_return():
    @tf.function
    def absval(x):
        if x > 0:
            return x
        return -x

    assert val(absval(tf.constant(-3.0))) == 3.0
    assert val(absval(tf.constant(2.0))) == 2.0


def test_name_defined_in_one_branch_is_an_error():
    @tf.function
    def f(x):
        if x > 0:
            y = x * 2
        return y

    with pytest.raises(ValueError, match=r"'y' is defined in the if branch .* not in the else "
                                         r"branch") as e:
        f(tf.constant(1))
    assert "test_ag_conditionals.py:" in str(e.value)


def test_name_defined_only_in_else_branch_is_an_error():
    @tf.function
    def f(x):
        if x > 0:
            pass
        else:
            z = x
        return z

    with pytest.raises(ValueError, match="'z' is defined in the else branch"):
        f(tf.constant(1))


def test_name_defined_in_one_branch_but_unused_is_fine():
    @tf.function
    def f(x):
        if x > 0:
            tmp = x * 2
            tf.print(tmp)
        return x

    assert val(f(tf.constant(1))) == 1


def test_return_in_one_branch_only_is_an_error():
    @tf.function
    def f(x):
        if x > 0:
            return x

    with pytest.raises(ValueError, match=r"the if branch of this tensor-dependent if returns "
                                         r"Tensor\(int32.* but the else branch returns None"):
        f(tf.constant(1))


def test_return_structures_differ_error_names_both():
    @tf.function
    def f(x):
        if x > 0:
            return x, x
        return x

    with pytest.raises(ValueError, match=r"the return value has a different structure in the "
                                         r"if branch \(\(Tensor.*\)\) than in the else branch "
                                         r"\(Tensor"):
        f(tf.constant(1))


def test_dtype_mismatch_error_names_variable():
    @tf.function
    def f(x):
        if x > 0:
            y = tf.constant(1)
        else:
            y = tf.constant(1.0)
        return y

    with pytest.raises(TypeError, match="'y' has dtype int32 in the if branch but float32 in "
                                        "the else branch"):
        f(tf.constant(1))


def test_python_object_in_branch_is_an_error():
    @tf.function
    def f(x):
        if x > 0:
            y = "a"
        else:
            y = "b"
        return x, y

    with pytest.raises(TypeError, match="'y' is 'b' in the else branch and 'a' in the if "
                                        "branch"):
        f(tf.constant(1))


def test_same_python_value_in_both_branches_stays_python():
    seen = []

    @tf.function
    def f(x):
        if x > 0:
            mode = "same"
        else:
            mode = "same"
        seen.append(mode)
        return x

    f(tf.constant(1))
    assert seen == ["same"]


def test_logical_operators_on_tensors():
    @tf.function
    def f(x, y):
        if x > 0 and y > 0:
            r = 1
        elif not x > 0 or y < -5:
            r = 2
        else:
            r = 3
        return r

    cases = {(1, 1): 1, (-1, 1): 2, (1, -9): 2, (1, -1): 3}
    for (a, b), want in cases.items():
        assert val(f(tf.constant(a), tf.constant(b))) == want


def test_and_is_lazy_on_tensors():
    data = tf.constant([5, 6, 7])

    @tf.function
    def f(i):
        # data[i] must not be evaluated when i is out of range.
        return i < 3 and data[tf.minimum(i, 2)] > 5

    assert val(f(tf.constant(1))) is True
    assert val(f(tf.constant(0))) is False
    assert val(f(tf.constant(7))) is False


def test_conditional_expression_on_tensor():
    @tf.function
    def f(x):
        return x if x > 0 else -x

    assert val(f(tf.constant(-4))) == 4


def test_assert_on_python_value():
    @tf.function
    def f(x, n):
        assert n > 0, "n must be positive"
        return x

    with pytest.raises(AssertionError, match="n must be positive"):
        f(tf.constant(1), -1)


def test_eager_to_graph_uses_python_semantics():
    def f(x):
        if x > 0:
            y = x + 1
        else:
            y = x - 1
        return y

    g = autograph.to_graph(f)
    assert val(g(tf.constant(1))) == 2
    assert val(g(tf.constant(-1))) == -2


def test_global_modified_in_tensor_branch_warns():
    @tf.function
    def f(x):
        global _counter
        if x > 0:
            _counter = _counter + 1
        return x

    globals()["_counter"] = 0
    with pytest.warns(autograph.AutoGraphWarning,
                      match=r"test_ag_conditionals.py:\d+: the assignment to global '_counter'"):
        f(tf.constant(1))
    assert _counter == 1  # noqa: F821 -- once, at trace time


def test_attribute_assignment_in_tensor_branch_warns():
    class Box:
        n = 0

    box = Box()

    @tf.function
    def f(x):
        if x > 0:
            box.n = 5
        return x

    with pytest.warns(autograph.AutoGraphWarning, match="the assignment to 'box.n'"):
        f(tf.constant(1))


def _has_assert_op():
    debugging = getattr(tf, "debugging", None)
    return hasattr(tf, "Assert") or hasattr(debugging, "assert_true") or \
        hasattr(debugging, "Assert")


def test_assert_on_eager_tensor():
    def f(x):
        assert x > 0, "x must be positive"
        return x

    g = autograph.to_graph(f)
    assert val(g(tf.constant(1))) == 1
    with pytest.raises((tf.errors.InvalidArgumentError, AssertionError),
                       match="x must be positive"):
        g(tf.constant(-1))


@pytest.mark.skipif(not _has_assert_op(), reason="kiln has no assertion op yet")
def test_assert_on_traced_tensor_checks_at_run_time():
    @tf.function
    def f(x):
        assert x > 0, "x must be positive"
        return x + 1

    assert val(f(tf.constant(1))) == 2
    with pytest.raises(tf.errors.InvalidArgumentError, match="x must be positive"):
        f(tf.constant(-1))
