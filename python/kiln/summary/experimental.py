"""tf.summary.experimental: the default step, raw Summary protos, summary_scope, and
(kiln's) summary_iterator to read an event file back."""
import contextlib

from kiln import _kiln, ops as O
from kiln import scopes
from kiln.summary import _writer
from kiln.summary._ops import _record, _step


def set_step(step):
    """Sets the default step of this thread (an int, a tensor or a Variable)."""
    _writer.state.step = step


def get_step():
    return _writer.state.step


def write_raw_pb(tensor, step=None, name=None):
    """Writes serialized Summary protos (a string tensor) as events at `step`."""
    w = _writer.state.writer
    if w is None or isinstance(w, _writer._NoopSummaryWriter):
        return _kiln.constant(False)
    step_t = _step(step)
    return _record(_writer.should_record_summaries, lambda: _kiln.raw.WriteRawProtoSummary(
        w._handle, step_t, _kiln.convert_to_tensor(tensor, "string")))


@contextlib.contextmanager
def summary_scope(name, default_name=None, values=None):
    """Yields (tag, scope name) for a summary named `name` under the current scopes."""
    name = name or default_name
    with scopes.name_scope(name) as scope:
        yield "/".join(scopes.current_scope_names()), scope


def summary_iterator(path):
    """The events of an event file as dicts (wall_time, step, and file_version,
    graph_def or summary: a list of {tag, metadata, tensor or simple_value});
    TensorFlow's tf.compat.v1.train.summary_iterator yields the same as protos."""
    return iter(_kiln._read_events(str(path)))
