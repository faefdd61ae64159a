"""kiln.GradientTape and kiln.stop_gradient (TensorFlow's API) over the C++ tape.

    v = kiln.Variable(1.0)
    with kiln.GradientTape() as tape:
        y = v * v
    tape.gradient(y, v)  # 2.0

Recording happens inside the `with` block; trainable variables read there are
watched automatically, tensors with tape.watch(x). Works eagerly and inside a
kiln.function (the backward ops join the traced graph). Calling a
kiln.function eagerly under a tape replays its graph op by op, so the tape
can differentiate through it.
"""
import contextlib
import inspect
import warnings

import numpy as np

from kiln import _kiln, nest
from kiln._tensor_methods import live_variable
from kiln._warnings import KilnWarning

__all__ = ["GradientTape", "UnconnectedGradients", "stop_gradient", "custom_gradient"]


class UnconnectedGradients:
    """What gradient() returns for sources the target does not depend on."""
    NONE = "none"
    ZERO = "zero"


def stop_gradient(input, name=None):  # noqa: A002 - TensorFlow's argument name
    """input, with no gradient flowing back through it (tf.stop_gradient)."""
    return _kiln.stop_gradient(input)


def custom_gradient(f=None):
    """Decorates f(*args) -> (result, grad_fn) so that the gradient of result with respect
    to the tensor arguments is grad_fn(*upstream) (one upstream gradient per result tensor;
    it returns one gradient per tensor argument, None for zeros) (tf.custom_gradient).
    Works eagerly, inside a kiln.function and for higher orders (grad_fn's own ops are
    recorded by outer tapes). When f reads trainable variables, grad_fn must take a
    `variables` keyword and return (input_grads, variable_grads), as in TensorFlow."""
    if f is None:
        return custom_gradient

    def decorated(*args, **kwargs):
        with GradientTape() as watcher:  # which trainable variables f reads
            result, grad_fn = f(*args, **kwargs)
        variables = list(watcher.watched_variables())
        if variables and "variables" not in _keyword_names(grad_fn):
            raise TypeError("If using @custom_gradient with a function that uses variables, "
                            "then grad_fn must accept a keyword argument 'variables'.")
        xs = [a for a in nest.flatten(args) if isinstance(a, _kiln.Tensor)]
        reads = [v.read_value() for v in variables]  # route the variables' gradients
        ys = nest.flatten(result)
        fname = getattr(f, "__name__", "f")

        def grad_callback(*upstream):
            if variables:
                g, vg = grad_fn(*upstream, variables=variables)
                vg = _grad_list(vg, len(variables), fname, "variables")
            else:
                g, vg = grad_fn(*upstream), []
            g = _grad_list(g, len(xs), fname, "tensor arguments")
            return [_kiln.raw.ZerosLike(x) if gi is None else gi
                    for gi, x in zip(g + vg, xs + reads)]

        out = _kiln._custom_gradient(xs + reads, ys, grad_callback,
                                     getattr(f, "__name__", "custom_gradient"))
        return nest.pack_sequence_as(result, out)

    decorated.__name__ = getattr(f, "__name__", "custom_gradient")
    decorated.__doc__ = f.__doc__
    decorated.__wrapped__ = f
    return decorated


def _keyword_names(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {"variables"}  # cannot tell: let the call decide
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return {"variables"}
    return {p.name for p in params}


def _grad_list(g, n, fname, what):
    g = list(g) if isinstance(g, (list, tuple)) else [g]
    if len(g) != n:
        raise ValueError(f"custom_gradient: the gradient function of {fname} returned "
                         f"{len(g)} gradients for {n} {what}")
    return g


class GradientTape:
    """Records operations for automatic differentiation (tf.GradientTape)."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._tape = None
        self._pending = []  # watch() calls before the with block

    def __enter__(self):
        if self._tape is None:
            self._tape = _kiln._GradientTape(self._persistent, self._watch_accessed)
            for x in self._pending:
                self._tape.watch(x)
            self._pending = []
        else:
            self._tape.start()
        return self

    def __exit__(self, *exc):
        if self._tape is not None:
            self._tape.stop()
        return False

    def watch(self, tensor):
        """Ensures tensor (a tensor, variable or nested structure of them) is traced."""
        for x in nest.flatten(tensor):
            if self._tape is None:
                self._pending.append(x)
            else:
                self._tape.watch(x)

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stops recording (ops inside are not differentiated)."""
        if self._tape is None or not self._tape.recording:
            raise RuntimeError("GradientTape.stop_recording() needs a tape that is recording")
        self._tape.stop()
        try:
            yield
        finally:
            self._tape.start()

    def watched_variables(self):
        """The variables this tape watches (read while recording, or watched), in the
        order they were first watched (tf.GradientTape.watched_variables)."""
        if self._tape is None:
            return tuple(x for x in self._pending if isinstance(x, _kiln.Variable))
        return tuple(live_variable(v) for v in self._tape.watched_variables())

    def reset(self):
        """Clears everything recorded; recording continues inside the block."""
        if self._tape is not None:
            self._tape.reset()

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """The gradient of target (a tensor or nested structure; gradients of
        several targets add up) with respect to sources, in the structure of
        sources. None for unconnected sources unless unconnected_gradients is
        UnconnectedGradients.ZERO (or "zero")."""
        if self._tape is None:
            raise RuntimeError("GradientTape.gradient() can only be called after the tape "
                               "recorded something: use it as `with kiln.GradientTape() as tape:`")
        zero = self._zero(unconnected_gradients)
        targets = nest.flatten(target)
        flat_sources = nest.flatten(sources)
        if output_gradients is None:
            grads = []
        else:
            grads = nest.flatten(output_gradients)
        # As TensorFlow: a target that is not floating has no gradient; it is dropped
        # with a warning (all of them dropped: None, or zeros, for every source).
        floating = [getattr(getattr(t, "dtype", None), "is_floating", True) for t in targets]
        if not all(floating):
            for t, ok in zip(targets, floating):
                if not ok:
                    warnings.warn(
                        "The dtype of the target tensor must be floating (e.g. tf.float32) "
                        f"when calling GradientTape.gradient, got {t.dtype!r}; it has no "
                        "gradient", KilnWarning, stacklevel=2)
            targets = [t for t, ok in zip(targets, floating) if ok]
            if grads:
                grads = [g for g, ok in zip(grads, floating) if ok]
            if not targets:
                out = [self._zeros_for(s) if zero else None for s in flat_sources]
                return nest.pack_sequence_as(sources, out)
        out = self._tape.gradient(list(targets), list(flat_sources), list(grads), zero)
        return nest.pack_sequence_as(sources, out)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """The Jacobian of target with respect to sources, in the structure of sources:
        each of shape target.shape + source.shape (tf.GradientTape.jacobian). One
        vector-Jacobian product per element of target; it counts as one gradient call."""
        if self._tape is None:
            raise RuntimeError("GradientTape.jacobian() can only be called after the tape "
                               "recorded something: use it as `with kiln.GradientTape() as tape:`")
        zero = self._zero(unconnected_gradients)
        flat = nest.flatten(sources)
        return nest.pack_sequence_as(sources, self._tape.jacobian(target, list(flat), zero))

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """The Jacobian of each batch row of target [B, ...] with respect to the same row of
        source [B, ...]: shape [B] + target.shape[1:] + source.shape[1:]
        (tf.GradientTape.batch_jacobian; rows must not depend on other rows' sources)."""
        full = self.jacobian(target, source, unconnected_gradients)
        if full is None:
            return None
        t_shape, s_shape = list(target.shape), list(source.shape)
        if not t_shape or not s_shape or t_shape[0] != s_shape[0]:
            raise ValueError(f"batch_jacobian: target {target.shape} and source "
                             f"{source.shape} need the same first (batch) dimension")
        b = t_shape[0]
        t_rest, s_rest = t_shape[1:], s_shape[1:]
        nt = int(np.prod(t_rest, dtype=np.int64))
        ns = int(np.prod(s_rest, dtype=np.int64))
        raw = _kiln.raw
        j = raw.Reshape(full, _kiln.constant([b, nt, b, ns], dtype="int64"))
        j = raw.Transpose(j, perm=[0, 2, 1, 3])  # [B, B, T, S]
        eye = raw.Cast(raw.Equal(raw.ExpandDims(_kiln.constant(np.arange(b)), axis=1),
                                 raw.ExpandDims(_kiln.constant(np.arange(b)), axis=0)),
                       DstT=full.dtype)
        diag = raw.Sum(raw.Mul(j, raw.ExpandDims(raw.ExpandDims(eye, axis=-1), axis=-1)),
                       axis=[1])
        return raw.Reshape(diag, _kiln.constant([b] + t_rest + s_rest, dtype="int64"))

    @staticmethod
    def _zero(unconnected_gradients):
        zero = str(unconnected_gradients).lower().endswith("zero")
        if not zero and str(unconnected_gradients).lower().split(".")[-1] != "none":
            raise ValueError(f"unconnected_gradients must be NONE or ZERO, got "
                             f"{unconnected_gradients!r}")
        return zero

    @staticmethod
    def _zeros_for(source):
        from_value = source.read_value() if isinstance(source, _kiln.Variable) else source
        return _kiln.raw.ZerosLike(from_value)
