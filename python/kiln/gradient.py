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
import warnings

from kiln import _kiln, nest
from kiln._warnings import KilnWarning

__all__ = ["GradientTape", "UnconnectedGradients", "stop_gradient"]


class UnconnectedGradients:
    """What gradient() returns for sources the target does not depend on."""
    NONE = "none"
    ZERO = "zero"


def stop_gradient(input, name=None):  # noqa: A002 - TensorFlow's argument name
    """input, with no gradient flowing back through it (tf.stop_gradient)."""
    return _kiln.stop_gradient(input)


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
        zero = str(unconnected_gradients).lower().endswith("zero")
        if not zero and str(unconnected_gradients).lower().split(".")[-1] != "none":
            raise ValueError(f"unconnected_gradients must be NONE or ZERO, got "
                             f"{unconnected_gradients!r}")
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

    @staticmethod
    def _zeros_for(source):
        from_value = source.read_value() if isinstance(source, _kiln.Variable) else source
        return _kiln.raw.ZerosLike(from_value)
