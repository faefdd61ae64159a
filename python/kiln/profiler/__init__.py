"""kiln.profiler: TensorFlow's tf.profiler (its ``experimental`` API).

``with kiln.profiler.experimental.Profile(logdir):`` records what kiln runs (kernels,
function calls, tracing, optimization passes, the JIT, ``Trace`` annotations) per thread and
writes a Chrome/Perfetto trace to ``<logdir>/plugins/profile/<run>/<host>.trace.json.gz``;
``experimental.last_profile_table()`` is the table of ops by total time (docs/PROFILER.md).
"""
from kiln.profiler import experimental

__all__ = ["experimental"]
