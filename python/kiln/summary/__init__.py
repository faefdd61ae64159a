"""kiln.summary (tf.summary): TensorBoard event files.

``writer = kiln.summary.create_file_writer(logdir)``; inside ``with writer.as_default():``
(or after ``writer.set_as_default()``), ``scalar``, ``histogram``, ``image``, ``text``,
``audio`` and ``write`` add events at ``step`` (an argument, or the default from
``as_default(step=)`` / ``experimental.set_step``). Eagerly they write at once; inside a
kiln.function they are WriteSummary ops that run, in program order, on every call (the
writer and a Python step are fixed when traced; a Variable step is read at run time).
``record_if`` gates writes (a bool, a boolean tensor or a callable). Files are TensorFlow's
``events.out.tfevents.*`` (TFRecord framing, Event protos, TensorBoard's plugin metadata),
written by the C++ writer in src/summary (include/kiln/summary.h)."""
from kiln.summary._writer import (SummaryWriter, create_file_writer, create_noop_writer,  # noqa: F401
                                  flush, record_if, should_record_summaries)
from kiln.summary._ops import (write, scalar, histogram, image, text, audio, graph,  # noqa: F401
                              trace_on, trace_off, trace_export)
from kiln.summary import experimental  # noqa: F401
