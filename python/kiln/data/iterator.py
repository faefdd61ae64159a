"""Iterators over datasets (tf.data.Iterator).

An iterator made eagerly wraps a Python iterator; passed into a kiln.function
(traced by identity), each next(it) there becomes a PyFunction op that takes
the next element every time the graph runs. An iterator made while tracing
starts its Python iterator when the graph runs (an `open` op) and is usable
only inside that function.
"""
from kiln import _kiln, errors
from kiln.data import loops

# next() calls on one iterator while tracing before we assume a Python `for`
# loop without AutoGraph (which would never end) and stop with an error.
_MAX_TRACED_NEXT = 10000


class DatasetIterator:
    """Iterator over a dataset's elements (tf.data.Iterator)."""

    def __init__(self, dataset):
        self._dataset = dataset
        self._traced_next = 0
        if _kiln.executing_eagerly():
            self._it = dataset._eager_iter()
            self._token = None
        else:
            dataset._check_runnable("iter() over")
            dataset._check_tensor_elements()
            self._it = None
            self._token = loops.open_token(dataset._eager_iter, self._who())

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def _who(self):
        return f"{self._dataset._name} iterator"

    def __iter__(self):
        return self

    def _graph_source(self):
        """(get_iterator, inputs) for the PyFunction ops of a trace."""
        if self._token is not None:
            who = self._who()
            return (lambda tok: loops._token_iterator(tok, who)), [self._token]
        return (lambda: self._it), []

    def __next__(self):
        if _kiln.executing_eagerly():
            if self._it is None:
                raise RuntimeError("this iterator was created inside a traced function and "
                                   "can only be used there")
            return next(self._it)
        self._traced_next += 1
        if self._traced_next > _MAX_TRACED_NEXT:
            raise RuntimeError(
                f"next() was called {_MAX_TRACED_NEXT} times on one dataset iterator while "
                "tracing; a Python `for` over a dataset in a kiln.function needs AutoGraph "
                "(autograph=True) to become a graph loop")
        get, inputs = self._graph_source()
        return loops.pull(get, inputs, self.element_spec, self._who(), at_end="raise")

    def get_next(self, name=None):
        """The next element; OutOfRangeError after the last one."""
        if _kiln.executing_eagerly():
            try:
                return next(self)
            except StopIteration:
                raise errors.OutOfRangeError("End of sequence") from None
        return next(self)

    def _kiln_for_loop(self, body_fn, init_state, extra_test):
        """AutoGraph's `for element in iterator`: takes the remaining elements."""
        if _kiln.executing_eagerly():
            return loops.eager_loop(self, body_fn, init_state, extra_test)
        return loops.stream_loop(self.element_spec, body_fn, init_state, extra_test,
                                 self._who(), source=self._graph_source())

    def __repr__(self):
        return f"<kiln.data.Iterator element_spec={self.element_spec!r}>"


Iterator = DatasetIterator
