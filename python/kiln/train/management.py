"""The ``checkpoint`` state file of a directory, latest_checkpoint and
CheckpointManager (tf.train.CheckpointManager)."""
import collections
import glob
import os
import re
import time
import warnings

import numpy as np

from kiln import _kiln
from kiln.train import bundle

STATE_FILE = "checkpoint"
_MAX_STATE_BYTES = 1 << 24


class CheckpointState:
    """The contents of a ``checkpoint`` file (TensorFlow's CheckpointState)."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp=0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = float(last_preserved_timestamp)

    def __repr__(self):
        return _format_state(self)


# ---- the text format (TensorFlow's text protobuf of CheckpointState) ----

def _quote(s):
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _unquote(text):
    body = text[1:-1]
    out, i = bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        octal = re.match(r"[0-7]{1,3}", body[i + 1:i + 4])
        if octal:
            out.append(int(octal.group(0), 8) & 0xFF)
            i += 1 + len(octal.group(0))
        elif nxt in ('"', "\\", "'"):
            out += nxt.encode()
            i += 2
        elif nxt in ("n", "t", "r"):
            out += {"n": b"\n", "t": b"\t", "r": b"\r"}[nxt]
            i += 2
        else:
            raise ValueError(f"bad escape in {text}")
    return out.decode("utf-8")


_LINE = re.compile(r'^\s*(\w+)\s*:\s*("(?:[^"\\]|\\.)*"|[-+0-9.eE]+)\s*$')


def _parse_state(text):
    state = CheckpointState()
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            raise ValueError(f"cannot parse {line!r}")
        key, value = m.groups()
        if key in ("model_checkpoint_path", "all_model_checkpoint_paths"):
            if not value.startswith('"'):
                raise ValueError(f"{key} must be a string")
            value = _unquote(value)
            if key == "model_checkpoint_path":
                state.model_checkpoint_path = value
            else:
                state.all_model_checkpoint_paths.append(value)
        elif key == "all_model_checkpoint_timestamps":
            state.all_model_checkpoint_timestamps.append(float(value))
        elif key == "last_preserved_timestamp":
            state.last_preserved_timestamp = float(value)
        else:
            raise ValueError(f"unknown field {key}")
    return state


def _format_state(state):
    lines = [f"model_checkpoint_path: {_quote(state.model_checkpoint_path)}"]
    lines += [f"all_model_checkpoint_paths: {_quote(p)}"
              for p in state.all_model_checkpoint_paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}"
              for t in state.all_model_checkpoint_timestamps]
    lines.append(f"last_preserved_timestamp: {state.last_preserved_timestamp!r}")
    return "\n".join(lines) + "\n"


def _relative(path, directory):
    rel = os.path.relpath(path, directory)
    return path if rel.startswith("..") else rel


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState in ``checkpoint_dir``'s ``checkpoint`` file, or
    None when there is none or it cannot be parsed (with a warning)."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = os.path.join(checkpoint_dir, latest_filename or STATE_FILE)
    try:
        if os.path.getsize(path) > _MAX_STATE_BYTES:
            raise ValueError("the file is too large")
        with open(path, "rb") as f:
            state = _parse_state(f.read().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        warnings.warn(f"{path}: {e}; checkpoint state ignored", stacklevel=2)
        return None
    if not state.model_checkpoint_path:
        warnings.warn(f"{path}: no model_checkpoint_path; checkpoint state ignored",
                      stacklevel=2)
        return None

    def full(p):
        return p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
    state.model_checkpoint_path = full(state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [full(p) for p in state.all_model_checkpoint_paths]
    return state


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None):
    """Writes ``save_dir``'s ``checkpoint`` file (atomically), with paths
    relative to ``save_dir`` where they lie inside it."""
    save_dir = os.fspath(save_dir)
    paths = list(all_model_checkpoint_paths or [])
    if model_checkpoint_path not in paths:
        paths.append(model_checkpoint_path)
    state = CheckpointState(_relative(model_checkpoint_path, save_dir),
                            [_relative(p, save_dir) for p in paths],
                            all_model_checkpoint_timestamps or (),
                            last_preserved_timestamp if last_preserved_timestamp is not None
                            else 0.0)
    os.makedirs(save_dir, exist_ok=True)
    text = _format_state(state).encode("utf-8")
    bundle.atomic_write(os.path.join(save_dir, latest_filename or STATE_FILE),
                        lambda f: f.write(text))


def checkpoint_exists(prefix):
    """True when the index file of checkpoint ``prefix`` exists."""
    return os.path.isfile(os.fspath(prefix) + bundle.INDEX_SUFFIX)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The path of the newest checkpoint recorded in ``checkpoint_dir``, or
    None when there is none (or its files are gone)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not checkpoint_exists(state.model_checkpoint_path):
        return None
    return state.model_checkpoint_path


def _delete_checkpoint(prefix):
    for path in [prefix + bundle.INDEX_SUFFIX] + glob.glob(
            glob.escape(prefix) + ".data-?????-of-?????"):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def _as_int(value):
    if hasattr(value, "numpy"):
        value = value.numpy()
    return int(np.asarray(value))


class CheckpointManager:
    """Saves numbered checkpoints of ``checkpoint`` in ``directory`` and keeps
    the newest ``max_to_keep`` (tf.train.CheckpointManager)."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError("Expected a positive integer or `None` for `max_to_keep`, "
                             f"got {max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is "
                             "not None.")
        self._checkpoint = checkpoint
        self._max_to_keep = max_to_keep
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._directory = os.fspath(directory)
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_checkpoint_step = None
        self._maybe_delete = collections.OrderedDict()
        self._recover()

    def _recover(self):
        state = get_checkpoint_state(self._directory)
        now = time.time()
        if state is None:
            self._latest_checkpoint = None
            self._last_preserved_timestamp = now - 1.0
            return
        self._latest_checkpoint = state.model_checkpoint_path
        self._last_preserved_timestamp = min(state.last_preserved_timestamp, now)
        stamps = state.all_model_checkpoint_timestamps
        if len(stamps) != len(state.all_model_checkpoint_paths):
            stamps = [self._last_preserved_timestamp] * len(state.all_model_checkpoint_paths)
        for path, stamp in zip(state.all_model_checkpoint_paths, stamps):
            stamp = min(stamp, now)
            if stamp >= self._last_preserved_timestamp:
                self._maybe_delete[path] = stamp

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def latest_checkpoint(self):
        """The prefix of the newest checkpoint, or None."""
        return self._latest_checkpoint

    @property
    def checkpoints(self):
        """The managed checkpoints, oldest first."""
        return list(self._maybe_delete)

    def _record_state(self):
        update_checkpoint_state(self._directory, self._latest_checkpoint,
                                list(self._maybe_delete),
                                all_model_checkpoint_timestamps=list(self._maybe_delete.values()),
                                last_preserved_timestamp=self._last_preserved_timestamp)

    def _sweep(self):
        if not self._max_to_keep:
            return
        hours = self._keep_checkpoint_every_n_hours
        while len(self._maybe_delete) > self._max_to_keep:
            path, stamp = self._maybe_delete.popitem(last=False)
            if hours and stamp - hours * 3600.0 >= self._last_preserved_timestamp:
                self._last_preserved_timestamp = stamp
                continue
            _delete_checkpoint(path)

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Writes ``<directory>/<checkpoint_name>-N`` (N: ``checkpoint_number``,
        else the checkpoint's ``save_counter`` after incrementing it), updates the
        ``checkpoint`` file and deletes the checkpoints past ``max_to_keep``.
        Returns the path, or None when ``checkpoint_interval`` skips this step."""
        if self._checkpoint_interval is not None:
            step = _as_int(self._step_counter)
            if check_interval and self._last_checkpoint_step is not None and \
                    step < self._last_checkpoint_step + self._checkpoint_interval:
                return None
            self._last_checkpoint_step = step
        counter = self._checkpoint.save_counter
        counter.assign_add(_kiln.convert_to_tensor(np.asarray(1, dtype=counter.dtype.name)))
        number = _as_int(counter if checkpoint_number is None else checkpoint_number)
        path = self._checkpoint.write(f"{self._prefix}-{number}", options)
        self._maybe_delete.pop(path, None)
        self._maybe_delete[path] = time.time()
        self._latest_checkpoint = path
        self._record_state()
        self._sweep()
        self._record_state()
        return path

    def restore_or_initialize(self):
        """Restores the latest checkpoint and returns its path; without one,
        calls ``init_fn`` (if given) and returns None."""
        if self._latest_checkpoint is not None:
            self._checkpoint.restore(self._latest_checkpoint)
            if self._checkpoint_interval is not None:
                self._last_checkpoint_step = _as_int(self._step_counter)
            return self._latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def sync(self):
        """Waits for pending writes (kiln writes synchronously)."""
