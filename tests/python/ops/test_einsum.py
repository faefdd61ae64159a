"""tf.einsum against numpy.einsum: eagerly, in a function, under jit_compile,
and its gradient."""
import numpy as np
import pytest

import kiln as tf

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("abc,cde->abde", [(2, 3, 4), (4, 2, 3)]),
    ("aecd,abcd->acbe", [(2, 3, 2, 4), (2, 5, 2, 4)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ij", [(2, 3)]),
    ("...ij,jk->...ik", [(2, 2, 3), (3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
]


def operands(shapes):
    rng = np.random.RandomState(0)
    return [rng.randn(*s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("eq, shapes", CASES)
@pytest.mark.parametrize("mode", ["eager", "function", "jit"])
def test_matches_numpy(eq, shapes, mode):
    xs = operands(shapes)
    fn = (lambda *a: tf.einsum(eq, *a))
    if mode != "eager":
        fn = tf.function(fn, jit_compile=mode == "jit")
    np.testing.assert_allclose(fn(*xs).numpy(), np.einsum(eq, *xs), rtol=1e-5, atol=1e-5)


def test_gradient_of_a_contraction():
    a, b = [tf.constant(x) for x in operands([(2, 3, 4), (2, 4, 5)])]
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.reduce_sum(tf.einsum("bij,bjk->bik", a, b) ** 2)
    ga, gb = tape.gradient(y, [a, b])
    c = np.einsum("bij,bjk->bik", a.numpy(), b.numpy())
    np.testing.assert_allclose(ga.numpy(), np.einsum("bik,bjk->bij", 2 * c, b.numpy()), rtol=1e-4)
    np.testing.assert_allclose(gb.numpy(), np.einsum("bij,bik->bjk", a.numpy(), 2 * c), rtol=1e-4)


def test_errors():
    x = np.ones((2, 2), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="2 terms for 1"):
        tf.einsum("ij,jk->ik", x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="output letters"):
        tf.einsum("ij->iz", x)
