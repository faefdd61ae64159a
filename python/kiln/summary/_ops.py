"""tf.summary's writing functions: write (any tensor with metadata) and the
TensorBoard plugins' forms (scalar, histogram, image, text, audio), eagerly and
inside kiln.function (WriteSummary ops, run in order on every call)."""
import warnings

import numpy as np

from kiln import _kiln, ops as O
from kiln import scopes
from kiln.control_flow import cond
from kiln.io import encode_png
from kiln.ops.image_convert import convert_image_dtype
from kiln.profiler import experimental as _profiler
from kiln.strings import as_string
from kiln.summary import _writer

_INT64, _FLOAT32, _FLOAT64 = (_kiln.as_dtype(n) for n in ("int64", "float32", "float64"))
_STRING, _UINT8 = _kiln.as_dtype("string"), _kiln.as_dtype("uint8")


def _metadata(plugin, description=None, content=b""):
    # TensorFlow's tf.summary leaves data_class unset (TensorBoard infers it).
    return _kiln._summary_metadata(plugin, content, "", description or "", 0)


def _tag(name):
    if not isinstance(name, str) or not name:
        raise ValueError(f"summary name must be a non-empty str, got {name!r}")
    return "/".join(scopes.current_scope_names() + [name])


def _step(step):
    step = _writer.state.step if step is None else step
    if step is None:
        raise ValueError("No step set. Please specify one either through the `step` argument "
                         "or through tf.summary.experimental.set_step()")
    return O.cast(step, _INT64)


def _record(condition_fn, write_fn):
    """Runs write_fn where the record_if condition holds; a bool tensor of whether it did."""
    cond_value = condition_fn()
    if isinstance(cond_value, (bool, np.bool_)):
        if not cond_value:
            return _kiln.constant(False)
        write_fn()
        return _kiln.constant(True)
    def yes():
        write_fn()
        return _kiln.constant(True)
    return cond(O.cast(cond_value, "bool"), yes, lambda: _kiln.constant(False))


def write(tag, tensor, step=None, metadata=None, name=None):
    """tf.summary.write: `tensor` under `tag` at `step` to the default writer, with
    `metadata` (serialized SummaryMetadata bytes, or None). A bool tensor: True when
    written, False without a default writer or under a false record_if."""
    w = _writer.state.writer
    if w is None or isinstance(w, _writer._NoopSummaryWriter):
        return _kiln.constant(False)
    if metadata is None:
        metadata = b""
    if not isinstance(metadata, bytes):
        raise TypeError(f"metadata must be serialized SummaryMetadata bytes, got "
                        f"{type(metadata).__name__}")

    step_t = _step(step)  # the missing-step error comes first, as in TensorFlow

    def do_write():
        value = tensor() if callable(tensor) else tensor
        _kiln.raw.WriteSummary(w._handle, step_t, _kiln.convert_to_tensor(value),
                               _kiln.constant(tag), _kiln.constant(metadata))

    return _record(_writer.should_record_summaries, do_write)


def scalar(name, data, step=None, description=None):
    """tf.summary.scalar: a float32 scalar for TensorBoard's scalars plugin."""
    t = O.cast(_kiln.convert_to_tensor(data), _FLOAT32)
    if t.shape.rank is not None and t.shape.rank != 0:
        raise ValueError(f"Expected scalar shape, saw shape: {t.shape}.")
    return write(_tag(name), t, step, _metadata("scalars", description))


def text(name, data, step=None, description=None):
    """tf.summary.text: a string tensor for TensorBoard's text plugin."""
    t = _kiln.convert_to_tensor(data)
    if t.dtype != _STRING:
        raise ValueError(f"Expected a string tensor, got {t.dtype.name}")
    return write(_tag(name), t, step, _metadata("text", description))


def _histogram_buckets(data, bucket_count):
    """[bucket_count, 3] float64: left edge, right edge, count (the last bucket holds
    the maximum); one value: buckets of width 0 at it, its count in the last; none:
    zeros."""
    x = O.reshape(O.cast(data, _FLOAT64), [-1])
    k = bucket_count
    if k == 0:
        return O.zeros([0, 3], _FLOAT64)

    def spread():
        lo, hi = O.reduce_min(x), O.reduce_max(x)
        width = (hi - lo) / k
        idx = O.minimum(O.cast(O.floor((x - lo) / width), "int32"), k - 1)
        counts = O.reduce_sum(O.one_hot(idx, k, dtype=_FLOAT64), axis=0)
        edges = O.linspace(lo, hi, k + 1)
        return O.transpose(O.stack([edges[:-1], edges[1:], counts]))

    def single():
        v = O.reduce_min(x)
        edges = O.fill([k], v)
        counts = O.concat([O.zeros([k - 1], _FLOAT64),
                           O.reshape(O.cast(O.size(x), _FLOAT64), [1])], 0)
        return O.transpose(O.stack([edges, edges, counts]))

    def nonempty():
        return cond(O.equal(O.reduce_max(x), O.reduce_min(x)), single, spread)

    return cond(O.equal(O.size(x), 0), lambda: O.zeros([k, 3], _FLOAT64), nonempty)


def histogram(name, data, step=None, buckets=None, description=None):
    """tf.summary.histogram: `data`'s values in `buckets` (30) equal-width buckets for
    TensorBoard's histograms plugin."""
    k = 30 if buckets is None else int(buckets)
    if k < 0:
        raise ValueError(f"buckets must be >= 0, got {buckets}")
    t = _kiln.convert_to_tensor(data)
    return write(_tag(name), lambda: _histogram_buckets(t, k), step,
                 _metadata("histograms", description))


def _check_images(t):
    if t.shape.rank is not None and t.shape.rank != 4:
        raise ValueError(f"Tensor  must have rank 4.  Received rank {t.shape.rank}, shape "
                         f"{tuple(t.shape.as_list())}")
    c = t.shape.as_list()[3] if t.shape.rank is not None else None
    if c is not None and c not in (1, 2, 3, 4):
        raise ValueError(f"images must have 1-4 channels, got {c}")


def image(name, data, step=None, max_outputs=3, description=None):
    """tf.summary.image: up to `max_outputs` images ([k, h, w, c], uint8 or floats in
    [0, 1]) PNG-encoded for TensorBoard's images plugin ([width, height, png...])."""
    t = _kiln.convert_to_tensor(data)
    _check_images(t)
    if int(max_outputs) < 0:
        raise ValueError(f"max_outputs must be >= 0, got {max_outputs}")

    def value():
        images = convert_image_dtype(t[:int(max_outputs)], _UINT8, saturate=True)
        n = images.shape.as_list()[0]
        if n is None:
            raise ValueError("image: the number of images must be static inside a function")
        shape = O.shape(images)
        dims = [as_string(shape[2]), as_string(shape[1])]
        return O.stack(dims + [encode_png(images[i]) for i in range(n)])

    return write(_tag(name), value, step, _metadata("images", description))


def _wav(samples, rate):
    """16-bit PCM WAV bytes of float samples [frames, channels] in [-1, 1]."""
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2")
    frames, channels = pcm.shape
    data = pcm.tobytes()
    header = b"RIFF" + (36 + len(data)).to_bytes(4, "little") + b"WAVEfmt "
    header += (16).to_bytes(4, "little") + (1).to_bytes(2, "little")
    header += channels.to_bytes(2, "little") + int(rate).to_bytes(4, "little")
    header += (int(rate) * channels * 2).to_bytes(4, "little")
    header += (channels * 2).to_bytes(2, "little") + (16).to_bytes(2, "little")
    return header + b"data" + len(data).to_bytes(4, "little") + data


def audio(name, data, sample_rate, step=None, max_outputs=3, encoding=None, description=None):
    """tf.summary.audio (eager): up to `max_outputs` clips ([k, frames, channels] floats in
    [-1, 1]) as WAV for TensorBoard's audio plugin ([clips, 2]: WAV bytes, label "")."""
    if encoding not in (None, "wav"):
        raise ValueError(f"Unknown encoding: {encoding}")
    t = _kiln.convert_to_tensor(data)
    if t.shape.rank != 3:
        raise ValueError(f"audio data must have rank 3 [k, frames, channels], got {t.shape}")
    rate = float(np.asarray(sample_rate))
    if rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {rate}")
    clips = np.asarray(t.numpy(), dtype=np.float32)[:int(max_outputs)]
    value = np.array([[_wav(c, rate), b""] for c in clips], dtype=object).reshape(-1, 2)
    # content: AudioPluginData{encoding: WAV (11)}, as TensorBoard's audio summary writes.
    return write(_tag(name), _kiln.constant(value, _STRING), step,
                 _metadata("audio", description, b"\x10\x0b"))


def graph(graph_data):
    """tf.summary.graph (eager only): a traced graph (a ConcreteFunction, its `.graph`
    or `.optimized_graph`, or serialized GraphDef bytes) as a graph event at step 0,
    for TensorBoard's graph plugin. False without a default writer."""
    if not _kiln.executing_eagerly():
        raise ValueError("graph() cannot be invoked inside a graph context.")
    w = _writer.state.writer
    if w is None or isinstance(w, _writer._NoopSummaryWriter):
        return _kiln.constant(False)
    data = getattr(graph_data, "graph", graph_data)  # a ConcreteFunction
    if hasattr(data, "_g"):
        data = data._g._tensorboard_graph_def()
    if not isinstance(data, bytes):
        raise TypeError(f"graph_data must be a traced function's graph or GraphDef bytes, got "
                        f"{type(graph_data).__name__}")
    return _record(_writer.should_record_summaries, lambda: _kiln.raw.WriteGraphSummary(
        w._handle, _kiln.constant(0, _INT64), _kiln.constant(data)))


_tracing = {"on": False, "profiler": False}


def trace_on(graph=True, profiler=False, profiler_outdir=None):
    """Starts recording the graphs of the kiln.functions (and concrete functions) that
    run until trace_export/trace_off; with `profiler`, also a kiln.profiler profile
    into `profiler_outdir` (TensorFlow's arguments; warnings where it warns)."""
    if not _kiln.executing_eagerly():
        warnings.warn("Must enable trace in eager mode.")
        return
    if _tracing["on"]:
        warnings.warn("Trace already enabled")
        return
    if profiler:
        if profiler_outdir is None:
            warnings.warn("No `profiler_outdir` passed to trace_on(). Profiler won't be enabled.")
        else:
            _profiler.start(str(profiler_outdir))
            _tracing["profiler"] = True
    _tracing["on"] = True
    if graph or profiler:
        _kiln._summary_trace_on()


def trace_off():
    """Stops recording (and a profile trace_on started) without writing anything."""
    _tracing["on"] = False
    _kiln._summary_trace_off()
    if _tracing["profiler"]:
        _tracing["profiler"] = False
        _profiler.stop(save=False)


def trace_export(name, step=None, profiler_outdir=None):
    """Writes the graphs recorded since trace_on as one graph event at `step` (each
    function's nodes under its name) to the default writer, saves the profile trace_on
    started (if any), then stops recording.
    (TensorFlow writes them as run metadata tagged `name`; a graph event has no tag.)"""
    if not _kiln.executing_eagerly():
        raise ValueError("Can only export trace while executing eagerly.")
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not _tracing["on"]:
        warnings.warn("Cannot export trace because tracing was not enabled.")
        return
    try:
        w = _writer.state.writer
        data = _kiln._summary_traced_graph_def()
        if w is not None and not isinstance(w, _writer._NoopSummaryWriter) and data:
            _kiln.raw.WriteGraphSummary(w._handle, _step(step), _kiln.constant(data))
        if _tracing["profiler"]:
            _tracing["profiler"] = False
            _profiler.stop()
    finally:
        trace_off()
