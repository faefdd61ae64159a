"""kiln.keras.callbacks: hooks called by Model.fit / evaluate (tf.keras.callbacks).

Callback is the base class; History records each epoch's logs (fit returns
it); ProgbarLogger prints Keras' progress lines; TensorBoard writes Keras 3's
TensorBoard logs (log_dir/train, log_dir/validation; docs/TENSORBOARD.md). A
callback may set ``self.model.stop_training = True`` to end fit after the
current epoch.
"""
import os
import sys
import time
import warnings

import numpy as np

from kiln import _kiln, summary
from kiln.profiler import experimental as _profiler

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "TensorBoard"]


class Callback:
    """Base class: override the hooks you need. ``self.model`` and
    ``self.params`` ({'epochs', 'steps', 'verbose'}) are set by fit."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        pass

    def on_train_batch_end(self, batch, logs=None):
        pass

    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_test_batch_begin(self, batch, logs=None):
        pass

    def on_test_batch_end(self, batch, logs=None):
        pass


class CallbackList:
    """Calls every callback's hook in order."""

    def __init__(self, callbacks=None, model=None, **params):
        self.callbacks = list(callbacks or [])
        for c in self.callbacks:
            if not isinstance(c, Callback):
                raise TypeError(f"callbacks must be kiln.keras.callbacks.Callback instances, "
                                f"got {c!r}")
        for c in self.callbacks:
            if model is not None:
                c.set_model(model)
            c.set_params(dict(params))

    def __getattr__(self, hook):
        if not hook.startswith("on_") or not hasattr(Callback, hook):
            raise AttributeError(hook)
        # Only callbacks that override the hook are called (batch hooks run
        # once per step); the dispatcher is cached on the instance.
        targets = [getattr(c, hook) for c in self.callbacks
                   if getattr(type(c), hook) is not getattr(Callback, hook)]

        def dispatch(*args):
            for t in targets:
                t(*args)
        self.__dict__[hook] = dispatch
        return dispatch


class History(Callback):
    """Records the logs of every epoch: ``history[key]`` is a list of floats
    (loss, metrics, val_ ones); ``epoch`` the epoch indices."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


def format_logs(logs):
    """' - loss: 0.1234 - accuracy: 0.9000' (Keras' number format)."""
    parts = []
    for k, v in logs.items():
        v = float(v)
        parts.append(f" - {k}: {v:.4f}" if abs(v) > 1e-3 or v == 0 else f" - {k}: {v:.4e}")
    return "".join(parts)


def _per_step(seconds, steps):
    t = seconds / max(steps, 1)
    if t >= 1:
        return f"{t:.0f}s/step"
    if t >= 1e-3:
        return f"{t * 1e3:.0f}ms/step"
    return f"{t * 1e6:.0f}us/step"


class ProgbarLogger(Callback):
    """Prints Keras' progress lines. In fit (mode 'train'): ``Epoch i/n``, then
    at the end of each epoch one line, for verbose=2
    ``N/N - 0s - loss: ... - val_loss: ... - 12ms/epoch - 1ms/step`` and for
    verbose=1 ``N/N [=====] - 0s 1ms/step - loss: ...`` (the bar is redrawn
    during the epoch when the output is a terminal). In evaluate (mode
    'test'): the final line only."""

    _BAR = 30

    def __init__(self, verbose=1, stream=None, mode="train"):
        super().__init__()
        self.verbose = verbose
        self.stream = stream
        self.mode = mode
        self._start = 0.0
        self._last_draw = 0.0
        self._seen = 0

    def _out(self):
        return self.stream or sys.stdout

    def _write(self, text):
        out = self._out()
        out.write(text)
        out.flush()

    def _tty(self):
        isatty = getattr(self._out(), "isatty", None)
        return self.verbose == 1 and callable(isatty) and isatty()

    def _begin(self):
        self._start = time.perf_counter()
        self._last_draw = self._start
        self._seen = 0

    def _line(self, logs, final):
        elapsed = time.perf_counter() - self._start
        total = self.params.get("steps")
        done = self._seen
        count = f"{done}/{total if total else 'Unknown'}"
        if self.verbose == 2:
            return (f"{count} - {elapsed:.0f}s{format_logs(logs)} - "
                    f"{elapsed * 1e3:.0f}ms/epoch - {_per_step(elapsed, done)}")
        n = total or done
        filled = int(self._BAR * done / n) if n else self._BAR
        bar = ("=" * filled + (">" if filled < self._BAR else "")).ljust(self._BAR, ".")
        if final:
            return f"{count} [{bar}] - {elapsed:.0f}s {_per_step(elapsed, done)}" \
                   f"{format_logs(logs)}"
        return f"{count} [{bar}] - {elapsed:.0f}s"

    def _step(self, batch):
        self._seen = batch + 1
        if not self._tty():
            return
        now = time.perf_counter()
        if now - self._last_draw >= 0.1:
            self._last_draw = now
            self._write("\r" + self._line({}, False))

    def _finish(self, logs):
        if self.verbose:
            self._write(("\r" if self._tty() else "") + self._line(logs or {}, True) + "\n")

    def on_epoch_begin(self, epoch, logs=None):
        if self.mode == "train":
            if self.verbose:
                self._write(f"Epoch {epoch + 1}/{self.params.get('epochs', 1)}\n")
            self._begin()

    def on_train_batch_end(self, batch, logs=None):
        if self.mode == "train":
            self._step(batch)

    def on_epoch_end(self, epoch, logs=None):
        if self.mode == "train":
            self._finish(logs)

    def on_test_begin(self, logs=None):
        if self.mode == "test":
            self._begin()

    def on_test_batch_end(self, batch, logs=None):
        if self.mode == "test":
            self._step(batch)

    def on_test_end(self, logs=None):
        if self.mode == "test":
            self._finish(logs)


class TensorBoard(Callback):
    """Writes TensorBoard logs during fit/evaluate (Keras 3's arguments). Event files
    are created on first use; `update_freq` "epoch", "batch" or every n batches."""

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None):
        super().__init__()
        self.log_dir = str(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = 1 if update_freq == "batch" else update_freq
        if self.update_freq != "epoch" and (not isinstance(self.update_freq, int)
                                            or self.update_freq < 1):
            raise ValueError(f"update_freq must be 'epoch', 'batch' or a positive int, got "
                             f"{update_freq!r}")
        self._start_batch, self._stop_batch = _profile_range(profile_batch)
        self._tracing = False
        self._batch_trace = None
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._writers = {}
        self._global_train_batch = 0
        self._global_test_batch = 0
        self._pushed = []
        self._epoch_start = 0.0
        self._epoch_iterations = 0.0
        self._batch_start = 0.0

    def set_model(self, model):
        """Sets the model; with write_graph, its JSON config for TensorBoard's graph plugin
        (its conceptual graph: tag "keras", plugin graph_keras_model) at step 0."""
        self.model = model
        self._writers = {}
        # Keras writes it for Sequential and functional models (kiln's functional
        # Model holds its graph network), not subclassed ones.
        functional = getattr(model, "_kiln_graph", None) is not None
        if self.write_graph and (type(model).__name__ == "Sequential" or functional):
            try:
                config = model.to_json()
            except Exception as e:  # noqa: BLE001  (as Keras: a model that cannot serialize)
                warnings.warn(f"Model failed to serialize as JSON. Ignoring... {e}")
                return
            with self._writer("train").as_default():
                summary.write("keras", _kiln.constant(config),
                              step=0, metadata=_kiln._summary_metadata("graph_keras_model",
                                                                       b"1"))

    def _writer(self, run):
        if run not in self._writers:
            sub = "train" if run == "train" else "validation"
            self._writers[run] = summary.create_file_writer(os.path.join(self.log_dir, sub))
        return self._writers[run]

    # Batch-level summaries (update_freq != "epoch"): the run's writer is the default
    # writer while batches run, recording every update_freq-th step, so summaries a
    # model writes in its own layers land there too.
    def _push(self, run, step):
        if self.update_freq == "epoch":
            return
        freq = self.update_freq
        contexts = (self._writer(run).as_default(step), summary.record_if(lambda: step % freq == 0))
        for c in contexts:
            c.__enter__()
        self._pushed.append(contexts)

    def _pop(self):
        if self.update_freq == "epoch" or not self._pushed:
            return
        for c in reversed(self._pushed.pop()):
            c.__exit__(None, None, None)

    def on_train_begin(self, logs=None):
        self._global_train_batch = 0
        self._push("train", 0)

    def on_train_end(self, logs=None):
        self._pop()
        if self._tracing:
            self._stop_trace()
        for w in self._writers.values():
            w.close()
        self._writers = {}

    def on_test_begin(self, logs=None):
        self._push("val", self._global_test_batch)

    def on_test_end(self, logs=None):
        opt = getattr(self.model, "optimizer", None)
        if opt is not None and hasattr(opt, "iterations") and logs:
            with self._writer("val").as_default():
                for name, value in logs.items():
                    summary.scalar(f"evaluation_{name}_vs_iterations", value,
                                   step=opt.iterations)
        self._pop()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self.update_freq != "epoch":
            self._pop()
            self._push("train", self._global_train_batch)
        if self.write_steps_per_second:
            self._batch_start = time.time()
        if self._start_batch and self._global_train_batch == self._start_batch:
            self._start_trace()
        if self._tracing:
            self._batch_trace = _profiler.Trace("train", step_num=batch, _r=1)
            self._batch_trace.__enter__()

    def on_train_batch_end(self, batch, logs=None):
        if self._tracing:
            if self._batch_trace is not None:
                self._batch_trace.__exit__(None, None, None)
                self._batch_trace = None
            if self._global_train_batch >= self._stop_batch:
                self._stop_trace()
        if self.update_freq == "epoch":
            return
        if self.write_steps_per_second:
            summary.scalar("batch_steps_per_second", 1.0 / max(time.time() - self._batch_start,
                                                               1e-9),
                           step=self._global_train_batch)
        for name, value in (logs or {}).items():
            summary.scalar(f"batch_{name}", value, step=self._global_train_batch)

    # profile_batch: the graphs (trace_on/trace_export into the train run) and a
    # profile (kiln.profiler, into train/plugins/profile) of those batches.
    def _start_trace(self):
        summary.trace_on(graph=True)
        try:
            _profiler.start(os.path.join(self.log_dir, "train"))
            self._tracing = True
        except Exception as e:  # noqa: BLE001  (as Keras: a profiler error is not fatal)
            summary.trace_off()
            warnings.warn(f"Failed to start profiler: {e}")

    def _stop_trace(self):
        with self._writer("train").as_default():
            summary.trace_export(name=f"batch_{self._stop_batch}", step=self._stop_batch)
        try:
            _profiler.stop()
        except Exception as e:  # noqa: BLE001
            warnings.warn(f"Failed to stop profiler: {e}")
        self._tracing = False

    def on_test_batch_begin(self, batch, logs=None):
        self._global_test_batch += 1
        if self.update_freq != "epoch":
            self._pop()
            self._push("val", self._global_test_batch)

    def on_epoch_begin(self, epoch, logs=None):
        if self.write_steps_per_second:
            self._epoch_start = time.time()
            self._epoch_iterations = float(np.asarray(self.model.optimizer.iterations))

    def on_epoch_end(self, epoch, logs=None):
        self._log_epoch(epoch, logs or {})
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)

    def _learning_rates(self, logs):
        opt = getattr(self.model, "optimizer", None)
        opt = getattr(opt, "inner_optimizer", opt)
        if opt is not None and hasattr(opt, "learning_rate"):
            logs["learning_rate"] = float(np.asarray(opt.learning_rate))
        return logs

    def _log_epoch(self, epoch, logs):
        if not logs:
            return
        train = self._learning_rates({k: v for k, v in logs.items() if not k.startswith("val_")})
        if self.write_steps_per_second:
            done = float(np.asarray(self.model.optimizer.iterations)) - self._epoch_iterations
            train["steps_per_second"] = done / max(time.time() - self._epoch_start, 1e-9)
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        for run, values in (("train", train), ("val", val)):
            if values:
                with self._writer(run).as_default():
                    for name, value in values.items():
                        summary.scalar(f"epoch_{name}", value, step=epoch)

    def _log_weights(self, epoch):
        w = self._writer("train")
        with w.as_default():
            for layer in self.model.layers:
                for weight in layer.weights:
                    name = weight.path.replace(":", "_")
                    summary.histogram(f"{name}/histogram", weight, step=epoch)
                    if self.write_images:
                        self._log_image(weight, f"{name}/image", epoch)
        w.flush()

    @staticmethod
    def _log_image(weight, name, epoch):
        # Keras 3's layout: a bias as one row, a dense kernel wide, conv kernels one
        # image per output channel; other shapes are skipped.
        img = np.squeeze(np.asarray(weight))
        if img.ndim == 1:
            img = img.reshape(1, img.shape[0], 1, 1)
        elif img.ndim == 2:
            if img.shape[0] > img.shape[1]:
                img = img.T
            img = img.reshape(1, img.shape[0], img.shape[1], 1)
        elif img.ndim == 3:
            img = np.transpose(img, [2, 0, 1])[..., None]
        if img.ndim == 4 and img.shape[-1] in (1, 3, 4):
            summary.image(name, img, step=epoch)


def _profile_range(profile_batch):
    """(start, stop) global batches of TensorBoard's profile_batch (0: none), as Keras
    reads it: an int, a pair, or "start,stop"."""
    message = ("profile_batch must be a non-negative integer or 2-tuple of positive integers. "
               "A pair of positive integers signifies a range of batches to profile. "
               f"Found: {profile_batch}")
    value = profile_batch
    try:
        if isinstance(value, str):
            value = [int(v) for v in value.split(",")]
            value = value[0] if len(value) == 1 else value
    except ValueError:
        raise ValueError(message) from None
    if isinstance(value, int) and not isinstance(value, bool):
        start = stop = value
    elif isinstance(value, (tuple, list)) and len(value) == 2 and \
            all(isinstance(v, int) for v in value):
        start, stop = value
    else:
        raise ValueError(message)
    if start < 0 or stop < start:
        raise ValueError(message)
    return start, stop
