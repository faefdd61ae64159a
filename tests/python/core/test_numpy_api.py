"""kiln.experimental.numpy (tf.experimental.numpy, the guide
https://www.tensorflow.org/guide/tf_numpy): NumPy's dtypes and promotion over kiln's ops,
eagerly, in kiln.function and under GradientTape, and experimental_enable_numpy_behavior.
Expected dtypes and values are TensorFlow 2.21's (NumPy 2 promotion), observed by running the
same calls."""
import numpy as np
import pytest

import kiln as tf
import kiln.experimental.numpy as tnp
from kiln.experimental.numpy import _behavior


@pytest.fixture(autouse=True)
def _numpy_behavior_off():
    _behavior.disable()
    yield
    _behavior.disable()


def _check(t, dtype, value):
    assert isinstance(t, tnp.ndarray), type(t)
    assert t.dtype.name == dtype, (t.dtype.name, dtype)
    np.testing.assert_allclose(np.asarray(t), value, rtol=1e-6)


i = lambda: tnp.array([1, 2, 3])  # noqa: E731
m = lambda: tnp.array([[1., 2.], [3., 4.]])  # noqa: E731

# (call, TensorFlow 2.21's dtype, value)
CASES = [
    (lambda: tnp.array([1, 2, 3]), "int64", [1, 2, 3]),
    (lambda: tnp.array([1.5, 2]), "float64", [1.5, 2.0]),
    (lambda: tnp.array([True, False]), "bool", [True, False]),
    (lambda: tnp.array([1, 2], dtype=tnp.float32), "float32", [1.0, 2.0]),
    (lambda: tnp.array(3, ndmin=2), "int64", [[3]]),
    (lambda: tnp.asarray(tf.constant([1., 4.])), "float32", [1.0, 4.0]),
    (lambda: tnp.asarray(np.array([1, 2], np.float32)), "float32", [1.0, 2.0]),
    (lambda: tnp.zeros(3), "float64", [0, 0, 0]),
    (lambda: tnp.zeros((2, 3), dtype=tnp.int32), "int32", np.zeros((2, 3))),
    (lambda: tnp.ones([2]), "float64", [1, 1]),
    (lambda: tnp.full((2,), 7), "int64", [7, 7]),
    (lambda: tnp.full((2,), 7.5), "float64", [7.5, 7.5]),
    (lambda: tnp.full_like(i(), 2.5), "int64", [2, 2, 2]),
    (lambda: tnp.ones_like(i()), "int64", [1, 1, 1]),
    (lambda: tnp.eye(2), "float64", [[1, 0], [0, 1]]),
    (lambda: tnp.arange(5), "int64", [0, 1, 2, 3, 4]),
    (lambda: tnp.arange(1, 2, 0.25), "float64", [1.0, 1.25, 1.5, 1.75]),
    (lambda: tnp.arange(3, dtype=tnp.float32), "float32", [0, 1, 2]),
    (lambda: tnp.linspace(0, 1, 5), "float64", [0.0, 0.25, 0.5, 0.75, 1.0]),
    (lambda: tnp.linspace(0, 1, 4, endpoint=False), "float64", [0.0, 0.25, 0.5, 0.75]),
    (lambda: tnp.reshape(tnp.arange(6), (2, 3)), "int64", [[0, 1, 2], [3, 4, 5]]),
    (lambda: tnp.transpose(m()), "float64", [[1, 3], [2, 4]]),
    (lambda: tnp.ravel(m()), "float64", [1, 2, 3, 4]),
    (lambda: tnp.concatenate([i(), tnp.array([1.5])]), "float64", [1, 2, 3, 1.5]),
    (lambda: tnp.concatenate([m(), m()], axis=1), "float64", [[1, 2, 1, 2], [3, 4, 3, 4]]),
    (lambda: tnp.stack([i(), tf.constant([1., 4., 9.])]), "float64", [[1, 2, 3], [1, 4, 9]]),
    (lambda: tnp.vstack([i(), i()]), "int64", [[1, 2, 3], [1, 2, 3]]),
    (lambda: tnp.hstack([i(), i()]), "int64", [1, 2, 3, 1, 2, 3]),
    (lambda: tnp.sum(i()), "int64", 6),
    (lambda: tnp.sum(m(), axis=0), "float64", [4, 6]),
    (lambda: tnp.sum(tnp.array([True, False, True])), "int64", 2),
    (lambda: tnp.sum(tf.constant([1, 2], tf.int32)), "int64", 3),
    (lambda: tnp.sum(m(), axis=1, keepdims=True), "float64", [[3], [7]]),
    (lambda: tnp.mean(i()), "float64", 2.0),
    (lambda: tnp.mean(tf.constant([1., 4., 9.])), "float32", 4.6666665),
    (lambda: tnp.max(i()), "int64", 3),
    (lambda: tnp.amax(m(), axis=1), "float64", [2, 4]),
    (lambda: tnp.min(tf.constant([1., 4., 9.])), "float32", 1.0),
    (lambda: tnp.prod(tf.constant([2, 3], tf.int32)), "int64", 6),
    (lambda: tnp.argmax(tf.constant([1., 4., 9.])), "int64", 2),
    (lambda: tnp.argmax(m(), axis=1), "int64", [1, 1]),
    (lambda: tnp.std(tf.constant([1., 4., 9.])), "float32", 3.2998316),
    (lambda: tnp.var(i()), "float64", 0.6666666666666666),
    (lambda: tnp.cumsum(tf.constant([1, 2], tf.int32)), "int64", [1, 3]),
    (lambda: tnp.dot(i(), i()), "int64", 14),
    (lambda: tnp.dot(m(), m()), "float64", [[7, 10], [15, 22]]),
    (lambda: tnp.dot(i(), tnp.array([1., 2., 3.], dtype=tnp.float32)), "float64", 14.0),
    (lambda: tnp.matmul(tnp.array([[1, 2]]), m()), "float64", [[7, 10]]),
    (lambda: tnp.where(tnp.array([True, False, True]), i(), 0.5), "float64", [1, 0.5, 3]),
    (lambda: tnp.clip(i(), 1, 2), "int64", [1, 2, 2]),
    (lambda: tnp.clip(i(), 1.5, 2), "float64", [1.5, 2, 2]),
    (lambda: tnp.exp(tf.constant([1., 4., 9.])), "float32", [2.7182817, 54.59815, 8103.084]),
    (lambda: tnp.log(tf.constant([1., 4., 9.])), "float32", [0.0, 1.3862944, 2.1972246]),
    (lambda: tnp.abs(tnp.array([-1, 2])), "int64", [1, 2]),
    (lambda: tnp.square(i()), "int64", [1, 4, 9]),
    (lambda: tnp.sin(tnp.array([0.0])), "float64", [0.0]),
    (lambda: tnp.ceil(tnp.array([1.2])), "float64", [2.0]),
    (lambda: tnp.sign(tnp.array([-2, 0, 3])), "int64", [-1, 0, 1]),
    (lambda: tnp.add(i(), 1.5), "float64", [2.5, 3.5, 4.5]),
    (lambda: tnp.add(tf.constant([1], tf.int32), tf.constant([1.], tf.float32)), "float64",
     [2.0]),
    (lambda: tnp.multiply(tf.constant([1., 4., 9.]), 2), "float32", [2, 8, 18]),
    (lambda: tnp.divide(i(), 2), "float64", [0.5, 1.0, 1.5]),
    (lambda: tnp.floor_divide(i(), 2), "int64", [0, 1, 1]),
    (lambda: tnp.mod(i(), 2), "int64", [1, 0, 1]),
    (lambda: tnp.power(i(), 2), "int64", [1, 4, 9]),
    (lambda: tnp.power(i(), 0.5), "float64", [1.0, 1.4142135623730951, 1.7320508075688772]),
    (lambda: tnp.maximum(i(), 2.5), "float64", [2.5, 2.5, 3.0]),
    (lambda: tnp.less(i(), 2.5), "bool", [True, True, False]),
    (lambda: tnp.logical_and(tnp.array([True, False]), True), "bool", [True, False]),
    (lambda: tnp.isnan(tnp.array([1.0, np.nan])), "bool", [False, True]),
    (lambda: tnp.tile(i(), 2), "int64", [1, 2, 3, 1, 2, 3]),
    (lambda: tnp.broadcast_to(i(), (2, 3)), "int64", [[1, 2, 3], [1, 2, 3]]),
    (lambda: tnp.flip(i()), "int64", [3, 2, 1]),
    (lambda: tnp.swapaxes(m(), 0, 1), "float64", [[1, 3], [2, 4]]),
    (lambda: tnp.take(i(), [0, 2]), "int64", [1, 3]),
    (lambda: tnp.diag(tnp.array([1, 2])), "int64", [[1, 0], [0, 2]]),
    (lambda: tnp.outer(i(), i()), "int64", [[1, 2, 3], [2, 4, 6], [3, 6, 9]]),
    (lambda: tnp.isclose(tf.constant([1., 4., 9.]), 1.0), "bool", [True, False, False]),
    (lambda: tnp.asarray(i(), dtype=tnp.float32), "float32", [1, 2, 3]),
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_api_matches_tensorflow(k):
    call, dtype, value = CASES[k]
    _check(call(), dtype, value)


def test_shapes_constants_and_types():
    assert tnp.shape(m()) == (2, 2) and tnp.ndim(m()) == 2 and tnp.size(m()) == 4
    assert tnp.ndarray is tf.Tensor and isinstance(i(), tnp.ndarray)
    assert tnp.float32 is np.float32 and tnp.int64 is np.int64 and tnp.newaxis is None
    assert (tnp.pi, tnp.e, tnp.inf) == (np.pi, np.e, np.inf)
    assert tuple(tnp.moveaxis(tnp.zeros((2, 3, 4)), 0, -1).shape) == (3, 4, 2)
    assert tnp.result_type(tnp.int32, 1.5) == tf.float64
    rows, cols = tnp.where(tnp.array([[True, False], [False, True]]))
    assert rows.numpy().tolist() == [0, 1] and cols.numpy().tolist() == [0, 1]
    assert bool(tnp.allclose(tf.constant([1., 2.]), tf.constant([1., 2.])))


def test_integer_math_gives_float64():
    # TensorFlow 2.21 needs numpy behavior on for these (it calls .astype); NumPy's dtypes.
    _check(tnp.sqrt(i()), "float64", [1.0, 1.4142135623730951, 1.7320508075688772])
    _check(tnp.exp(i()), "float64", [2.718281828459045, 7.38905609893065, 20.085536923187668])
    _check(tnp.floor(i()), "float64", [1, 2, 3])
    _check(tnp.around(tnp.array([1.5, 2.5])), "float64", [2.0, 2.0])
    _check(tnp.round(tnp.array([1.25, 2.5]), 1), "float64", [1.2, 2.5])


def test_random():
    tnp.random.seed(1)
    a = tnp.random.randn(2, 3)
    assert a.dtype == tf.float64 and tuple(a.shape) == (2, 3)
    assert tnp.random.rand(4).dtype == tf.float64
    u = tnp.random.uniform(0, 1, size=(100,))
    assert u.dtype == tf.float64 and 0 <= float(tnp.min(u)) and float(tnp.max(u)) < 1
    r = tnp.random.randint(0, 5, size=(50,))
    assert r.dtype == tf.int64 and set(r.numpy().tolist()) <= set(range(5))
    assert tuple(tnp.random.standard_normal(size=(3,)).shape) == (3,)
    tnp.random.seed(7)
    x = tnp.random.randn(3)
    tnp.random.seed(7)
    assert tnp.random.randn(3).numpy().tolist() == x.numpy().tolist()


def test_inside_function():
    @tf.function
    def f(x, y):
        return tnp.sum(tnp.exp(x) * 2) + tnp.mean(x), tnp.dot(tnp.asarray(y), y), \
            tnp.concatenate([x, tnp.ones(2, dtype=tnp.float32)])

    a, b, c = f(tf.constant([0., 1.]), tf.constant([1, 2], tf.int32))
    assert a.dtype == tf.float32 and float(a) == pytest.approx(2 + 2 * np.e + 0.5, rel=1e-6)
    assert b.dtype == tf.int32 and int(b) == 5
    assert c.numpy().tolist() == [0., 1., 1., 1.]


def test_gradients_through_tnp():
    x = tf.Variable([1., 2., 3.])
    with tf.GradientTape() as tape:
        y = tnp.sum(tnp.exp(x) * 2) + tnp.mean(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * np.exp([1., 2., 3.]) + 1 / 3,
                               rtol=1e-6)
    with tf.GradientTape() as tape:
        y = tnp.dot(tnp.asarray(x), tnp.array([1, 2, 3]))  # int64 promotes x to float64
    assert y.dtype == tf.float64 and float(y) == 14.0
    assert tape.gradient(y, x).numpy().tolist() == [1., 2., 3.]

    @tf.function
    def loss(v):
        return tnp.sum(tnp.square(tnp.clip(v, 0, 2.5)))
    with tf.GradientTape() as tape:
        y = loss(x)
    assert tape.gradient(y, x).numpy().tolist() == [2., 4., 0.]


# ---- experimental_enable_numpy_behavior ----

PROMOTION = [  # (operator call, TensorFlow 2.21's dtype, value) with numpy behavior on
    (lambda: tf.constant([1, 2], tf.int32) + 1.5, "float64", [2.5, 3.5]),
    (lambda: 1.5 + tf.constant([1, 2], tf.int32), "float64", [2.5, 3.5]),
    (lambda: tf.constant([1.], tf.float32) + tf.constant([2.], tf.float64), "float64", [3.0]),
    (lambda: 3 + tf.constant([2], tf.uint8), "uint8", [5]),
    (lambda: tf.constant([2], tf.uint8) + 300, "uint8", [46]),
    (lambda: tf.constant([1, 2], tf.int32) + tf.constant([2], tf.int64), "int64", [3, 4]),
    (lambda: tf.constant([1, 2], tf.int32) * 2, "int32", [2, 4]),
    (lambda: tf.constant([1, 2], tf.int32) / 2, "float64", [0.5, 1.0]),
    (lambda: tf.constant([1.], tf.float32) * 2.5, "float32", [2.5]),
    (lambda: tf.constant([1, 2], tf.int32) + tf.constant([1., 2.]), "float64", [2.0, 4.0]),
    (lambda: tf.constant([True, False]) + tf.constant([1, 2], tf.int32), "int32", [2, 2]),
    (lambda: tf.constant([1, 2], tf.int32) < 1.5, "bool", [True, False]),
    (lambda: tf.constant([1, 2], tf.int32) == 1.0, "bool", [True, False]),
    (lambda: tf.constant([1, 2], tf.int32) ** 2.0, "float64", [1.0, 4.0]),
    (lambda: tf.constant([1, 2], tf.int32) // 2.0, "float64", [0.0, 1.0]),
    (lambda: tf.constant([1, 2], tf.int32) % 1.5, "float64", [1.0, 0.5]),
    (lambda: tf.constant([[1, 2]]) @ tf.constant([[1.], [2.]]), "float64", [[5.0]]),
    (lambda: tf.constant([1.], tf.float32) + np.float64(2.0), "float64", [3.0]),
    (lambda: tf.constant([1, 2], tf.int32) + np.int64(1), "int64", [2, 3]),
    (lambda: tf.constant([1, 2], tf.int32) + [1.5, 2.5], "float64", [2.5, 4.5]),
    (lambda: tf.constant([1, 2], tf.int32) + [1, 2], "int32", [2, 4]),
    (lambda: tf.Variable([1, 2]) + 1.5, "float64", [2.5, 3.5]),
    (lambda: tf.constant([1, 2], tf.int32) + 2 ** 40, "int32", [1, 2]),
    (lambda: tf.constant([1.], tf.float16) + 1.5, "float16", [2.5]),
]


@pytest.mark.parametrize("k", range(len(PROMOTION)))
def test_operator_promotion(k):
    tnp.experimental_enable_numpy_behavior()
    call, dtype, value = PROMOTION[k]
    _check(call(), dtype, value)


def test_promotion_off_by_default_and_undone():
    with pytest.raises(TypeError, match="Cannot convert 1.5 to EagerTensor of dtype int32"):
        tf.constant([1, 2], tf.int32) + 1.5
    tnp.experimental_enable_numpy_behavior()
    assert (tf.constant([1], tf.int32) + 1.5).dtype == tf.float64
    # tf.add and friends keep TensorFlow's rules (only the operators promote).
    with pytest.raises(TypeError, match="Cannot convert 1.5"):
        tf.add(tf.constant([1], tf.int32), 1.5)
    _behavior.disable()
    assert not hasattr(tf.constant(1.0), "T")
    with pytest.raises(TypeError):
        tf.constant([1, 2], tf.int32) + 1.5


def test_missing_dtypes_are_named():
    # TensorFlow 2.21 gives int16 for int8 + uint8 (and int8 + int16); kiln has no int16.
    tnp.experimental_enable_numpy_behavior()
    with pytest.raises(TypeError, match="kiln has no int16 dtype"):
        tf.constant([1], tf.int8) + tf.constant([2], tf.uint8)
    assert not hasattr(tf, "int16")


def test_prefer_float32():
    tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    _check(tnp.array([1.5]), "float32", [1.5])
    _check(tnp.zeros(2), "float64", [0, 0])
    _check(tf.constant([1], tf.int32) + 1.5, "float64", [2.5])
    _check(tf.constant([1.], tf.float32) + 1.5, "float32", [2.5])
    _check(tnp.exp(i()), "float64", [2.718281828459045, 7.38905609893065, 20.085536923187668])
    _check(tnp.linspace(0, 1, 3), "float32", [0, 0.5, 1])
    _check(tnp.arange(1.5), "float32", [0, 1])


def test_tensor_methods():
    tnp.experimental_enable_numpy_behavior()
    x = tf.constant([[1., 2., 3.], [4., 5., 6.]])
    _check(x.T, "float32", [[1, 4], [2, 5], [3, 6]])
    _check(x.reshape(3, 2), "float32", [[1, 2], [3, 4], [5, 6]])
    _check(x.reshape((3, 2)), "float32", [[1, 2], [3, 4], [5, 6]])
    _check(x.reshape(-1), "float32", [1, 2, 3, 4, 5, 6])
    _check(x.astype(tf.int32), "int32", [[1, 2, 3], [4, 5, 6]])
    _check(x.astype("int64"), "int64", [[1, 2, 3], [4, 5, 6]])
    _check(x.astype(np.int8), "int8", [[1, 2, 3], [4, 5, 6]])
    _check(x.ravel(), "float32", [1, 2, 3, 4, 5, 6])
    _check(x.clip(2, 5), "float32", [[2, 2, 3], [4, 5, 5]])
    _check(x.clip(2.5, 5), "float32", [[2.5, 2.5, 3], [4, 5, 5]])
    _check(x.transpose(), "float32", [[1, 4], [2, 5], [3, 6]])
    _check(x.flatten(), "float32", [1, 2, 3, 4, 5, 6])
    _check(x.size, "int64", 6)
    _check(x.max(), "float32", 6.0)
    _check(x.mean(axis=0), "float32", [2.5, 3.5, 4.5])
    _check(x.min(), "float32", 1.0)
    _check(tf.constant([1, 2], tf.int32).clip(0, 1.5), "float64", [1.0, 1.5])
    _check(round(tf.constant(2.5)), "float32", 2.0)
    assert x.tolist() == [[1., 2., 3.], [4., 5., 6.]] and x.data is x


def test_numpy_indexing():
    tnp.experimental_enable_numpy_behavior()
    x = tf.constant([[1., 2., 3.], [4., 5., 6.]])
    _check(x[x > 2], "float32", [3, 4, 5, 6])
    _check(x[[0, 1], [1, 2]], "float32", [2, 6])
    _check(x[:, [0, 2]], "float32", [[1, 3], [4, 6]])
    _check(x[tf.constant([1, 0])], "float32", [[4, 5, 6], [1, 2, 3]])


def test_numpy_behavior_in_function_and_tape():
    tnp.experimental_enable_numpy_behavior()

    @tf.function
    def f(a):
        return (a + 1.5).T, a.reshape(-1), a.astype("float32").clip(0, 1)

    t, r, c = f(tf.constant([[1, 2]]))
    _check(t, "float64", [[2.5], [3.5]])
    _check(r, "int32", [1, 2])
    _check(c, "float32", [[1, 1]])
    x = tf.Variable([1., 2., 3.])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.identity(x).astype("float64") * tnp.array([1.5, 2, 3]))
    assert y.dtype == tf.float64
    assert tape.gradient(y, x).numpy().tolist() == [1.5, 2., 3.]


def test_guide_examples():  # the tf_numpy guide's cells, TensorFlow 2.21's results
    tnp.experimental_enable_numpy_behavior()
    values = [tnp.asarray(1, dtype=d) for d in (tnp.int32, tnp.int64, tnp.float32, tnp.float64)]
    seen = [f"{a.dtype.name}+{b.dtype.name}={(a + b).dtype.name}"
            for k, a in enumerate(values) for b in values[k + 1:]]
    assert seen == ["int32+int64=int64", "int32+float32=float64", "int32+float64=float64",
                    "int64+float32=float64", "int64+float64=float64", "float32+float64=float64"]
    assert (tnp.asarray(1).dtype, tnp.asarray(1.).dtype) == (tf.int64, tf.float64)
    assert tuple((tnp.ones([2, 3]) + tnp.ones([3]) + tnp.ones([1, 2, 1])).shape) == (1, 2, 3)
    x = tnp.arange(24).reshape(2, 3, 4)
    assert x[1, tnp.newaxis, 1:3, ...].numpy().tolist() == [[[16, 17, 18, 19],
                                                            [20, 21, 22, 23]]]
    assert x[:, (True, False, True)].numpy().tolist() == [[[0, 1, 2, 3], [8, 9, 10, 11]],
                                                          [[12, 13, 14, 15], [20, 21, 22, 23]]]
    assert x[1, (0, 0, 1), tnp.asarray([0, 1, 1])].numpy().tolist() == [12, 13, 17]
    with pytest.raises(TypeError):
        tnp.arange(6)[1] = -1
    assert float(np.sum(tnp.ones([2, 3]))) == 6.0 and tnp.sum(np.ones([2, 3])).dtype == tf.float64
    assert (tnp.ones([2]) + np.ones([2])).dtype == tf.float64
    assert (tnp.ones([2, 2]) + tf.ones([2, 1])).dtype == tf.float64


def test_guide_model_gradients_and_jacobian():
    tnp.experimental_enable_numpy_behavior()
    tnp.random.seed(0)
    size = 32
    w1 = tnp.random.randn(size, 64).astype(tnp.float32) / tnp.sqrt(size).astype(tnp.float32)
    bias = tnp.random.randn(64).astype(tnp.float32)
    w2 = tnp.random.randn(64, 2).astype(tnp.float32) / 8
    weights = (w1, bias, w2)

    def predict(inputs):
        y = tnp.maximum(tnp.matmul(inputs, w1) + bias, 0)
        return tnp.matmul(y, w2)

    def compute_gradients(inputs, labels):
        with tf.GradientTape() as tape:
            tape.watch(weights)
            loss = tnp.sum(tnp.square(predict(inputs) - labels))
        return tape.gradient(loss, weights)

    inputs = tnp.random.randn(8, 32).astype(tnp.float32)
    labels = tnp.random.randn(8, 2).astype(tnp.float32)
    grads = compute_gradients(inputs, labels)
    assert [tuple(g.shape) for g in grads] == [(32, 64), (64,), (64, 2)]
    assert isinstance(grads[0], tnp.ndarray)
    compiled = tf.function(compute_gradients)(inputs, labels)
    for a, b in zip(grads, compiled):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)
    inp = tnp.ones([16, 32], tnp.float32)
    with tf.GradientTape() as tape:
        tape.watch(inp)
        out = predict(inp)
    assert tuple(tape.batch_jacobian(out, inp).shape) == (16, 2, 32)


def test_reachable_as_an_attribute_of_tf_experimental():
    # The guide's "tnp = tf.experimental.numpy", without importing the submodule.
    assert tf.experimental.numpy is tnp
    _check(tf.experimental.numpy.ones(2) + 1, "float64", [2.0, 2.0])
