"""kiln.keras.optimizers against NumPy references (Keras 3's update rules), eagerly
and inside kiln.function; schedules; get/serialize; the guide's multiple-optimizer
example; error paths."""
import math
import warnings

import numpy as np
import pytest

import kiln as tf

opts = tf.keras.optimizers
sched = tf.keras.optimizers.schedules

# Two steps of fixed gradients for a (2, 3) and a (3,) variable.
W0 = [np.array([[0.5, -1.0, 2.0], [0.0, 1.5, -0.5]]), np.array([0.1, -0.2, 0.3])]
G = [[np.array([[0.3, -0.1, 0.2], [1.0, -2.0, 0.05]]), np.array([0.5, 0.0, -0.4])],
     [np.array([[-0.2, 0.4, 0.1], [0.5, 0.5, -0.3]]), np.array([0.1, 0.2, -0.1])]]


# ---- NumPy references (float64), one step each; `s` holds the slots ----

def np_sgd(w, g, s, t, lr, momentum=0.0, nesterov=False):
    if momentum == 0:
        return w - lr * g
    m = momentum * s.get("m", 0.0) - lr * g
    s["m"] = m
    return w + (momentum * m - lr * g if nesterov else m)


def np_adam(w, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    m = s.get("m", 0.0) + (g - s.get("m", 0.0)) * (1 - beta_1)
    v = s.get("v", 0.0) + (g * g - s.get("v", 0.0)) * (1 - beta_2)
    s["m"], s["v"] = m, v
    if amsgrad:
        v = s["vhat"] = np.maximum(s.get("vhat", 0.0), v)
    alpha = lr * math.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
    return w - alpha * m / (np.sqrt(v) + epsilon)


def np_rmsprop(w, g, s, t, lr, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    v = s["v"] = rho * s.get("v", 0.0) + (1 - rho) * g * g
    if centered:
        a = s["a"] = rho * s.get("a", 0.0) + (1 - rho) * g
        denom = v - a * a + epsilon
    else:
        denom = v + epsilon
    inc = lr * g / np.sqrt(denom)
    if momentum > 0:
        inc = s["mom"] = momentum * s.get("mom", 0.0) + inc
    return w - inc


def np_run(step_fn, grads_per_step, w0=W0, weight_decay=None, clip=None, lr=None,
           lr_at=None, **kw):
    """Weights after each step: [[w_a, w_b] after step 1, ... after step 2].
    lr_at(i) gives the learning rate of step i (0-based) for schedules."""
    ws = [w.copy() for w in w0]
    slots = [{} for _ in ws]
    out = []
    for t, grads in enumerate(grads_per_step, start=1):
        lr_t = lr_at(t - 1) if lr_at else lr
        grads = clip(grads) if clip else grads
        if weight_decay:
            ws = [w - w * weight_decay * lr_t for w in ws]
        ws = [step_fn(w, g, s, t, lr_t, **kw) for w, g, s in zip(ws, grads, slots)]
        out.append([w.copy() for w in ws])
    return out


def np_clip_norm(grads, c):
    return [g * c / max(np.sqrt(np.sum(g * g)), c) for g in grads]


def np_clip_global(grads, c):
    norm = np.sqrt(sum(np.sum(g * g) for g in grads))
    return [g * c / max(norm, c) for g in grads]


def np_clip_value(grads, c):
    return [np.clip(g, -c, c) for g in grads]


# ---- running an optimizer on kiln variables ----

def kiln_run(opt, mode, grads_per_step=G, w0=W0):
    """Applies each step's gradients with opt, eagerly or inside one
    kiln.function; returns the weights after each step and the function."""
    vs = [tf.Variable(w.astype(np.float32)) for w in w0]

    def step(grads):
        return opt.apply_gradients(zip(grads, vs))

    fn = tf.function(step) if mode == "function" else step
    out = []
    for grads in grads_per_step:
        fn([tf.constant(g.astype(np.float32)) for g in grads])
        out.append([v.numpy().copy() for v in vs])
    return out, fn, vs


def assert_steps(got, want, rtol=1e-5, atol=1e-6):
    assert len(got) == len(want)
    for step, (g_ws, w_ws) in enumerate(zip(got, want)):
        for g, w in zip(g_ws, w_ws):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                       err_msg=f"after step {step + 1}")


CASES = {
    "sgd": (lambda: opts.SGD(0.1), np_sgd, dict(lr=0.1)),
    "sgd_momentum": (lambda: opts.SGD(0.1, momentum=0.9), np_sgd,
                     dict(lr=0.1, momentum=0.9)),
    "sgd_nesterov": (lambda: opts.SGD(0.05, momentum=0.8, nesterov=True), np_sgd,
                     dict(lr=0.05, momentum=0.8, nesterov=True)),
    "adam": (lambda: opts.Adam(0.01), np_adam, dict(lr=0.01)),
    "adam_betas": (lambda: opts.Adam(0.1, beta_1=0.5, beta_2=0.8, epsilon=1e-3), np_adam,
                   dict(lr=0.1, beta_1=0.5, beta_2=0.8, epsilon=1e-3)),
    "adam_amsgrad": (lambda: opts.Adam(0.1, beta_2=0.5, amsgrad=True), np_adam,
                     dict(lr=0.1, beta_2=0.5, amsgrad=True)),
    "rmsprop": (lambda: opts.RMSprop(0.01), np_rmsprop, dict(lr=0.01)),
    "rmsprop_momentum": (lambda: opts.RMSprop(0.01, rho=0.8, momentum=0.5), np_rmsprop,
                         dict(lr=0.01, rho=0.8, momentum=0.5)),
    "rmsprop_centered": (lambda: opts.RMSprop(0.01, centered=True, epsilon=1e-3), np_rmsprop,
                         dict(lr=0.01, centered=True, epsilon=1e-3)),
    "rmsprop_centered_momentum": (lambda: opts.RMSprop(0.02, momentum=0.9, centered=True),
                                  np_rmsprop, dict(lr=0.02, momentum=0.9, centered=True)),
}


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_two_steps_match_numpy(case, mode):
    make, ref, kw = CASES[case]
    opt = make()
    got, _, _ = kiln_run(opt, mode)
    assert_steps(got, np_run(ref, G, **kw))
    assert opt.iterations.numpy() == 2 and opt.iterations.dtype == tf.int64


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_adamw_decays_then_adam(mode):
    opt = opts.AdamW(0.1, weight_decay=0.05)
    got, _, _ = kiln_run(opt, mode)
    assert_steps(got, np_run(np_adam, G, weight_decay=0.05, lr=0.1))
    assert opts.AdamW().weight_decay == 0.004


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_weight_decay_exclusions(mode):
    opt = opts.SGD(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["nothing_matches"])
    got, _, _ = kiln_run(opt, mode)
    assert_steps(got, np_run(np_sgd, G, weight_decay=0.5, lr=0.1))
    # Excluding a variable object: only the other one decays.
    a, b = tf.Variable(np.float32(2.0)), tf.Variable(np.float32(2.0), name="bias")
    opt = opts.SGD(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_list=[a])
    opt.apply_gradients([(tf.constant(1.0), a), (tf.constant(1.0), b)])
    assert a.numpy() == pytest.approx(2.0 - 0.1)
    assert b.numpy() == pytest.approx(2.0 - 2.0 * 0.5 * 0.1 - 0.1)
    opt2 = opts.SGD(0.1, weight_decay=0.5)
    opt2.exclude_from_weight_decay(var_names=["bias"])
    c = tf.Variable(np.float32(2.0))
    opt2.apply_gradients([(tf.constant(1.0), c), (tf.constant(1.0), b)])
    assert b.numpy() == pytest.approx(1.8 - 0.1)  # excluded by name
    assert c.numpy() == pytest.approx(2.0 - 0.1 - 0.1)
    with pytest.raises(ValueError, match="before the optimizer is built"):
        opt2.exclude_from_weight_decay(var_names=["x"])


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("clip", ["clipnorm", "clipvalue", "global_clipnorm"])
def test_gradient_clipping(clip, mode):
    c = 0.5
    ref_clip = {"clipnorm": np_clip_norm, "clipvalue": np_clip_value,
                "global_clipnorm": np_clip_global}[clip]
    opt = opts.SGD(0.1, **{clip: c})
    got, _, _ = kiln_run(opt, mode)
    assert_steps(got, np_run(np_sgd, G, clip=lambda gs: ref_clip(gs, c), lr=0.1))
    # The clip really changed something in this data.
    unclipped = np_run(np_sgd, G, lr=0.1)
    assert not np.allclose(got[0][0], unclipped[0][0])


def test_clipnorm_leaves_small_and_zero_gradients():
    v = tf.Variable([1.0, 1.0])
    opts.SGD(1.0, clipnorm=10.0).apply_gradients([(tf.constant([0.3, 0.4]), v)])
    np.testing.assert_allclose(v.numpy(), [0.7, 0.6], rtol=1e-6)
    opts.SGD(1.0, clipnorm=1.0).apply_gradients([(tf.constant([0.0, 0.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.7, 0.6], rtol=1e-6)


# ---- train steps with GradientTape ----

def np_train(opt_ref, steps, w, x, y, **kw):
    s, out = {}, []
    for t in range(1, steps + 1):
        g = 2 * x * (w * x - y)  # d/dw sum((w*x - y)**2)
        w = opt_ref(w, g, s, t, **kw)
        out.append(w)
    return out


@pytest.mark.parametrize("mode", ["eager", "function"])
@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop"])
def test_train_step_with_tape(name, mode):
    make = {"sgd": lambda: opts.SGD(0.05, momentum=0.5), "adam": lambda: opts.Adam(0.1),
            "rmsprop": lambda: opts.RMSprop(0.05, centered=True)}[name]
    ref = {"sgd": (np_sgd, dict(lr=0.05, momentum=0.5)), "adam": (np_adam, dict(lr=0.1)),
           "rmsprop": (np_rmsprop, dict(lr=0.05, centered=True))}[name]
    x = np.array([1.0, -2.0, 0.5])
    y = np.array([2.0, 1.0, -1.0])
    w = tf.Variable(np.array([0.3, 0.4, -0.5], np.float32))
    opt = make()

    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(w * x - y))
        grads = tape.gradient(loss, [w])
        opt.apply_gradients(zip(grads, [w]))
        return loss

    fn = tf.function(train_step) if mode == "function" else train_step
    want = np_train(ref[0], 2, np.array([0.3, 0.4, -0.5]), x, y, **ref[1])
    for t in range(2):
        loss = fn(tf.constant(x.astype(np.float32)), tf.constant(y.astype(np.float32)))
        np.testing.assert_allclose(w.numpy(), want[t], rtol=1e-5, atol=1e-6)
    assert loss.shape == ()
    if mode == "function":  # the first trace creates the slots: traced twice, as in TF 2.21
        assert fn.experimental_get_tracing_count() == 2


def test_slots_created_once_inside_function():
    w = tf.Variable([1.0, 2.0], name="dense/kernel")
    b = tf.Variable(0.5, name="dense/bias")
    opt = opts.Adam(0.1, amsgrad=True)
    assert [v.name for v in opt.variables] == ["iteration", "learning_rate"]
    assert [v.path for v in opt.variables] == ["adam/iteration", "adam/learning_rate"]
    traces = []

    @tf.function
    def step(x):
        traces.append(1)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x) + b
        grads = tape.gradient(loss, [w, b])
        return opt.apply_gradients(zip(grads, [w, b]))

    for i in range(3):
        it = step(tf.constant([1.0, -1.0]))
        assert int(it) == i + 1
    # The variable-creating first trace runs twice and counts twice, as in TF 2.21.
    assert step.experimental_get_tracing_count() == 2
    assert len(traces) == 2
    assert [v.name for v in opt.variables[2:]] == [  # Keras 3 interleaves per variable
        "dense_kernel_momentum", "dense_kernel_velocity",
        "dense_bias_momentum", "dense_bias_velocity",
        "dense_kernel_velocity_hat", "dense_bias_velocity_hat"]
    assert opt.variables[2].path == "adam/dense_kernel_momentum"
    slots_before = [id(v) for v in opt.variables]
    step(tf.constant([2.0, 2.0]))
    assert [id(v) for v in opt.variables] == slots_before
    m = opt.variables[2]
    assert m.shape == (2,) and not m.trainable


def test_float64_variables():
    v = tf.Variable(np.array([1.0, 2.0]))  # float64
    opt = opts.Adam(0.1)

    @tf.function
    def step(g):
        return opt.apply_gradients([(g, v)])

    step(tf.constant(np.array([0.5, -0.5])))
    assert v.dtype == tf.float64
    want = np_run(np_adam, [[np.array([0.5, -0.5])]], w0=[np.array([1.0, 2.0])], lr=0.1)
    np.testing.assert_allclose(v.numpy(), want[0][0], rtol=1e-6)


def test_none_gradients_are_skipped_with_warning():
    a, b = tf.Variable(1.0), tf.Variable(1.0)
    opt = opts.SGD(0.5)
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        opt.apply_gradients([(tf.constant(2.0), a), (None, b)])
    assert a.numpy() == 0.0 and b.numpy() == 1.0 and opt.iterations.numpy() == 1
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.apply_gradients([(None, a), (None, b)])


def test_none_gradient_from_tape_in_function():
    a, b = tf.Variable(1.0), tf.Variable(3.0)
    opt = opts.Adam(0.1)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = a * a
        grads = tape.gradient(loss, [a, b])
        return opt.apply_gradients(zip(grads, [a, b]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step()
    assert b.numpy() == 3.0
    assert a.numpy() == pytest.approx(0.9, rel=1e-5)  # Adam's first step moves by ~lr


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_variable_constraints_applied_after_update(mode):
    layer = tf.keras.layers.Dense(2, kernel_constraint=lambda w: tf.clip_by_value(w, -0.1, 0.1),
                                  kernel_initializer="ones", bias_initializer="zeros")
    layer.build((None, 2))
    opt = opts.SGD(0.01)

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x))
        grads = tape.gradient(loss, layer.trainable_variables)
        return opt.apply_gradients(zip(grads, layer.trainable_variables))

    (tf.function(step) if mode == "function" else step)(tf.constant([[1.0, 2.0]]))
    np.testing.assert_allclose(layer.kernel.numpy(), np.full((2, 2), 0.1))
    np.testing.assert_allclose(layer.bias.numpy(), [-0.01, -0.01], rtol=1e-6)


# ---- learning rate ----

def test_learning_rate_variable_and_setter_without_retrace():
    v = tf.Variable(1.0)
    opt = opts.SGD(0.1)
    assert isinstance(opt.learning_rate, tf.Variable)
    assert float(opt.learning_rate) == pytest.approx(0.1)

    @tf.function
    def step():
        return opt.apply_gradients([(tf.constant(1.0), v)])

    step()
    assert v.numpy() == pytest.approx(0.9)
    opt.learning_rate = 0.5
    step()
    assert v.numpy() == pytest.approx(0.4)
    assert step.experimental_get_tracing_count() == 1
    with pytest.raises(ValueError, match="learning_rate"):
        opts.SGD(learning_rate="fast")


def test_callable_learning_rate():
    v = tf.Variable(1.0)
    lr = tf.Variable(0.25)
    opt = opts.SGD(lambda: lr * 2.0)
    opt.apply_gradients([(tf.constant(1.0), v)])
    assert v.numpy() == pytest.approx(0.5)


def np_schedule(name, step, **kw):
    lr0 = kw.get("initial_learning_rate")
    if name == "exp":
        p = step / kw["decay_steps"]
        p = math.floor(p) if kw.get("staircase") else p
        return lr0 * kw["decay_rate"] ** p
    if name == "inv":
        p = step / kw["decay_steps"]
        p = math.floor(p) if kw.get("staircase") else p
        return lr0 / (1 + kw["decay_rate"] * p)
    if name == "pw":
        for b, v in zip(kw["boundaries"], kw["values"]):
            if step <= b:
                return v
        return kw["values"][-1]
    if name == "cos":
        ds, alpha = kw["decay_steps"], kw.get("alpha", 0.0)
        target, ws = kw.get("warmup_target"), kw.get("warmup_steps", 0)

        def decay(s, frm):
            return frm * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * s / ds)) + alpha)
        if target is None:
            return decay(min(step, ds), lr0)
        s = min(step, ds + ws)
        if s < ws:
            return (target - lr0) * s / ws + lr0
        return decay(s - ws, target)
    raise AssertionError(name)


SCHEDULES = {
    "exp": (sched.ExponentialDecay, dict(initial_learning_rate=0.1, decay_steps=3,
                                         decay_rate=0.5)),
    "exp_stair": (sched.ExponentialDecay, dict(initial_learning_rate=0.1, decay_steps=3,
                                               decay_rate=0.5, staircase=True)),
    "inv": (sched.InverseTimeDecay, dict(initial_learning_rate=0.2, decay_steps=2,
                                         decay_rate=0.5)),
    "inv_stair": (sched.InverseTimeDecay, dict(initial_learning_rate=0.2, decay_steps=2,
                                               decay_rate=0.5, staircase=True)),
    "pw": (sched.PiecewiseConstantDecay, dict(boundaries=[2, 5], values=[1.0, 0.5, 0.1])),
    "cos": (sched.CosineDecay, dict(initial_learning_rate=0.1, decay_steps=6, alpha=0.1)),
    "cos_warmup": (sched.CosineDecay, dict(initial_learning_rate=0.0, decay_steps=4,
                                           warmup_target=0.2, warmup_steps=3)),
}


@pytest.mark.parametrize("key", sorted(SCHEDULES))
def test_schedules_match_numpy(key):
    cls, kw = SCHEDULES[key]
    s = cls(**kw)
    name = key.split("_")[0]
    fn = tf.function(lambda step: s(step))
    for step in range(0, 12):
        want = np_schedule(name, step, **kw)
        got = s(step)
        assert got.dtype == tf.float32
        assert float(got) == pytest.approx(want, rel=1e-5, abs=1e-7), step
        assert float(fn(tf.constant(step, tf.int64))) == pytest.approx(want, rel=1e-5,
                                                                        abs=1e-7)
    again = cls.from_config(s.get_config())
    assert float(again(7)) == pytest.approx(float(s(7)))
    back = sched.deserialize(sched.serialize(s))
    assert type(back) is cls and back.get_config() == s.get_config()


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_optimizer_follows_schedule(mode):
    kw = dict(initial_learning_rate=0.1, decay_steps=1, decay_rate=0.5)
    opt = opts.SGD(sched.ExponentialDecay(**kw))
    got, fn, _ = kiln_run(opt, mode, grads_per_step=G + G)
    want = np_run(np_sgd, G + G, lr_at=lambda i: np_schedule("exp", i, **kw))
    assert_steps(got, want)
    assert float(opt.learning_rate) == pytest.approx(0.1 * 0.5 ** 4)
    if mode == "function":
        assert fn.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.3
    cfg = opt.get_config()
    assert cfg["learning_rate"]["class_name"] == "ExponentialDecay"
    again = opts.SGD.from_config(cfg)
    assert isinstance(again._learning_rate, sched.ExponentialDecay)


def test_schedule_errors():
    with pytest.raises(ValueError, match="decay_steps"):
        sched.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="1 less than the length of values"):
        sched.PiecewiseConstantDecay([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="increasing"):
        sched.PiecewiseConstantDecay([3, 2], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="warmup_steps"):
        sched.CosineDecay(0.1, 10, warmup_steps=-1)
    with pytest.raises(ValueError, match="Unknown learning rate schedule"):
        sched.deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(NotImplementedError):
        sched.LearningRateSchedule()(0)


# ---- minimize ----

def test_minimize_with_callable_loss():
    w = tf.Variable([1.0, -1.0])
    opt = opts.SGD(0.1)
    it = opt.minimize(lambda: tf.reduce_sum(tf.square(w)), [w])
    np.testing.assert_allclose(w.numpy(), [0.8, -0.8], rtol=1e-6)
    assert int(it) == 1
    opt.minimize(lambda: tf.reduce_sum(tf.square(w)), lambda: [w])  # var_list callable
    np.testing.assert_allclose(w.numpy(), [0.64, -0.64], rtol=1e-6)


def test_minimize_with_tensor_loss_and_tape_in_function():
    w = tf.Variable(3.0)
    opt = opts.Adam(0.1)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = w * w
        return opt.minimize(loss, [w], tape=tape)

    step()
    step()
    want = np_train(np_adam, 2, np.float64(3.0), np.float64(1.0), np.float64(0.0), lr=0.1)
    assert w.numpy() == pytest.approx(want[-1], rel=1e-5)
    with pytest.raises(ValueError, match="`tape` is required"):
        opt.minimize(w * w, [w])


# ---- get / serialize / config ----

@pytest.mark.parametrize("ident,cls", [("sgd", opts.SGD), ("SGD", opts.SGD),
                                       ("adam", opts.Adam), ("Adam", opts.Adam),
                                       ("adamw", opts.AdamW), ("AdamW", opts.AdamW),
                                       ("rmsprop", opts.RMSprop), ("RMSprop", opts.RMSprop)])
def test_get_by_name(ident, cls):
    opt = opts.get(ident)
    assert type(opt) is cls and opt.iterations.numpy() == 0
    assert opts.get(ident) is not opt  # a fresh optimizer each time


def test_get_instances_dicts_and_errors():
    adam = opts.Adam(0.02, beta_1=0.8)
    assert opts.get(adam) is adam
    assert opts.get(None) is None
    again = opts.get(opts.serialize(adam))
    assert type(again) is opts.Adam and again.beta_1 == 0.8
    assert float(again.learning_rate) == pytest.approx(0.02)
    assert opts.get({"class_name": "sgd", "config": {"momentum": 0.5}}).momentum == 0.5
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        opts.get("adagradx")
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        opts.get(42)
    with pytest.raises(ValueError, match="Could not interpret optimizer"):
        opts.get({"config": {}})


@pytest.mark.parametrize("make", [
    lambda: opts.SGD(0.2, momentum=0.3, nesterov=True, clipnorm=1.0),
    lambda: opts.Adam(0.003, beta_2=0.9, epsilon=1e-5, amsgrad=True, global_clipnorm=2.0),
    lambda: opts.AdamW(0.001, weight_decay=0.1, clipvalue=0.5),
    lambda: opts.RMSprop(0.01, rho=0.7, momentum=0.2, centered=True, name="rms"),
])
def test_config_roundtrip(make):
    opt = make()
    cfg = opt.get_config()
    again = type(opt).from_config(cfg)
    assert again.get_config() == cfg
    assert cfg["name"] == opt.name


def test_default_names_and_hyperparameters():
    assert opts.SGD().name == "SGD" and opts.Adam().name == "adam"
    assert opts.AdamW().name == "adamw" and opts.RMSprop().name == "rmsprop"
    adam = opts.Adam()
    assert (float(adam.learning_rate), adam.beta_1, adam.beta_2, adam.epsilon) == \
        (pytest.approx(0.001), 0.9, 0.999, 1e-7)
    rms = opts.RMSprop()
    assert (rms.rho, rms.momentum, rms.epsilon, rms.centered) == (0.9, 0.0, 1e-7, False)
    assert float(opts.SGD().learning_rate) == pytest.approx(0.01)


# ---- the guide's "multiple optimizers" example (seed 002) ----

VARIABLE_ERROR = ("tf.function only supports singleton tf.Variables created on the first "
                  "call. Make sure the tf.Variable is only created once or created outside "
                  "tf.function.")


def _guide_train_step(w, x, y, optimizer):
    with tf.GradientTape() as tape:
        L = tf.reduce_sum(tf.square(w * x - y))
    gradients = tape.gradient(L, [w])
    optimizer.apply_gradients(zip(gradients, [w]))


def np_guide_adam(schedule, lrs):
    """w after the guide's loop: step i uses optimizer schedule[i] (own slots)."""
    w, slots, steps = 2.0, [{}, {}], [0, 0]
    for k in schedule:
        g = 2 * (w * -1.0 - 2.0) * -1.0
        steps[k] += 1
        w = np_adam(w, g, slots[k], steps[k], lrs[k])
    return w


@pytest.mark.filterwarnings("ignore::kiln.NoReturnWarning")
def test_guide_same_function_second_optimizer_raises():
    opt1 = tf.keras.optimizers.Adam(learning_rate=1e-2)
    opt2 = tf.keras.optimizers.Adam(learning_rate=1e-3)
    train_step = tf.function(_guide_train_step)
    w = tf.Variable(2.)
    x = tf.constant([-1.])
    y = tf.constant([2.])
    train_step(w, x, y, opt1)
    assert w.numpy() == pytest.approx(np_guide_adam([0], [1e-2, 1e-3]), rel=1e-6)
    with pytest.raises(ValueError) as info:
        train_step(w, x, y, opt2)
    msg = str(info.value).replace("kiln.function", "tf.function") \
        .replace("kiln.Variable", "tf.Variable")
    assert VARIABLE_ERROR in msg
    assert "in user code" in msg
    # opt1 still works with the function traced for it; opt2 was left unbuilt
    # (no half-made slots) and works eagerly.
    train_step(w, x, y, opt1)
    assert opt1.iterations.numpy() == 2
    assert not opt2.built and len(opt2.variables) == 2
    _guide_train_step(w, x, y, opt2)
    assert opt2.built and len(opt2.variables) == 4 and opt2.iterations.numpy() == 1


@pytest.mark.filterwarnings("ignore::kiln.NoReturnWarning")
def test_guide_workaround_one_concrete_function_per_optimizer():
    opt1 = tf.keras.optimizers.Adam(learning_rate=1e-2)
    opt2 = tf.keras.optimizers.Adam(learning_rate=1e-3)
    w = tf.Variable(2.)
    x = tf.constant([-1.])
    y = tf.constant([2.])
    train_step_1 = tf.function(_guide_train_step).get_concrete_function(w, x, y, opt1)
    train_step_2 = tf.function(_guide_train_step).get_concrete_function(w, x, y, opt2)
    assert w.numpy() == 2.0  # tracing does not run the step
    for i in range(10):
        if i % 2 == 0:
            train_step_1(w, x, y)
        else:
            train_step_2(w, x, y)
    assert opt1.iterations.numpy() == 5 and opt2.iterations.numpy() == 5
    want = np_guide_adam([i % 2 for i in range(10)], [1e-2, 1e-3])
    assert w.numpy() == pytest.approx(want, rel=1e-5)
    assert w.numpy() < 2.0


def test_build_before_function_allows_any_optimizer():
    w = tf.Variable(1.0)
    opt1, opt2 = opts.SGD(0.1), opts.SGD(0.2, momentum=0.5)
    opt1.build([w])
    opt2.build([w])

    @tf.function
    def step(opt):
        with tf.GradientTape() as tape:
            loss = w * 1.0
        return opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

    step(opt1)
    step(opt2)  # a second trace, but it creates no variables
    assert w.numpy() == pytest.approx(1.0 - 0.1 - 0.2)


# ---- error paths ----

def test_mismatched_gradient_shape():
    v = tf.Variable([1.0, 2.0])
    opt = opts.Adam()
    with pytest.raises(ValueError, match=r"does not match the variable's shape"):
        opt.apply_gradients([(tf.constant([1.0, 2.0, 3.0]), v)])

    @tf.function
    def step(g):
        return opts.SGD().apply_gradients([(g, v)])

    with pytest.raises(ValueError, match=r"does not match"):
        step(tf.constant([[1.0, 2.0]]))
    assert list(v.numpy()) == [1.0, 2.0]


def test_non_variable_in_var_list():
    with pytest.raises(TypeError, match="kiln.Variable"):
        opts.SGD().apply_gradients([(tf.constant(1.0), tf.constant(2.0))])
    with pytest.raises(TypeError, match="kiln.Variable"):
        opts.Adam().build([tf.Variable(1.0), np.zeros(2)])
    with pytest.raises(TypeError, match="pairs"):
        opts.SGD().apply_gradients([tf.constant(1.0)])


def test_unknown_variable_after_build():
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    opt = opts.Adam()
    opt.apply_gradients([(tf.constant(1.0), a)])
    with pytest.raises(ValueError, match="Unknown variable"):
        opt.apply_gradients([(tf.constant(1.0), b)])


def test_constructor_errors():
    with pytest.raises(ValueError, match="Only one of `clipnorm`, `clipvalue`"):
        opts.SGD(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="momentum"):
        opts.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="beta_1"):
        opts.Adam(beta_1=1.0)
    with pytest.raises(ValueError, match="weight_decay"):
        opts.AdamW(weight_decay=None)
    with pytest.raises(ValueError, match="rho"):
        opts.RMSprop(rho=-0.1)
    with pytest.raises(ValueError, match="clipnorm"):
        opts.SGD(clipnorm=-1.0)
    with pytest.raises(ValueError, match="not recognized"):
        opts.Adam(lr=0.1)
    with pytest.raises(NotImplementedError, match="use_ema"):
        opts.Adam(use_ema=True)
    with pytest.warns(UserWarning, match="decay"):
        opts.SGD(decay=0.1)
    with pytest.raises(ValueError, match="must already be built"):
        opts.SGD().apply([tf.constant(1.0)])
    with pytest.raises(ValueError, match="1 gradients for 2 variables"):
        opts.SGD().apply([tf.constant(1.0)], [tf.Variable(1.0), tf.Variable(2.0)])
    with pytest.raises(NotImplementedError, match="update_step"):
        opts.Optimizer(0.1).apply_gradients([(tf.constant(1.0), tf.Variable(1.0))])
