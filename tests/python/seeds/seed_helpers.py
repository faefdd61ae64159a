"""Shared helpers for the seed conformance tests.

The seed documents print TensorFlow's reprs ("tf.Tensor(", "<tf.Tensor:", "tf.Variable");
kiln's reprs use its own module name, so expected texts go through ``guide()``.
"""
import contextlib
import io
import sys
import textwrap
import traceback


def guide(text):
    """The guide's printed output, dedented, with TensorFlow's repr prefixes
    turned into kiln's (and the leading newline of a triple-quoted string dropped)."""
    text = textwrap.dedent(text)
    if text.startswith("\n"):
        text = text[1:]
    return (text.replace("tf.Tensor(", "kiln.Tensor(")
            .replace("<tf.Tensor:", "<kiln.Tensor:")
            .replace("tf.Variable", "kiln.Variable"))


# The guide's own helper (section "Configuración"), unchanged in behaviour:
# prints a two-line note on stdout and the traceback (limit=2) on stderr.
@contextlib.contextmanager
def assert_raises(error_class):
    try:
        yield
    except error_class:
        print('Caught expected exception \n  {}:'.format(error_class))
        traceback.print_exc(limit=2)
    except Exception as e:
        raise e
    else:
        raise Exception('Expected {} to be raised but no error was raised!'.format(
            error_class))


def caught(error_class):
    """The two stdout lines assert_raises prints for error_class."""
    return 'Caught expected exception \n  {}:\n'.format(error_class)


class Interleaved:
    """Python print (stdout) and kiln.print (sys.stderr) captured in one stream,
    in order, as a notebook shows them. Trace functions inside the block:
    kiln.print binds its stream when traced."""

    def __enter__(self):
        self._buf = io.StringIO()
        self._old = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = self._buf
        return self

    def __exit__(self, *exc):
        sys.stdout, sys.stderr = self._old
        return False

    @property
    def text(self):
        """Everything printed so far."""
        return self._buf.getvalue()
